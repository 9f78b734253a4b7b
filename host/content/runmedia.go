package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
)

// maxRunMedia bounds the material a render job is given.
const maxRunMedia = 20

// AddRunMedia gives a render job of run r the creator's material: the payload's "media" (a run
// input of asset ids or file references) with ids turned into the files' keys, then the images
// and clips of the run's project (materials and inspiration media, oldest first; not files runs
// made), each once; and, when the payload names no music, the project's audio tagged music or bgm
// as music_url. Only r's owner's assets are used. Files kept in an object store are copied into
// the data folder first, where the local renderer reads them. request is the job's payload (a
// JSON object); it is returned unchanged when there is nothing to add.
func (s *Service) AddRunMedia(ctx context.Context, r *store.Run, request json.RawMessage) (json.RawMessage, error) {
	payload := map[string]any{}
	if err := json.Unmarshal(request, &payload); err != nil {
		return request, nil //nolint:nilerr // not an object: the generator refuses it itself
	}
	var refs []string
	seen := map[string]bool{}
	add := func(ref string) {
		if ref != "" && !seen[ref] && len(refs) < maxRunMedia {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	var given []string
	switch x := payload["media"].(type) {
	case string:
		given = strings.FieldsFunc(x, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				given = append(given, s)
			}
		}
	}
	for _, ref := range given {
		if _, err := uuid.Parse(ref); err == nil {
			a, err := s.OwnAsset(ctx, r.UserID, ref)
			if err != nil {
				continue // not the owner's: nothing of it reaches the renderer
			}
			if key, err := s.localCopy(ctx, a); err == nil {
				add(key)
			}
			continue
		}
		add(ref) // a file reference: the generator keeps to the owner's folder itself
	}
	var music string
	if r.ProjectID != "" {
		assets, _, err := s.st.ListAssets(ctx, store.ListAssetsParams{UserID: r.UserID, ProjectID: r.ProjectID, Limit: 200})
		if err != nil {
			return nil, fmt.Errorf("content: project material: %w", err)
		}
		slices.Reverse(assets) // oldest first: the order the creator added them
		for i := range assets {
			a := &assets[i]
			if a.SourceRunID != "" {
				continue
			}
			switch {
			case a.FileType == store.AssetImage || a.FileType == store.AssetVideo:
				if key, err := s.localCopy(ctx, a); err == nil {
					add(key)
				} else {
					s.log.Warn("content: a material could not be given to the renderer", "asset_id", a.ID, "err", err)
				}
			case a.FileType == store.AssetAudio && music == "" && (slices.Contains(a.Tags, "music") || slices.Contains(a.Tags, "bgm")):
				if key, err := s.localCopy(ctx, a); err == nil {
					music = key
				}
			}
		}
	}
	if len(refs) == 0 && (music == "" || musicOf(payload) != "") {
		return request, nil
	}
	if len(refs) > 0 {
		list := make([]any, len(refs))
		for i, ref := range refs {
			list[i] = ref
		}
		payload["media"] = list
	}
	if music != "" && musicOf(payload) == "" {
		payload["music_url"] = fileurl.OfKey(music)
	}
	return json.Marshal(payload)
}

func musicOf(payload map[string]any) string {
	for _, k := range []string{"music_url", "music_path", "music_file"} {
		if s, _ := payload[k].(string); strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// localCopy makes sure an asset's bytes are in the data folder under its key (the folder store
// keeps them there already; an object store's are copied once) and returns the key.
func (s *Service) localCopy(ctx context.Context, a *store.Asset) (string, error) {
	if !blob.ValidKey(a.FilePath) {
		return "", fmt.Errorf("content: asset %s has no stored file", a.ID)
	}
	if s.blobs.Kind() == "local" {
		return a.FilePath, nil
	}
	dst := filepath.Join(s.dataDir, filepath.FromSlash(a.FilePath))
	if st, err := os.Stat(dst); err == nil && st.Size() == a.FileSize {
		return a.FilePath, nil
	}
	body, _, err := s.blobs.Open(ctx, a.FilePath)
	if err != nil {
		return "", err
	}
	defer body.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".copy-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(tmp, body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		_ = os.Remove(tmp.Name()) // best effort; the copy's error is what is returned
		return "", errors.Join(fmt.Errorf("content: copy %s from the object store", a.FilePath), err)
	}
	return a.FilePath, nil
}
