// The in-memory vector leg: the cache of decoded vectors and of each viewer's readable chunks, and
// the nearest-neighbour scan over them.

package kb

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// refsTTL bounds how long a viewer's list of readable chunks is reused: writes of this process
// invalidate it at once, those of other hosts sharing the database within refsTTL.
const refsTTL = 2 * time.Second

type refsEntry struct {
	gen  uint64
	at   time.Time
	refs []store.EmbeddingRef
	set  *vecSet // the vectors of refs, resolved by the first search that needs them
}

// vecSet is the readable vectors of one model, in one slice, so a search scans them without map
// lookups. It shares the vectors with the decoded cache, and a viewer's entry keeps it only while
// the cache holds every one of them (see vectors), so the sets hold no memory beyond the cache's
// budget (no index by id: the keyword candidates use the decoded cache).
type vecSet struct {
	model string
	ids   []string
	vecs  [][]float32
	// dropped is the cache's dropped count when the set was resolved; while the cache's count
	// stays there, every vector of the set (every readable vector of the model) is cached.
	dropped uint64
}

// changed invalidates the cached lists of readable chunks.
func (s *Service) changed() {
	s.mu.Lock()
	s.gen++
	s.refs = map[string]*refsEntry{}
	s.mu.Unlock()
}

// embeddingRefs returns the chunks v may read with their models, from the short-lived cache.
func (s *Service) embeddingRefs(ctx context.Context, v store.Viewer) (*refsEntry, error) {
	key := fmt.Sprintf("%s|%t|%s|%s|%q|%q", v.UserID, v.Admin, v.ProjectID, v.SourceID, v.SourceNames, v.DocumentIDs)
	s.mu.RLock()
	e, ok := s.refs[key]
	gen := s.gen
	s.mu.RUnlock()
	if ok && e.gen == gen && time.Since(e.at) < refsTTL {
		return e, nil
	}
	refs, err := s.st.EmbeddingRefs(ctx, v)
	if err != nil {
		return nil, err
	}
	e = &refsEntry{gen: gen, at: time.Now(), refs: refs}
	s.mu.Lock()
	if s.gen == gen {
		if len(s.refs) > 1000 {
			s.refs = map[string]*refsEntry{}
		}
		s.refs[key] = e
	}
	s.mu.Unlock()
	return e, nil
}

// vectors resolves the vectors of e's chunks of model, from the decoded cache or the store.
//
// The decoded cache is there for the knowledge search target (SPEC.md: search p95 under 800 ms),
// which make bench measures in the knowledge rows of the in-memory path ("sqlite" and "postgres
// (in-memory)", 10000 chunks): without it every search loads and decodes every readable vector.
// BenchmarkSearchSQLite over 10,000 chunks (KB_BENCH_CHUNKS=10000) took 447 ms a search without
// the cache (KB_BENCH_VECTOR_CACHE_MB=-1) and 33 ms with it, on the 2-core machine at load 20;
// 200 searches of the bench's kind over that corpus had p95 1.65 s without and 74 ms with. The
// rule it imposes: a vector, once written for a chunk and model, never changes (a reindex writes
// new ones under the new model), so cached vectors are never stale; each host holds up to
// KB_VECTOR_CACHE_MB of them.
func (s *Service) vectors(ctx context.Context, e *refsEntry, model string) (*vecSet, error) {
	s.mu.RLock()
	set := e.set
	s.mu.RUnlock()
	if set != nil && set.model == model {
		return set, nil
	}
	set = &vecSet{model: model}
	var missing []store.EmbeddingRef
	s.mu.Lock() // a lookup marks the vector used: the cache's order changes
	before := s.cache.dropped
	for _, r := range e.refs {
		if r.Model != model {
			continue
		}
		if vec, ok := s.cache.get(vecKey{r.ChunkID, r.Model}); ok {
			set.ids = append(set.ids, r.ChunkID)
			set.vecs = append(set.vecs, vec)
		} else {
			missing = append(missing, r)
		}
	}
	s.mu.Unlock()
	if len(missing) > 0 {
		got, err := s.st.Embeddings(ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("kb: load embeddings: %w", err)
		}
		s.mu.Lock()
		dropped := s.cache.dropped
		for _, r := range missing {
			if vec, ok := got[r.ChunkID]; ok {
				s.cache.put(vecKey{r.ChunkID, model}, vec)
				set.ids = append(set.ids, r.ChunkID)
				set.vecs = append(set.vecs, vec)
			}
		}
		s.releaseSets(dropped)
		s.mu.Unlock()
	}
	s.mu.Lock()
	// Kept for the viewer's next searches only when the cache lost no vector meanwhile: then it
	// holds every vector of the set, and the set costs no memory beyond the budget. When the
	// readable vectors outgrow the budget, every search resolves its set anew (and loads what
	// the cache lacks).
	set.dropped = before
	if s.cache.dropped == before {
		e.set = set
	}
	s.mu.Unlock()
	return set, nil
}

