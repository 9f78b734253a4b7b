package rank

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/segment"
)

var corpus = []string{
	"Creators must not repost other people's short videos; reposting leads to a ban.",
	"Our brand colour is teal and the logo must keep clear space around it.",
	"短视频平台禁止搬运他人作品，违者封号。",
	"Weekly analytics reports track watch time, completion rate and follower growth.",
}

func cands(t *testing.T) []Candidate {
	vs, _ := embed.NewLocal().Embed(context.Background(), corpus)
	out := make([]Candidate, len(corpus))
	for i, c := range corpus {
		out[i] = Candidate{ID: string(rune('a' + i)), Terms: segment.Terms(c), Vector: vs[i]}
	}
	return out
}

func query(s string) Query {
	return Query{Terms: segment.Query(s), Vector: embed.NewLocal().Vector(s)}
}

func TestScore(t *testing.T) {
	cs := cands(t)
	hits := Score(query("can I repost short videos?"), cs, Options{TopK: 2})
	if len(hits) == 0 || hits[0].ID != "a" {
		t.Fatalf("hits %+v", hits)
	}
	for _, h := range hits {
		if h.Total < 0 || h.Total > 1 || h.Keyword < 0 || h.Keyword > 1 || h.Vector < 0 || h.Vector > 1 {
			t.Fatalf("score out of range %+v", h)
		}
		if d := h.Total - (vectorWeight*h.Vector + keywordWeight*h.Keyword); d > 1e-9 || d < -1e-9 {
			t.Fatalf("total %+v", h)
		}
	}
	if hits := Score(query("视频"), cs, Options{}); len(hits) == 0 || hits[0].ID != "c" {
		t.Fatalf("Chinese hits %+v", hits)
	}
}

func TestFloorDropsGibberish(t *testing.T) {
	cs := cands(t)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		b := make([]byte, 4+i%12)
		for j := range b {
			b[j] = byte('a' + rng.Intn(26))
		}
		if hits := Score(query(string(b)), cs, Options{}); len(hits) != 0 {
			t.Fatalf("query %q: hits %+v", b, hits)
		}
	}
}

func TestCosine(t *testing.T) {
	if Cosine(nil, []float32{1}) != 0 || Cosine([]float32{1, 0}, []float32{-1, 0}) != 0 {
		t.Fatal("clamp")
	}
	if c := Cosine([]float32{1, 1}, []float32{2, 2}); c < 0.999 || c > 1 {
		t.Fatal(c)
	}
}

// TestKeywordRelativeSquared: the best candidate scores 1, the others (s/max)², in keyword order;
// a candidate with no query term scores 0.
func TestKeywordRelativeSquared(t *testing.T) {
	cs := []Candidate{
		{ID: "two", Terms: []string{"repost", "ban", "x"}},
		{ID: "one", Terms: []string{"repost", "y", "z"}},
		{ID: "none", Terms: []string{"logo", "teal", "z"}},
	}
	terms := []string{"repost", "ban"}
	sq := Keyword(terms, cs, Options{})
	lin := Keyword(terms, cs, Options{Power: 1})
	if sq[0] != 1 || lin[0] != 1 || sq[2] != 0 || lin[2] != 0 {
		t.Fatalf("squared %v, linear %v", sq, lin)
	}
	if !(lin[1] > 0 && lin[1] < 1) || math.Abs(sq[1]-lin[1]*lin[1]) > 1e-12 {
		t.Fatalf("second candidate: squared %v, linear %v", sq[1], lin[1])
	}
}
