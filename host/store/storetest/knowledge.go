package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

// AddDoc writes texts as one document of the source (one chunk per text, with its search text and
// vector from Terms and Vector) and returns the document.
func AddDoc(t *testing.T, d store.Driver, user, project, source, visibility string, texts ...string) *store.KnowledgeDocument {
	t.Helper()
	ctx := context.Background()
	res, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: user, ProjectID: project, Name: source, Visibility: visibility},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: user, Title: "t", Filename: "f.txt", FileHash: uuid.NewString()})
	if err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	var chunks []store.KnowledgeChunk
	for i, tx := range texts {
		chunks = append(chunks, store.KnowledgeChunk{ID: uuid.NewString(), SourceID: res.Source.ID, DocumentID: res.Document.ID,
			Index: i, Text: tx, SearchText: SearchText(tx), TokenCount: len(Terms(tx)), EmbeddingModel: Model, Embedding: Vector(tx)})
	}
	doc, err := d.WriteChunks(ctx, store.WriteChunksParams{DocumentID: res.Document.ID, Chunks: chunks})
	if err != nil {
		t.Fatalf("WriteChunks: %v", err)
	}
	// WriteChunks answers with the document as stored: an ingest answers with it unread.
	stored, err := d.GetDocument(ctx, doc.ID)
	if err != nil {
		t.Fatalf("GetDocument: %v", err)
	}
	if doc.ParseStatus != store.DocIndexed || doc.ChunkCount != len(texts) || !reflect.DeepEqual(doc, stored) {
		t.Fatalf("WriteChunks returned %+v, want the document as stored: %+v (indexed, %d chunks)", doc, stored, len(texts))
	}
	return doc
}

func keywordIDs(t *testing.T, d store.Driver, v store.Viewer, query string) map[string]bool {
	t.Helper()
	rows, err := d.KeywordCandidates(context.Background(), store.SearchParams{Viewer: v, Terms: Terms(query), Limit: 50})
	if err != nil {
		t.Fatalf("KeywordCandidates(%q): %v", query, err)
	}
	out := map[string]bool{}
	for _, r := range rows {
		out[r.DocumentID] = true
		if r.Keyword <= 0 {
			t.Errorf("KeywordCandidates(%q): keyword rank %v, want > 0", query, r.Keyword)
		}
	}
	return out
}

