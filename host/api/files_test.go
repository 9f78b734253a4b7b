package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
)

// TestSignedFileURLs: the file URLs the API hands out are signed and work without a header, by
// byte range, with the headers a browser needs; altered, expired and deleted ones are refused in
// the envelope; the Authorization header keeps working. Both databases, local and S3 storage.
func TestSignedFileURLs(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		for storage, newBlobs := range blobStores() {
			t.Run(d.name+"/"+storage, func(t *testing.T) {
				t.Parallel()
				testSignedFileURLs(t, d.open, newBlobs(t))
			})
		}
	}
}

func testSignedFileURLs(t *testing.T, open func(*testing.T) store.Driver, blobs blob.Store) {
	ctx := context.Background()
	b, svc, write := setupRunFiles(t, open, blobs)
	alice, aliceID := b.user("alice")
	bob, _ := b.user("bob")
	pid := b.project(alice, "films")

	// A run's video, named after the run's topic.
	video := mp4Bytes(6000)
	key := "assets/" + aliceID + "/video/" + uuid.NewString() + ".mp4"
	write(key, video)
	run := &store.Run{ID: uuid.NewString(), UserID: aliceID, ProjectID: pid,
		Inputs: json.RawMessage(`{"topic":"Café \"latte\"\nart / 拉花"}`)}
	if _, err := svc.RecordRunFiles(ctx, run, json.RawMessage(`{"video_url":"`+fileurl.OfKey(key)+`"}`)); err != nil {
		t.Fatal(err)
	}

	// Listings hand the URL out signed, the same one within a tenth of the TTL.
	list := b.do("GET", "/api/materials?type=video", alice, nil)
	items, _ := list.body["data"].([]any)
	if list.status != 200 || len(items) != 1 {
		t.Fatalf("materials = %d %s", list.status, list.raw)
	}
	signed, _ := items[0].(map[string]any)["file_url"].(string)
	u, err := url.Parse(signed)
	if err != nil || u.Path != fileurl.OfKey(key) || u.Query().Get("expires") == "" || u.Query().Get("signature") == "" {
		t.Fatalf("listed file_url %q: want %s signed", signed, fileurl.OfKey(key))
	}
	if again := b.do("GET", "/api/materials?type=video", alice, nil); !strings.Contains(again.raw, signed) {
		t.Errorf("a second listing handed out another URL: %s", again.raw)
	}
	byID := fileurl.OfMaterial(items[0].(map[string]any)["id"].(string))

	// Without a header: whole, ranged, HEAD, download, cached copy.
	r := b.do("GET", signed, "", nil)
	if r.status != 200 || !bytes.Equal([]byte(r.raw), video) {
		t.Fatalf("GET signed = %d (%d bytes) %.200s", r.status, len(r.raw), r.raw)
	}
	wantHeaders := map[string]string{
		"Content-Type":           "video/mp4",
		"Content-Length":         strconv.Itoa(len(video)),
		"Accept-Ranges":          "bytes",
		"X-Content-Type-Options": "nosniff",
		// The run's topic on one line; an ASCII form in filename, the name itself in filename*.
		"Content-Disposition": `inline; filename="Caf_ _latte_ art _ __.mp4"; filename*=UTF-8''Caf%C3%A9%20%22latte%22%20art%20%2F%20%E6%8B%89%E8%8A%B1.mp4`,
	}
	for h, want := range wantHeaders {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	// A video's policy has no sandbox: a browser's own player of a shared link must load it.
	if csp := r.header.Get("Content-Security-Policy"); strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("video's Content-Security-Policy = %q, want default-src 'none' without sandbox", csp)
	}
	cc := r.header.Get("Cache-Control")
	maxAge, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(cc, "private, max-age="), ", immutable"))
	if !strings.HasPrefix(cc, "private, max-age=") || !strings.HasSuffix(cc, ", immutable") || maxAge < 3500 || maxAge > 3960 {
		t.Errorf("Cache-Control = %q, want private, immutable, for the URL's remaining life", cc)
	}
	etag := r.header.Get("ETag")
	if etag == "" {
		t.Error("no ETag")
	}
	if r := b.do("GET", signed, "", nil, "If-None-Match", etag); r.status != 304 || r.raw != "" {
		t.Errorf("If-None-Match = %d %q, want 304", r.status, r.raw)
	}
	if r := b.do("GET", signed, "", nil, "Range", "bytes=4000-"); r.status != 206 || r.raw != string(video[4000:]) ||
		r.header.Get("Content-Range") != "bytes 4000-5999/6000" || r.header.Get("Content-Length") != "2000" {
		t.Errorf("ranged = %d %q (%d bytes)", r.status, r.header.Get("Content-Range"), len(r.raw))
	}
	if r := b.do("GET", signed, "", nil, "Range", "bytes=6000-"); r.status != 416 || r.code() != "VALIDATION_ERROR" ||
		r.header.Get("Content-Range") != "bytes */6000" {
		t.Errorf("past the end = %d %s %q, want 416 in the envelope", r.status, r.raw, r.header.Get("Content-Range"))
	}
	if r := b.do("GET", signed, "", nil, "Range", "bytes=0-9", "If-Range", `"other"`); r.status != 200 || len(r.raw) != len(video) {
		t.Errorf("If-Range of another version = %d, want the whole file", r.status)
	}
	if r := b.do("HEAD", signed, "", nil); r.status != 200 || r.raw != "" || r.header.Get("Content-Length") != strconv.Itoa(len(video)) {
		t.Errorf("HEAD = %d %q length %q", r.status, r.raw, r.header.Get("Content-Length"))
	}
	if r := b.do("GET", signed+"&download=1", "", nil); r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Disposition"), `attachment; filename="Caf_`) {
		t.Errorf("download=1: %d %q", r.status, r.header.Get("Content-Disposition"))
	}

	// The by-id route: its URL from an upload's answer.
	up := b.upload("/api/materials/upload", alice, "file", "cover.png", "image/png", pngBytes, nil)
	upURL, _ := up.data("asset").(map[string]any)["file_url"].(string)
	if up.status != 201 || !strings.Contains(upURL, "signature=") {
		t.Fatalf("upload = %d, file_url %q; want it signed", up.status, upURL)
	}
	if r := b.do("GET", upURL, "", nil); r.status != 200 || r.raw != string(pngBytes) || r.header.Get("Content-Type") != "image/png" ||
		r.header.Get("Content-Disposition") != `inline; filename="cover.png"` || !strings.HasSuffix(r.header.Get("Content-Security-Policy"), "; sandbox") {
		t.Errorf("upload's URL = %d %q %q %q", r.status, r.header.Get("Content-Type"), r.header.Get("Content-Disposition"),
			r.header.Get("Content-Security-Policy"))
	}

	// Altered and expired URLs: 403 in the envelope; no signature and no header: 401.
	q := u.Query()
	exp, _ := strconv.ParseInt(q.Get("expires"), 10, 64)
	sig := q.Get("signature")
	flipped := string(rune(sig[0]^1)) + sig[1:]
	secret := "test-secret-test-secret-test-secret"
	stale := fileurl.New(secret, time.Hour).WithClock(func() time.Time { return time.Now().Add(-3 * time.Hour) }).Sign(fileurl.OfKey(key))
	other := fileurl.New("another-host-secret-0123456789abcdef", time.Hour).Sign(fileurl.OfKey(key))
	for name, tc := range map[string]struct {
		url, token, wantCode string
		want                 int
	}{
		"altered signature":  {u.Path + "?expires=" + q.Get("expires") + "&signature=" + flipped, "", "AUTHORIZATION_ERROR", 403},
		"altered expiry":     {u.Path + "?expires=" + strconv.FormatInt(exp+3600, 10) + "&signature=" + sig, "", "AUTHORIZATION_ERROR", 403},
		"other file":         {byID + "?" + u.RawQuery, "", "AUTHORIZATION_ERROR", 403},
		"expired":            {stale, "", "AUTHORIZATION_ERROR", 403},
		"another key":        {other, "", "AUTHORIZATION_ERROR", 403},
		"no signature":       {u.Path, "", "AUTHENTICATION_ERROR", 401},
		"header, altered":    {u.Path + "?expires=1&signature=" + flipped, alice, "", 200},
		"header, plain path": {u.Path, alice, "", 200},
		"header of another":  {u.Path, bob, "NOT_FOUND", 404},
		"another, signed":    {signed, bob, "", 200}, // a shared link works whoever opens it
	} {
		r := b.do("GET", tc.url, tc.token, nil)
		if r.status != tc.want || r.code() != tc.wantCode {
			t.Errorf("%s: GET %s = %d %s, want %d %s", name, tc.url, r.status, r.raw, tc.want, tc.wantCode)
		}
	}
	if r := b.do("GET", stale, "", nil); !strings.Contains(r.raw, "expired") {
		t.Errorf("an expired URL's message does not say so: %s", r.raw)
	}

	// Deleted: the signed URLs handed out before answer 404.
	if r := b.do("POST", "/api/materials/batch-delete", alice, map[string]any{"ids": []string{up.data("asset").(map[string]any)["id"].(string),
		items[0].(map[string]any)["id"].(string)}}); r.status != 200 {
		t.Fatalf("batch-delete = %d %s", r.status, r.raw)
	}
	for _, s := range []string{signed, upURL} {
		if r := b.do("GET", s, "", nil); r.status != 404 || r.code() != "NOT_FOUND" {
			t.Errorf("deleted %s = %d %s, want 404 NOT_FOUND", s, r.status, r.raw)
		}
	}
}
