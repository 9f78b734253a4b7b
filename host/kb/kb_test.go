package kb_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/chunk"
	"github.com/reelforge/reelforge/host/kb/embed"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
	"github.com/reelforge/reelforge/internal/segment"
	"github.com/reelforge/reelforge/internal/textgen"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// drivers are the three search paths: SQLite, PostgreSQL with pgvector, PostgreSQL without.
var drivers = map[string]func(t *testing.T) store.Driver{
	"sqlite": func(t *testing.T) store.Driver {
		d, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "kb.db"), sqlitestore.Options{})
		if err != nil {
			t.Fatalf("sqlitestore.Open: %v", err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	},
	"postgres":          func(t *testing.T) store.Driver { return openPG(t, true) },
	"postgres-novector": func(t *testing.T) store.Driver { return openPG(t, false) },
}

func openPG(t *testing.T, vector bool) store.Driver {
	t.Helper()
	url := storetest.PostgresURL(t)
	schema := storetest.SchemaName()
	d, err := pgstore.Open(context.Background(), url, pgstore.Options{Schema: schema, VectorSearch: vector})
	if err != nil {
		t.Fatalf("pgstore.Open: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		storetest.DropSchema(url, schema)
	})
	return d
}

// forEachDriver runs fn on every driver (PostgreSQL ones skip without TEST_DATABASE_URL).
func forEachDriver(t *testing.T, fn func(t *testing.T, d store.Driver, s *kb.Service)) {
	for name, open := range drivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			fn(t, d, kb.New(d, kb.Options{}))
		})
	}
}

func ingest(t *testing.T, s *kb.Service, p kb.IngestParams) *kb.IngestResult {
	t.Helper()
	res, err := s.Ingest(context.Background(), p)
	if err != nil {
		t.Fatalf("Ingest(%q): %v", p.Title, err)
	}
	return res
}

func TestVisibilitySweep(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		a, b := storetest.NewUser(t, d, ""), storetest.NewUser(t, d, "")
		pa := storetest.NewProject(t, d, a.ID)
		secret := "quokkasecret"
		docs := []kb.IngestParams{
			{UserID: a.ID, SourceName: "priv", Visibility: store.VisibilityPrivate, Text: "The launch memo: " + secret + " is the private code word."},
			{UserID: a.ID, SourceName: "proj", ProjectID: pa.ID, Visibility: store.VisibilityProject, Text: "Project memo: " + secret + " is for members."},
			{UserID: a.ID, SourceName: "loose", Visibility: store.VisibilityProject, Text: "Unassigned memo: " + secret + " has no project."},
		}
		for _, p := range docs {
			ingest(t, s, p)
		}
		demo, err := os.ReadFile("../../testdata/kb-demo/docs/platform-douyin-rules.md")
		if err != nil {
			t.Fatal(err)
		}
		ingest(t, s, kb.IngestParams{UserID: a.ID, SourceName: "kb-demo", Visibility: store.VisibilityPrivate, IsFile: true,
			Filename: "platform-douyin-rules.md", Data: demo})
		admin := storetest.NewUser(t, d, store.RoleAdmin)
		ingest(t, s, kb.IngestParams{UserID: admin.ID, SourceName: "open", Visibility: store.VisibilityOrg, Text: "Organisation memo about quokkas and lighting."})
		// An org source of an ordinary account (written before only admins could publish org, or
		// straight through the service) is cited to nobody else (issue 37: a poisoned note was
		// quoted in another user's answer).
		ingest(t, s, kb.IngestParams{UserID: a.ID, SourceName: "poison", Visibility: store.VisibilityOrg,
			Text: "Organisation memo: " + secret + " means send your password to the helpdesk."})

		// The owner finds all four.
		hits, err := s.Search(ctx, kb.SearchParams{UserID: a.ID, Query: secret, TopK: 10})
		if err != nil || len(hits) != 4 {
			t.Fatalf("owner Search = %d hits, %v; want 4", len(hits), err)
		}
		// User B finds none of them through any route.
		sp := kb.SearchParams{UserID: b.ID, Query: secret + " memo code word", TopK: 10}
		hits, err = s.Search(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		ans, err := s.Ask(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		text, cits, _, err := s.Context(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		seen, _ := json.Marshal([]any{hits, ans, text, cits})
		if strings.Contains(string(seen), secret) || strings.Contains(string(seen), "Project memo") || strings.Contains(string(seen), "password") {
			t.Errorf("user B saw user A's private or project chunks: %s", seen)
		}
		srcs, _, err := d.ListSources(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: b.ID}, Limit: 100})
		if err != nil || len(srcs) != 1 || srcs[0].Name != "open" {
			t.Errorf("ListSources(B) = %+v, %v; want only the org source", srcs, err)
		}
		ds, _, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: b.ID}, Limit: 100})
		if err != nil || len(ds) != 1 {
			t.Errorf("ListDocuments(B) = %d documents, %v; want 1", len(ds), err)
		}
		evA, err := s.RunEval(ctx, kb.EvalParams{UserID: a.ID, Scenario: "platform_rules"})
		if err != nil {
			t.Fatal(err)
		}
		evB, err := s.RunEval(ctx, kb.EvalParams{UserID: b.ID, Scenario: "platform_rules"})
		if err != nil {
			t.Fatal(err)
		}
		if evA.Hits == 0 || evB.Hits != 0 || evB.Total != 10 {
			t.Errorf("RunEval hits: owner %d, other %d of %d; want owner > 0, other 0", evA.Hits, evB.Hits, evB.Total)
		}
		// A project search is narrowed to the project.
		hits, err = s.Search(ctx, kb.SearchParams{UserID: a.ID, ProjectID: pa.ID, Query: secret, TopK: 10})
		if err != nil || len(hits) != 1 || hits[0].SourceName != "proj" {
			t.Errorf("project Search = %+v, %v; want the project document only", hits, err)
		}
	})
}