// releaseSets lets the viewers' sets go when the cache dropped vectors since its count was
// dropped (the sets may hold them), so that only the cache keeps vectors between searches; s.mu
// must be held.
func (s *Service) releaseSets(dropped uint64) {
	if s.cache.dropped != dropped {
		for _, e := range s.refs {
			e.set = nil
		}
	}
}

// remember puts vectors this service has just written into the decoded cache, so the next
// search does not load them back from the store. A store that ranks vectors itself (pgvector)
// never reads the cache: nothing is kept for it.
func (s *Service) remember(model string, ids []string, vecs [][]float32) {
	if s.st.SupportsVectorSearch() {
		return
	}
	s.mu.Lock()
	dropped := s.cache.dropped
	for i, id := range ids {
		if vecs[i] != nil {
			s.cache.put(vecKey{id, model}, vecs[i])
		}
	}
	s.releaseSets(dropped)
	s.mu.Unlock()
}

// neighbours returns the n readable chunks nearest to qv (by dot product of unit vectors), and
// the vectors of the given candidates (chunks the caller has read through the visibility rule)
// and of the neighbours, in the query's model, from the cache or the store.
func (s *Service) neighbours(ctx context.Context, v store.Viewer, qv []float32, n int, cands []string) ([]string, map[string][]float32, error) {
	e, err := s.embeddingRefs(ctx, v)
	if err != nil {
		return nil, nil, fmt.Errorf("kb: embedding refs: %w", err)
	}
	set, err := s.vectors(ctx, e, s.emb.Model())
	if err != nil {
		return nil, nil, err
	}
	// A query embeds to few non-zero numbers (the local embedder puts a short query in a few
	// dozen of 1536 buckets): summing only those, in index order, gives exactly the dense sum,
	// since the skipped products are zeros.
	var nz []int32
	for i, x := range qv {
		if x != 0 {
			nz = append(nz, int32(i))
		}
	}
	order := nearest(set.vecs, qv, nz, n)
	ids := make([]string, len(order))
	vecs := make(map[string][]float32, len(order)+len(cands))
	for i, k := range order {
		ids[i] = set.ids[k]
		vecs[ids[i]] = set.vecs[k]
	}
	// The candidates' vectors: from the decoded cache, which holds every readable chunk's vector
	// of the model unless it dropped some since the set was resolved (the readable vectors
	// outgrow the budget); only then are the ones it lacks loaded from the store.
	var missing []store.EmbeddingRef
	s.mu.Lock()
	complete := s.cache.dropped == set.dropped
	for _, id := range cands {
		if _, ok := vecs[id]; ok {
			continue
		}
		if vec, ok := s.cache.get(vecKey{id, set.model}); ok {
			vecs[id] = vec
		} else if !complete {
			missing = append(missing, store.EmbeddingRef{ChunkID: id, Model: set.model})
		}
	}
	s.mu.Unlock()
	if len(missing) > 0 {
		got, err := s.st.Embeddings(ctx, missing)
		if err != nil {
			return nil, nil, fmt.Errorf("kb: load embeddings: %w", err)
		}
		for id, vec := range got {
			vecs[id] = vec
		}
	}
	return ids, vecs, nil
}

// parallelScan is the least number of vectors worth splitting over two goroutines.
const parallelScan = 4096

