package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
)

// mp4Bytes is n bytes that sniff as an MP4 file, with a byte pattern a range can be checked by.
func mp4Bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	copy(b, "\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")
	return b
}

// uploadedEvents counts the task.asset.uploaded events in the outbox.
func uploadedEvents(t *testing.T, st store.Driver) map[string]int {
	t.Helper()
	evs, err := st.ClaimOutboxEvents(context.Background(), &store.ClaimOutboxParams{Limit: 1000, Token: uuid.NewString(),
		Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range evs {
		if e.Event != events.TaskAssetUploaded {
			continue
		}
		var body struct {
			Data struct {
				AssetID string `json:"assetId"`
			} `json:"data"`
		}
		if err := json.Unmarshal(e.Payload, &body); err != nil {
			t.Fatal(err)
		}
		out[body.Data.AssetID]++
	}
	return out
}

// setupRunFiles is setupContent over blobs (nil: DATA_DIR) with a second content service over
// the same store and blobs, as host/runs holds one, and write, which leaves a file in the data
// folder as a local generator does (rel: its storage key).
func setupRunFiles(t *testing.T, open func(*testing.T) store.Driver, blobs blob.Store) (*testBundle, *content.Service, func(rel string, data []byte)) {
	var svc *content.Service
	var dataDir string
	b := setupContentWith(t, open, 1<<20, func(c *content.Config) {
		c.Blobs, dataDir = blobs, c.DataDir
		svc = content.New(*c)
	})
	return b, svc, func(rel string, data []byte) {
		t.Helper()
		p := filepath.Join(dataDir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunFilesServed: the files a run names become assets of its owner once each (with
// task.asset.uploaded), and one route serves them, whole or by byte range, to their owner only, from
// the data folder or from an S3 bucket, on both databases.
func TestRunFilesServed(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		for storage, newBlobs := range blobStores() {
			t.Run(d.name+"/"+storage, func(t *testing.T) {
				t.Parallel()
				testRunFiles(t, d.open, newBlobs(t))
			})
		}
	}
}

func testRunFiles(t *testing.T, open func(*testing.T) store.Driver, blobs blob.Store) {
	ctx := context.Background()
	b, svc, write := setupRunFiles(t, open, blobs)
	alice, aliceID := b.user("alice")
	bob, bobID := b.user("bob")
	pid := b.project(alice, "films")

	// What a local generator leaves in the data folder: a video and a speech file of alice's, and
	// one of bob's that alice's run must not claim.
	video := mp4Bytes(5000)
	write("assets/"+aliceID+"/video/j1.mp4", video)
	write("assets/"+aliceID+"/speech/j0.wav", wavBytes())
	write("assets/"+bobID+"/video/jb.mp4", video)
	write("assets/"+aliceID+"/video/jc.partial.mp4", video[:1000]) // a render killed mid-way (internal/render)
	run := &store.Run{ID: uuid.NewString(), UserID: aliceID, ProjectID: pid, TriggeredBy: "task:t-1"}
	speech := fmt.Sprintf(`{"audio_url":"/api/assets/files/%s/speech/j0.wav","file_path":"assets/%s/speech/j0.wav","duration":2.5}`, aliceID, aliceID)
	videoRes := fmt.Sprintf(`{"video_url":"/api/assets/files/%s/video/j1.mp4","file_path":"assets/%s/video/j1.mp4","duration":12.04,"width":720,"height":1280,
		"stolen":"/api/assets/files/%s/video/jb.mp4","poster_url":"https://cdn.example/p.jpg","local":"/tmp/x.mp4",
		"cut_off":"/api/assets/files/%s/video/jc.partial.mp4"}`, aliceID, aliceID, bobID, aliceID)
	for _, res := range []string{speech, videoRes} {
		if _, err := svc.RecordRunFiles(ctx, run, json.RawMessage(res)); err != nil {
			t.Fatalf("RecordRunFiles = %v", err)
		}
	}
	// The run's outputs name the same files again: nothing new.
	outputs := fmt.Sprintf(`{"assets":{"video_url":"/api/assets/files/%s/video/j1.mp4","audio_url":"/api/assets/files/%s/speech/j0.wav"}}`, aliceID, aliceID)
	if made, err := svc.RecordRunFiles(ctx, run, json.RawMessage(outputs)); err != nil || len(made) != 0 {
		t.Errorf("RecordRunFiles(outputs again) = %d new, %v; want none", len(made), err)
	}
	// A job's result and the run's end name a new file at the same time: recorded once.
	write("assets/"+aliceID+"/video/j2.mp4", video)
	again := json.RawMessage(fmt.Sprintf(`{"video_url":"/api/assets/files/%s/video/j2.mp4"}`, aliceID))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := svc.RecordRunFiles(ctx, run, again); err != nil {
				t.Errorf("RecordRunFiles(at once) = %v", err)
			}
		}()
	}
	wg.Wait()
	got, err := b.st.ListRunAssets(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]store.Asset{}
	for _, a := range got {
		byPath[a.FilePath] = a
	}
	if len(got) != 4 || len(byPath) != 4 {
		t.Fatalf("run assets = %+v, want the speech, the two videos (each once) and the external poster (not the partial file)", got)
	}
	v := byPath["assets/"+aliceID+"/video/j1.mp4"]
	var meta map[string]any
	_ = json.Unmarshal(v.Metadata, &meta)
	if v.FileType != "video" || v.MimeType != "video/mp4" || v.FileSize != int64(len(video)) || v.ProjectID != pid ||
		v.SourceRunID != run.ID || v.SourceTaskID != "t-1" || v.FileURL != "/api/assets/files/"+aliceID+"/video/j1.mp4" ||
		meta["duration"] != 12.04 || meta["width"] != 720.0 {
		t.Errorf("video asset = %+v (metadata %v)", v, meta)
	}
	if p := byPath["https://cdn.example/p.jpg"]; p.FileURL != "https://cdn.example/p.jpg" || p.FileType != "image" {
		t.Errorf("external asset = %+v", p)
	}
	uploaded := uploadedEvents(t, b.st)
	for _, a := range got {
		if uploaded[a.ID] != 1 {
			t.Errorf("task.asset.uploaded for %s sent %d times, want once", a.FilePath, uploaded[a.ID])
		}
	}

	url := v.FileURL
	tests := map[string]struct {
		token, path, rng string
		wantStatus       int
		wantBody         []byte
		wantRange        string
	}{
		"owner":            {alice, url, "", 200, video, ""},
		"by id":            {alice, "/api/materials/" + v.ID + "/file", "", 200, video, ""},
		"first bytes":      {alice, url, "bytes=0-99", 206, video[:100], "bytes 0-99/5000"},
		"middle":           {alice, url, "bytes=1000-1999", 206, video[1000:2000], "bytes 1000-1999/5000"},
		"open end":         {alice, url, "bytes=4990-", 206, video[4990:], "bytes 4990-4999/5000"},
		"suffix":           {alice, url, "bytes=-10", 206, video[4990:], "bytes 4990-4999/5000"},
		"past the end":     {alice, url, "bytes=5000-", 416, nil, "bytes */5000"},
		"several ranges":   {alice, url, "bytes=0-1,5-6", 200, video, ""},
		"the whole":        {alice, url, "bytes=0-", 206, video, "bytes 0-4999/5000"},
		"other user":       {bob, url, "", 404, nil, ""},
		"other user by id": {bob, "/api/materials/" + v.ID + "/file", "", 404, nil, ""},
		"not recorded":     {bob, "/api/assets/files/" + bobID + "/video/jb.mp4", "", 404, nil, ""},
		"climbing":         {alice, "/api/assets/files/" + aliceID + "/../" + bobID + "/video/jb.mp4", "", 404, nil, ""},
		"no token":         {"", url, "", 401, nil, ""},
	}
	for name, tc := range tests {
		var h []string
		if tc.rng != "" {
			h = []string{"Range", tc.rng}
		}
		r := b.do("GET", tc.path, tc.token, nil, h...)
		if r.status != tc.wantStatus {
			t.Errorf("%s: GET %s = %d %.200s, want %d", name, tc.path, r.status, r.raw, tc.wantStatus)
			continue
		}
		if r.header.Get("Content-Range") != tc.wantRange {
			t.Errorf("%s: Content-Range = %q, want %q", name, r.header.Get("Content-Range"), tc.wantRange)
		}
		if tc.wantBody == nil {
			continue
		}
		if !bytes.Equal([]byte(r.raw), tc.wantBody) || r.header.Get("Content-Type") != "video/mp4" ||
			r.header.Get("Content-Length") != strconv.Itoa(len(tc.wantBody)) || r.header.Get("Accept-Ranges") != "bytes" {
			t.Errorf("%s: got %d bytes, type %q, length %q, accept-ranges %q; want %d bytes of video/mp4", name, len(r.raw),
				r.header.Get("Content-Type"), r.header.Get("Content-Length"), r.header.Get("Accept-Ranges"), len(tc.wantBody))
		}
	}
	// Uploads are served by the same route, under their key.
	up := b.upload("/api/materials/upload", alice, "file", "p.png", "image/png", pngBytes, nil)
	if up.status != 201 {
		t.Fatalf("upload = %d %s", up.status, up.raw)
	}
	key := up.data("asset").(map[string]any)["file_path"].(string)
	if r := b.do("GET", fileurl.OfKey(key), alice, nil); r.status != 200 || r.raw != string(pngBytes) || r.header.Get("Content-Type") != "image/png" {
		t.Errorf("upload by key = %d %q", r.status, r.header.Get("Content-Type"))
	}
	// A deleted asset is gone from both routes.
	if r := b.do("POST", "/api/materials/batch-delete", alice, map[string]any{"ids": []string{v.ID}}); r.status != 200 {
		t.Fatalf("batch-delete = %d %s", r.status, r.raw)
	}
	if r := b.do("GET", url, alice, nil); r.status != 404 {
		t.Errorf("deleted asset = %d, want 404", r.status)
	}
}