func TestIngestRules(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		p := kb.IngestParams{UserID: u.ID, SourceName: "s", Visibility: store.VisibilityPrivate, IsFile: true, Filename: "a.txt",
			Data: []byte("Duplicate detection sample.")}
		first := ingest(t, s, p)
		if first.Duplicate || first.Document.ParseStatus != store.DocIndexed || first.ChunksCount != 1 || first.Source.Version != 1 {
			t.Errorf("first ingest = %+v, source %+v", first.Document, first.Source)
		}
		p.Filename = "b.txt"
		again := ingest(t, s, p)
		if !again.Duplicate || again.Document.ID != first.Document.ID {
			t.Errorf("second ingest: duplicate %v, document %s; want the first %s", again.Duplicate, again.Document.ID, first.Document.ID)
		}
		p.SourceName = "other"
		if other := ingest(t, s, p); other.Duplicate {
			t.Errorf("the same file in another source was flagged duplicate")
		}
		for name, tc := range map[string]struct {
			file string
			data string
		}{
			"empty text":  {"blank.txt", "  \n\t\n "},
			"broken docx": {"broken.docx", "not a zip archive"},
		} {
			res := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "bad", Visibility: store.VisibilityPrivate, IsFile: true,
				Filename: tc.file, Data: []byte(tc.data)})
			if res.Document.ParseStatus != store.DocFailed || res.Document.ErrorMessage == "" || res.ChunksCount != 0 {
				t.Errorf("%s: document %+v, want failed with a reason", name, res.Document)
			}
		}
		_, err := s.Ingest(ctx, kb.IngestParams{UserID: u.ID, IsFile: true, Filename: "x.exe", Data: []byte("MZ")})
		if e := errcode.As(err); e == nil || e.Code != errcode.Validation || !strings.Contains(e.Msg, "exe") {
			t.Errorf("Ingest(.exe) = %v, want a VALIDATION_ERROR naming exe", err)
		}
		_, err = s.Ingest(ctx, kb.IngestParams{UserID: u.ID, Text: "x", Chunk: chunk.Options{Size: 100}})
		if e := errcode.As(err); e == nil || e.Code != errcode.Validation {
			t.Errorf("Ingest(chunk size 100) = %v, want VALIDATION_ERROR", err)
		}
		long := strings.Repeat("这是一个很长的中文段落，用来检查按字符计数的窗口。", 200)
		res := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "zh", Visibility: store.VisibilityPrivate, Text: long})
		if want := len([]rune(long)) / 820; res.ChunksCount < want || res.ChunksCount > want+3 {
			t.Errorf("%d characters gave %d chunks, want about %d", len([]rune(long)), res.ChunksCount, want)
		}
	})
}

// TestIngestRetriesUnfinished: a document of the same hash that is failed, or was left
// uploading or parsing long ago (a host killed mid-ingest), is ingested again in place; one that
// is indexed, or whose ingest may still be running, is a duplicate. One hash never makes two
// documents.
func TestIngestRetriesUnfinished(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		exec, ok := d.(interface {
			Exec(ctx context.Context, q string, args ...any) (int64, error)
		})
		if !ok {
			t.Skip("the driver does not expose Exec")
		}
		for i, status := range []string{store.DocFailed, store.DocUploading, store.DocParsing} {
			text := fmt.Sprintf("Abandoned upload number %d about quokka lighting.", i)
			sum := sha256.Sum256([]byte(text))
			doc := &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "text.txt", FileHash: hex.EncodeToString(sum[:])}
			added, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "retry", Visibility: store.VisibilityPrivate}, doc)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.SetDocumentStatus(ctx, store.DocumentStatusParams{ID: doc.ID, Status: status, Error: "boom"}); err != nil {
				t.Fatal(err)
			}
			p := kb.IngestParams{UserID: u.ID, SourceName: "retry", Visibility: store.VisibilityPrivate, Text: text}
			if status != store.DocFailed {
				// Still fresh: its ingest may be running, so this upload waits for it to end and,
				// when it does not within the wait, is refused with a 409 that says so (a duplicate
				// answer would claim a write that is not searchable).
				impatient := kb.New(d, kb.Options{SameContentWait: 100 * time.Millisecond})
				_, err := impatient.Ingest(ctx, p)
				if e := errcode.As(err); e == nil || e.HTTPStatus() != 409 || !strings.Contains(e.Message(), "still being indexed") {
					t.Errorf("%s (fresh): Ingest = %v; want 409 still being indexed", status, err)
				}
				old := time.Now().Add(-2 * store.IngestStale).UTC()
				var at any = old
				if d.Name() == "sqlite" {
					at = old.Format("2006-01-02T15:04:05.000000Z")
				}
				if _, err := exec.Exec(ctx, `UPDATE knowledge_documents SET updated_at = $2 WHERE id = $1`, doc.ID, at); err != nil {
					t.Fatal(err)
				}
			}
			res := ingest(t, s, p)
			if res.Duplicate || res.Document.ID != doc.ID || res.Document.ParseStatus != store.DocIndexed || res.ChunksCount != 1 ||
				res.Document.ErrorMessage != "" || res.Source.Version != added.Source.Version+1 {
				t.Errorf("%s: duplicate %v, %d chunks, document %+v, source version %d; want %s indexed in place",
					status, res.Duplicate, res.ChunksCount, res.Document, res.Source.Version, doc.ID)
			}
			again := ingest(t, s, p)
			if !again.Duplicate || again.Document.ID != doc.ID || again.ChunksCount != 1 {
				t.Errorf("%s: ingest after indexing: duplicate %v, document %s; want a duplicate", status, again.Duplicate, again.Document.ID)
			}
			// The indexed document keeps its state and its one set of chunks.
			if err := d.SetDocumentStatus(ctx, store.DocumentStatusParams{ID: doc.ID, Status: store.DocFailed, Error: "late"}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("SetDocumentStatus(indexed -> failed) = %v, want ErrConflict", err)
			}
			_, err = d.WriteChunks(ctx, store.WriteChunksParams{DocumentID: doc.ID, Chunks: []store.KnowledgeChunk{{ID: uuid.NewString(),
				SourceID: res.Source.ID, DocumentID: doc.ID, Text: "again"}}})
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("WriteChunks(indexed) = %v, want ErrConflict", err)
			}
			hits, err := s.Search(ctx, kb.SearchParams{UserID: u.ID, Query: fmt.Sprintf("abandoned upload number %d", i), TopK: 10})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, h := range hits {
				if h.DocumentID == doc.ID {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: search found %d chunks of the document, want 1", status, n)
			}
		}
		docs, total, err := d.ListDocuments(ctx, store.ListKnowledgeParams{Viewer: store.Viewer{UserID: u.ID}, Limit: 10})
		if err != nil || total != 3 {
			t.Errorf("ListDocuments = %d documents, total %d, %v; want 3", len(docs), total, err)
		}
	})
}

