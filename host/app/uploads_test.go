package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// An uploaded file no asset row names (the host died between storing the bytes and the row) is
// removed at start, as is one whose row was deleted; one a row names and what runs made are kept.
func TestSweepUploads(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.JWTSecret = "test-secret-test-secret-test-secret"
	cfg.DataDir = t.TempDir()
	cfg.ManifestDir = filepath.Join("..", "..", "manifests")
	cfg.PluginsEnabled = false
	h, err := New(t.Context(), &cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Store.Close() })
	u := storetest.NewUser(t, h.Store, "")
	dir := filepath.Join(cfg.DataDir, "assets", u.ID)
	if err := os.MkdirAll(filepath.Join(dir, "video"), 0o700); err != nil {
		t.Fatal(err)
	}
	orphan, kept, deleted := uuid.NewString()+".png", uuid.NewString()+".png", uuid.NewString()+".mp4"
	for _, name := range []string{orphan, kept, deleted, "notes.txt", "video/" + uuid.NewString() + ".mp4"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, name := range []string{kept, deleted} {
		a := &store.Asset{ID: uuid.NewString(), UserID: u.ID, FilePath: "assets/" + u.ID + "/" + name, FileType: store.AssetImage,
			MimeType: "image/png", FileURL: "/x", Metadata: []byte(`{}`)}
		if err := h.Store.CreateAsset(ctx, a); err != nil {
			t.Fatal(err)
		}
		if name == deleted {
			if _, err := h.Store.DeleteAssets(ctx, u.ID, []string{a.ID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.sweepUploads(ctx)
	// A deleted asset whose bytes stayed (a host stopped between its row and its file) is an orphan too.
	for name, want := range map[string]bool{orphan: false, kept: true, deleted: false, "notes.txt": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v, want %v", name, got, want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "video")); len(ents) != 1 {
		t.Errorf("files of runs = %d, want 1 kept", len(ents))
	}
}
