package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// maxRunMedia bounds the material a render job is given.
const maxRunMedia = 20

// AddRunMedia gives a render job of run r the creator's material: the payload's "media" (a run
// input of references, see resolveRef) in the order given, then the pictures and clips of the run's
// project chosen from the whole project (store.ListMaterial: those tagged with the payload's
// "tags" first, then the newest; not files runs made), each once; and a music reference turned
// into the file's address, or, when the payload names no music, the project's audio tagged music
// or bgm. Only r's owner's assets are used: Start refused the references that name others
// (CheckRunMedia); one deleted since is left out. Files kept in an object store are copied into
// the data folder first, where the local renderer reads them. request is the job's payload (a
// JSON object); it is returned unchanged when there is nothing to add.
func (s *Service) AddRunMedia(ctx context.Context, r *store.Run, request json.RawMessage) (json.RawMessage, error) {
	payload := map[string]any{}
	if err := json.Unmarshal(request, &payload); err != nil {
		return request, nil // not an object: the generator refuses it itself
	}
	material, err := s.runMaterial(ctx, r, payload["media"], payload["tags"])
	if err != nil {
		return nil, err
	}
	var refs []string
	focus := map[string]any{} // the focal points of the material that has one, by reference
	for _, a := range material {
		if len(refs) >= maxRunMedia {
			break
		}
		key, err := s.localCopy(ctx, a)
		if err != nil {
			s.log.Warn("content: a material could not be given to the renderer", "asset_id", a.ID, "err", err)
			continue
		}
		refs = append(refs, key)
		if f := assetFocus(a); f != nil {
			focus[key] = f
		}
	}
	changed := len(refs) > 0
	if m := musicOf(payload); m != "" {
		if a, err := s.resolveRef(ctx, r.UserID, "music_url", m); err == nil && a != nil {
			if key, err := s.localCopy(ctx, a); err == nil {
				payload["music_url"], changed = fileurl.OfKey(key), true
			}
		}
	}
	if r.ProjectID != "" && musicOf(payload) == "" {
		if key := s.projectMusic(ctx, r); key != "" {
			payload["music_url"], changed = fileurl.OfKey(key), true
		}
	}
	if len(refs) > 0 {
		list := make([]any, len(refs))
		for i, ref := range refs {
			list[i] = ref
		}
		payload["media"], changed = list, true
	}
	if len(focus) > 0 {
		// Beside "media", not in it: its items stay the references an external generator reads.
		payload["media_focus"] = focus
	}
	if !changed {
		return request, nil
	}
	return json.Marshal(payload)
}

// runMaterial is run r's material in the order a render shows it, each once: the assets the
// references of media name (a run input or a job's payload, see refList and resolveRef; one that
// names nothing of r's owner's is left out), then the pictures and clips of r's project
// (store.ListMaterial: tagged with one of tags first, then the newest; not files runs made).
func (s *Service) runMaterial(ctx context.Context, r *store.Run, media, tags any) ([]*store.Asset, error) {
	var out []*store.Asset
	seen := map[string]bool{}
	add := func(a *store.Asset) {
		if !seen[a.ID] {
			seen[a.ID] = true
			out = append(out, a)
		}
	}
	for _, ref := range refList(media) {
		if a, err := s.resolveRef(ctx, r.UserID, "media", ref); err == nil && a != nil {
			add(a)
		}
	}
	if r.ProjectID != "" {
		material, err := s.st.ListMaterial(ctx, store.MaterialParams{UserID: r.UserID, ProjectID: r.ProjectID,
			Tags: refList(tags), Limit: maxRunMedia})
		if err != nil {
			return nil, fmt.Errorf("content: project material: %w", err)
		}
		for i := range material {
			add(&material[i])
		}
	}
	return out, nil
}

// RunMaterialNotes is what the creator said of run r's material (runMaterial of the run's media
// and tags inputs, as its render will show it): one {ref, name, description} for each picture or
// clip with a description, in that order, ready to be the engine's media_descriptions input (a
// template script says a description where it matches the topic, docs/scripts.md). Empty when
// none is described.
func (s *Service) RunMaterialNotes(ctx context.Context, r *store.Run) ([]any, error) {
	inputs := map[string]any{}
	_ = json.Unmarshal(r.Inputs, &inputs) // not an object: no media input, the project's material still counts
	material, err := s.runMaterial(ctx, r, inputs["media"], inputs["tags"])
	if err != nil {
		return nil, err
	}
	var out []any
	for _, a := range material {
		if a.FileType != store.AssetImage && a.FileType != store.AssetVideo {
			continue
		}
		var meta struct {
			Description string `json:"description"`
		}
		if json.Unmarshal(a.Metadata, &meta) != nil || strings.TrimSpace(meta.Description) == "" {
			continue
		}
		out = append(out, map[string]any{"ref": a.ID, "name": firstNonEmpty(a.OriginalName, a.ID),
			"description": strings.TrimSpace(meta.Description)})
	}
	return out, nil
}

// assetFocus is an asset's focal point, its metadata's focus {x, y} (each 0..1), nil when it has
// none: the renderer keeps it in every crop of the picture or clip (docs/video.md).
func assetFocus(a *store.Asset) map[string]any {
	var meta struct {
		Focus *struct{ X, Y *float64 } `json:"focus"`
	}
	if json.Unmarshal(a.Metadata, &meta) != nil || meta.Focus == nil || meta.Focus.X == nil || meta.Focus.Y == nil {
		return nil
	}
	x, y := *meta.Focus.X, *meta.Focus.Y
	if x < 0 || x > 1 || y < 0 || y > 1 {
		return nil
	}
	return map[string]any{"x": x, "y": y}
}