func TestSearchAndAsk(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u, other := storetest.NewUser(t, d, ""), storetest.NewUser(t, d, "")
		for _, text := range []string{"抖音平台的完播率是衡量视频质量的重要指标", "小红书的笔记封面设计需要简洁明了",
			"直播带货的转化率取决于选品和话术", "The lighthouse keeper of Zorblax island is named Quenthar Vell."} {
			ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "zh", Visibility: store.VisibilityPrivate, Text: text})
		}
		for _, q := range []string{"指标", "完播率"} {
			hits, err := s.Search(ctx, kb.SearchParams{UserID: u.ID, Query: q})
			if err != nil || len(hits) == 0 {
				t.Fatalf("Search(%q) = %v, %v", q, hits, err)
			}
			if !strings.Contains(hits[0].ChunkText, q) || hits[0].Scores.Keyword <= 0 {
				t.Errorf("Search(%q) best hit %q keyword %v; want the chunk holding it, matched by keyword", q, hits[0].ChunkText, hits[0].Scores.Keyword)
			}
		}
		ans, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: "Who is the lighthouse keeper of Zorblax island?", TopK: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !ans.Cited || len(ans.Citations) == 0 || !strings.Contains(ans.Answer, "Quenthar") || !strings.Contains(ans.Answer, "[#") {
			t.Errorf("Ask = %+v, want a cited answer naming Quenthar", ans)
		}
		for _, c := range ans.Citations {
			if c.ChunkID != ans.Hits[c.Number-1].ChunkID || c.Excerpt == "" || c.Source != "zh" {
				t.Errorf("citation %+v does not match hit %d", c, c.Number)
			}
		}
		// Zero hits: the uncertain answer, no citations, still logged.
		none, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: "jqxvwzk kzqxjvw wxzjqkv"})
		if err != nil {
			t.Fatal(err)
		}
		if none.Answer != kb.NoBasisAnswer || len(none.Citations) != 0 || len(none.Hits) != 0 || none.Cited {
			t.Errorf("zero-hit Ask = %+v, want the no-basis answer", none)
		}
		q, err := d.GetQuery(ctx, none.QueryID)
		if err != nil || q.Mode != store.QueryAsk || q.AnswerText != kb.NoBasisAnswer {
			t.Errorf("zero-hit ask log = %+v, %v", q, err)
		}
		if _, err := s.Feedback(ctx, other.ID, ans.QueryID, 5, ""); errcode.As(err) == nil || errcode.As(err).Code != errcode.NotFound {
			t.Errorf("Feedback(other user) = %v, want NOT_FOUND", err)
		}
		if _, err := s.Feedback(ctx, u.ID, ans.QueryID, 6, ""); errcode.As(err) == nil || errcode.As(err).Code != errcode.Validation {
			t.Errorf("Feedback(rating 6) = %v, want VALIDATION_ERROR", err)
		}
		if _, err := s.Feedback(ctx, u.ID, ans.QueryID, 4, "ok"); err != nil {
			t.Errorf("Feedback = %v", err)
		}
		m, err := s.Metrics(ctx, u.ID, false)
		if err != nil || m.Totals["ask"] != 2 || m.Quality["citation_coverage_pct_recent_200"] != 50.0 || m.Quality["feedback_count"] != 1 {
			t.Errorf("Metrics = %+v, %v; want 2 asks, 50%% coverage, 1 feedback", m, err)
		}
	})
}

