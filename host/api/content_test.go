package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/blob/blobtest"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
)

// frames records client frames.
type frames struct {
	mu  sync.Mutex
	got []events.Frame
}

func (f *frames) Notify(_ context.Context, fr events.Frame) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, fr)
}

func (f *frames) count(typ, action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, fr := range f.got {
		if fr.Type == typ && fr.Data["action"] == action && fr.Data["assetId"] != "" {
			n++
		}
	}
	return n
}

// setupContent is setup with the content service wired (uploads limited to limit bytes).
func setupContent(t *testing.T, open func(*testing.T) store.Driver, limit int, notify ...events.Notifier) *testBundle {
	t.Helper()
	return setupContentWith(t, open, limit, func(c *content.Config) { c.Notifier = firstNotifier(notify) })
}

// setupContentWith is setupContent with tweak applied to the content service's configuration.
func setupContentWith(t *testing.T, open func(*testing.T) store.Driver, limit int, tweak func(*content.Config)) *testBundle {
	t.Helper()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	cfg.UploadLimit = limit
	st := open(t)
	s := &api.Server{Config: &cfg, Store: st, Auth: auth.New(st, cfg.JWTSecret, bcrypt.MinCost), Log: slog.New(slog.DiscardHandler)}
	cc := content.Config{Store: st, DataDir: cfg.DataDir, UploadLimit: int64(limit),
		Fetcher: content.NewFetcher(content.FetcherConfig{Timeout: time.Second}),
		SyncBlueprint: func(ctx context.Context, tx content.StrategyTasks, projectID string, bp json.RawMessage) error {
			return scheduler.SyncBlueprint(ctx, tx, projectID, bp)
		}}
	if tweak != nil {
		tweak(&cc)
	}
	s.Content = content.New(cc)
	return &testBundle{t: t, app: s.App(), st: st}
}

func firstNotifier(n []events.Notifier) events.Notifier {
	if len(n) > 0 {
		return n[0]
	}
	return nil
}

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde")

func wavBytes() []byte {
	return append([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"), make([]byte, 64)...)
}

// upload posts one file in a multipart form.
func (b *testBundle) upload(path, token, field, name, ctype string, data []byte, fields map[string]string) resp {
	b.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, field, name))
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	part, _ := w.CreatePart(h)
	_, _ = part.Write(data)
	_ = w.Close()
	req := httptest.NewRequest("POST", path, &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := testApp(b.t, b.app, req)
	if err != nil {
		b.t.Fatalf("upload: %v", err)
	}
	raw, _ := io.ReadAll(res.Body)
	out := resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func ids(items any) []string {
	out := []string{}
	list, _ := items.([]any)
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["id"]))
		}
	}
	return out
}

