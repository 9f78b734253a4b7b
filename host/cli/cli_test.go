package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/config"
	hostplugins "github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqldb"
)

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.JWTSecret = "cli-test-secret-cli-test-secret-cli"
	cfg.LogFormat = "json"
	return &cfg
}

func run(t *testing.T, cfg *config.Config, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(t.Context(), cfg, args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// write creates path (and its folder) holding data.
func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUserCreate creates accounts, then changes their roles (user role).
func TestUserCreate(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"admin", "", []string{"user", "create", "--email", "Root@Example.com", "--password", "password-root", "--admin"}, 0, "role=admin"},
		{"password from stdin", "password-from-stdin\n", []string{"user", "create", "--email", "sam@example.com", "--username", "Sam"}, 0, "username=Sam role=free_user"},
		{"paid role", "", []string{"user", "create", "--email", "pay@example.com", "--password", "password-pay", "--role", "user"}, 0, "role=user"},
		{"duplicate", "", []string{"user", "create", "--email", "root@example.com", "--password", "password-root"}, 1, ""},
		{"short password", "", []string{"user", "create", "--email", "x@example.com", "--password", "short"}, 1, ""},
		{"no email", "", []string{"user", "create", "--password", "password-x"}, 2, ""},
		{"bad role", "", []string{"user", "create", "--email", "y@example.com", "--password", "password-y", "--role", "boss"}, 2, ""},
		{"no password anywhere", "", []string{"user", "create", "--email", "z@example.com"}, 2, ""},
		{"unknown command", "", []string{"user", "delete"}, 2, ""},
		{"promote", "", []string{"user", "role", "--email", "Sam@Example.com", "--role", "admin"}, 0, "role=admin (was free_user)"},
		{"role unchanged", "", []string{"user", "role", "--email", "sam@example.com", "--role", "admin"}, 0, "already has role=admin"},
		{"demote", "", []string{"user", "role", "--email", "root@example.com", "--role", "user"}, 0, "role=user (was admin)"},
		{"role of nobody", "", []string{"user", "role", "--email", "nobody@example.com", "--role", "user"}, 1, ""},
		{"role unknown", "", []string{"user", "role", "--email", "sam@example.com", "--role", "boss"}, 2, ""},
		{"role without role", "", []string{"user", "role", "--email", "sam@example.com"}, 2, ""},
	}
	for _, tt := range tests { // in order: one database
		code, out, errs := run(t, cfg, tt.stdin, tt.args...)
		if code != tt.wantCode || !strings.Contains(out, tt.wantOut) {
			t.Errorf("%s: code %d out %q (stderr %s), want %d and %q", tt.name, code, out, errs, tt.wantCode, tt.wantOut)
		}
		if strings.Contains(out+errs, "password-") {
			t.Errorf("%s: the output holds the password", tt.name)
		}
	}
	st, err := app.OpenStore(t.Context(), cfg, app.NewLogger(cfg, &bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for email, want := range map[string]string{"root@example.com": store.RoleUser, "sam@example.com": store.RoleAdmin, "pay@example.com": store.RoleUser} {
		if u, err := st.GetUserByEmail(t.Context(), email); err != nil || u.Role != want {
			t.Errorf("%s = %+v, %v; want role %s", email, u, err, want)
		}
	}
}

// fakeKB is a knowledge source in memory that de-duplicates by hash like host/kb does.
type fakeKB struct {
	mu     sync.Mutex
	docs   map[string]string // hash -> state
	calls  map[string]int    // hash -> IngestFile calls that stored it
	cancel context.CancelFunc
	stopAt int // cancel the context after this many stored files
	stored int
}

func (f *fakeKB) IngestFile(ctx context.Context, in app.IngestFile) (*app.IngestedFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	sum := sha256.Sum256(in.Data)
	h := hex.EncodeToString(sum[:])
	if st, ok := f.docs[h]; ok {
		return &app.IngestedFile{Duplicate: true, Status: st}, nil
	}
	if strings.HasSuffix(in.Name, "empty.txt") {
		f.docs[h] = "failed"
		return &app.IngestedFile{Status: "failed", Reason: "no text"}, nil
	}
	f.docs[h] = "indexed"
	f.calls[h]++
	f.stored++
	if f.stored == f.stopAt && f.cancel != nil {
		f.cancel() // as if SIGINT arrived while this file was being ingested
	}
	return &app.IngestedFile{Chunks: 1, Status: "indexed"}, nil
}

func (f *fakeKB) SourceFileHashes(_ context.Context, user, project, source string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for h, st := range f.docs {
		out[h] = st
	}
	return out, nil
}

// TestIngestResumes ingests 1,000 small files, interrupted after 300, then again: each file is
// stored exactly once and the second run skips what the first stored.
func TestIngestResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 1000 {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i%7))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("note-%04d.md", i)), []byte(fmt.Sprintf("# Note %d\n\nbody %d", i, i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "image.png"), []byte("png"))
	write(t, filepath.Join(dir, "copy.txt"), []byte("# Note 5\n\nbody 5")) // same bytes as note-0005.md
	write(t, filepath.Join(dir, ".git", "x.txt"), []byte("hidden"))

	kb := &fakeKB{docs: map[string]string{}, calls: map[string]int{}, stopAt: 300}
	ctx, cancel := context.WithCancel(t.Context())
	kb.cancel = cancel
	opts := ingestOptions{Dir: dir, UserID: "u1", Source: "notes", Every: 250}
	var out bytes.Buffer
	s1, err := ingest(ctx, opts, kb, kb, &out)
	if err != errInterrupted {
		t.Fatalf("first run: err = %v, want errInterrupted\n%s", err, out.String())
	}
	if s1.Ingested != 300 || s1.Done != 300 {
		t.Errorf("first run: %+v, want 300 ingested and stopped after the file in progress", s1)
	}

	out.Reset()
	s2, err := ingest(t.Context(), opts, kb, kb, &out)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if s2.Files != 1001 || s2.Held != 301 || s2.Ingested != 700 {
		t.Errorf("second run: %+v, want 1001 files, 301 held (300 + the copy), 700 ingested", s2)
	}
	if len(kb.calls) != 1000 {
		t.Errorf("%d distinct files stored, want 1000", len(kb.calls))
	}
	for h, n := range kb.calls {
		if n != 1 {
			t.Errorf("file %s stored %d times", h[:8], n)
		}
	}
	if lines := strings.Count(out.String(), "files ("); lines != 5 { // every 250 of 1001, plus the last
		t.Errorf("%d progress lines, want 5:\n%s", lines, out.String())
	}

	out.Reset()
	s3, err := ingest(t.Context(), opts, kb, kb, &out)
	if err != nil || s3.Ingested != 0 || s3.Held != 1001 {
		t.Errorf("third run: %+v, %v; want everything held", s3, err)
	}
}

func TestIngestReportsFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.txt"), []byte("alpha"))
	write(t, filepath.Join(dir, "empty.txt"), []byte("   "))
	write(t, filepath.Join(dir, "big.txt"), make([]byte, 2048))
	kb := &fakeKB{docs: map[string]string{}, calls: map[string]int{}}
	var out bytes.Buffer
	s, err := ingest(t.Context(), ingestOptions{Dir: dir, UserID: "u", Source: "s", MaxBytes: 1024}, kb, nil, &out)
	if err == nil || s.Errors != 1 || s.Failed != 1 || s.Ingested != 1 {
		t.Errorf("ingest = %+v, %v; want 1 error (big.txt), 1 failed document, 1 ingested\n%s", s, err, out.String())
	}
	if !strings.Contains(out.String(), "big.txt: 2048 bytes is over the upload limit") {
		t.Errorf("output does not name the over-large file:\n%s", out.String())
	}
}

func TestKBIngestCommand(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	dir := t.TempDir()
	if code, _, errs := run(t, cfg, "", "kb", "ingest", dir); code != 2 {
		t.Errorf("kb ingest without --user = %d (%s), want 2", code, errs)
	}
	if code, _, errs := run(t, cfg, "", "kb", "ingest", dir, "--user", "nobody@example.com"); code != 1 || !strings.Contains(errs, "no user with email") {
		t.Errorf("kb ingest for an unknown user = %d %s, want 1", code, errs)
	}
}

func TestPluginsCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the node plugin")
	}
	t.Parallel()
	plugins := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(plugins, "node-plugin"), "github.com/reelforge/reelforge/plugins/node/cmd/node-plugin")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build node-plugin: %v", err)
	}
	copyManifest := func(t *testing.T, dir, name string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", "manifests", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := t.TempDir()
	copyManifest(t, good, "voiceover.yaml") // engine node
	copyManifest(t, good, "engines/node.yaml")
	bad := t.TempDir()
	copyManifest(t, bad, "voiceover.yaml")
	copyManifest(t, bad, "engines/node.yaml")
	copyManifest(t, bad, "live.yaml") // engine graph: no graph-plugin here
	copyManifest(t, bad, "engines/graph.yaml")

	cfg := testConfig(t)
	cfg.PluginDir, cfg.ManifestDir = plugins, good
	code, out, errs := run(t, cfg, "", "plugins", "check")
	if code != 0 || !strings.Contains(out, "node") || !strings.Contains(out, " ready ") {
		t.Errorf("plugins check (node only) = %d\n%s%s", code, out, errs)
	}
	sum, err := hostplugins.FileSHA256(filepath.Join(plugins, "node-plugin"))
	if err != nil || !strings.Contains(out, sum) {
		t.Errorf("output does not carry the sha256 %s:\n%s", sum, out)
	}

	cfg2 := testConfig(t)
	cfg2.PluginDir, cfg2.ManifestDir = plugins, bad
	code, out, _ = run(t, cfg2, "", "plugins", "check")
	if code != 1 || !strings.Contains(out, "missing: "+filepath.Join(plugins, "graph-plugin")) {
		t.Errorf("plugins check with graph missing = %d, want 1:\n%s", code, out)
	}

	// A disabled engine is reported, not a problem; an engine without an entry is refused.
	off := t.TempDir()
	copyManifest(t, off, "voiceover.yaml")
	copyManifest(t, off, "engines/node.yaml")
	copyManifest(t, off, "live.yaml")
	write(t, filepath.Join(off, "engines", "graph.yaml"), []byte("name: graph\nenabled: false\nworkflow_settings: [graph_id]\n"))
	cfg4 := testConfig(t)
	cfg4.PluginDir, cfg4.ManifestDir = plugins, off
	if code, out, errs := run(t, cfg4, "", "plugins", "check"); code != 0 || !strings.Contains(out, "disabled: in "+filepath.Join(off, "engines", "graph.yaml")) {
		t.Errorf("plugins check with graph disabled = %d, want 0:\n%s%s", code, out, errs)
	}
	if err := os.Remove(filepath.Join(off, "engines", "graph.yaml")); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, cfg4, "", "plugins", "check"); code != 1 || !strings.Contains(errs, filepath.Join(off, "live.yaml")+`: engine: unknown engine "graph"`) {
		t.Errorf("plugins check without graph's entry = %d %s, want 1", code, errs)
	}

	// An empty manifest folder is a failure.
	cfg3 := testConfig(t)
	cfg3.PluginDir, cfg3.ManifestDir = plugins, t.TempDir()
	if code, _, errs := run(t, cfg3, "", "plugins", "check"); code != 1 || !strings.Contains(errs, "manifests") {
		t.Errorf("plugins check without manifests = %d %s, want 1", code, errs)
	}
}