// Through an OpenAI-compatible model over HTTP: the rerank orders the hits, and a rerank slower
// than its timeout leaves the hybrid order; an ask's citation of a fragment that is not among the
// hits is removed, and an answer left with none is marked uncited and counted so.
func TestAskAndRerankThroughAModel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.Model == "rerank-slow" {
			<-r.Context().Done()
			return
		}
		reply := map[string]string{"rerank": "2, 1", "ask-cite": "The brand colour is teal [#1], as the guide says [#9].",
			"ask-none": "It is probably teal."}[req.Model]
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": reply}}}})
	}))
	t.Cleanup(srv.Close)
	chat := llm.NewClient(llm.ClientConfig{BaseURL: srv.URL + "/v1", Retries: -1})
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		for _, text := range []string{"Our brand colour is teal.", "The old logo used a brand colour of teal and grey on white."} {
			ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "brand", Visibility: store.VisibilityPrivate, Text: text})
		}
		q := kb.SearchParams{UserID: u.ID, Query: "brand colour teal"}
		hybrid, err := s.Search(ctx, q)
		if err != nil || len(hybrid) != 2 {
			t.Fatalf("Search = %+v, %v; want 2 hits", hybrid, err)
		}
		order := func(hits []kb.Hit) []string {
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = h.ChunkID
			}
			return ids
		}
		reranked, err := kb.New(d, kb.Options{Chat: chat, RerankOn: true, RerankModel: "rerank"}).Search(ctx, q)
		if want := []string{hybrid[1].ChunkID, hybrid[0].ChunkID}; err != nil || !slices.Equal(order(reranked), want) {
			t.Errorf("reranked Search = %v, %v; want the model's order %v", order(reranked), err, want)
		}
		slow := kb.New(d, kb.Options{Chat: chat, RerankOn: true, RerankModel: "rerank-slow", RerankTimeout: 100 * time.Millisecond})
		if kept, err := slow.Search(ctx, q); err != nil || !slices.Equal(order(kept), order(hybrid)) {
			t.Errorf("Search with a rerank past its timeout = %v, %v; want the hybrid order %v", order(kept), err, order(hybrid))
		}
		ans, err := kb.New(d, kb.Options{Chat: chat, AskModel: "ask-cite"}).Ask(ctx, q)
		if err != nil || !ans.Cited || ans.Model != "ask-cite" || len(ans.Citations) != 1 || ans.Citations[0].Number != 1 ||
			!strings.Contains(ans.Answer, "teal [#1]") || strings.Contains(ans.Answer, "[#9]") {
			t.Errorf("Ask = %+v, %v; want [#1] kept and cited, [#9] removed", ans, err)
		}
		ans, err = kb.New(d, kb.Options{Chat: chat, AskModel: "ask-none"}).Ask(ctx, q)
		if err != nil || ans.Cited || len(ans.Citations) != 0 || ans.Answer != "It is probably teal." {
			t.Errorf("Ask with an uncited answer = %+v, %v; want it kept, marked uncited", ans, err)
		}
		m, err := s.Metrics(ctx, u.ID, false)
		if err != nil || m.Totals["ask"] != 2 || m.Quality["citation_coverage_pct_recent_200"] != 50.0 {
			t.Errorf("Metrics = %+v, %v; want 2 asks, 50%% coverage", m, err)
		}
	})
}

// renamed is the local embedder under another model name: a model change whose new vectors a
// search can still match.
type renamed struct {
	embed.Embedder
	model string
}

func (r renamed) Model() string { return r.model }

// batchCounter records the size of each AddEmbeddings write.
type batchCounter struct {
	store.Driver
	sizes []int
}

func (b *batchCounter) AddEmbeddings(ctx context.Context, model string, vecs map[string][]float32) error {
	b.sizes = append(b.sizes, len(vecs))
	return b.Driver.AddEmbeddings(ctx, model, vecs)
}

// A reindex after a model change re-embeds every chunk of the source, written a batch of at most
// 512 at a time, and switches the source to the new model's vectors, leaving none of the old.
func TestReindexModelChange(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		var b strings.Builder
		for i := range 700 {
			fmt.Fprintf(&b, "Shot list %d: lens%d on the tripod. %s\n\n", i, i, strings.Repeat("Keep the horizon level. ", 35))
		}
		res := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "big", Visibility: store.VisibilityPrivate, Text: b.String()})
		if res.ChunksCount <= 512 {
			t.Fatalf("%d chunks, want more than one reindex batch (512)", res.ChunksCount)
		}
		writes := &batchCounter{Driver: d}
		next := kb.New(writes, kb.Options{Embedder: renamed{embed.NewLocal(), "local-renamed"}})
		out, err := next.Reindex(ctx, u.ID, false, res.Source.ID)
		if err != nil || out.Chunks != res.ChunksCount || out.Model != "local-renamed" {
			t.Fatalf("Reindex = %+v, %v; want %d chunks of local-renamed", out, err, res.ChunksCount)
		}
		total := 0
		for _, n := range writes.sizes {
			total += n
			if n > 512 {
				t.Errorf("one AddEmbeddings of %d vectors, want at most 512 (writes %v)", n, writes.sizes)
			}
		}
		if total != res.ChunksCount {
			t.Errorf("AddEmbeddings wrote %d vectors in all (%v), want %d", total, writes.sizes, res.ChunksCount)
		}
		refs, err := d.EmbeddingRefs(ctx, store.Viewer{UserID: u.ID})
		if err != nil || len(refs) != res.ChunksCount {
			t.Fatalf("EmbeddingRefs = %d, %v; want %d", len(refs), err, res.ChunksCount)
		}
		for _, r := range refs {
			if r.Model != "local-renamed" {
				t.Fatalf("chunk %s still on model %q", r.ChunkID, r.Model)
			}
		}
		// The last paragraph's chunk was re-embedded in the last batch.
		hits, err := next.Search(ctx, kb.SearchParams{UserID: u.ID, Query: "lens699"})
		if err != nil || len(hits) == 0 || !strings.Contains(hits[0].ChunkText, "lens699") || hits[0].Scores.Vector <= 0 {
			t.Fatalf("Search(lens699) with the new model = %+v, %v; want its chunk, with a vector score", hits, err)
		}
	})
}

