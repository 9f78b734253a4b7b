package embed

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/reelforge/reelforge/sdk/errcode"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestLocal(t *testing.T) {
	var e Embedder = NewLocal()
	if e.Model() != LocalModel || e.Dimensions() != 1536 {
		t.Fatal(e.Model(), e.Dimensions())
	}
	vs, err := e.Embed(context.Background(), []string{
		"Creators must not repost other people's short videos.",
		"Reposting short videos of other creators is forbidden.",
		"The quarterly revenue grew by twelve percent.",
		"短视频平台禁止搬运他人作品",
		"平台禁止搬运短视频",
		"",
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs[:5] {
		if len(v) != 1536 || math.Abs(cos(v, v)-1) > 1e-5 {
			t.Fatalf("vector %d not unit length", i)
		}
	}
	if cos(vs[0], vs[1]) <= cos(vs[0], vs[2]) {
		t.Errorf("related %.3f <= unrelated %.3f", cos(vs[0], vs[1]), cos(vs[0], vs[2]))
	}
	if cos(vs[3], vs[4]) < 0.4 {
		t.Errorf("Chinese related %.3f", cos(vs[3], vs[4]))
	}
	if cos(vs[5], vs[5]) != 0 {
		t.Errorf("empty text should be the zero vector")
	}
	again, _ := e.Embed(context.Background(), []string{"Creators must not repost other people's short videos."})
	if !reflect.DeepEqual(again[0], vs[0]) {
		t.Error("not deterministic")
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{"rules": "rule", "studies": "study", "status": "status",
		"classes": "class", "running": "runn", "created": "creat", "bus": "bus"} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClient(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			t.Errorf("path %s", r.URL.Path)
		}
		if calls.Add(1) == 1 {
			w.WriteHeader(500)
			return
		}
		var req embedRequest
		json.NewDecoder(r.Body).Decode(&req)
		if req.Model != "m" || len(req.Input) > 2 {
			t.Errorf("request %+v", req)
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var resp struct {
			Data []item `json:"data"`
		}
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose
			resp.Data = append(resp.Data, item{i, []float32{float32(len(req.Input[i])), 0, 0}})
		}
		json.NewEncoder(w).Encode(resp)
	}))
	defer srv.Close()
	c := NewClient(ClientConfig{BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 3, BatchSize: 2, Retries: 2})
	vs, err := c.Embed(context.Background(), []string{"a", "bb", "ccc"})
	if err != nil {
		t.Fatal(err)
	}
	if vs[0][0] != 1 || vs[1][0] != 2 || vs[2][0] != 3 {
		t.Fatalf("order %v", vs)
	}
	bad := NewClient(ClientConfig{BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 5, Retries: -1})
	if _, err := bad.Embed(context.Background(), []string{"a"}); !errcode.Is(err, errcode.ExternalService) {
		t.Fatalf("dimension mismatch: %v", err)
	}
}

func BenchmarkLocal(b *testing.B) {
	text := ""
	for len(text) < 1000 {
		text += "The knowledge base splits text into chunks and embeds them with hashed features. "
	}
	l := NewLocal()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		l.Vector(text)
	}
}

// referenceVector is the embedder written plainly: every feature of referenceFeatures hashed from
// its key string, in order. Vector must give exactly the same numbers.
func referenceVector(l *Local, text string) []float32 {
	v := make([]float32, LocalDimensions)
	for _, f := range referenceFeatures(l, text) {
		scatter(v, fnv64(f.Key), float32(f.Weight))
	}
	normalize(v)
	return v
}

var vectorSeeds = []string{
	"",
	"Creators must not repost other people's short videos.",
	"The studies classes running created rules status bus buses glasses parties",
	"短视频平台禁止搬运他人作品，的了是在和",
	"Mixed 中文 and English: what did the 平台 say about 直播 in 2024? Café naïve résumé ÅNGSTRÖM",
	"日本語のテキストとカタカナ、ไทยภาษา, 한국어 단어",
	"x y z a an the of and 1 22 333 4444 55555 abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
	"repeat repeat repeat repeat studies studies bigram bigram bigram",
	"\xff\xfe invalid utf8 \xc3 tail",
}

func TestVectorMatchesReference(t *testing.T) {
	for _, l := range []*Local{NewLocal(), NewLocalTuned(Tuning{Bigram: 0.9, CJKUni: 0.1})} {
		for _, text := range vectorSeeds {
			if got, want := l.Vector(text), referenceVector(l, text); !reflect.DeepEqual(got, want) {
				t.Errorf("Vector(%q) differs from the reference", text)
			}
		}
	}
}

func FuzzVectorMatchesReference(f *testing.F) {
	for _, s := range vectorSeeds {
		f.Add(s)
	}
	l := NewLocal()
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := l.Vector(text), referenceVector(l, text); !reflect.DeepEqual(got, want) {
			t.Fatalf("Vector(%q) differs from the reference", text)
		}
	})
}
