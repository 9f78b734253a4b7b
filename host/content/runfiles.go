package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// RecordRunFiles stores an asset for every file named in result (a job's result or a run's
// outputs) that run r has not recorded yet, each with task.asset.uploaded in its transaction and
// an asset:sync frame. A file is named by a string under a key that says so (…_url, …_path, url,
// file…) or ending in a media extension:
//
//   - a file the host keeps (a URL under fileurl.AssetsPath, or its key "assets/<owner>/...") of r's owner:
//     its size and type come from its bytes, and with an object store it is copied into the bucket,
//     so every store serves it;
//   - an http(s) URL of an external generator: recorded as that URL.
//
// Files of other users, and paths that name no stored file, are skipped (logged): a run never
// gains a way to another user's bytes. A file already recorded as an asset (an upload the run
// used, or the same file of an earlier job) is not recorded again.
func (s *Service) RecordRunFiles(ctx context.Context, r *store.Run, result json.RawMessage) ([]store.Asset, error) {
	refs := fileRefs(result)
	if len(refs) == 0 {
		return nil, nil
	}
	// A job's result and the run's end name the same files at about the same time, and the
	// check of what the run recorded and the inserts below are not one step: one run's calls take
	// turns, or both recorded the same file (both come from the host running the run).
	defer s.runFiles.lock(r.ID)()
	have, err := s.st.ListRunAssets(ctx, r.ID)
	if err != nil {
		return nil, fmt.Errorf("content: run assets: %w", err)
	}
	known := map[string]bool{}
	for _, a := range have {
		known[a.FilePath] = true
	}
	var out []store.Asset
	var errs []error
	for _, ref := range refs {
		a, err := s.runAsset(ctx, r, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if a == nil || known[a.FilePath] {
			continue
		}
		known[a.FilePath] = true
		if err := store.InTx(ctx, s.st, func(tx Store) error {
			if err := tx.CreateAsset(ctx, a); err != nil {
				return err
			}
			return events.Emit(ctx, tx, assetEvent(a))
		}); err != nil {
			errs = append(errs, fmt.Errorf("content: record %s: %w", a.FilePath, err))
			continue
		}
		out = append(out, *a)
	}
	for i := range out { // after all are recorded: a video's frame names its cover
		s.notifyAsset(ctx, &out[i], "created")
	}
	return out, errors.Join(errs...)
}

// storageKey is the key of the stored file a result's reference names: a file URL of the host, or
// the key itself ("assets/..."); "" for anything else.
func storageKey(ref string) string {
	if k := fileurl.KeyOf(ref); k != "" {
		return k
	}
	if strings.HasPrefix(ref, "assets/") && blob.ValidKey(ref) {
		return ref
	}
	return ""
}

// keyOwner is the user whose folder a key "assets/<user>/..." is in.
func keyOwner(key string) string {
	if parts := strings.SplitN(key, "/", 3); len(parts) == 3 {
		return parts[1]
	}
	return ""
}

// postFiles are the result keys of what a video comes with for a post (plugins/generators).
var postFiles = []string{"thumbnail_url", "captions_vtt_url", "captions_srt_url"}

// fileRef is one file a result names, with what the result says about it.
type fileRef struct {
	key, value string         // the JSON key naming it and its value
	kind       string         // video, audio, image (a guess from the key or extension)
	siblings   map[string]any // the object holding it (duration, width, height, ...)
}

// fileRefs walks a result for the files it names, each once (a file_path and a video_url of the
// same file count once).
func fileRefs(raw json.RawMessage) []fileRef {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []fileRef
	var walk func(key string, v any, parent map[string]any)
	walk = func(key string, v any, parent map[string]any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e, x)
			}
		case []any:
			for _, e := range x {
				walk(key, e, parent)
			}
		case string:
			kind := fileKind(key, x)
			if kind == "" {
				return
			}
			id := x
			if k := fileurl.KeyOf(x); k != "" {
				id = k
			}
			if seen[id] {
				return
			}
			seen[id] = true
			out = append(out, fileRef{key: key, value: x, kind: kind, siblings: parent})
		}
	}
	walk("", v, nil)
	return out
}

