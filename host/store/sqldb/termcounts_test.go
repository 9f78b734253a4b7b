package sqldb

import (
	"testing"
	"time"
)

func TestTermCounts(t *testing.T) {
	c := &TermCounts[float64]{TTL: time.Hour, Max: 3}
	if n, got, missing := c.Lookup([]string{"a", "b"}); n.N != 0 || len(got) != 0 || len(missing) != 2 {
		t.Fatalf("empty: %v %v %v", n, got, missing)
	}
	c.Store(Corpus[float64]{N: 100, AvgLen: 5}, map[string]float64{"a": 3, "b": 0})
	if n, got, missing := c.Lookup([]string{"a", "b", "c"}); n.N != 100 || n.AvgLen != 5 || got["a"] != 3 || len(got) != 2 || len(missing) != 1 || missing[0] != "c" {
		t.Errorf("after Store: %v %v %v", n, got, missing)
	}
	c.Store(Corpus[float64]{N: 200}, map[string]float64{"c": 1}) // another corpus size: the old counts go
	if _, got, _ := c.Lookup([]string{"a", "c"}); len(got) != 1 || got["c"] != 1 {
		t.Errorf("new corpus size kept old counts: %v", got)
	}
	c.Store(Corpus[float64]{N: 200}, map[string]float64{"d": 1, "e": 1, "f": 1})
	c.Store(Corpus[float64]{N: 200}, map[string]float64{"g": 1}) // over Max: starts over
	if _, got, _ := c.Lookup([]string{"c", "g"}); len(got) != 1 || got["g"] != 1 {
		t.Errorf("over Max: %v", got)
	}
	// Two readers of the same corpus, each with its own Stats (two searches on an empty cache):
	// the second's counts join the first's, which keep their Stats.
	c.Reset()
	first, second := new(int), new(int)
	c.Store(Corpus[float64]{N: 300, AvgLen: 4, Stats: first}, map[string]float64{"a": 1})
	c.Store(Corpus[float64]{N: 300, AvgLen: 4, Stats: second}, map[string]float64{"b": 2})
	if n, got, _ := c.Lookup([]string{"a", "b"}); len(got) != 2 || n.Stats != any(first) {
		t.Errorf("same corpus, other Stats: %v, Stats %p (first %p)", got, n.Stats, first)
	}
	c.Store(Corpus[float64]{N: 300, AvgLen: 4.5, Stats: second}, map[string]float64{"c": 1}) // another mean length
	if n, got, _ := c.Lookup([]string{"a", "c"}); len(got) != 1 || got["c"] != 1 || n.Stats != any(second) {
		t.Errorf("new mean length kept old counts: %v", got)
	}
	c.Reset()
	if _, got, _ := c.Lookup([]string{"g"}); len(got) != 0 {
		t.Errorf("after Reset: %v", got)
	}
	c.TTL = 0
	c.Store(Corpus[float64]{N: 1}, map[string]float64{"h": 1})
	time.Sleep(time.Millisecond) // the behaviour under test: time passing beyond a TTL of 0
	if _, got, _ := c.Lookup([]string{"h"}); len(got) != 0 {
		t.Errorf("past TTL: %v", got)
	}
}
