package fileurl

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const video = "/api/assets/files/u1/runs/r1/video.mp4"

func split(t *testing.T, signed string) (string, url.Values) {
	t.Helper()
	u, err := url.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	return u.EscapedPath(), u.Query()
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := New("jwt-secret-of-the-host-0123456789abcdef", time.Hour).WithClock(func() time.Time { return now })
	signed := s.Sign(video)
	p, q := split(t, signed)
	if p != video {
		t.Fatalf("path %q, want %q", p, video)
	}
	exp, err := s.Verify("GET", p, q)
	if err != nil {
		t.Fatalf("Verify(%s): %v", signed, err)
	}
	if life := exp.Sub(now); life < time.Hour || life > 66*time.Minute {
		t.Errorf("lifetime %v, want between 1h and 1h06m", life)
	}
	if _, err := s.Verify("HEAD", p, q); err != nil {
		t.Errorf("HEAD: %v", err)
	}
	if again := s.Sign(signed); again != signed {
		t.Errorf("re-signing within the same tenth of the TTL: %q, want %q", again, signed)
	}
	if got := Unsigned(signed); got != video {
		t.Errorf("Unsigned = %q", got)
	}

	alter := func(k, v string) url.Values {
		c := url.Values{}
		for key, vals := range q {
			c[key] = append([]string(nil), vals...)
		}
		c.Set(k, v)
		return c
	}
	sig := q.Get(SignatureParam)
	flipped := string(rune(sig[0]^1)) + sig[1:]
	for _, tc := range []struct {
		name, method, path string
		query              url.Values
		want               error
	}{
		{"other file", "GET", "/api/assets/files/u1/runs/r1/other.mp4", q, ErrBadSignature},
		{"other owner", "GET", "/api/assets/files/u2/runs/r1/video.mp4", q, ErrBadSignature},
		{"later expiry", "GET", p, alter(ExpiresParam, "9999999999"), ErrBadSignature},
		{"expiry with a leading zero", "GET", p, alter(ExpiresParam, "0"+q.Get(ExpiresParam)), ErrBadSignature},
		{"altered signature", "GET", p, alter(SignatureParam, flipped), ErrBadSignature},
		{"no signature", "GET", p, url.Values{ExpiresParam: q[ExpiresParam]}, ErrUnsigned},
		{"POST", "POST", p, q, ErrBadSignature},
		{"not a file route", "GET", "/api/projects", q, ErrNotFileURL},
		{"traversal", "GET", "/api/assets/files/u1/../u2/video.mp4", q, ErrNotFileURL},
	} {
		if _, err := s.Verify(tc.method, tc.path, tc.query); !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}

	// Expired: the same URL once its time has passed, and a URL of another key.
	later := s.WithClock(func() time.Time { return exp })
	if _, err := later.Verify("GET", p, q); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v, want ErrExpired", err)
	}
	other := New("another-secret-0123456789abcdef0123456789", time.Hour).WithClock(func() time.Time { return now })
	if _, err := other.Verify("GET", p, q); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another host's key: %v, want ErrBadSignature", err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	s := New("secret-0123456789abcdef0123456789abcdef", time.Hour)
	signed := s.Sign("/api/materials/0b4b5a7e-1a2b-4c3d-8e9f-001122334455/file")
	for _, raw := range []string{signed, "http://127.0.0.1:3001" + signed, "https://api.example.com" + signed} {
		got, err := s.Check(raw)
		if err != nil || got != "/api/materials/0b4b5a7e-1a2b-4c3d-8e9f-001122334455/file" {
			t.Errorf("Check(%q) = %q, %v", raw, got, err)
		}
	}
	for raw, want := range map[string]error{
		"/api/materials/x/file":                             ErrUnsigned,
		"https://example.com/a.mp4":                         ErrNotFileURL,
		"ftp://h" + signed:                                  ErrNotFileURL,
		strings.Replace(signed, "expires=", "expires=1", 1): ErrBadSignature,
	} {
		if _, err := s.Check(raw); !errors.Is(err, want) {
			t.Errorf("Check(%q) = %v, want %v", raw, err, want)
		}
	}
}

func TestIsFileURL(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		video:                          true,
		"/api/assets/files/u1/a.png":   true,
		"/api/assets/files/":           false,
		"/api/assets/files/u1//a.png":  false,
		"/api/assets/files/u1/a b.png": false,
		"/api/materials/abc-1/file":    true,
		"/api/materials/abc/file/x":    false,
		"/api/materials/../file":       false,
		"/api/materials//file":         false,
		"https://x/api/assets/files/a": false,
	} {
		if got := IsFileURL(p); got != want {
			t.Errorf("IsFileURL(%q) = %v, want %v", p, got, want)
		}
	}
	if KeyOf(video+"?expires=1") != "assets/u1/runs/r1/video.mp4" || OfKey("assets/u1/a.png") != "/api/assets/files/u1/a.png" {
		t.Error("KeyOf / OfKey do not round-trip")
	}
}

func TestSignJSON(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := New("secret-0123456789abcdef0123456789abcdef", time.Hour).WithClock(func() time.Time { return now })
	mat := "/api/materials/m1/file"
	in := `{"video_url":"` + video + `","nested":{"list":["` + mat + `?expires=1&signature=old","/api/projects"]},` +
		`"text":"see \"` + video + `\" here","escaped":"\/api\/assets\/files\/u1\/a.png","n":33.333333333333336,` +
		`"external":"https://cdn.example.com/a.mp4","key":"` + video + `",` +
		`"media":"` + mat + `?expires=1&signature=old, ` + video + `","mixed":"` + video + `,not a file"}`
	out := s.SignJSON([]byte(in))
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("SignJSON wrote invalid JSON: %v\n%s", err, out)
	}
	want := map[string]any{
		"video_url": s.Sign(video),
		"nested":    map[string]any{"list": []any{s.Sign(mat), "/api/projects"}},
		"text":      `see "` + video + `" here`, // a file named inside other text is not a URL handed out
		"escaped":   s.Sign("/api/assets/files/u1/a.png"),
		"n":         33.333333333333336,
		"external":  "https://cdn.example.com/a.mp4",
		"key":       s.Sign(video),
		// a run's media input lists its files separated by commas: each is signed, none dropped
		"media": s.Sign(mat) + "," + s.Sign(video),
		"mixed": video + ",not a file",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SignJSON (-want +got):\n%s\n%s", d, out)
	}
	if !strings.Contains(string(out), `"n":33.333333333333336,`) {
		t.Errorf("the rest of the document changed: %s", out)
	}
	plain := []byte(`{"a":"/api/projects","b":[1,2]}`)
	if got := s.SignJSON(plain); &got[0] != &plain[0] {
		t.Error("a document naming no file was copied")
	}
	if got := string(s.SignJSON([]byte(`{"a":"/api/assets/files/u1/x.mp4`))); got != `{"a":"/api/assets/files/u1/x.mp4` {
		t.Errorf("a cut document changed: %s", got)
	}
}