// runAsset makes the asset record of one file of run r (not yet stored), or nil when the file is
// not one to record.
func (s *Service) runAsset(ctx context.Context, r *store.Run, ref fileRef) (*store.Asset, error) {
	meta := map[string]any{"output_key": ref.key, "run_id": r.ID}
	for _, k := range []string{"duration", "width", "height", "format", "job_id", "tool"} {
		if v, ok := ref.siblings[k]; ok && v != nil {
			meta[k] = v
		}
	}
	// A video's cover and caption files, by their storage keys: a listing shows the cover beside it.
	for _, k := range postFiles {
		if v, _ := ref.siblings[k].(string); k != ref.key && fileurl.KeyOf(v) != "" {
			meta[strings.TrimSuffix(k, "_url")+"_path"] = fileurl.KeyOf(v)
		}
	}
	a := &store.Asset{ID: uuid.NewString(), UserID: r.UserID, ProjectID: r.ProjectID, FileType: ref.kind,
		SourceRunID: r.ID, SourceTaskID: launch.TaskOf(r.TriggeredBy)}
	if strings.HasPrefix(ref.value, "http://") || strings.HasPrefix(ref.value, "https://") {
		a.FilePath, a.FileURL, a.OriginalName = ref.value, ref.value, path.Base(strings.SplitN(ref.value, "?", 2)[0])
		a.MimeType = mime.TypeByExtension(path.Ext(a.OriginalName))
		meta["storage"] = "external"
		a.Metadata, _ = json.Marshal(meta)
		return a, nil
	}
	key := storageKey(ref.value)
	if key == "" {
		return nil, nil // a path no route serves: not a file of the run's
	}
	if keyOwner(key) != r.UserID {
		s.log.Warn("content: a run named another user's file; not recorded", "run_id", r.ID, "key", key)
		return nil, nil
	}
	if render.IsPartial(key) {
		// A render in progress, or cut off by its plugin's death: no result of the file's; a run
		// that names one (an input passed on) must not make it an asset that downloads serve.
		s.log.Warn("content: a run named a render's partial file; not recorded", "run_id", r.ID, "key", key)
		return nil, nil
	}
	if prev, err := s.st.GetAssetByPath(ctx, r.UserID, key); err == nil && prev.SourceRunID != r.ID {
		return nil, nil // an upload or an earlier run's file: it has its record
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("content: look up %s: %w", key, err)
	}
	media, size, err := s.keepRunFile(ctx, key)
	if err != nil {
		return nil, err
	}
	a.FilePath, a.FileURL, a.OriginalName = key, fileurl.OfKey(key), runFileName(r, key)
	a.FileType, a.MimeType, a.FileSize = media.FileType, media.MIME, size
	meta["storage"] = s.blobs.Kind()
	a.Metadata, _ = json.Marshal(meta)
	return a, nil
}

// runFileName is what a run's file is called in listings and downloads (Content-Disposition):
// the run's title (its title, topic, prompt or summary input, on one line, cut to 80 characters)
// with the file's extension, or the file's own name when the run has none.
func runFileName(r *store.Run, key string) string {
	var in map[string]any
	_ = json.Unmarshal(r.Inputs, &in) // inputs that are not an object name no title
	for _, k := range []string{"title", "topic", "prompt", "summary"} {
		v, _ := in[k].(string)
		if v = clip(strings.Join(strings.Fields(v), " "), 80); v != "" {
			return v + path.Ext(key)
		}
	}
	return path.Base(key)
}

