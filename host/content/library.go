package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// The library: what a front end lists (assets with their covers), and deletes that take a file's
// bytes with its rows, so that no URL keeps naming a file that is gone.
//
// A delete removes the bytes first and the rows after. A host that stops between the two leaves
// rows whose files answer 404, and the same delete, sent again, finishes; the other order would
// leave bytes no row names, which nothing would ever find again (in a bucket, or in the folders of
// runs, which the start-up sweep of uploads leaves alone).

// AssetView is an asset as the API and asset:sync frames show it: its row, and the URL of its cover
// (a video's thumbnail, an image itself) when there is one.
type AssetView struct {
	store.Asset
	ThumbnailURL string `json:"thumbnail_url,omitempty"`
}

// Views shows assets of userID, each with its cover when that is still there.
func (s *Service) Views(ctx context.Context, userID string, assets []store.Asset) ([]AssetView, error) {
	var thumbs []string
	for _, a := range assets {
		if k := thumbnailKey(&a); k != "" {
			thumbs = append(thumbs, k)
		}
	}
	live, err := s.st.LiveAssetPaths(ctx, userID, thumbs)
	if err != nil {
		return nil, fmt.Errorf("content: asset covers: %w", err)
	}
	out := make([]AssetView, len(assets))
	for i, a := range assets {
		out[i] = AssetView{Asset: a}
		switch k := thumbnailKey(&a); {
		case a.FileType == store.AssetImage:
			out[i].ThumbnailURL = a.FileURL
		case k != "" && slices.Contains(live, k):
			out[i].ThumbnailURL = fileurl.OfKey(k)
		}
	}
	return out, nil
}

// View is Views of one asset.
func (s *Service) View(ctx context.Context, a *store.Asset) (*AssetView, error) {
	v, err := s.Views(ctx, a.UserID, []store.Asset{*a})
	if err != nil {
		return nil, err
	}
	return &v[0], nil
}

// thumbnailKey is the storage key of a generated video's cover (RecordRunFiles notes it), or "".
func thumbnailKey(a *store.Asset) string {
	var meta struct {
		Thumbnail string `json:"thumbnail_path"`
	}
	if a.FileType != store.AssetVideo || json.Unmarshal(a.Metadata, &meta) != nil || !blob.ValidKey(meta.Thumbnail) {
		return ""
	}
	return meta.Thumbnail
}

