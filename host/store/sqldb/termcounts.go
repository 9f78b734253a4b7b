package sqldb

import (
	"sync"
	"time"
)

// TermCounts keeps the document frequencies of search terms (and the corpus they were counted
// over: its size and mean chunk length) for TTL. Counting a term reads every row holding it, and
// the same common words come back query after query. The driver calls Reset after each of its
// own writes; other processes' writes show within TTL, and a stale count only moves a term's
// weight a little.
type TermCounts[V int | float64] struct {
	TTL time.Duration
	Max int // more entries than this start a new set

	mu sync.Mutex
	at time.Time
	n  Corpus[V]
	m  map[string]V
}

// Corpus is what term counts were counted over: the number of chunks and their mean length in
// terms (BM25's avgdl).
type Corpus[V int | float64] struct {
	N      V
	AvgLen float64
	// Stats is what else the driver read with N and that the counts rest on, kept and dropped with
	// them (pgstore: the column statistics, *termStats). Store does not compare it: two searches
	// that read the corpus at once (an empty cache) each read their own, of the same statistics.
	Stats any
}

// Lookup returns the corpus (zero when none is kept), the counts of the keys it holds and the
// keys it does not. Once the set is older than TTL it is dropped and every key is missing.
func (c *TermCounts[V]) Lookup(keys []string) (n Corpus[V], got map[string]V, missing []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil && time.Since(c.at) > c.TTL {
		c.m, c.n = nil, Corpus[V]{}
	}
	got = make(map[string]V, len(keys))
	for _, k := range keys {
		if v, ok := c.m[k]; ok {
			got[k] = v
		} else {
			missing = append(missing, k)
		}
	}
	return c.n, got, missing
}

// Store adds counts made over corpus n; a different corpus (its size or mean length) starts a new
// set, whose Stats are n's. Counts over the corpus kept join it, under the Stats kept: comparing
// them too (each reader's pointer) made two searches that read the corpus at once drop each
// other's counts, for more counting.
func (c *TermCounts[V]) Store(n Corpus[V], counts map[string]V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.n.N != n.N || c.n.AvgLen != n.AvgLen || len(c.m) > c.Max {
		c.m, c.n, c.at = map[string]V{}, n, time.Now()
	}
	for k, v := range counts {
		c.m[k] = v
	}
}

// Reset drops everything (after a write).
func (c *TermCounts[V]) Reset() {
	c.mu.Lock()
	c.m, c.n = nil, Corpus[V]{}
	c.mu.Unlock()
}