// nearest returns the indexes of the n vectors with the largest dot product with qv, best first,
// ties to the lower index; nz lists qv's non-zero dimensions. A large set is scanned in two
// halves at once when a second processor is there; the result is the same.
func nearest(vecs [][]float32, qv []float32, nz []int32, n int) []int {
	if len(vecs) < parallelScan || runtime.GOMAXPROCS(0) < 2 {
		top := newTopK(n)
		scan(top, vecs, 0, qv, nz)
		return top.sorted()
	}
	half := len(vecs) / 2
	a, b := newTopK(n), newTopK(n)
	var wg sync.WaitGroup
	wg.Go(func() { scan(b, vecs[half:], half, qv, nz) })
	scan(a, vecs[:half], 0, qv, nz)
	wg.Wait()
	// push expects increasing indexes (an equal score never displaces an earlier item): every
	// index of b is above a's, and b's own go in in order, as one scan would have pushed them.
	bi := b.sorted() // best first; b.dots is in the same order now
	byIndex := make([]int, len(bi))
	for j := range byIndex {
		byIndex[j] = j
	}
	sort.Slice(byIndex, func(x, y int) bool { return bi[byIndex[x]] < bi[byIndex[y]] })
	for _, j := range byIndex {
		a.push(bi[j], b.dots[j])
	}
	return a.sorted()
}

// scan pushes the dot products of vecs (numbered from base) into top.
func scan(top *topK, vecs [][]float32, base int, qv []float32, nz []int32) {
	sparse := len(nz) <= len(qv)/4
	for i, vec := range vecs {
		if len(vec) != len(qv) {
			continue
		}
		var dot float32
		if sparse {
			for _, k := range nz {
				dot += qv[k] * vec[k]
			}
		} else {
			dot = dotDense(qv, vec)
		}
		top.push(base+i, dot)
	}
}

// dotDense is the dot product summed in index order.
func dotDense(a, b []float32) float32 {
	b = b[:len(a)]
	var dot float32
	for i, x := range a {
		dot += x * b[i]
	}
	return dot
}

// topK keeps the n best scores seen, in a min-heap; ties keep the earlier item.
type topK struct {
	n    int
	idx  []int
	dots []float32
}

func newTopK(n int) *topK {
	return &topK{n: n, idx: make([]int, 0, n), dots: make([]float32, 0, n)}
}

// worse reports whether heap slot a ranks below slot b: a lower score, or the same score
// seen later.
func (t *topK) worse(a, b int) bool {
	return t.dots[a] < t.dots[b] || (t.dots[a] == t.dots[b] && t.idx[a] > t.idx[b])
}

func (t *topK) push(i int, dot float32) {
	if t.n <= 0 {
		return
	}
	if len(t.idx) < t.n {
		t.idx, t.dots = append(t.idx, i), append(t.dots, dot)
		for c := len(t.idx) - 1; c > 0; {
			p := (c - 1) / 2
			if !t.worse(c, p) {
				break
			}
			t.swap(c, p)
			c = p
		}
		return
	}
	// Items come in increasing i, so an equal score never displaces the root.
	if dot <= t.dots[0] {
		return
	}
	t.idx[0], t.dots[0] = i, dot
	t.down(0, len(t.idx))
}

func (t *topK) swap(a, b int) {
	t.idx[a], t.idx[b] = t.idx[b], t.idx[a]
	t.dots[a], t.dots[b] = t.dots[b], t.dots[a]
}

func (t *topK) down(p, n int) {
	for {
		c := 2*p + 1
		if c >= n {
			return
		}
		if c+1 < n && t.worse(c+1, c) {
			c++
		}
		if !t.worse(c, p) {
			return
		}
		t.swap(c, p)
		p = c
	}
}

// sorted returns the kept items best first (ties: earlier first), emptying the heap; t.dots is
// left in the same order.
func (t *topK) sorted() []int {
	out := make([]int, len(t.idx))
	for n := len(t.idx); n > 0; n-- {
		out[n-1] = t.idx[0]
		t.swap(0, n-1)
		t.down(0, n-1)
	}
	return out
}
