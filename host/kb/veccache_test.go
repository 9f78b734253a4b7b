package kb

import "testing"

// TestVecCacheLRU: the least recently used vector goes first, a lookup counts as a use, the bytes
// stay within the budget, and a vector larger than the budget is not kept.
func TestVecCacheLRU(t *testing.T) {
	vec := make([]float32, 100)
	size := entrySize(vecKey{"a", "m"}, vec)
	c := newVecCache(3 * size)
	for _, id := range []string{"a", "b", "c"} {
		c.put(vecKey{id, "m"}, vec)
	}
	if _, ok := c.get(vecKey{"a", "m"}); !ok {
		t.Fatal("a is missing before any eviction")
	}
	c.put(vecKey{"d", "m"}, vec) // b is now the least recently used
	for id, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := c.get(vecKey{id, "m"}); ok != want {
			t.Errorf("after the eviction, %s cached = %v, want %v", id, ok, want)
		}
	}
	if c.bytes != 3*size || len(c.byKey) != 3 || c.evictions != 1 || c.hits != 4 || c.misses != 1 {
		t.Errorf("bytes %d (budget %d), entries %d, evictions %d, hits %d, misses %d; want %d, 3, 1, 4, 1",
			c.bytes, c.budget, len(c.byKey), c.evictions, c.hits, c.misses, 3*size)
	}
	c.put(vecKey{"big", "m"}, make([]float32, 1000))
	if _, ok := c.byKey[vecKey{"big", "m"}]; ok || c.bytes != 3*size || c.dropped != 2 {
		t.Errorf("a vector over the budget: kept %v, bytes %d, dropped %d; want not kept, %d, 2", ok, c.bytes, c.dropped, 3*size)
	}
	c.forget(map[string]bool{"a": true, "c": true})
	if len(c.byKey) != 1 || c.bytes != size || c.order.Len() != 1 {
		t.Errorf("after forgetting a and c: %d entries, %d bytes, list %d; want 1, %d, 1", len(c.byKey), c.bytes, c.order.Len(), size)
	}
	none := newVecCache(0)
	none.put(vecKey{"a", "m"}, vec)
	if len(none.byKey) != 0 || none.bytes != 0 {
		t.Errorf("a cache of budget 0 keeps %d vectors", len(none.byKey))
	}
}