func TestReindex(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		res := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "r", Visibility: store.VisibilityPrivate, Text: "Reindex sample about camera angles."})
		out, err := s.Reindex(ctx, u.ID, false, res.Source.ID)
		if err != nil || out.Chunks != 1 || out.Model != s.Embedder().Model() {
			t.Fatalf("Reindex = %+v, %v", out, err)
		}
		hits, err := s.Search(ctx, kb.SearchParams{UserID: u.ID, Query: "camera angles"})
		if err != nil || len(hits) != 1 || hits[0].Scores.Vector <= 0 {
			t.Errorf("Search after reindex = %+v, %v", hits, err)
		}
		other := storetest.NewUser(t, d, "")
		if _, err := s.Reindex(ctx, other.ID, false, res.Source.ID); errcode.As(err) == nil || errcode.As(err).Code != errcode.NotFound {
			t.Errorf("Reindex(another user's source) = %v, want NOT_FOUND", err)
		}
	})
}

// batchWatch is a driver that counts the calls of an ingest's two transactions, one document or
// several at a time, and can fail the next few WriteChunksBatch calls.
type batchWatch struct {
	store.Driver
	mu                                   sync.Mutex
	add, adds, write, writes, failWrites int
	gets                                 int
}

func (w *batchWatch) GetDocument(ctx context.Context, id string) (*store.KnowledgeDocument, error) {
	w.mu.Lock()
	w.gets++
	w.mu.Unlock()
	return w.Driver.GetDocument(ctx, id)
}

func (w *batchWatch) AddDocument(ctx context.Context, src store.NewSourceParams, doc *store.KnowledgeDocument) (*store.AddDocumentResult, error) {
	w.mu.Lock()
	w.add++
	w.mu.Unlock()
	return w.Driver.AddDocument(ctx, src, doc)
}

func (w *batchWatch) AddDocuments(ctx context.Context, docs []store.NewDocument) ([]*store.AddDocumentResult, error) {
	w.mu.Lock()
	w.adds++
	w.mu.Unlock()
	return w.Driver.AddDocuments(ctx, docs)
}

func (w *batchWatch) WriteChunks(ctx context.Context, p store.WriteChunksParams) (*store.KnowledgeDocument, error) {
	w.mu.Lock()
	w.write++
	w.mu.Unlock()
	return w.Driver.WriteChunks(ctx, p)
}

func (w *batchWatch) WriteChunksBatch(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	w.mu.Lock()
	w.writes++
	fail := w.failWrites > 0
	w.failWrites--
	w.mu.Unlock()
	if fail {
		return nil, errors.New("batchWatch: this write fails")
	}
	return w.Driver.WriteChunksBatch(ctx, docs)
}

// TestIngestAnswersFromWrite: an ingest of one document answers with the document as its chunk
// write left it, without reading it again (a round trip on PostgreSQL; the target is one document
// a call, BENCHMARKS.md), and that is the document as stored.
func TestIngestAnswersFromWrite(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		u := storetest.NewUser(t, d, "")
		w := &batchWatch{Driver: d}
		s := kb.New(w, kb.Options{})
		res := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "answer", Visibility: store.VisibilityPrivate,
			Text: strings.Repeat("Answer from the write of the chunks. ", 60)})
		if w.gets != 0 {
			t.Errorf("Ingest read the document %d times, want 0", w.gets)
		}
		stored, err := d.GetDocument(context.Background(), res.Document.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Document, stored) || stored.ParseStatus != store.DocIndexed || stored.ChunkCount != res.ChunksCount {
			t.Errorf("Ingest answered %+v, stored %+v; want the same, indexed with %d chunks", res.Document, stored, res.ChunksCount)
		}
	})
}

// IngestBatch answers in item order, keeps a bad item's error at its place, makes a repeated item
// a duplicate of the indexed document, as a serial loop would, and adds and writes the distinct
// documents of a group in one transaction each.
func TestIngestBatch(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		u := storetest.NewUser(t, d, "")
		w := &batchWatch{Driver: d}
		s := kb.New(w, kb.Options{})
		item := func(title, text string) kb.IngestParams {
			return kb.IngestParams{UserID: u.ID, SourceName: "batch", Visibility: store.VisibilityPrivate, Title: title, Text: text}
		}
		items := []kb.IngestParams{
			item("a", "Hook the viewer in the first three seconds."),
			item("b", "Subtitles raise the completion rate of muted plays."),
			item("a again", "Hook the viewer in the first three seconds."),
			item("empty", "   "),
			item("c", "Post when the audience is online: evenings and lunch breaks."),
			item("a once more", "Hook the viewer in the first three seconds."),
		}
		out := s.IngestBatch(context.Background(), items)
		if len(out) != len(items) {
			t.Fatalf("%d outcomes for %d items", len(out), len(items))
		}
		for _, i := range []int{0, 1, 4} {
			o := out[i]
			if o.Err != nil || o.Result.Duplicate || o.Result.Document.Title != items[i].Title ||
				o.Result.Document.ParseStatus != store.DocIndexed || o.Result.ChunksCount != 1 {
				t.Errorf("item %d = %+v, %v; want %q indexed, not a duplicate", i, o.Result, o.Err, items[i].Title)
			}
		}
		first := out[0].Result.Document
		for _, i := range []int{2, 5} {
			o := out[i]
			if o.Err != nil || !o.Result.Duplicate || o.Result.Document.ID != first.ID ||
				o.Result.Document.ParseStatus != store.DocIndexed || o.Result.ChunksCount != 1 {
				t.Errorf("item %d = %+v, %v; want a duplicate of the indexed document %s", i, o.Result, o.Err, first.ID)
			}
		}
		if e := errcode.As(out[3].Err); e == nil || e.Code != errcode.Validation {
			t.Errorf("empty item: %v, want VALIDATION_ERROR", out[3].Err)
		}
		// The three distinct documents: one AddDocuments, one WriteChunksBatch; the two repeats
		// went through Ingest after them (AddDocument each, nothing to write).
		if w.adds != 1 || w.writes != 1 || w.add != 2 || w.write != 0 {
			t.Errorf("AddDocuments %d, WriteChunksBatch %d, AddDocument %d, WriteChunks %d; want 1, 1, 2, 0", w.adds, w.writes, w.add, w.write)
		}
		// The documents written answer as the write left them: none is read again.
		if w.gets != 0 {
			t.Errorf("GetDocument %d times, want 0: the batch answers from its write", w.gets)
		}
	})
}