// cancelAfter cancels a context once n files were stored, as an interrupt would.
type cancelAfter struct {
	app.FileIngester
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) IngestFile(ctx context.Context, f app.IngestFile) (*app.IngestedFile, error) {
	res, err := c.FileIngester.IngestFile(ctx, f)
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return res, err
}

// TestKBIngestEndToEnd ingests 1,000 small files into the real knowledge service on SQLite,
// interrupted after 300, then runs `kb ingest` again: every file is stored exactly once, indexed.
func TestKBIngestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 1,000 files through the knowledge service")
	}
	t.Parallel()
	cfg := testConfig(t)
	dir := t.TempDir()
	for i := range 1000 {
		write(t, filepath.Join(dir, fmt.Sprintf("n%04d.md", i)), []byte(fmt.Sprintf("# Note %d\n\nThis is note %d about topic %d.", i, i, i%17)))
	}
	if code, _, errs := run(t, cfg, "", "user", "create", "--email", "kb@example.com", "--password", "password-kb"); code != 0 {
		t.Fatalf("user create = %d %s", code, errs)
	}
	st, err := app.OpenStore(t.Context(), cfg, app.NewLogger(cfg, &bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.GetUserByEmail(t.Context(), "kb@example.com")
	if err != nil {
		t.Fatal(err)
	}
	kbIng, err := app.NewFileIngester(t.Context(), cfg, st, app.NewLogger(cfg, &bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var out bytes.Buffer
	s1, err := ingest(ctx, ingestOptions{Dir: dir, UserID: u.ID, Source: "notes"}, &cancelAfter{kbIng, 300, cancel}, st.(hashLister), &out)
	if err != errInterrupted || s1.Ingested != 300 {
		t.Fatalf("first run = %+v, %v; want 300 ingested, interrupted\n%s", s1, err, out.String())
	}
	code, stdout, errs := run(t, cfg, "", "kb", "ingest", dir, "--user", "kb@example.com", "--source", "notes", "--every", "500")
	if code != 0 || !strings.Contains(stdout, "1000/1000 files (100%): 700 ingested, 300 already held") {
		t.Fatalf("second run = %d\n%s%s", code, stdout, errs)
	}
	hashes, err := st.(hashLister).SourceFileHashes(t.Context(), u.ID, "", "notes")
	if err != nil {
		t.Fatal(err)
	}
	indexed := 0
	for _, state := range hashes {
		if state == "indexed" {
			indexed++
		}
	}
	var rows int
	q := st.(interface {
		QueryRow(ctx context.Context, q string, args ...any) sqldb.Row
	})
	if err := q.QueryRow(t.Context(), `SELECT COUNT(*) FROM knowledge_documents`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1000 || len(hashes) != 1000 || indexed != 1000 {
		t.Errorf("%d documents, %d hashes, %d indexed; want 1000 of each", rows, len(hashes), indexed)
	}
}

// queue prints the durable queue's counts by state and its recent jobs; an unknown state is a
// usage error.
func TestQueueList(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	code, out, errs := run(t, cfg, "", "queue")
	if code != 0 || !strings.Contains(out, "available") || !strings.Contains(out, "discarded") || !strings.Contains(out, "KIND") {
		t.Fatalf("queue: code %d out %q (stderr %s)", code, out, errs)
	}
	if code, _, _ := run(t, cfg, "", "queue", "--state", "lost"); code != ExitUsage {
		t.Errorf("queue --state lost: code %d, want %d", code, ExitUsage)
	}
}