func has(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestInspirationAndCorpus(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setupContent(t, d.open, 1<<20)
			a, _ := b.user("alice")
			other, _ := b.user("bob")
			theirs := b.project(other, "bob's")

			// A link on a loopback address: refused by the SSRF guard, still collected.
			r := b.do("POST", "/api/inspiration/collect", a, map[string]any{"type": "link", "content": "http://127.0.0.1:9/page", "tags": []string{"food"}})
			if r.status != 201 || r.data("preview") == nil {
				t.Fatalf("collect link = %d %s", r.status, r.raw)
			}
			first := r.body["id"].(string)
			insp := r.data("inspiration").(map[string]any)
			if insp["status"] != "unread" || insp["inspiration_type"] != "collection" || !strings.Contains(fmt.Sprint(insp["metadata"]), "refused") {
				t.Errorf("collected record = %v, want unread collection with the refusal noted", insp)
			}
			r = b.do("POST", "/api/inspiration/collect", a, map[string]any{"type": "link", "content": "看看 http://127.0.0.2:9/v/abc 复制此链接"})
			if r.status != 201 || r.data("inspiration").(map[string]any)["source_url"] != "http://127.0.0.2:9/v/abc" {
				t.Errorf("collect share text = %d %s, want the link taken out of the text", r.status, r.raw)
			}
			r = b.do("POST", "/api/inspiration/collect", a, map[string]any{"type": "text", "content": "An idea\nwith details", "tags": []string{"travel"}})
			if r.status != 201 {
				t.Fatalf("collect text = %d %s", r.status, r.raw)
			}
			third := r.body["id"].(string)
			b.do("POST", "/api/inspiration/collect", other, map[string]any{"type": "text", "content": "bob's idea", "tags": []string{"food"}})

			tests := map[string]struct {
				method, path, token string
				body                any
				wantStatus          int
				wantCode            string
			}{
				"collect without content":   {"POST", "/api/inspiration/collect", a, map[string]any{"type": "link"}, 400, "VALIDATION_ERROR"},
				"collect bad type":          {"POST", "/api/inspiration/collect", a, map[string]any{"type": "poem", "content": "x"}, 400, "VALIDATION_ERROR"},
				"collect not a link":        {"POST", "/api/inspiration/collect", a, map[string]any{"type": "link", "content": "no link here"}, 400, "VALIDATION_ERROR"},
				"collect other's project":   {"POST", "/api/inspiration/collect", a, map[string]any{"type": "text", "content": "x", "project_id": theirs}, 403, "AUTHORIZATION_ERROR"},
				"feed other's project":      {"GET", "/api/inspiration/unified-feed?project_id=" + theirs, a, nil, 403, "AUTHORIZATION_ERROR"},
				"feed bad tab":              {"GET", "/api/inspiration/unified-feed?content_type=nope", a, nil, 400, "VALIDATION_ERROR"},
				"feed bad source":           {"GET", "/api/inspiration/unified-feed?source=nope", a, nil, 400, "VALIDATION_ERROR"},
				"feed limit 0":              {"GET", "/api/inspiration/unified-feed?limit=0", a, nil, 400, "VALIDATION_ERROR"},
				"convert other's":           {"POST", "/api/inspiration/" + first + "/convert-to-task", other, nil, 404, "NOT_FOUND"},
				"convert missing":           {"POST", "/api/inspiration/" + uuid.NewString() + "/convert-to-task", a, nil, 404, "NOT_FOUND"},
				"get other's":               {"GET", "/api/corpus/" + first, other, nil, 404, "NOT_FOUND"},
				"delete other's":            {"DELETE", "/api/corpus/" + first, other, nil, 404, "NOT_FOUND"},
				"status other's":            {"PATCH", "/api/corpus/" + first, other, map[string]any{"status": "read"}, 404, "NOT_FOUND"},
				"bad status":                {"PATCH", "/api/corpus/" + first, a, map[string]any{"status": "gone"}, 400, "VALIDATION_ERROR"},
				"corpus page 0":             {"GET", "/api/corpus?page=0", a, nil, 400, "VALIDATION_ERROR"},
				"corpus limit 101":          {"GET", "/api/corpus?limit=101", a, nil, 400, "VALIDATION_ERROR"},
				"parse-link without url":    {"POST", "/api/inspiration/parse-link", a, map[string]any{}, 400, "VALIDATION_ERROR"},
				"parse-link not http":       {"POST", "/api/inspiration/parse-link", a, map[string]any{"url": "ftp://x"}, 400, "VALIDATION_ERROR"},
				"parse-link metadata":       {"POST", "/api/inspiration/parse-link", a, map[string]any{"url": "http://169.254.169.254/latest"}, 201, ""},
				"mark read":                 {"PUT", "/api/corpus/" + third, a, map[string]any{"status": "read"}, 200, ""},
				"feed collection tab":       {"GET", "/api/inspiration/unified-feed?content_type=collection&source=user", a, nil, 200, ""},
				"feed asset tab":            {"GET", "/api/inspiration/unified-feed?content_type=asset", a, nil, 200, ""},
				"chat without message":      {"POST", "/api/ai/chat", a, map[string]any{"chatflowType": "kb"}, 400, "VALIDATION_ERROR"},
				"rewrite without content":   {"POST", "/api/strategy/rewrite", a, map[string]any{"style": "humorous"}, 400, "VALIDATION_ERROR"},
				"rewrite unknown style":     {"POST", "/api/strategy/rewrite", a, map[string]any{"content": "x", "style": "klingon"}, 400, "VALIDATION_ERROR"},
				"diagnosis without answers": {"POST", "/api/strategy/diagnosis", a, map[string]any{}, 400, "VALIDATION_ERROR"},
				"diagnosis bad answers":     {"POST", "/api/strategy/diagnosis", a, map[string]any{"answers": []any{5}}, 400, "VALIDATION_ERROR"},
			}
			for name, tc := range tests {
				r := b.do(tc.method, tc.path, tc.token, tc.body)
				if r.status != tc.wantStatus || r.code() != tc.wantCode {
					t.Errorf("%s: %s %s = %d %q, want %d %q (%s)", name, tc.method, tc.path, r.status, r.code(), tc.wantStatus, tc.wantCode, r.raw)
				}
			}

			// The feed: newest first, paging edges, stats.
			r = b.do("GET", "/api/inspiration/unified-feed?limit=2&source=user", a, nil)
			items := r.data("items")
			if r.status != 200 || len(ids(items)) != 2 || r.data("hasMore") != true {
				t.Fatalf("feed page 1 = %d %s", r.status, r.raw)
			}
			stats := r.data("stats").(map[string]any)
			if stats["total"] != float64(4) || stats["collection"] != float64(4) || stats["asset"] != float64(0) {
				t.Errorf("feed stats = %v, want total 4 (3 collected + parse-link)", stats)
			}
			r = b.do("GET", "/api/inspiration/unified-feed?limit=2&page=2&source=user", a, nil)
			if got := ids(r.data("items")); len(got) != 2 || r.data("hasMore") != false || !has(got, first) {
				t.Errorf("feed page 2 = %v hasMore %v, want the 2 oldest and no more", got, r.data("hasMore"))
			}
			r = b.do("GET", "/api/inspiration/unified-feed?limit=2&page=9", a, nil)
			if len(ids(r.data("items"))) != 0 || r.data("hasMore") != false {
				t.Errorf("feed past the end = %s", r.raw)
			}
			if r = b.do("GET", "/api/inspiration/unified-feed?source=studio", a, nil); len(ids(r.data("items"))) != 0 {
				t.Errorf("studio feed = %s, want no items", r.raw)
			}

			// Corpus listing: tag filter, others never listed.
			r = b.do("GET", "/api/corpus?tag=food", a, nil)
			if got := ids(r.body["data"]); r.status != 200 || len(got) != 1 || got[0] != first || r.body["total"] != float64(1) {
				t.Errorf("corpus?tag=food = %d %s, want only the first", r.status, r.raw)
			}
			r = b.do("GET", "/api/corpus?limit=1&page=2", a, nil)
			if got := ids(r.body["data"]); len(got) != 1 || r.body["total"] != float64(4) || r.body["page"] != float64(2) {
				t.Errorf("corpus page 2 = %s", r.raw)
			}

			// Convert: task_id, usage_count + 1.
			r = b.do("POST", "/api/inspiration/"+first+"/convert-to-task", a, nil)
			taskID, _ := r.body["task_id"].(string)
			if r.status != 201 || uuid.Validate(taskID) != nil {
				t.Fatalf("convert = %d %s", r.status, r.raw)
			}
			task, err := b.st.GetCaptureTask(t.Context(), taskID)
			if err != nil || task.TaskType != "shoot" || task.Status != "pending" || !strings.Contains(string(task.ReferenceContent), first) {
				t.Errorf("capture task = %+v, %v", task, err)
			}
			r = b.do("GET", "/api/corpus/"+first, a, nil)
			if r.status != 200 || r.data("corpus").(map[string]any)["usage_count"] != float64(1) || r.data("relatedAssets") == nil {
				t.Errorf("corpus after convert = %d %s", r.status, r.raw)
			}

			// Batch collect: one inspiration per link, a bad link fails only its item.
			r = b.do("POST", "/api/batch/collect", a, map[string]any{"urls": []string{"http://127.0.0.1:9/a", "not a link"}})
			if r.status != 201 || r.data("status") != "partial" || len(r.data("items").([]any)) != 2 {
				t.Fatalf("batch/collect = %d %s", r.status, r.raw)
			}
			bid := r.data("batch_id").(string)
			if r = b.do("GET", "/api/batch/"+bid+"/status", a, nil); r.status != 200 || r.data("status") != "partial" {
				t.Errorf("batch status = %d %s", r.status, r.raw)
			}
			if r = b.do("GET", "/api/batch/"+bid+"/status", other, nil); r.status != 404 {
				t.Errorf("other's batch status = %d", r.status)
			}
			if r = b.do("POST", "/api/batch/collect", a, map[string]any{"urls": []string{}}); r.status != 400 {
				t.Errorf("empty batch/collect = %d", r.status)
			}
			if r = b.do("GET", "/api/corpus?limit=100", a, nil); r.body["total"] != float64(5) {
				t.Errorf("corpus after batch collect: total %v, want 5", r.body["total"])
			}

			// Soft delete.
			if r = b.do("DELETE", "/api/corpus/"+first, a, nil); r.status != 200 {
				t.Fatalf("delete = %d %s", r.status, r.raw)
			}
			if r = b.do("GET", "/api/corpus/"+first, a, nil); r.status != 404 {
				t.Errorf("get deleted = %d", r.status)
			}
			if r = b.do("POST", "/api/inspiration/"+first+"/convert-to-task", a, nil); r.status != 404 {
				t.Errorf("convert deleted = %d", r.status)
			}
			if r = b.do("GET", "/api/corpus?limit=100", a, nil); has(ids(r.body["data"]), first) {
				t.Errorf("deleted record still listed")
			}
		})
	}
}