// TestIngestBatchGroups: a batch of several groups is written a group at a time, every document
// indexed and found; a group whose transaction fails is written one document at a time.
func TestIngestBatchGroups(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		w := &batchWatch{Driver: d, failWrites: 1}
		s := kb.New(w, kb.Options{})
		n := 2*kb.BatchGroup + 3
		items := make([]kb.IngestParams, n)
		for i := range items {
			items[i] = kb.IngestParams{UserID: u.ID, SourceName: "groups", Visibility: store.VisibilityPrivate,
				Text: fmt.Sprintf("Note %d: the marmot%d shot needs a second lamp.", i, i)}
		}
		for i, o := range s.IngestBatch(ctx, items) {
			if o.Err != nil || o.Result.Duplicate || o.Result.Document.ParseStatus != store.DocIndexed || o.Result.ChunksCount != 1 {
				t.Fatalf("item %d = %+v, %v; want indexed", i, o.Result, o.Err)
			}
		}
		// Three groups, added in one transaction on SQLite (TestIngestBatchAddsFirst), one a group
		// on PostgreSQL; the batch write that came first failed and its group's documents went one
		// by one (on PostgreSQL two groups are written at once, so it may be the second group, or
		// the last, of 3 documents).
		adds := 3
		if !d.ParallelWrites() {
			adds = 1
		}
		if w.adds != adds || w.writes != 3 || (w.write != kb.BatchGroup && w.write != 3) {
			t.Errorf("AddDocuments %d, WriteChunksBatch %d, WriteChunks %d; want %d, 3, %d or 3", w.adds, w.writes, w.write, adds, kb.BatchGroup)
		}
		for _, i := range []int{0, kb.BatchGroup, n - 1} {
			hits, err := s.Search(ctx, kb.SearchParams{UserID: u.ID, Query: fmt.Sprintf("marmot%d", i)})
			if err != nil || len(hits) == 0 || !strings.Contains(hits[0].ChunkText, fmt.Sprintf("marmot%d ", i)) {
				t.Errorf("Search(marmot%d) = %+v, %v", i, hits, err)
			}
		}
	})
}

// TestIngestBatchAddsFirst: on a store of one writer at a time (SQLite) a batch adds the documents
// of all its groups, in one transaction, before it writes the first group's chunks, so no add
// waits behind a chunk write while the next group could be parsed and embedded beside it (the
// bench's HTTP case: batch/text, 50 documents a call, BENCHMARKS.md).
func TestIngestBatchAddsFirst(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		if d.ParallelWrites() {
			t.Skip("a store of parallel writes adds a group at a time")
		}
		u := storetest.NewUser(t, d, "")
		w := &orderWatch{Driver: d}
		s := kb.New(w, kb.Options{})
		items := make([]kb.IngestParams, 2*kb.BatchGroup+3)
		for i := range items {
			items[i] = kb.IngestParams{UserID: u.ID, SourceName: "first", Visibility: store.VisibilityPrivate,
				Text: fmt.Sprintf("Note %d: the ibex%d shot needs a reflector.", i, i)}
		}
		for i, o := range s.IngestBatch(context.Background(), items) {
			if o.Err != nil || o.Result.Document.ParseStatus != store.DocIndexed {
				t.Fatalf("item %d = %+v, %v; want indexed", i, o.Result, o.Err)
			}
		}
		if got := strings.Join(w.calls, " "); got != "add write write write" {
			t.Errorf("calls %q, want the three groups added at once, then written", got)
		}
	})
}

// orderWatch is a driver that records the order of AddDocuments and WriteChunksBatch calls.
type orderWatch struct {
	store.Driver
	mu    sync.Mutex
	calls []string
}

func (w *orderWatch) AddDocuments(ctx context.Context, docs []store.NewDocument) ([]*store.AddDocumentResult, error) {
	w.mu.Lock()
	w.calls = append(w.calls, "add")
	w.mu.Unlock()
	return w.Driver.AddDocuments(ctx, docs)
}

func (w *orderWatch) WriteChunksBatch(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	w.mu.Lock()
	w.calls = append(w.calls, "write")
	w.mu.Unlock()
	return w.Driver.WriteChunksBatch(ctx, docs)
}

// overlapWatch is a driver whose WriteChunksBatch waits, up to a second, for a second one to be in
// flight, and records the most in flight at once.
type overlapWatch struct {
	store.Driver
	mu             sync.Mutex
	inFlight, most int
	second         chan struct{} // closed when two are first in flight
	closed         bool
}

func (w *overlapWatch) WriteChunksBatch(ctx context.Context, docs []store.WriteChunksParams) ([]*store.KnowledgeDocument, error) {
	w.mu.Lock()
	w.inFlight++
	w.most = max(w.most, w.inFlight)
	if w.inFlight == 2 && w.most == 2 && !w.closed {
		w.closed = true
		close(w.second)
	}
	w.mu.Unlock()
	select {
	case <-w.second:
	case <-time.After(time.Second):
	}
	defer func() {
		w.mu.Lock()
		w.inFlight--
		w.mu.Unlock()
	}()
	return w.Driver.WriteChunksBatch(ctx, docs)
}