func testKnowledgeSources(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	src := store.NewSourceParams{CreatedBy: u.ID, Name: "s1", Visibility: store.VisibilityPrivate}
	doc := &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "a.txt", FileHash: "h1"}
	res, err := d.AddDocument(ctx, src, doc)
	if err != nil {
		t.Fatalf("AddDocument: %v", err)
	}
	if res.Duplicate || res.Source.Version != 1 || res.Source.Scope != "org" || res.Document.ParseStatus != store.DocUploading {
		t.Errorf("first AddDocument = %+v / %+v, want version 1, scope org, uploading", res.Source, res.Document)
	}
	again, err := d.AddDocument(ctx, src, &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "b.txt", FileHash: "h1"})
	if err != nil || !again.Duplicate || again.Document.ID != doc.ID {
		t.Errorf("AddDocument(same hash) = %+v, %v; want duplicate of %s", again, err, doc.ID)
	}
	second, err := d.AddDocument(ctx, src, &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "c.txt", FileHash: "h2"})
	if err != nil || second.Duplicate || second.Source.ID != res.Source.ID || second.Source.Version != 2 {
		t.Errorf("AddDocument(new hash) = %+v, %v; want same source at version 2", second, err)
	}
	if err := d.SetDocumentStatus(ctx, store.DocumentStatusParams{ID: doc.ID, Status: store.DocFailed, Error: "no text"}); err != nil {
		t.Fatalf("SetDocumentStatus: %v", err)
	}
	got, err := d.GetDocument(ctx, doc.ID)
	if err != nil || got.ParseStatus != store.DocFailed || got.ErrorMessage != "no text" {
		t.Errorf("GetDocument = %+v, %v; want failed with its reason", got, err)
	}
	// The failed document is taken over by the next upload of its file, in place.
	retry, err := d.AddDocument(ctx, src, &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "d.txt", FileHash: "h1"})
	if err != nil || retry.Duplicate || !retry.Retry || retry.Document.ID != doc.ID || retry.Document.ParseStatus != store.DocUploading ||
		retry.Document.Filename != "d.txt" || retry.Source.Version != 3 {
		t.Errorf("AddDocument(hash of a failed document) = %+v, %v; want %s taken over at source version 3", retry, err, doc.ID)
	}
	if got, err := d.GetDocument(ctx, doc.ID); err != nil || got.ParseStatus != store.DocUploading || got.ErrorMessage != "" {
		t.Errorf("GetDocument(retried) = %+v, %v; want uploading without a reason", got, err)
	}
	if _, err := d.GetDocument(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetDocument(unknown) = %v, want ErrNotFound", err)
	}
	p := NewProject(t, d, u.ID)
	pres, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, ProjectID: p.ID, Name: "s1", Visibility: store.VisibilityProject},
		&store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "p.txt", FileHash: "h1"})
	if err != nil || pres.Duplicate || pres.Source.ID == res.Source.ID || pres.Source.Scope != "project" {
		t.Errorf("AddDocument(project source) = %+v, %v; want a new project-scoped source", pres, err)
	}
	list, total, err := d.ListSources(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: u.ID}, Limit: 10})
	if err != nil || total != 2 || len(list) != 2 {
		t.Errorf("ListSources = %d items, total %d, %v; want 2", len(list), total, err)
	}
	docs, total, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: u.ID, SourceID: res.Source.ID}, Limit: 10})
	if err != nil || total != 2 || len(docs) != 2 {
		t.Errorf("ListDocuments(source) = %d, total %d, %v; want 2", len(docs), total, err)
	}
}

// testKnowledgeConcurrentUploads: uploads into one source at the same time (two clients, or two
// hosts on one database) each make their document when their files differ, and one document
// between them when they upload the same file; the others are its duplicates. The first round
// also opens the driver's connections, so that the second's uploads do start together.
func testKnowledgeConcurrentUploads(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	src := store.NewSourceParams{CreatedBy: u.ID, Name: "race", Visibility: store.VisibilityPrivate}
	// The source exists already: creating it would make the uploads wait for each other.
	first, err := d.AddDocument(ctx, src, &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "first.txt", FileHash: "first"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	upload := func(hash func(i int) string) []*store.AddDocumentResult {
		t.Helper()
		results := make([]*store.AddDocumentResult, n)
		errs := make([]error, n)
		Together(n, func(i int) {
			results[i], errs[i] = d.AddDocument(ctx, src, &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID,
				Filename: "f.txt", FileHash: hash(i)})
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("AddDocument: %v", err)
		}
		return results
	}
	count := func(results []*store.AddDocumentResult) (ids, fresh, listed int) {
		t.Helper()
		seen := map[string]bool{}
		for _, r := range results {
			seen[r.Document.ID] = true
			if !r.Duplicate {
				fresh++
			}
		}
		_, total, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: u.ID, SourceID: first.Source.ID}, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return len(seen), fresh, total
	}
	if ids, fresh, listed := count(upload(func(i int) string { return fmt.Sprint("file-", i) })); ids != n || fresh != n || listed != 1+n {
		t.Errorf("%d concurrent uploads of different files: %d ids, %d not duplicates, %d documents in the source; want %d, %d, %d",
			n, ids, fresh, listed, n, n, 1+n)
	}
	if ids, fresh, listed := count(upload(func(int) string { return "same" })); ids != 1 || fresh != 1 || listed != 2+n {
		t.Errorf("%d concurrent uploads of one file: %d ids, %d not duplicates, %d documents in the source; want 1, 1, %d",
			n, ids, fresh, listed, 2+n)
	}
}

