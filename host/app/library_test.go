package app

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/blob/blobtest"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/testtool"
)

// TestLibrary is what a front end's library does with a made video: the runs list shows its
// title, video, cover and length; the cover and the captions are served; the video is a material
// with its cover. Deleting the cover takes its bytes and row, and no answer names it after;
// deleting the run (its owner only, not while it runs) takes every file it made, in the folder and
// in the bucket, and their URLs answer 404. SQLite with the data folder, PostgreSQL with S3.
func TestLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
	t.Parallel()
	for name, setup := range map[string]func(t *testing.T) (*hostHarness, blob.Store){
		"sqlite/local": func(t *testing.T) (*hostHarness, blob.Store) {
			hh := startHost(t, "")
			return hh, blob.NewDir(hh.h.Config.DataDir)
		},
		"postgres/s3": func(t *testing.T) (*hostHarness, blob.Store) {
			db := freshDatabase(t)
			s3 := blobtest.S3(t, "media")
			hh := startHost(t, db, "S3_BUCKET", s3.Bucket, "S3_ENDPOINT", s3.Endpoint, "S3_ACCESS_KEY_ID", s3.AccessKeyID,
				"S3_SECRET_ACCESS_KEY", s3.SecretAccessKey, "S3_USE_PATH_STYLE", "true")
			bucket, err := blob.NewS3(s3)
			if err != nil {
				t.Fatal(err)
			}
			return hh, bucket
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hh, bucket := setup(t)
			testLibrary(t, hh, bucket)
		})
	}
}

func testLibrary(t *testing.T, hh *hostHarness, bucket blob.Store) {
	ctx := context.Background()
	runID := hh.completedRun(map[string]any{"workflow": "voiceover_video", "inputs": map[string]any{"topic": "tide pools at dawn", "duration": 6}})
	_, res, _, raw := hh.call("GET", "/api/workflow/result/"+runID, nil)
	outputs, _ := res["outputs"].(map[string]any)
	files, _ := outputs["assets"].(map[string]any)
	if files == nil || files["video_url"] == nil || files["thumbnail_url"] == nil || files["captions_vtt_url"] == nil ||
		outputs["width"] == nil || outputs["duration"] == nil {
		t.Fatalf("result = %s, want the video with its cover, captions, size and length", raw)
	}
	video, cover, vtt := files["video_url"].(string), files["thumbnail_url"].(string), files["captions_vtt_url"].(string)

	// The runs list: the run's title, its video, cover and length.
	item := hh.listedRun(runID)
	if item["title"] == nil || item["product_url"] != video || item["thumbnail_url"] != cover || item["duration"] != outputs["duration"] {
		t.Errorf("listed run = %v; want its title, video %s, cover %s, duration %v", item, video, cover, outputs["duration"])
	}
	for u, want := range map[string]string{cover: "image/jpeg", vtt: "text/vtt; charset=utf-8"} {
		if status, _, hdr, got := hh.call("GET", u, nil); status != 200 || hdr.Get("Content-Type") != want || len(got) < 10 {
			t.Errorf("GET %s = %d %s, %d bytes; want %s", u, status, hdr.Get("Content-Type"), len(got), want)
		}
	}

	// The video is a material of the library, shown with its cover; to the owner only.
	_, list, _, raw := hh.call("GET", "/api/materials?type=video", nil)
	vids, _ := list["data"].([]any)
	if len(vids) != 1 || vids[0].(map[string]any)["thumbnail_url"] != cover {
		t.Fatalf("video materials = %s, want the run's video with its cover", raw)
	}
	vid := vids[0].(map[string]any)["id"].(string)
	if status, one, _, raw := hh.call("GET", "/api/materials/"+vid, nil); status != 200 ||
		one["data"].(map[string]any)["asset"].(map[string]any)["thumbnail_url"] != cover {
		t.Errorf("GET material = %d %s", status, raw)
	}
	// Bob, with his own token, finds none of it (a signed URL is a shared link: it works for anyone).
	bob := hh.as(t, "bob")
	for _, p := range []string{"/api/materials/" + vid, fileurl.Unsigned(video), "/api/workflow/result/" + runID} {
		if status, _, _, _ := bob.call("GET", p, nil); status != 404 {
			t.Errorf("bob GET %s = %d, want 404", p, status)
		}
	}

	// Deleting the cover: its bytes and row go; the result, the list and the video's material
	// name it no more, and its URL answers 404.
	assets, err := hh.h.Store.ListRunAssets(ctx, runID)
	if err != nil || len(assets) != 5 {
		t.Fatalf("run assets = %d, %v; want the speech, the video, the cover, the WebVTT and SRT captions", len(assets), err)
	}
	var coverAsset store.Asset
	for _, a := range assets {
		if a.FileURL == fileurl.Unsigned(cover) {
			coverAsset = a
		}
	}
	if status, del, _, raw := hh.call("POST", "/api/materials/batch-delete", map[string]any{"ids": []string{coverAsset.ID}}); status != 200 ||
		del["data"].(map[string]any)["deletedCount"] != 1.0 {
		t.Fatalf("batch-delete the cover = %d %s", status, raw)
	}
	hh.gone(t, bucket, coverAsset.FilePath, cover)
	shared := map[string]string{} // the signed URLs of the run's files, as handed out before the delete
	for k, v := range files {
		shared[k] = v.(string)
	}
	_, res, _, raw = hh.call("GET", "/api/workflow/result/"+runID, nil)
	if coverAsset.ID == "" || strings.Contains(string(raw), strings.TrimPrefix(coverAsset.FilePath, "assets/")) {
		t.Errorf("the result still names the deleted cover: %s", raw)
	}
	if a := res["outputs"].(map[string]any)["assets"].(map[string]any); a["video_url"] != video || a["thumbnail_url"] != nil {
		t.Errorf("result assets = %v; want the video and no cover", a)
	}
	if item := hh.listedRun(runID); item["thumbnail_url"] != nil || item["product_url"] != video {
		t.Errorf("listed run after the cover's delete = %v", item)
	}
	if _, one, _, raw := hh.call("GET", "/api/materials/"+vid, nil); one["data"].(map[string]any)["asset"].(map[string]any)["thumbnail_url"] != nil {
		t.Errorf("the video material still shows the deleted cover: %s", raw)
	}

	// A run still going cannot be deleted; someone else's is not found.
	going := &store.Run{ID: uuid.NewString(), WorkflowID: "voiceover_video", UserID: hh.userID(t), Status: store.RunRunning,
		Inputs: json.RawMessage(`{}`), UserContext: json.RawMessage(`{}`)}
	if err := hh.h.Store.CreateRun(ctx, going); err != nil {
		t.Fatal(err)
	}
	if status, _, _, raw := hh.call("DELETE", "/api/workflow/runs/"+going.ID, nil); status != 409 {
		t.Errorf("DELETE a running run = %d %s, want 409", status, raw)
	}
	if status, _, _, raw := bob.call("DELETE", "/api/workflow/runs/"+runID, nil); status != 404 {
		t.Errorf("bob DELETE alice's run = %d %s, want 404", status, raw)
	}

	// Deleting the run takes every file it made.
	if status, _, _, raw := hh.call("DELETE", "/api/workflow/runs/"+runID, nil); status != 200 {
		t.Fatalf("DELETE run = %d %s", status, raw)
	}
	for _, a := range assets {
		hh.gone(t, bucket, a.FilePath, a.FileURL)
	}
	for k, u := range shared {
		if !strings.Contains(u, "signature=") {
			t.Errorf("%s = %s, want a signed URL", k, u)
		}
		hh.gone(t, bucket, fileurl.KeyOf(u), u)
	}
	if left, err := hh.h.Store.ListRunAssets(ctx, runID); err != nil || len(left) != 0 {
		t.Errorf("run assets after the delete = %d, %v", len(left), err)
	}
	for _, p := range []string{"/api/workflow/result/" + runID, "/api/materials/" + vid} {
		if status, _, _, _ := hh.call("GET", p, nil); status != 404 {
			t.Errorf("GET %s after the delete = %d, want 404", p, status)
		}
	}
	if status, _, _, _ := hh.call("DELETE", "/api/workflow/runs/"+runID, nil); status != 404 {
		t.Errorf("DELETE the run again = %d, want 404", status)
	}
}

