// The cache of decoded vectors: a byte budget, the least recently used vector evicted first, and
// the counts /metrics shows.

package kb

import "container/list"

// DefaultVectorCacheMB is the vector cache's budget, in MiB, when Options.VectorCacheMB is 0
// (KB_VECTOR_CACHE_MB): about 85,000 chunks of the local embedder's 1536 dimensions.
const DefaultVectorCacheMB = 512

// vecEntryOverhead estimates what one cached vector costs beyond its numbers and its id's bytes:
// the key's string headers, the list element, the entry and the map slot.
const vecEntryOverhead = 160

// vecKey names a decoded vector: a chunk's embedding in one model.
type vecKey struct{ chunkID, model string }

// vecCache holds decoded vectors within a byte budget, evicting the least recently used first.
// It is not safe for concurrent use: the Service's mutex guards it.
type vecCache struct {
	budget int64
	bytes  int64
	order  *list.List // of *vecEntry, the most recently used at the front
	byKey  map[vecKey]*list.Element

	hits, misses, evictions uint64
	// dropped counts the vectors evicted or refused for want of room. While it stays the same,
	// every vector put since is still cached (deleted chunks aside).
	dropped uint64
}

type vecEntry struct {
	key vecKey
	vec []float32
}

func newVecCache(budget int64) *vecCache {
	return &vecCache{budget: budget, order: list.New(), byKey: map[vecKey]*list.Element{}}
}

// entrySize is what an entry counts against the budget.
func entrySize(k vecKey, v []float32) int64 {
	return int64(4*len(v) + len(k.chunkID) + vecEntryOverhead)
}

// get returns the cached vector of k and marks it used.
func (c *vecCache) get(k vecKey) ([]float32, bool) {
	el, ok := c.byKey[k]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return el.Value.(*vecEntry).vec, true
}

// put caches v under k as the most recently used, then evicts from the least recently used end
// until the cache is within its budget. A vector larger than the whole budget is not kept.
func (c *vecCache) put(k vecKey, v []float32) {
	size := entrySize(k, v)
	if el, ok := c.byKey[k]; ok {
		e := el.Value.(*vecEntry)
		c.bytes += size - entrySize(k, e.vec)
		e.vec = v
		c.order.MoveToFront(el)
	} else if size > c.budget {
		c.dropped++
		return
	} else {
		c.byKey[k] = c.order.PushFront(&vecEntry{key: k, vec: v})
		c.bytes += size
	}
	for c.bytes > c.budget {
		c.remove(c.order.Back())
		c.evictions++
		c.dropped++
	}
}

func (c *vecCache) remove(el *list.Element) {
	e := el.Value.(*vecEntry)
	c.order.Remove(el)
	delete(c.byKey, e.key)
	c.bytes -= entrySize(e.key, e.vec)
}

// forget removes the vectors of the given chunks, in every model.
func (c *vecCache) forget(chunkIDs map[string]bool) {
	for k, el := range c.byKey {
		if chunkIDs[k.chunkID] {
			c.remove(el)
		}
	}
}

// VectorCacheStats describe the cache of decoded vectors the in-memory vector path searches
// (SQLite, and PostgreSQL without pgvector).
type VectorCacheStats struct {
	Bytes       int64 // held, by the estimate the budget is checked against
	BudgetBytes int64
	Entries     int
	Hits        uint64 // lookups that found the vector
	Misses      uint64 // lookups that did not (the vector is then loaded from the store)
	Evictions   uint64 // vectors evicted to stay within the budget
}

// VectorCacheStats reports the vector cache's size and counts.
func (s *Service) VectorCacheStats() VectorCacheStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.cache
	return VectorCacheStats{Bytes: c.bytes, BudgetBytes: c.budget, Entries: len(c.byKey),
		Hits: c.hits, Misses: c.misses, Evictions: c.evictions}
}