func testKnowledgeVisibility(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	a, b, admin := NewUser(t, d, ""), NewUser(t, d, ""), NewUser(t, d, store.RoleAdmin)
	pa := NewProject(t, d, a.ID)
	priv := AddDoc(t, d, a.ID, "", "priv", store.VisibilityPrivate, "zebrafish private memo 完播率")
	proj := AddDoc(t, d, a.ID, pa.ID, "proj", store.VisibilityProject, "zebrafish project memo 完播率")
	noProj := AddDoc(t, d, a.ID, "", "noproj", store.VisibilityProject, "zebrafish unassigned memo 完播率")
	// Only an admin may publish org (issue 37): a's org source (made before that rule) is a's only.
	org := AddDoc(t, d, a.ID, "", "org", store.VisibilityOrg, "zebrafish organisation memo 完播率")
	pub := AddDoc(t, d, admin.ID, "", "published", store.VisibilityOrg, "zebrafish published memo 完播率")
	tests := map[string]struct {
		v    store.Viewer
		want []string
	}{
		"owner":         {store.Viewer{UserID: a.ID}, []string{priv.ID, proj.ID, noProj.ID, org.ID, pub.ID}},
		"owner project": {store.Viewer{UserID: a.ID, ProjectID: pa.ID}, []string{proj.ID}},
		"other":         {store.Viewer{UserID: b.ID}, []string{pub.ID}},
		"other project": {store.Viewer{UserID: b.ID, ProjectID: pa.ID}, nil},
		"admin":         {store.Viewer{UserID: admin.ID, Admin: true}, []string{proj.ID, pub.ID}},
		"source name":   {store.Viewer{UserID: a.ID, SourceNames: []string{"org", "priv"}}, []string{priv.ID, org.ID}},
		"document ids":  {store.Viewer{UserID: a.ID, DocumentIDs: []string{proj.ID}}, []string{proj.ID}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := map[string]bool{}
			for _, id := range tc.want {
				want[id] = true
			}
			for _, q := range []string{"zebrafish", "完播"} {
				got := keywordIDs(t, d, tc.v, q)
				if len(got) != len(want) {
					t.Errorf("KeywordCandidates(%q) found %d documents, want %d", q, len(got), len(want))
				}
				for id := range want {
					if !got[id] {
						t.Errorf("KeywordCandidates(%q) misses document %s", q, id)
					}
				}
			}
			refs, err := d.EmbeddingRefs(ctx, tc.v)
			if err != nil || len(refs) != len(want) {
				t.Errorf("EmbeddingRefs = %d refs, %v; want %d", len(refs), err, len(want))
			}
			srcs, _, err := d.ListSources(ctx, store.ListKnowledgeParams{Viewer: tc.v, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			docs, _, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: tc.v, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range docs {
				if !want[doc.ID] && tc.v.DocumentIDs == nil && tc.v.SourceNames == nil {
					t.Errorf("ListDocuments shows document %s", doc.ID)
				}
			}
			if tc.v.DocumentIDs == nil && len(srcs) != len(want) {
				t.Errorf("ListSources = %d sources, want %d", len(srcs), len(want))
			}
			if d.SupportsVectorSearch() {
				rows, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: tc.v, Vector: Vector("zebrafish memo"), Model: Model, Limit: 10})
				if err != nil {
					t.Fatalf("VectorCandidates: %v", err)
				}
				if len(rows) != len(want) {
					t.Errorf("VectorCandidates = %d rows, want %d", len(rows), len(want))
				}
				for _, r := range rows {
					if !want[r.DocumentID] {
						t.Errorf("VectorCandidates shows document %s", r.DocumentID)
					}
					if r.Vector <= 0 || r.Vector > 1 {
						t.Errorf("VectorCandidates cosine %v, want in (0, 1]", r.Vector)
					}
				}
			}
		})
	}
	if ok, err := d.CanRead(ctx, store.Viewer{UserID: b.ID}, priv.SourceID); err != nil || ok {
		t.Errorf("CanRead(other, private) = %v, %v; want false", ok, err)
	}
	if err := d.SoftDeleteProject(ctx, pa.ID); err != nil {
		t.Fatal(err)
	}
	if got := keywordIDs(t, d, store.Viewer{UserID: a.ID}, "zebrafish"); !got[proj.ID] {
		t.Errorf("the creator lost its project document when the project was deleted")
	}
}