// DeleteAssets deletes the caller's assets among ids, bytes then rows, and returns how many it
// deleted. Another user's ids, and unknown ones, are passed over.
func (s *Service) DeleteAssets(ctx context.Context, userID string, ids []string) (int, error) {
	var mine []string
	var errs []error
	for _, id := range ids {
		a, err := s.st.GetAsset(ctx, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && a.UserID != userID || slices.Contains(mine, id) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := s.removeBytes(ctx, a.FilePath); err != nil {
			errs = append(errs, err)
			continue // its row stays, naming bytes that are still there
		}
		mine = append(mine, id)
	}
	deleted, err := s.st.DeleteAssets(ctx, userID, mine)
	if err != nil {
		return 0, err
	}
	for _, id := range deleted {
		s.notify.Notify(ctx, events.Frame{UserID: userID, Type: events.FrameAssetSync, Data: map[string]any{"assetId": id, "action": "deleted"}})
	}
	if len(errs) > 0 {
		return len(deleted), s.storeErr("content.delete", "Some files could not be deleted; delete them again", errors.Join(errs...))
	}
	return len(deleted), nil
}

// DeleteRun deletes a finished run of its owner: the bytes of every file it made (its assets, and
// any file of the owner's its outputs or jobs' results name that no other asset holds), then its
// rows. A run not finished is refused with 409.
func (s *Service) DeleteRun(ctx context.Context, r *store.Run, jobResults []json.RawMessage) error {
	if !r.Terminal() {
		return errcode.New(errcode.WorkflowInvalidState, "The run is "+r.Status+": cancel it before deleting it")
	}
	defer s.runFiles.lock(r.ID)() // no RecordRunFiles of this host records a file while it goes
	assets, err := s.st.ListRunAssets(ctx, r.ID)
	if err != nil {
		return fmt.Errorf("content: run assets: %w", err)
	}
	var keys []string
	for _, a := range assets {
		keys = append(keys, a.FilePath)
	}
	for _, raw := range append([]json.RawMessage{r.Outputs}, jobResults...) {
		for _, ref := range fileRefs(raw) {
			k := s.ownKey(r.UserID, ref.value)
			if k == "" || slices.Contains(keys, k) {
				continue
			}
			if a, err := s.st.GetAssetByPath(ctx, r.UserID, k); err == nil && a.SourceRunID != r.ID {
				continue // an upload or another run's file the run used
			} else if err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("content: look up %s: %w", k, err)
			}
			keys = append(keys, k)
		}
	}
	var errs []error
	for _, k := range keys {
		errs = append(errs, s.removeBytes(ctx, k))
	}
	if err := errors.Join(errs...); err != nil {
		return s.storeErr("content.delete_run", "Some of the run's files could not be deleted; delete the run again", err)
	}
	if err := s.st.DeleteRun(ctx, r.ID, r.UserID); errors.Is(err, store.ErrStale) {
		return errcode.New(errcode.WorkflowInvalidState, "The run started again: cancel it before deleting it")
	} else if errors.Is(err, store.ErrNotFound) {
		return errcode.New(errcode.NotFound, "Run not found")
	} else if err != nil {
		return err
	}
	for _, a := range assets {
		s.notify.Notify(ctx, events.Frame{ProjectID: a.ProjectID, UserID: a.UserID, Type: events.FrameAssetSync,
			Data: map[string]any{"assetId": a.ID, "action": "deleted"}})
	}
	return nil
}

// ownKey is the storage key a reference of a result names when it is a file of userID's ("").
func (s *Service) ownKey(userID, ref string) string {
	if k := storageKey(ref); k != "" && keyOwner(k) == userID {
		return k
	}
	return ""
}

// removeBytes removes a stored file: from the blob store, and the copy a local generator wrote
// under the data folder when the store is a bucket. An external generator's URL has no bytes here.
func (s *Service) removeBytes(ctx context.Context, key string) error {
	if !blob.ValidKey(key) {
		return nil
	}
	if err := s.blobs.Delete(ctx, key); err != nil {
		return err
	}
	if s.blobs.Kind() != "local" && s.dataDir != "" {
		if err := os.Remove(filepath.Join(s.dataDir, filepath.FromSlash(key))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("content: remove %s: %w", key, err)
		}
	}
	return nil
}

// LiveOutputs returns docs (a run's outputs, its jobs' results) with every file of userID's that
// no live asset holds any more (deleted) replaced by null, so that no answer names a dead URL.
func (s *Service) LiveOutputs(ctx context.Context, userID string, docs ...json.RawMessage) ([]json.RawMessage, error) {
	var keys []string
	for _, d := range docs {
		for _, ref := range fileRefs(d) {
			if k := s.ownKey(userID, ref.value); k != "" {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return docs, nil
	}
	live, err := s.st.LiveAssetPaths(ctx, userID, keys)
	if err != nil {
		return nil, fmt.Errorf("content: live files: %w", err)
	}
	if len(live) == len(slices.Compact(slices.Sorted(slices.Values(keys)))) {
		return docs, nil
	}
	out := make([]json.RawMessage, len(docs))
	for i, d := range docs {
		var v any
		if len(d) == 0 || json.Unmarshal(d, &v) != nil {
			out[i] = d
			continue
		}
		v = s.dropDead(userID, v, live)
		if out[i], err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("content: live outputs: %w", err)
		}
	}
	return out, nil
}

func (s *Service) dropDead(userID string, v any, live []string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = s.dropDead(userID, e, live)
		}
	case []any:
		for i, e := range x {
			x[i] = s.dropDead(userID, e, live)
		}
	case string:
		if k := s.ownKey(userID, x); k != "" && !slices.Contains(live, k) {
			return nil
		}
	}
	return v
}
