package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// sweepUploads removes the uploaded files of DATA_DIR/assets that no asset row names: an upload
// stores its bytes first and its row after, so a host killed between the two left the file alone
// (the client got no answer and sends it again). Uploads are keyed assets/<user>/<uuid><ext>;
// files in the folders below (what runs make) are not uploads and are left alone. It runs at
// start, before the host serves, and only when no other live host uses DATA_DIR.
func (h *Host) sweepUploads(ctx context.Context) {
	root := filepath.Join(h.Config.DataDir, "assets")
	users, err := os.ReadDir(root)
	if err != nil {
		return // no uploads yet
	}
	removed := 0
	for _, u := range users {
		if !u.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(root, u.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			name := f.Name()
			if !f.Type().IsRegular() {
				continue
			}
			if _, err := uuid.Parse(strings.TrimSuffix(name, filepath.Ext(name))); err != nil {
				continue
			}
			key := "assets/" + u.Name() + "/" + name
			if known, err := h.Store.AssetFileKnown(ctx, key); err != nil || known {
				continue // a soft-deleted asset keeps its bytes too
			}
			if os.Remove(filepath.Join(root, u.Name(), name)) == nil {
				removed++
			}
		}
	}
	if removed > 0 {
		h.Log.Warn("removed uploaded files that no asset names (an upload cut by the stop of this host's previous life)", "files", removed)
	}
}