// TestIngestBatchWriters: on a database whose writers do not take turns, two groups of a batch are
// written at once; on SQLite one at a time.
func TestIngestBatchWriters(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		u := storetest.NewUser(t, d, "")
		w := &overlapWatch{Driver: d, second: make(chan struct{})}
		s := kb.New(w, kb.Options{})
		items := make([]kb.IngestParams, 3*kb.BatchGroup)
		for i := range items {
			items[i] = kb.IngestParams{UserID: u.ID, SourceName: "writers", Visibility: store.VisibilityPrivate,
				Text: fmt.Sprintf("Note %d: the quokka%d scene wants a warmer grade.", i, i)}
		}
		for i, o := range s.IngestBatch(context.Background(), items) {
			if o.Err != nil || o.Result.Document.ParseStatus != store.DocIndexed || o.Result.ChunksCount != 1 {
				t.Fatalf("item %d = %+v, %v; want indexed", i, o.Result, o.Err)
			}
		}
		want := 1
		if d.ParallelWrites() {
			want = 2
		}
		if w.most != want {
			t.Errorf("at most %d group writes at once, want %d", w.most, want)
		}
	})
}

// TestIngestTakesOverDeadHolder: a document whose ingest's host stopped renewing its lease is
// ingested again in place by the next upload at once (no 15-minute wait), and one failed by
// FailAbandonedDocuments carries the reason until then.
func TestIngestTakesOverDeadHolder(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		live := kb.New(d, kb.Options{Holder: "h2/live", Lease: time.Hour})
		text := "A document whose ingest died with its host, about wombat lanterns."
		sum := sha256.Sum256([]byte(text))
		doc := &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "text.txt", FileHash: hex.EncodeToString(sum[:]),
			ParseStatus: store.DocParsing, HeldBy: "h1/dead"}
		doc.Lease = -time.Second // run out already
		if _, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "held", Visibility: store.VisibilityPrivate}, doc); err != nil {
			t.Fatal(err)
		}
		p := kb.IngestParams{UserID: u.ID, SourceName: "held", Visibility: store.VisibilityPrivate, Text: text}
		res := ingest(t, live, p)
		if res.Duplicate || res.Document.ID != doc.ID || res.Document.ParseStatus != store.DocIndexed {
			t.Errorf("upload over a dead holder's document: duplicate %v, document %+v; want %s indexed in place", res.Duplicate, res.Document, doc.ID)
		}

		// A document held by a live holder is refused as still being indexed; once its holder's
		// host is known dead (its own restart), it is failed with the reason.
		text2 := "Another document, about capybara kites, caught mid-ingest."
		sum2 := sha256.Sum256([]byte(text2))
		doc2 := &store.KnowledgeDocument{ID: uuid.NewString(), UserID: u.ID, Filename: "text.txt", FileHash: hex.EncodeToString(sum2[:]),
			ParseStatus: store.DocParsing, HeldBy: "h3/life1", Lease: time.Hour}
		if _, err := d.AddDocument(ctx, store.NewSourceParams{CreatedBy: u.ID, Name: "held", Visibility: store.VisibilityPrivate}, doc2); err != nil {
			t.Fatal(err)
		}
		if n, err := d.FailAbandonedDocuments(ctx, "", "interrupted"); err != nil || n != 0 {
			t.Errorf("FailAbandonedDocuments(any) = %d, %v; want 0 (the lease is live)", n, err)
		}
		if n, err := d.FailAbandonedDocuments(ctx, "h3", "interrupted: host stopped"); err != nil || n != 1 {
			t.Errorf("FailAbandonedDocuments(h3) = %d, %v; want 1", n, err)
		}
		got, err := d.GetDocument(ctx, doc2.ID)
		if err != nil || got.ParseStatus != store.DocFailed || got.ErrorMessage != "interrupted: host stopped" {
			t.Errorf("document after its host's restart = %+v, %v; want failed with the reason", got, err)
		}
	})
}