// testKnowledgeTermStats: a driver's TermStats (the statistics kb chooses keyword candidates by)
// counts the whole keyword index, every chunk whoever may read it, and each term's chunks, 0 for
// a term no chunk holds; its own write shows in the next count.
func testKnowledgeTermStats(t *testing.T, open Opener) {
	d := open(t)
	ctx := context.Background()
	a, b := NewUser(t, d, ""), NewUser(t, d, "")
	AddDoc(t, d, a.ID, "", "s", store.VisibilityPrivate, "hook opening", "hook reel")
	AddDoc(t, d, b.ID, "", "s", store.VisibilityPrivate, "reel shot")
	st, err := d.TermStats(ctx, []string{"hook", "reel", "absent"})
	if err != nil || st.Docs != 3 || st.DF["hook"] != 2 || st.DF["reel"] != 2 || st.DF["absent"] != 0 || st.AvgLen != 2 {
		t.Fatalf("TermStats = %+v, %v; want 3 chunks of 2 terms, hook 2, reel 2, absent 0", st, err)
	}
	AddDoc(t, d, b.ID, "", "s", store.VisibilityPrivate, "hook closeup shot")
	if st, err = d.TermStats(ctx, []string{"hook"}); err != nil || st.Docs != 4 || st.DF["hook"] != 3 || st.AvgLen != 2.25 {
		t.Fatalf("after a write: TermStats = %+v, %v; want 4 chunks of 2.25 terms, hook 3", st, err)
	}
	if st, err = d.TermStats(ctx, nil); err != nil || st.Docs != 4 || st.AvgLen != 2.25 {
		t.Fatalf("TermStats without terms = %+v, %v; want 4 chunks of 2.25 terms", st, err)
	}
}

// whole is r as ChunksByID gives it when r is partial (store.ChunkRow.Partial), else r.
func whole(t *testing.T, d store.Driver, r store.ChunkRow) store.ChunkRow {
	t.Helper()
	if !r.Partial {
		return r
	}
	rows, err := d.ChunksByID(context.Background(), []string{r.ID})
	if err != nil || len(rows) != 1 {
		t.Fatalf("ChunksByID(%s) = %+v, %v", r.ID, rows, err)
	}
	return rows[0]
}

// rankable reports whether a candidate row of text carries what BM25 reads of it for the query
// terms: its search text, or its number of terms and the query terms' frequencies in it
// (store.ChunkRow.TermFreq).
func rankable(r store.ChunkRow, terms []string, text string) bool {
	if r.TermFreq == nil {
		return r.SearchText == SearchText(text)
	}
	want := map[string]int{}
	for _, w := range Terms(text) {
		if slices.Contains(terms, w) {
			want[w]++
		}
	}
	return r.TermCount == len(Terms(text)) && maps.Equal(r.TermFreq, want)
}