// gone checks that a file's URL answers 404 (to its owner, and signed, to a visitor) and that
// its bytes are in neither the store nor the data folder.
func (hh *hostHarness) gone(t *testing.T, bucket blob.Store, key, url string) {
	t.Helper()
	visitor := &hostHarness{t: t, h: hh.h}
	for who, c := range map[string]*hostHarness{"owner": hh, "visitor": visitor} {
		if c == visitor && !strings.Contains(url, "signature=") {
			continue
		}
		if status, _, _, raw := c.call("GET", url, nil); status != 404 && status != 410 {
			t.Errorf("%s GET %s of a deleted file = %d %s, want 404 or 410", who, url, status, raw)
		}
	}
	if _, err := bucket.Size(context.Background(), key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("%s in the %s store: %v, want gone", key, bucket.Kind(), err)
	}
	if _, err := os.Stat(filepath.Join(hh.h.Config.DataDir, filepath.FromSlash(key))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s in the data folder: %v, want gone", key, err)
	}
}

// listedRun is run id's item in the caller's runs list.
func (hh *hostHarness) listedRun(id string) map[string]any {
	hh.t.Helper()
	_, list, _, raw := hh.call("GET", "/api/workflow/runs", nil)
	items, _ := list["data"].([]any)
	for _, it := range items {
		if m := it.(map[string]any); m["run_id"] == id {
			return m
		}
	}
	hh.t.Fatalf("run %s not in the runs list %s", id, raw)
	return nil
}

// as is the same host for another, new user.
func (hh *hostHarness) as(t *testing.T, name string) *hostHarness {
	t.Helper()
	sess, err := hh.h.Server.Auth.Register(context.Background(), name+"-"+uuid.NewString()[:8]+"@example.com", "password-123", "creator")
	if err != nil {
		t.Fatal(err)
	}
	return &hostHarness{t: t, h: hh.h, token: sess.Token}
}

// userID is the harness user's id.
func (hh *hostHarness) userID(t *testing.T) string {
	t.Helper()
	_, me, _, raw := hh.call("GET", "/api/auth/me", nil)
	data, _ := me["data"].(map[string]any)
	user, _ := data["user"].(map[string]any)
	id, _ := user["id"].(string)
	if id == "" {
		t.Fatalf("/api/auth/me = %s", raw)
	}
	return id
}