// projectMusic is the key of r's project's newest audio tagged music (else bgm), "" for none.
func (s *Service) projectMusic(ctx context.Context, r *store.Run) string {
	for _, tag := range []string{"music", "bgm"} {
		found, _, err := s.st.ListAssets(ctx, store.ListAssetsParams{UserID: r.UserID, ProjectID: r.ProjectID,
			FileType: store.AssetAudio, Tag: tag, Limit: 1})
		if err != nil || len(found) == 0 {
			continue
		}
		if key, err := s.localCopy(ctx, &found[0]); err == nil {
			return key
		}
	}
	return ""
}

// refList reads a list input: a string of items separated by commas or white space, or a JSON
// list of strings.
func refList(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = strings.FieldsFunc(x, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
	}
	return out
}

// CheckRunMedia refuses, before a run is stored, the references of its media and music_url
// inputs that no render could use: 400 VALIDATION_ERROR naming the input and the item (one that
// names no asset of userID's, a deleted one, a media item that is not a picture or clip, music
// that is not audio). An http(s) link is a music track the generator fetches itself; it is never
// material.
func (s *Service) CheckRunMedia(ctx context.Context, userID string, inputs map[string]any) error {
	for i, ref := range refList(inputs["media"]) {
		field := fmt.Sprintf("media[%d]", i)
		a, err := s.resolveRef(ctx, userID, field, ref)
		if err != nil {
			return err
		}
		switch {
		case a == nil:
			return errcode.Invalid(field, fmt.Sprintf("%q is not one of your assets: give an asset id or a file URL the API handed out", clip(ref, 200)))
		case a.FileType != store.AssetImage && a.FileType != store.AssetVideo:
			return errcode.Invalid(field, fmt.Sprintf("%q is %s %s file, not a picture or clip", clip(ref, 200), article(a.FileType), a.FileType))
		}
	}
	if ref, ok := inputs["music_url"].(string); ok && strings.TrimSpace(ref) != "" {
		ref = strings.TrimSpace(ref)
		a, err := s.resolveRef(ctx, userID, "music_url", ref)
		if err != nil {
			return err
		}
		switch {
		case a == nil && !isLink(ref):
			return errcode.Invalid("music_url", fmt.Sprintf("%q is neither one of your assets nor an http(s) link", clip(ref, 200)))
		case a != nil && a.FileType != store.AssetAudio:
			return errcode.Invalid("music_url", fmt.Sprintf("%q is %s %s file, not audio", clip(ref, 200), article(a.FileType), a.FileType))
		}
	}
	return nil
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// isLink reports whether ref is an absolute http(s) URL.
func isLink(ref string) bool {
	u, err := url.Parse(ref)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// materialsPath matches the file_url of an asset: /api/materials/<id>/file.
var materialsPath = regexp.MustCompile(`^/api/materials/([0-9a-fA-F-]{36})/file$`)

// resolveRef is the asset of userID's that a run's reference names (field names the input in the
// error), in every form the API hands out: the asset's id, its file_url (/api/materials/<id>/file),
// its /api/assets/files/<key> URL, with or without scheme and host, or its storage key. A signed
// URL (host/fileurl) must verify: an altered or expired one is refused. It returns nil, nil for
// a reference of no such form (an outside link), and 400 naming ref for one of those forms that
// names no live asset of userID's: another user's looks the same as an unknown one, signed or not.
func (s *Service) resolveRef(ctx context.Context, userID, field, ref string) (*store.Asset, error) {
	ref = strings.TrimSpace(ref)
	var a *store.Asset
	var err error
	if _, perr := uuid.Parse(ref); perr == nil && len(ref) == 36 {
		a, err = s.OwnAsset(ctx, userID, ref)
	} else {
		u, perr := url.Parse(ref)
		if perr != nil || (u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https") {
			return nil, nil
		}
		if fileurl.IsFileURL(u.EscapedPath()) && fileurl.Signed(u.Query()) && s.fileURLs != nil {
			if _, err := s.fileURLs.Check(ref); err != nil {
				why := "its signature does not match (altered)"
				if errors.Is(err, fileurl.ErrExpired) {
					why = "it has expired: use the URL of a fresh listing, or the asset id"
				}
				return nil, errcode.Invalid(field, fmt.Sprintf("%q cannot be used: %s", clip(ref, 200), why))
			}
		}
		switch m := materialsPath.FindStringSubmatch(u.Path); {
		case m != nil:
			a, err = s.OwnAsset(ctx, userID, m[1])
		case fileurl.KeyOf(u.Path) != "":
			a, err = s.AssetAtKey(ctx, userID, fileurl.KeyOf(u.Path))
		case u.Scheme == "" && strings.HasPrefix(u.Path, "assets/") && blob.ValidKey(u.Path):
			a, err = s.AssetAtKey(ctx, userID, u.Path)
		default:
			return nil, nil
		}
	}
	if errcode.Of(err) == errcode.NotFound {
		return nil, errcode.Invalid(field, fmt.Sprintf("%q names no asset of yours (unknown or deleted)", clip(ref, 200)))
	}
	return a, err
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