func testKnowledgeChunks(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	doc := AddDoc(t, d, u.ID, "", "s", store.VisibilityPrivate, "抖音平台的完播率是衡量视频质量的重要指标", "直播带货的转化率取决于选品和话术")
	got, err := d.GetDocument(ctx, doc.ID)
	if err != nil || got.ParseStatus != store.DocIndexed || got.ChunkCount != 2 {
		t.Errorf("GetDocument after WriteChunks = %+v, %v; want indexed with 2 chunks", got, err)
	}
	v := store.Viewer{UserID: u.ID}
	rows, err := d.KeywordCandidates(ctx, store.SearchParams{Viewer: v, Terms: Terms("指标"), Limit: 10})
	if err != nil || len(rows) != 1 {
		t.Fatalf("KeywordCandidates(指标) = %+v, %v; want the first chunk", rows, err)
	}
	if r := rows[0]; r.DocumentID != doc.ID || r.SourceID != doc.SourceID || !rankable(r, Terms("指标"), "抖音平台的完播率是衡量视频质量的重要指标") ||
		r.EmbeddingModel != Model {
		t.Errorf("KeywordCandidates(指标) = %+v; want what ranking needs even in a partial row", r)
	}
	if r := whole(t, d, rows[0]); r.Index != 0 || r.SourceName != "s" || r.DocumentTitle == "" || r.Text != "抖音平台的完播率是衡量视频质量的重要指标" {
		t.Errorf("KeywordCandidates(指标), whole = %+v; want the first chunk", r)
	}
	refs, err := d.EmbeddingRefs(ctx, v)
	if err != nil || len(refs) != 2 {
		t.Fatalf("EmbeddingRefs = %v, %v", refs, err)
	}
	vecs, err := d.Embeddings(ctx, refs)
	if err != nil || len(vecs) != 2 || len(vecs[refs[0].ChunkID]) != VectorDims {
		t.Fatalf("Embeddings = %d, %v", len(vecs), err)
	}
	// Reindex: new vectors beside the old, then the switch.
	chunks, err := d.SourceChunks(ctx, store.SourceChunksParams{SourceID: doc.SourceID, Limit: 10})
	if err != nil || len(chunks) != 2 || chunks[0].ID >= chunks[1].ID {
		t.Fatalf("SourceChunks = %+v, %v; want the 2 chunks in id order", chunks, err)
	}
	// Paged: one chunk at a time, each after the last.
	first, err := d.SourceChunks(ctx, store.SourceChunksParams{SourceID: doc.SourceID, Limit: 1})
	if err != nil || len(first) != 1 || first[0].ID != chunks[0].ID {
		t.Fatalf("SourceChunks(limit 1) = %+v, %v; want the first chunk", first, err)
	}
	if rest, err := d.SourceChunks(ctx, store.SourceChunksParams{SourceID: doc.SourceID, AfterID: first[0].ID, Limit: 10}); err != nil || len(rest) != 1 || rest[0].ID != chunks[1].ID {
		t.Fatalf("SourceChunks(after the first) = %+v, %v; want the second chunk", rest, err)
	}
	if none, err := d.SourceChunks(ctx, store.SourceChunksParams{SourceID: doc.SourceID, AfterID: chunks[1].ID, Limit: 10}); err != nil || len(none) != 0 {
		t.Fatalf("SourceChunks(after the last) = %+v, %v; want none", none, err)
	}
	next := map[string][]float32{}
	for _, c := range chunks {
		next[c.ID] = []float32{1, 0, 0}
	}
	if err := d.AddEmbeddings(ctx, "m2", next); err != nil {
		t.Fatalf("AddEmbeddings: %v", err)
	}
	if refs2, _ := d.EmbeddingRefs(ctx, v); refs2[0].Model != refs[0].Model {
		t.Errorf("the model switched before SwitchEmbeddings")
	}
	if err := d.SwitchEmbeddings(ctx, doc.SourceID, "m2"); err != nil {
		t.Fatalf("SwitchEmbeddings: %v", err)
	}
	refs2, _ := d.EmbeddingRefs(ctx, v)
	vecs2, _ := d.Embeddings(ctx, refs2)
	if len(refs2) != 2 || refs2[0].Model != "m2" || len(vecs2[refs2[0].ChunkID]) != 3 {
		t.Errorf("after SwitchEmbeddings: refs %v, vectors %v", refs2, vecs2)
	}
	second := chunks[0] // the document's second chunk (index 1); SourceChunks gives id order
	if chunks[1].Index == 1 {
		second = chunks[1]
	}
	byID, err := d.ChunksByID(ctx, []string{second.ID})
	if err != nil || len(byID) != 1 || byID[0].Text != "直播带货的转化率取决于选品和话术" {
		t.Errorf("ChunksByID = %+v, %v", byID, err)
	}
}

