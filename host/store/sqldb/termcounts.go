package sqldb

import (
	"sync"
	"time"
)

// TermCounts keeps the document frequencies of search terms (and, where a driver keeps one, the
// corpus size n they were counted over) for TTL. Counting a term reads every row holding it, and
// the same common words come back query after query. The driver calls Reset after each of its
// own writes; other processes' writes show within TTL, and a stale count only moves a term's
// weight a little.
type TermCounts[V int | float64] struct {
	TTL time.Duration
	Max int // more entries than this start a new set

	mu sync.Mutex
	at time.Time
	n  V
	m  map[string]V
}

// Lookup returns the corpus size, the counts of the keys it holds and the keys it does not.
// Once the set is older than TTL it is dropped and every key is missing.
func (c *TermCounts[V]) Lookup(keys []string) (n V, got map[string]V, missing []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil && time.Since(c.at) > c.TTL {
		c.m, c.n = nil, 0
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

// Store adds counts made over a corpus of n; a different n starts a new set.
func (c *TermCounts[V]) Store(n V, counts map[string]V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.n != n || len(c.m) > c.Max {
		c.m, c.n, c.at = map[string]V{}, n, time.Now()
	}
	for k, v := range counts {
		c.m[k] = v
	}
}

// Reset drops everything (after a write).
func (c *TermCounts[V]) Reset() {
	c.mu.Lock()
	c.m, c.n = nil, 0
	c.mu.Unlock()
}
