package kb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/embed/embedtest"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// watched is a store whose GetDocument says, on its first call, that it was called: the ingest
// that came second reading the document the held one is indexing, that is, waiting for it. Before
// that nothing in an ingest reads a document by id (finishIngest does, after the embedder).
type watched struct {
	store.Driver
	once   sync.Once
	called chan struct{}
}

func watch(d store.Driver) *watched { return &watched{Driver: d, called: make(chan struct{})} }

// waited blocks until the ingest that came second reads the held document (it waits for it), or
// fails the test after a while: an ingest that does not wait answers without reading it.
func (w *watched) waited(t *testing.T) {
	t.Helper()
	select {
	case <-w.called:
	case <-time.After(20 * time.Second):
		t.Error("the second ingest never read the document being indexed: it did not wait for it")
	}
}

func (w *watched) GetDocument(ctx context.Context, id string) (*store.KnowledgeDocument, error) {
	w.once.Do(func() { close(w.called) })
	return w.Driver.GetDocument(ctx, id)
}

// TestIngestBatchSameContentAtOnce: two identical batches at once (the second sent while the
// first is still indexing) write each document once: for every item one call indexes it and the
// other answers it as a duplicate of the same document, and neither fails an item. The same goes
// for two single ingests of one text. The store holds each text once, with its chunks once.
func TestIngestBatchSameContentAtOnce(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		g, w := embedtest.NewHeld(), watch(d)
		s := kb.New(w, kb.Options{Embedder: g})
		n := 2*kb.BatchGroup + 3 // several groups: on PostgreSQL the second call adds some of them itself
		items := make([]kb.IngestParams, n)
		for i := range items {
			items[i] = kb.IngestParams{UserID: u.ID, SourceName: "twice", Visibility: store.VisibilityPrivate,
				Text: fmt.Sprintf("Note %d about the okapi%d shot.\n\n%s", i, i, strings.Repeat("The lamp goes left of the camera. ", 60))}
		}
		var out [2][]kb.BatchOutcome
		var wg sync.WaitGroup
		wg.Go(func() { out[0] = s.IngestBatch(ctx, items) })
		<-g.Started // the first call's documents are added, its first group held in the embedder
		wg.Go(func() { out[1] = s.IngestBatch(ctx, items) })
		w.waited(t) // the second call met documents still being indexed, and waits
		close(g.Release)
		wg.Wait()

		written := 0
		for i := range items {
			a, b := out[0][i], out[1][i]
			if a.Err != nil || b.Err != nil {
				t.Errorf("item %d: errors %v and %v; want none (one call indexes it, the other answers a duplicate)", i, a.Err, b.Err)
				continue
			}
			if a.Result.Duplicate == b.Result.Duplicate || a.Result.Document.ID != b.Result.Document.ID {
				t.Errorf("item %d: duplicate %v and %v, documents %s and %s; want one write and one duplicate of the same document",
					i, a.Result.Duplicate, b.Result.Duplicate, a.Result.Document.ID, b.Result.Document.ID)
				continue
			}
			for _, o := range []kb.BatchOutcome{a, b} {
				if o.Result.Document.ParseStatus != store.DocIndexed {
					t.Errorf("item %d: document %s is %s, want indexed", i, o.Result.Document.ID, o.Result.Document.ParseStatus)
				}
				if !o.Result.Duplicate {
					written += o.Result.ChunksCount
				}
			}
		}
		docs, total, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: u.ID}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		stored := 0
		for _, doc := range docs {
			stored += doc.ChunkCount
		}
		chunks, err := d.SourceChunks(ctx, store.SourceChunksParams{SourceID: docs[0].SourceID, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		if total != n || stored != written || len(chunks) != written {
			t.Errorf("store: %d documents, %d chunks counted, %d chunk rows; want %d documents and the %d chunks the calls wrote",
				total, stored, len(chunks), n, written)
		}

		// Two single ingests of one text at once: one indexes it, the other waits and answers the
		// duplicate.
		g2, w2 := embedtest.NewHeld(), watch(d)
		s2 := kb.New(w2, kb.Options{Embedder: g2})
		p := kb.IngestParams{UserID: u.ID, SourceName: "twice-single", Visibility: store.VisibilityPrivate, Text: "The tapir shot wants a warm key light."}
		var res [2]*kb.IngestResult
		var errs [2]error
		wg.Go(func() { res[0], errs[0] = s2.Ingest(ctx, p) })
		<-g2.Started
		wg.Go(func() { res[1], errs[1] = s2.Ingest(ctx, p) })
		w2.waited(t)
		close(g2.Release)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("single ingests: %v, %v; want both answered", errs[0], errs[1])
		}
		if res[0].Duplicate || !res[1].Duplicate || res[1].Document.ID != res[0].Document.ID ||
			res[1].Document.ParseStatus != store.DocIndexed || res[1].ChunksCount != 1 {
			t.Errorf("single ingests: %+v and %+v; want a write and a duplicate of the indexed document", res[0], res[1])
		}

		// When the ingest that came first fails, the one that waited for it ingests the content
		// in its place: nothing is lost.
		g3 := embedtest.NewHeld()
		g3.Fail = errors.New("embedder down")
		w3 := watch(d)
		s3 := kb.New(w3, kb.Options{Embedder: g3})
		p.Text = "The capybara shot wants a cool rim light."
		wg.Go(func() { res[0], errs[0] = s3.Ingest(ctx, p) })
		<-g3.Started
		wg.Go(func() { res[1], errs[1] = s3.Ingest(ctx, p) })
		w3.waited(t)
		close(g3.Release)
		wg.Wait()
		if errs[0] != nil || res[0].Document.ParseStatus != store.DocFailed {
			t.Errorf("the ingest whose embedder failed: %+v, %v; want its document failed", res[0], errs[0])
		}
		if errs[1] != nil || res[1].Duplicate || res[1].Document.ID != res[0].Document.ID || res[1].Document.ParseStatus != store.DocIndexed {
			t.Errorf("the ingest that waited: %+v, %v; want the document indexed in place", res[1], errs[1])
		}
	})
}