func testKnowledgeQueries(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	a, b := NewUser(t, d, ""), NewUser(t, d, "")
	for i, u := range []string{a.ID, a.ID, b.ID} {
		q := &store.KnowledgeQuery{ID: uuid.NewString(), UserID: u, Mode: store.QueryAsk, QueryText: "q", TopK: 5,
			LatencyMS: float64(10 * (i + 1)), Cited: i == 0}
		if err := d.LogQuery(ctx, q); err != nil {
			t.Fatalf("LogQuery: %v", err)
		}
		if i == 0 {
			if err := d.SetFeedback(ctx, store.FeedbackParams{QueryID: q.ID, Rating: 4, Notes: "good"}); err != nil {
				t.Fatalf("SetFeedback: %v", err)
			}
			if err := d.SetFeedback(ctx, store.FeedbackParams{QueryID: q.ID, Rating: 5, Notes: "better"}); err != nil {
				t.Fatalf("SetFeedback again: %v", err)
			}
			got, err := d.GetQuery(ctx, q.ID)
			if err != nil || got.FeedbackRating == nil || *got.FeedbackRating != 5 || got.FeedbackNotes != "better" || got.UserID != a.ID {
				t.Errorf("GetQuery = %+v, %v; want rating 5", got, err)
			}
		}
	}
	if err := d.LogQuery(ctx, &store.KnowledgeQuery{ID: uuid.NewString(), UserID: a.ID, Mode: store.QuerySearch, QueryText: "s", TopK: 5, LatencyMS: 3}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetFeedback(ctx, store.FeedbackParams{QueryID: uuid.NewString(), Rating: 3}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetFeedback(unknown) = %v, want ErrNotFound", err)
	}
	st, err := d.QueryStats(ctx, a.ID, 200)
	if err != nil || st.Asks != 2 || st.Searches != 1 || st.RecentCited != 1 || st.FeedbackCount != 1 || st.RatingSum != 5 || len(st.SearchLatencies) != 1 {
		t.Errorf("QueryStats(a) = %+v, %v", st, err)
	}
	all, err := d.QueryStats(ctx, "", 200)
	if err != nil || all.Asks != 3 {
		t.Errorf("QueryStats(everyone) = %+v, %v; want 3 asks", all, err)
	}
	f := &store.Fact{ID: uuid.NewString(), UserID: a.ID, Key: "k", Value: "v1"}
	if err := d.PutFact(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := d.PutFact(ctx, &store.Fact{ID: uuid.NewString(), UserID: a.ID, Key: "k", Value: "v2"}); err != nil {
		t.Fatal(err)
	}
	facts, err := d.ListFacts(ctx, a.ID)
	if err != nil || len(facts) != 1 || facts[0].Value != "v2" {
		t.Errorf("ListFacts = %+v, %v; want one fact k=v2", facts, err)
	}
	if facts, _ := d.ListFacts(ctx, b.ID); len(facts) != 0 {
		t.Errorf("ListFacts(other) = %+v, want none", facts)
	}
}

// testKnowledgeVectorCandidates: the vector leg of a driver with a vector index returns the
// nearest readable chunks and the cosines of the chunks it is asked about, the cosines the host
// computes from the same vectors (so the ranking that follows is the same on every path); a
// driver without one says so (ErrNotSupported) and the host scans the vectors itself.
func testKnowledgeVectorCandidates(t *testing.T, open Opener) {
	d := open(t)
	ctx := context.Background()
	a, b := NewUser(t, d, ""), NewUser(t, d, "")
	words := []string{"hook", "reel", "opening", "shot", "teal", "logo", "caption", "rhythm", "cover", "script"}
	var texts []string
	for i := 0; i < 24; i++ {
		texts = append(texts, fmt.Sprintf("%s %s %s", words[i%10], words[(i*3+1)%10], words[(i*7+2)%10]))
	}
	texts = append(texts, "!!!") // no terms: a zero vector, cosine 0
	AddDoc(t, d, a.ID, "", "s", store.VisibilityPrivate, texts...)
	hidden := AddDoc(t, d, b.ID, "", "s", store.VisibilityPrivate, "hook reel opening")
	v := store.Viewer{UserID: a.ID}
	q := Vector("hook reel opening")
	if !d.SupportsVectorSearch() {
		if _, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: q, Model: Model, Limit: 5}); !errors.Is(err, store.ErrNotSupported) {
			t.Fatalf("VectorCandidates without a vector index = %v, want ErrNotSupported", err)
		}
		return
	}
	refs, err := d.EmbeddingRefs(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := d.Embeddings(ctx, refs)
	if err != nil || len(vecs) != len(texts) {
		t.Fatalf("Embeddings = %d, %v; want %d", len(vecs), err, len(texts))
	}
	want := map[string]float64{} // the exact cosines, clamped to 0..1
	ids := make([]string, 0, len(vecs))
	for id, vec := range vecs {
		var dot float64
		for i := range vec {
			dot += float64(vec[i]) * float64(q[i]) // unit vectors
		}
		want[id] = math.Max(0, math.Min(1, dot))
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		return want[ids[i]] > want[ids[j]] || (want[ids[i]] == want[ids[j]] && ids[i] < ids[j])
	})
	hiddenChunk, err := d.EmbeddingRefs(ctx, store.Viewer{UserID: b.ID})
	if err != nil || len(hiddenChunk) != 1 {
		t.Fatalf("EmbeddingRefs of the other user = %v, %v", hiddenChunk, err)
	}
	asked := []string{ids[0], ids[10], ids[len(ids)-1], hiddenChunk[0].ChunkID}
	rows, err := d.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: q, Model: Model, Limit: 5, ChunkIDs: asked})
	if err != nil {
		t.Fatalf("VectorCandidates: %v", err)
	}
	// The tolerance covers a vector column stored at half precision.
	const tol = 2e-3
	seen := map[string]bool{}
	for i, r := range rows {
		if r.DocumentID == hidden.ID {
			t.Fatalf("VectorCandidates returns a chunk the viewer may not read")
		}
		if seen[r.ID] {
			t.Fatalf("VectorCandidates returns chunk %s twice", r.ID)
		}
		seen[r.ID] = true
		if math.Abs(r.Vector-want[r.ID]) > tol {
			t.Errorf("chunk %q: cosine %v, want %v", r.Text, r.Vector, want[r.ID])
		}
		if i < 5 && want[r.ID] < want[ids[4]]-tol {
			t.Errorf("neighbour %d %q (cosine %v) is not among the 5 nearest (5th: %v)", i, r.Text, want[r.ID], want[ids[4]])
		}
	}
	if len(rows) != 7 || !seen[ids[10]] || !seen[ids[len(ids)-1]] {
		t.Fatalf("VectorCandidates = %d rows, want the 5 nearest and the 2 readable chunks asked about beyond them", len(rows))
	}
	// Limit 0: the cosines of the readable chunks asked about, and no neighbours.
	rows, err = d.VectorCandidates(ctx, store.SearchParams{Viewer: v, Vector: q, Model: Model, Limit: 0, ChunkIDs: asked})
	if err != nil {
		t.Fatalf("VectorCandidates with Limit 0: %v", err)
	}
	got := map[string]float64{}
	for _, r := range rows {
		got[r.ID] = r.Vector
	}
	if len(rows) != 3 || len(got) != 3 {
		t.Fatalf("VectorCandidates with Limit 0 = %d rows, want the 3 readable chunks asked about", len(rows))
	}
	for _, id := range asked[:3] {
		if c, ok := got[id]; !ok || math.Abs(c-want[id]) > tol {
			t.Errorf("Limit 0: chunk %s cosine %v (returned: %v), want %v", id, c, ok, want[id])
		}
	}
}