func TestSmartFeed(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<html><head><title>Latte art</title>
		<meta property="og:description" content="Five latte art patterns in one minute. Start with the heart."></head></html>`)
	}))
	t.Cleanup(page.Close)
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setupContentWith(t, d.open, 1<<20, func(c *content.Config) {
				c.Fetcher = content.NewFetcher(content.FetcherConfig{Timeout: 3 * time.Second, Allow: []string{"127.0.0.1"}})
			})
			a, _ := b.user("alice")
			other, _ := b.user("bob")

			r := b.do("POST", "/api/inspiration/collect", a, map[string]any{"type": "text",
				"content": "Film the morning market at sunrise. Close-ups of steaming buns. End on the vendor's smile."})
			text := r.data("inspiration").(map[string]any)
			if r.status != 201 || text["ai_summary"] != "Film the morning market at sunrise. Close-ups of steaming buns. End on the vendor's smile." ||
				r.data("preview").(map[string]any)["summary"] != text["ai_summary"] {
				t.Fatalf("collect text = %d %s, want the extractive ai_summary", r.status, r.raw)
			}
			r = b.do("POST", "/api/inspiration/collect", a, map[string]any{"type": "link", "content": page.URL + "/v/1"})
			link := r.data("inspiration").(map[string]any)
			if r.status != 201 || link["ai_summary"] != "Five latte art patterns in one minute. Start with the heart." {
				t.Fatalf("collect link = %d %s, want the page description summarized", r.status, r.raw)
			}
			// A link whose page could not be read has nothing to summarize: not in the smart tab.
			r = b.do("POST", "/api/inspiration/collect", a, map[string]any{"type": "link", "content": "http://169.254.169.254/x"})
			refused := r.body["id"].(string)
			if r.status != 201 || r.data("inspiration").(map[string]any)["ai_summary"] != "" {
				t.Fatalf("collect refused link = %d %s, want no ai_summary", r.status, r.raw)
			}
			r = b.do("POST", "/api/inspiration/collect", other, map[string]any{"type": "text", "content": "Bob's secret idea. Do not show."})
			bobs := r.body["id"].(string)

			r = b.do("GET", "/api/inspiration/unified-feed?content_type=smart", a, nil)
			got := ids(r.data("items"))
			if r.status != 200 || len(got) != 2 || got[0] != link["id"] || got[1] != text["id"] || has(got, refused) || has(got, bobs) {
				t.Errorf("smart tab = %d %v, want the link and the text (newest first), not the refused link or bob's", r.status, got)
			}
			if stats := r.data("stats").(map[string]any); stats["smart"] != float64(2) || stats["total"] != float64(3) {
				t.Errorf("stats = %v, want smart 2 of total 3", stats)
			}
			r = b.do("GET", "/api/inspiration/unified-feed?content_type=smart&limit=1&page=2", a, nil)
			if got := ids(r.data("items")); len(got) != 1 || got[0] != text["id"] || r.data("hasMore") != false {
				t.Errorf("smart tab page 2 = %s", r.raw)
			}
			r = b.do("GET", "/api/inspiration/unified-feed?content_type=smart", other, nil)
			if got := ids(r.data("items")); len(got) != 1 || got[0] != bobs {
				t.Errorf("bob's smart tab = %v, want only his own item", got)
			}
		})
	}
}

// blobStores are the stores uploaded files may go to: the local folder (nil: content's default,
// DATA_DIR) and an S3-compatible server spoken to over real HTTP.
func blobStores() map[string]func(t *testing.T) blob.Store {
	return map[string]func(t *testing.T) blob.Store{
		"local": func(*testing.T) blob.Store { return nil },
		"s3":    func(t *testing.T) blob.Store { return blobtest.NewS3(t) },
	}
}

func TestMaterials(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		for storage, newBlobs := range blobStores() {
			t.Run(d.name+"/"+storage, func(t *testing.T) {
				t.Parallel()
				testMaterials(t, d.open, newBlobs(t))
			})
		}
	}
}

// testMaterials exercises the materials routes on one database and one blob store (nil: DATA_DIR).
func testMaterials(t *testing.T, open func(*testing.T) store.Driver, blobs blob.Store) {
	const limit = 4096
	rec := &frames{}
	var dataDir string
	b := setupContentWith(t, open, limit, func(c *content.Config) { c.Notifier, c.Blobs, dataDir = rec, blobs, c.DataDir })
	a, _ := b.user("alice")
	other, _ := b.user("bob")
	theirs := b.project(other, "bob's")

	r := b.upload("/api/materials/upload", a, "file", "../../etc/passwd.png", "image/png", pngBytes, map[string]string{"tags": "cover,hero"})
	if r.status != 201 {
		t.Fatalf("upload png = %d %s", r.status, r.raw)
	}
	img := r.data("asset").(map[string]any)
	if img["file_type"] != "image" || img["file_size"] != float64(len(pngBytes)) || img["original_name"] != "passwd.png" ||
		strings.Contains(fmt.Sprint(img["file_path"]), "..") || strings.Contains(fmt.Sprint(img["file_path"]), "passwd") {
		t.Errorf("asset = %v", img)
	}
	r = b.upload("/api/materials/upload", a, "file", "s.wav", "audio/wav", wavBytes(), nil)
	if r.status != 201 || r.data("asset").(map[string]any)["file_type"] != "audio" {
		t.Fatalf("upload wav = %d %s", r.status, r.raw)
	}
	aud := r.data("asset").(map[string]any)
	r = b.upload("/api/materials/upload", other, "file", "o.png", "", pngBytes, nil)
	if r.status != 201 {
		t.Fatalf("upload other = %d %s", r.status, r.raw)
	}
	their := r.data("asset").(map[string]any)

	uploads := map[string]struct {
		field, name, ctype string
		data               []byte
		fields             map[string]string
		want               int
	}{
		"spoofed type":      {"file", "x.png", "image/png", []byte("<html><script>alert(1)</script></html>"), nil, 400},
		"image claims wav":  {"file", "x.wav", "audio/wav", pngBytes, nil, 400},
		"unknown type":      {"file", "x.bin", "application/octet-stream", []byte("PK\x03\x04zipzip"), nil, 400},
		"empty":             {"file", "x.png", "image/png", nil, nil, 400},
		"too large":         {"file", "big.wav", "audio/wav", append(wavBytes(), make([]byte, limit)...), nil, 413},
		"wrong field":       {"upload", "x.png", "image/png", pngBytes, nil, 400},
		"other's project":   {"file", "x.png", "image/png", pngBytes, map[string]string{"project_id": theirs}, 403},
		"inspiration audio": {"media", "x.wav", "audio/wav", wavBytes(), nil, 400},
		"inspiration large": {"media", "big.png", "image/png", append(pngBytes, make([]byte, limit)...), nil, 413},
		"inspiration bad":   {"media", "x.png", "image/png", []byte("not an image at all"), nil, 400},
	}
	for name, tc := range uploads {
		path := "/api/materials/upload"
		if tc.field == "media" || strings.HasPrefix(name, "inspiration") {
			path = "/api/inspiration/upload"
		}
		if r := b.upload(path, a, tc.field, tc.name, tc.ctype, tc.data, tc.fields); r.status != tc.want {
			t.Errorf("%s: upload = %d %s, want %d", name, r.status, r.raw, tc.want)
		}
	}

	// Inspiration upload: an asset and a corpus record of its content type, related.
	r = b.upload("/api/inspiration/upload", a, "media", "shot.png", "image/png", pngBytes, nil)
	if r.status != 201 {
		t.Fatalf("inspiration upload = %d %s", r.status, r.raw)
	}
	cid := r.body["id"].(string)
	r = b.do("GET", "/api/corpus/"+cid, a, nil)
	if r.status != 200 || r.data("corpus").(map[string]any)["content_type"] != "image" || len(ids(r.data("relatedAssets"))) != 1 {
		t.Errorf("uploaded inspiration = %d %s", r.status, r.raw)
	}

	// Listing by type and tag; other users' assets never listed.
	for q, want := range map[string][]string{"type=image&tag=cover": {img["id"].(string)}, "type=audio": {aud["id"].(string)}} {
		r = b.do("GET", "/api/materials?"+q, a, nil)
		if got := ids(r.body["data"]); r.status != 200 || len(got) != len(want) || got[0] != want[0] {
			t.Errorf("materials?%s = %d %s", q, r.status, r.raw)
		}
	}
	if r = b.do("GET", "/api/materials?limit=100", a, nil); has(ids(r.body["data"]), their["id"].(string)) || r.body["total"] != float64(3) {
		t.Errorf("materials = %s, want 3 own assets only", r.raw)
	}
	if r = b.do("GET", "/api/materials?type=pdf", a, nil); r.status != 400 {
		t.Errorf("materials?type=pdf = %d", r.status)
	}

	// Files are served to their owner's header, or to their signed URL (files_test.go).
	r = b.do("GET", img["file_url"].(string), a, nil)
	if r.status != 200 || r.raw != string(pngBytes) || r.header.Get("Content-Type") != "image/png" {
		t.Errorf("owner file = %d %q %q", r.status, r.header.Get("Content-Type"), r.raw)
	}
	if r = b.do("GET", fileurl.Unsigned(img["file_url"].(string)), other, nil); r.status != 404 {
		t.Errorf("other's file = %d, want 404", r.status)
	}

	// One asset by id: the owner's, with an image's cover itself; anyone else's is 404.
	r = b.do("GET", "/api/materials/"+img["id"].(string), a, nil)
	if got, _ := r.data("asset").(map[string]any); r.status != 200 || got["id"] != img["id"] || got["file_url"] != img["file_url"] ||
		got["thumbnail_url"] != img["file_url"] {
		t.Errorf("material = %d %s, want the picture with itself as thumbnail_url", r.status, r.raw)
	}
	for _, id := range []string{their["id"].(string), uuid.NewString(), "not-a-uuid"} {
		if r = b.do("GET", "/api/materials/"+id, a, nil); r.status != 404 {
			t.Errorf("material %s of someone else's or none = %d, want 404", id, r.status)
		}
	}

	// Batch delete counts only the caller's live assets.
	r = b.do("POST", "/api/materials/batch-delete", a, map[string]any{"ids": []string{img["id"].(string), aud["id"].(string), their["id"].(string)}})
	if r.status != 200 || r.data("deletedCount") != float64(2) {
		t.Errorf("batch-delete = %d %s", r.status, r.raw)
	}
	if r = b.do("POST", "/api/materials/batch-delete", a, map[string]any{"ids": []string{img["id"].(string)}}); r.data("deletedCount") != float64(0) {
		t.Errorf("batch-delete again = %s", r.raw)
	}
	if r = b.do("POST", "/api/materials/batch-delete", a, map[string]any{}); r.status != 400 {
		t.Errorf("batch-delete without ids = %d", r.status)
	}
	if r = b.do("GET", img["file_url"].(string), a, nil); r.status != 404 {
		t.Errorf("deleted file = %d, want 404", r.status)
	}
	if r = b.do("GET", "/api/materials", other, nil); !has(ids(r.body["data"]), their["id"].(string)) {
		t.Errorf("other user's asset was deleted")
	}

	// Four assets stored (png, wav, other's png, the inspiration's): four task.asset.uploaded
	// events in the outbox and four asset:sync frames; the batch delete sent its frames too.
	evs, err := b.st.ClaimOutboxEvents(t.Context(), &store.ClaimOutboxParams{Limit: 100, Token: uuid.NewString(),
		Lease: time.Minute})
	byName := map[string]int{}
	for _, e := range evs {
		byName[e.Event]++
	}
	if err != nil || byName["task.asset.uploaded"] != 4 || byName["content.created"] != 1 {
		t.Errorf("outbox events = %v, %v; want 4 task.asset.uploaded and 1 content.created", byName, err)
	}
	if n := rec.count(events.FrameAssetSync, "created"); n != 4 {
		t.Errorf("asset:sync created frames = %d, want 4", n)
	}
	if n := rec.count(events.FrameAssetSync, "deleted"); n != 2 {
		t.Errorf("asset:sync deleted frames = %d, want 2 (the assets actually deleted)", n)
	}
	// A created frame carries the asset as a library shows it: type, URL, cover.
	rec.mu.Lock()
	found := false
	for _, fr := range rec.got {
		if fr.Type != events.FrameAssetSync || fr.Data["assetId"] != img["id"] || fr.Data["action"] != "created" {
			continue
		}
		found = true
		raw, _ := json.Marshal(fr.Data)
		var got struct {
			Asset map[string]any `json:"asset"`
		}
		// The hub signs a frame's URLs as it sends it; the notifier gets the plain ones.
		plain := fileurl.Unsigned(img["file_url"].(string))
		if json.Unmarshal(raw, &got) != nil || got.Asset["id"] != img["id"] || got.Asset["file_type"] != "image" ||
			got.Asset["file_url"] != plain || got.Asset["thumbnail_url"] != plain {
			t.Errorf("asset:sync frame of the picture = %s, want the asset with its type, URL and cover", raw)
		}
	}
	rec.mu.Unlock()
	if !found {
		t.Errorf("no asset:sync created frame for the picture")
	}
	// In the store: each upload under a key of its own (never the client's name); the deleted
	// files' bytes gone, the other user's kept.
	if blobs == nil {
		blobs = blob.NewDir(dataDir)
	}
	for _, a := range []map[string]any{img, aud, their} {
		key := fmt.Sprint(a["file_path"])
		rc, size, err := blobs.Open(t.Context(), key)
		if a["id"] != their["id"] {
			if !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("object %s of deleted asset %v: %v, want not found", key, a["id"], err)
			}
			continue
		}
		if err != nil {
			t.Errorf("object %s of asset %v: %v", key, a["id"], err)
			continue
		}
		rc.Close()
		if size != int64(a["file_size"].(float64)) || !strings.HasPrefix(key, "assets/") || strings.Contains(key, "passwd") {
			t.Errorf("object %s: size %d, want %v and a key made by the host", key, size, a["file_size"])
		}
	}
	if blobs.Kind() != "s3" {
		return
	}
	if meta := img["metadata"].(map[string]any); meta["storage"] != "s3" {
		t.Errorf("asset metadata = %v, want storage s3", meta)
	}
}

func TestStrategy(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setupContent(t, d.open, 1<<20)
			a, _ := b.user("alice")
			other, _ := b.user("bob")
			pid := b.project(a, "mine")
			theirs := b.project(other, "theirs")

			if r := b.do("GET", "/api/strategy/blueprint/"+pid, a, nil); r.status != 200 || r.data("blueprint") != nil ||
				len(r.data("calendar").([]any)) != 0 {
				t.Errorf("blueprint before diagnosis = %d %s, want null and an empty calendar", r.status, r.raw)
			}
			answers := []any{map[string]any{"question": "Niche?", "answer": "food vlogger"}, "douyin", "three videos a week"}
			r := b.do("POST", "/api/strategy/diagnosis", a, map[string]any{"answers": answers, "projectId": pid})
			if r.status != 200 || r.data("report") == nil {
				t.Fatalf("diagnosis = %d %s", r.status, r.raw)
			}
			days := r.data("blueprint").(map[string]any)["days"].([]any)
			if len(days) != 30 || days[0].(map[string]any)["date"] != time.Now().UTC().Format("2006-01-02") {
				t.Errorf("blueprint days = %d starting %v", len(days), days[0])
			}
			r = b.do("GET", "/api/strategy/blueprint/"+pid, a, nil)
			if r.status != 200 || r.data("blueprint") == nil || len(r.data("calendar").([]any)) != 30 {
				t.Errorf("blueprint = %d %s", r.status, r.raw)
			}
			if st, err := b.st.ListStrategyTasks(t.Context(), pid); err != nil || len(st) != 30 {
				t.Errorf("strategy tasks after diagnosis = %d, %v; want the 30 days of the blueprint", len(st), err)
			}
			tests := map[string]struct {
				method, path string
				body         any
				want         int
			}{
				"blueprint of other's":    {"GET", "/api/strategy/blueprint/" + theirs, nil, 403},
				"blueprint of missing":    {"GET", "/api/strategy/blueprint/" + uuid.NewString(), nil, 404},
				"diagnosis other's":       {"POST", "/api/strategy/diagnosis", map[string]any{"answers": []string{"x"}, "project_id": theirs}, 403},
				"diagnosis no project":    {"POST", "/api/strategy/diagnosis", map[string]any{"answers": []string{"cooking"}}, 200},
				"rewrite":                 {"POST", "/api/strategy/rewrite", map[string]any{"content": "Brew coffee in three steps.", "style": "humorous"}, 200},
				"chat locally (no tool)":  {"POST", "/api/ai/chat", map[string]any{"message": "What makes a good hook?", "chatflowType": "kb"}, 200},
				"chat with other's proj.": {"POST", "/api/ai/chat", map[string]any{"message": "hi", "project_id": theirs}, 403},
			}
			for name, tc := range tests {
				if r := b.do(tc.method, tc.path, a, tc.body); r.status != tc.want {
					t.Errorf("%s = %d %s, want %d", name, r.status, r.raw, tc.want)
				}
			}
			if p, _ := b.st.GetProject(t.Context(), theirs); len(p.Blueprint) != 0 {
				t.Errorf("another user's project got a blueprint")
			}
		})
	}
}