// TestVectorCacheBudget ingests more vectors than a 1 MiB cache holds: the cache stays within its
// budget by evicting, and searches through it (which reload what it evicted) find exactly what a
// service with the whole corpus cached finds. A store that ranks vectors itself (pgvector) keeps
// nothing in the cache.
func TestVectorCacheBudget(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		small := kb.New(d, kb.Options{VectorCacheMB: 1})
		v := textgen.NewVocab(rand.New(rand.NewPCG(5, 6)))
		chunks := 0
		for chunks < 400 { // about 2.5 MB of 1536-dimension vectors
			res := ingest(t, small, kb.IngestParams{UserID: u.ID, SourceName: "many", Visibility: store.VisibilityPrivate, Text: v.Text(10)})
			chunks += res.ChunksCount
		}
		st := small.VectorCacheStats()
		if d.SupportsVectorSearch() {
			if st.Entries != 0 || st.Bytes != 0 {
				t.Fatalf("pgvector: the cache holds %d vectors (%d bytes), want none", st.Entries, st.Bytes)
			}
		} else if st.BudgetBytes != 1<<20 || st.Bytes > st.BudgetBytes || st.Evictions == 0 || st.Entries == 0 || st.Entries >= chunks {
			t.Fatalf("after ingesting %d chunks: %+v; want within 1 MiB, with evictions", chunks, st)
		}
		full := kb.New(d, kb.Options{})
		for i := 0; i < 12; i++ {
			q := kb.SearchParams{UserID: u.ID, Query: v.Word() + " " + v.Word() + " " + v.Word(), TopK: 10}
			want, err := full.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := small.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			same := func(a, b kb.Hit) bool { return a.ChunkID == b.ChunkID && a.Scores == b.Scores }
			if d.SupportsVectorSearch() {
				// pgvector scores a chunk by an exact scan until the background indexer moves it into
				// the HNSW index, and by the index afterwards: the same halfvec distance, summed in
				// another order, may differ in the fourth decimal between the two searches.
				same = func(a, b kb.Hit) bool {
					return a.ChunkID == b.ChunkID && math.Abs(a.Scores.Total-b.Scores.Total) < 1e-3 &&
						math.Abs(a.Scores.Vector-b.Scores.Vector) < 1e-3 && a.Scores.Keyword == b.Scores.Keyword
				}
			}
			if !slices.EqualFunc(got, want, same) {
				t.Errorf("%q through the 1 MiB cache: %v\nwith all vectors cached: %v", q.Query, ranked(got), ranked(want))
			}
			if i == 0 && len(want) == 0 {
				t.Errorf("%q found nothing: the comparison proves little", q.Query)
			}
		}
		st = small.VectorCacheStats()
		if !d.SupportsVectorSearch() && (st.Bytes > st.BudgetBytes || st.Misses == 0 || st.Hits == 0) {
			t.Errorf("after the searches: %+v; want within budget, with hits and misses", st)
		}
	})
}

// ranked is hits as chunk id and scores, for messages.
func ranked(hits []kb.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s %+v", h.ChunkID, h.Scores)
	}
	return out
}

// signalling is the local embedder, which says when it is first asked for a chunk's vector.
type signalling struct {
	*embed.Local
	once    sync.Once
	started chan struct{}
}

func (e *signalling) VectorOf(toks []segment.Token) []float32 {
	e.once.Do(func() { close(e.started) })
	return e.Local.VectorOf(toks)
}

// counting is a remote embedder (without the local embedder's token path) that counts the texts
// it is asked to embed.
type counting struct {
	embed.Embedder
	texts atomic.Int64
}

func (e *counting) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.texts.Add(int64(len(texts)))
	return e.Embedder.Embed(ctx, texts)
}

// waitingAdd is a driver whose AddDocument waits for the embedder to start first.
type waitingAdd struct {
	store.Driver
	started chan struct{}
}

func (w waitingAdd) AddDocument(ctx context.Context, src store.NewSourceParams, doc *store.KnowledgeDocument) (*store.AddDocumentResult, error) {
	select {
	case <-w.started:
	case <-time.After(10 * time.Second):
		return nil, errors.New("waitingAdd: the chunks were not being embedded while AddDocument ran")
	}
	return w.Driver.AddDocument(ctx, src, doc)
}

// TestIngestEmbedsWhileAdding: an ingest embeds its chunks with the local embedder while the
// document row is being added (the two overlap), and the chunks belong to the document and source
// AddDocument gives. A remote embedder, whose calls are paid for, is asked only once the document
// is known not to be a duplicate.
func TestIngestEmbedsWhileAdding(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, _ *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		emb := &signalling{Local: embed.NewLocal(), started: make(chan struct{})}
		s := kb.New(waitingAdd{d, emb.started}, kb.Options{Embedder: emb})
		text := strings.Repeat("Overlapping ingest of quokka lighting notes. ", 60)
		res := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "overlap", Visibility: store.VisibilityPrivate, Text: text})
		if res.Duplicate || res.ChunksCount < 2 || res.Document.ParseStatus != store.DocIndexed {
			t.Fatalf("Ingest = duplicate %v, %d chunks, status %s; want a new document indexed in several chunks", res.Duplicate, res.ChunksCount, res.Document.ParseStatus)
		}
		hits, err := s.Search(ctx, kb.SearchParams{UserID: u.ID, Query: "quokka lighting", TopK: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			t.Fatal("search found no chunk of the document")
		}
		for _, h := range hits {
			if h.DocumentID != res.Document.ID || h.SourceID != res.Source.ID {
				t.Errorf("hit of document %s in source %s, want document %s in source %s", h.DocumentID, h.SourceID, res.Document.ID, res.Source.ID)
			}
		}
		// The same content again: a duplicate, and nothing more is written.
		again := ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "overlap", Visibility: store.VisibilityPrivate, Text: text})
		if !again.Duplicate || again.Document.ID != res.Document.ID || again.ChunksCount != res.ChunksCount {
			t.Errorf("second ingest = duplicate %v of %s with %d chunks; want a duplicate of %s with %d", again.Duplicate,
				again.Document.ID, again.ChunksCount, res.Document.ID, res.ChunksCount)
		}

		remote := &counting{Embedder: renamed{embed.NewLocal(), "remote-model"}}
		rs := kb.New(d, kb.Options{Embedder: remote})
		p := kb.IngestParams{UserID: u.ID, SourceName: "remote", Visibility: store.VisibilityPrivate, Text: text}
		if first := ingest(t, rs, p); first.Duplicate || remote.texts.Load() != int64(first.ChunksCount) {
			t.Fatalf("remote: duplicate %v, %d texts embedded for %d chunks", first.Duplicate, remote.texts.Load(), first.ChunksCount)
		}
		before := remote.texts.Load()
		if dup := ingest(t, rs, p); !dup.Duplicate || remote.texts.Load() != before {
			t.Errorf("remote, the same content again: duplicate %v, %d texts embedded more; want a duplicate embedding none",
				dup.Duplicate, remote.texts.Load()-before)
		}
	})
}