// keepRunFile finds the bytes of a generated file (written by a local generator under
// dataDir/<key>), classifies them, and copies them into an object store when one is used.
func (s *Service) keepRunFile(ctx context.Context, key string) (Media, int64, error) {
	local := filepath.Join(s.dataDir, filepath.FromSlash(key))
	f, err := os.Open(local)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && s.blobs.Kind() != "local" {
			// Already only in the bucket (put by another host): classify it from there.
			return s.sniffStored(ctx, key)
		}
		return Media{}, 0, fmt.Errorf("content: generated file %s: %w", key, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return Media{}, 0, fmt.Errorf("content: generated file %s is not a regular file", key)
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	media, ok := SniffGenerated(head[:n], key)
	if !ok {
		return Media{}, 0, fmt.Errorf("content: generated file %s is not image, video, audio or captions", key)
	}
	if s.blobs.Kind() == "local" {
		return media, st.Size(), nil // the folder store is rooted at the data directory: same file
	}
	if size, err := s.blobs.Size(ctx, key); err == nil && size == st.Size() {
		return media, size, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Media{}, 0, fmt.Errorf("content: rewind %s: %w", key, err)
	}
	if err := s.blobs.Put(ctx, key, f, st.Size(), media.MIME); err != nil {
		return Media{}, 0, s.storeErr("content.run_file", "The generated file could not be stored", err)
	}
	return media, st.Size(), nil
}

func (s *Service) sniffStored(ctx context.Context, key string) (Media, int64, error) {
	size, err := s.blobs.Size(ctx, key)
	if err != nil {
		return Media{}, 0, fmt.Errorf("content: generated file %s: %w", key, err)
	}
	rc, err := s.blobs.OpenRange(ctx, key, 0, min(size, 512))
	if err != nil {
		return Media{}, 0, fmt.Errorf("content: generated file %s: %w", key, err)
	}
	defer rc.Close()
	head, _ := io.ReadAll(rc) // a failed read leaves head short, and Sniff refuses it below with the reason
	media, ok := SniffGenerated(head, key)
	if !ok {
		return Media{}, 0, fmt.Errorf("content: generated file %s is not image, video, audio or captions", key)
	}
	return media, size, nil
}

// AssetAtKey returns userID's live asset stored under key (the file route's lookup); 404 otherwise.
func (s *Service) AssetAtKey(ctx context.Context, userID, key string) (*store.Asset, error) {
	if !blob.ValidKey(key) {
		return nil, errcode.New(errcode.NotFound, "Asset not found")
	}
	a, err := s.st.GetAssetByPath(ctx, userID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errcode.New(errcode.NotFound, "Asset not found")
	}
	return a, err
}

// OwnAsset returns userID's live asset id; 404 for another user's, a deleted or an unknown one.
func (s *Service) OwnAsset(ctx context.Context, userID, id string) (*store.Asset, error) {
	a, err := s.LiveAsset(ctx, id)
	if err == nil && a.UserID != userID {
		return nil, errcode.New(errcode.NotFound, "Asset not found")
	}
	return a, err
}

// LiveAsset returns asset id whoever owns it (a signed file URL names it: the signature is the
// permission); 404 for a deleted or an unknown one.
func (s *Service) LiveAsset(ctx context.Context, id string) (*store.Asset, error) {
	a, err := s.st.GetAsset(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.IsDeleted) {
		return nil, errcode.New(errcode.NotFound, "Asset not found")
	}
	return a, err
}

// FileSize is the size of an asset's stored bytes (404 when the store holds none).
func (s *Service) FileSize(ctx context.Context, a *store.Asset) (int64, error) {
	if !blob.ValidKey(a.FilePath) {
		return 0, errcode.New(errcode.NotFound, "Asset file not found")
	}
	size, err := s.blobs.Size(ctx, a.FilePath)
	if errors.Is(err, blob.ErrNotFound) {
		return 0, errcode.New(errcode.NotFound, "Asset file not found")
	}
	if err != nil {
		return 0, s.storeErr("content.asset_file", "The file could not be read", err)
	}
	return size, nil
}

// OpenFile opens n bytes of an asset's file from offset off; ctx must stay live while it is read.
func (s *Service) OpenFile(ctx context.Context, a *store.Asset, off, n int64) (io.ReadCloser, error) {
	body, err := s.blobs.OpenRange(ctx, a.FilePath, off, n)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, errcode.New(errcode.NotFound, "Asset file not found")
	}
	if err != nil {
		return nil, s.storeErr("content.asset_file", "The file could not be read", err)
	}
	return body, nil
}

var extKinds = map[string]string{
	".mp4": "video", ".mov": "video", ".webm": "video", ".mkv": "video", ".avi": "video",
	".mp3": "audio", ".wav": "audio", ".ogg": "audio", ".m4a": "audio", ".aac": "audio", ".flac": "audio",
	".png": "image", ".jpg": "image", ".jpeg": "image", ".gif": "image", ".webp": "image",
	".vtt": store.AssetCaptions, ".srt": store.AssetCaptions,
}

// fileKind returns video, audio, image or captions for a value that names a file, or "".
func fileKind(key, val string) string {
	if val == "" || strings.ContainsAny(val, "\n ") {
		return ""
	}
	isRef := strings.HasPrefix(val, "http://") || strings.HasPrefix(val, "https://") || strings.HasPrefix(val, "/") ||
		strings.HasPrefix(val, "assets/")
	if !isRef {
		return ""
	}
	u := strings.ToLower(val)
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if kind, ok := extKinds[path.Ext(u)]; ok {
		return kind
	}
	k := strings.ToLower(key)
	if !(strings.HasSuffix(k, "url") || strings.HasSuffix(k, "path") || strings.HasPrefix(k, "file")) {
		return ""
	}
	switch {
	case strings.Contains(k, "video"):
		return "video"
	case strings.Contains(k, "audio"), strings.Contains(k, "music"), strings.Contains(k, "speech"), strings.Contains(k, "voice"):
		return "audio"
	case strings.Contains(k, "image"), strings.Contains(k, "cover"), strings.Contains(k, "thumb"), strings.Contains(k, "graphic"):
		return "image"
	}
	return ""
}

// runLocks are locks by run id (RecordRunFiles), each held only while some call wants it.
type runLocks struct {
	mu sync.Mutex
	m  map[string]*runLock
}

type runLock struct {
	sync.Mutex
	waiters int // calls holding or waiting for it
}

// lock takes the lock of run id and returns its release.
func (l *runLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*runLock{}
	}
	k := l.m[id]
	if k == nil {
		k = &runLock{}
		l.m[id] = k
	}
	k.waiters++
	l.mu.Unlock()
	k.Lock()
	return func() {
		k.Unlock()
		l.mu.Lock()
		if k.waiters--; k.waiters == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}
