package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/config"
)

// A SQLite file belongs to one host (the projects listing cache, sqlitestore.Open): a second
// host on the same DATA_DIR is refused while the first lives, and starts once it is gone. On
// PostgreSQL the second host starts under an id of its own.
func TestOneHostPerSQLiteFile(t *testing.T) {
	t.Parallel()
	newHost := func(dir, databaseURL string) (*Host, error) {
		cfg := config.Defaults()
		cfg.JWTSecret = "test-secret-test-secret-test-secret"
		cfg.DataDir = dir
		cfg.DatabaseURL = databaseURL
		cfg.ManifestDir = filepath.Join("..", "..", "manifests")
		cfg.PluginsEnabled = false
		return New(t.Context(), &cfg, slog.New(slog.DiscardHandler))
	}
	dir := t.TempDir()
	first, err := newHost(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newHost(dir, ""); err == nil || !strings.Contains(err.Error(), "a SQLite file belongs to one host") {
		t.Fatalf("second host on the same SQLite file: err = %v, want a refusal", err)
	}
	first.unlock()
	first.Store.Close()
	again, err := newHost(dir, "")
	if err != nil {
		t.Fatalf("host after the first one stopped: %v", err)
	}
	again.unlock()
	again.Store.Close()

	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		return
	}
	dir = t.TempDir()
	a, err := newHost(dir, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Store.Close()
	b, err := newHost(dir, url)
	if err != nil {
		t.Fatalf("second host on PostgreSQL with the same DATA_DIR: %v", err)
	}
	defer b.Store.Close()
	if a.HostID == b.HostID {
		t.Errorf("both hosts took the id %s", a.HostID)
	}
}
