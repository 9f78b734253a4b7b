package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

func newCorpus(t *testing.T, d store.Content, userID string, mod func(c *store.Corpus)) *store.Corpus {
	t.Helper()
	c := &store.Corpus{ID: uuid.NewString(), UserID: userID, Title: "t", Content: "c"}
	if mod != nil {
		mod(c)
	}
	if err := d.CreateCorpus(context.Background(), c); err != nil {
		t.Fatalf("CreateCorpus: %v", err)
	}
	return c
}

func corpusIDs(cs []store.Corpus) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func assetIDs(as []store.Asset) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// clockStep makes successive records get distinct, increasing creation times.
func clockStep(d store.Driver) {
	start := d.Now()
	for d.Now().Equal(start) {
		time.Sleep(time.Millisecond)
	}
}

func testCorpus(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	me, other := NewUser(t, d, ""), NewUser(t, d, "")
	var mine []*store.Corpus
	tags := [][]string{{"food", "50%_off"}, {"travel"}, {"food"}, {}}
	for _, tg := range tags {
		mine = append(mine, newCorpus(t, d, me.ID, func(c *store.Corpus) {
			c.Tags = tg
			c.SourceURL = "https://www.douyin.com/video/1"
			c.Metadata = json.RawMessage(`{"k":"v"}`)
		}))
		clockStep(d)
	}
	newCorpus(t, d, other.ID, func(c *store.Corpus) { c.Tags = []string{"food"} })

	got, err := d.GetCorpus(ctx, mine[0].ID)
	if err != nil {
		t.Fatalf("GetCorpus: %v", err)
	}
	if got.Status != store.CorpusUnread || got.InspirationType != "collection" || got.ContentType != "text" ||
		!cmp.Equal(got.Tags, []string{"food", "50%_off"}) || got.UsageCount != 0 || !got.CreatedAt.Equal(mine[0].CreatedAt) {
		t.Errorf("GetCorpus = %+v, want defaults, tags and created_at round-tripped", got)
	}
	if _, err := d.GetCorpus(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetCorpus(unknown) = %v, want ErrNotFound", err)
	}

	newest := []string{mine[3].ID, mine[2].ID, mine[1].ID, mine[0].ID}
	tests := map[string]struct {
		p         store.ListCorpusParams
		want      []string
		wantTotal int
	}{
		"all":               {store.ListCorpusParams{Limit: 10}, newest, 4},
		"first page":        {store.ListCorpusParams{Limit: 3}, newest[:3], 4},
		"last page":         {store.ListCorpusParams{Limit: 3, Offset: 3}, newest[3:], 4},
		"past the end":      {store.ListCorpusParams{Limit: 3, Offset: 6}, []string{}, 4},
		"tag":               {store.ListCorpusParams{Tag: "food", Limit: 10}, []string{mine[2].ID, mine[0].ID}, 2},
		"tag with wildcard": {store.ListCorpusParams{Tag: "50%_off", Limit: 10}, []string{mine[0].ID}, 1},
		"wildcard only":     {store.ListCorpusParams{Tag: "%", Limit: 10}, []string{}, 0},
		"tag prefix":        {store.ListCorpusParams{Tag: "foo", Limit: 10}, []string{}, 0},
		"trend":             {store.ListCorpusParams{InspirationType: "trend", Limit: 10}, []string{}, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.p.UserID = me.ID
			items, total, err := d.ListCorpus(ctx, tc.p)
			if err != nil {
				t.Fatalf("ListCorpus: %v", err)
			}
			if diff := cmp.Diff(tc.want, corpusIDs(items)); diff != "" || total != tc.wantTotal {
				t.Errorf("ListCorpus(%+v) total %d (want %d), ids diff (-want +got):\n%s", tc.p, total, tc.wantTotal, diff)
			}
		})
	}

	if err := d.SetCorpusStatus(ctx, store.CorpusStatusParams{ID: mine[1].ID, UserID: other.ID, Status: store.CorpusRead}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetCorpusStatus(other user) = %v, want ErrNotFound", err)
	}
	if err := d.SetCorpusStatus(ctx, store.CorpusStatusParams{ID: mine[1].ID, UserID: me.ID, Status: store.CorpusArchived}); err != nil {
		t.Errorf("SetCorpusStatus = %v", err)
	}
	if err := d.SoftDeleteCorpus(ctx, mine[3].ID, other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SoftDeleteCorpus(other user) = %v, want ErrNotFound", err)
	}
	if err := d.SoftDeleteCorpus(ctx, mine[3].ID, me.ID); err != nil {
		t.Fatalf("SoftDeleteCorpus = %v", err)
	}
	if err := d.SoftDeleteCorpus(ctx, mine[3].ID, me.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SoftDeleteCorpus(again) = %v, want ErrNotFound", err)
	}
	if err := d.AddCorpusUsage(ctx, mine[3].ID, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddCorpusUsage(deleted) = %v, want ErrNotFound", err)
	}
	if got, _ := d.GetCorpus(ctx, mine[3].ID); got == nil || !got.IsDeleted {
		t.Errorf("GetCorpus(deleted) = %+v, want the record with IsDeleted", got)
	}
	items, total, _ := d.ListCorpus(ctx, store.ListCorpusParams{UserID: me.ID, Limit: 10})
	if total != 3 || len(items) != 3 {
		t.Errorf("ListCorpus after delete: total %d, %d items, want 3", total, len(items))
	}
	counts, err := d.CountCorpus(ctx, me.ID, "")
	if err != nil {
		t.Fatalf("CountCorpus: %v", err)
	}
	if diff := cmp.Diff(store.CorpusCounts{Total: 3, Collection: 3}, counts); diff != "" {
		t.Errorf("CountCorpus (-want +got):\n%s", diff)
	}

	// Converting to a capture task: the task and the usage count commit together or not at all.
	boom := errors.New("boom")
	taskID := uuid.NewString()
	err = d.InTx(ctx, func(tx store.Driver) error {
		if err := tx.CreateCaptureTask(ctx, &store.CaptureTask{ID: taskID, UserID: me.ID, ReferenceContent: json.RawMessage(`{"inspiration_id":"x"}`)}); err != nil {
			return err
		}
		if err := tx.AddCorpusUsage(ctx, mine[0].ID, 1); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx = %v, want boom", err)
	}
	if _, err := d.GetCaptureTask(ctx, taskID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("capture task of a rolled-back conversion: GetCaptureTask = %v, want ErrNotFound", err)
	}
	if got, _ := d.GetCorpus(ctx, mine[0].ID); got.UsageCount != 0 {
		t.Errorf("usage_count after a rolled-back conversion = %d, want 0", got.UsageCount)
	}
	err = d.InTx(ctx, func(tx store.Driver) error {
		if err := tx.CreateCaptureTask(ctx, &store.CaptureTask{ID: taskID, UserID: me.ID, ReferenceContent: json.RawMessage(`{"inspiration_id":"x"}`)}); err != nil {
			return err
		}
		return tx.AddCorpusUsage(ctx, mine[0].ID, 1)
	})
	if err != nil {
		t.Fatalf("InTx(commit) = %v", err)
	}
	task, err := d.GetCaptureTask(ctx, taskID)
	if err != nil || task.TaskType != "shoot" || task.Status != store.TaskPending || string(task.ReferenceContent) == "" {
		t.Errorf("GetCaptureTask = %+v, %v; want a pending shoot task with its reference", task, err)
	}
	if got, _ := d.GetCorpus(ctx, mine[0].ID); got.UsageCount != 1 {
		t.Errorf("usage_count after conversion = %d, want 1", got.UsageCount)
	}
}

func testAssets(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	me, other := NewUser(t, d, ""), NewUser(t, d, "")
	mk := func(userID, typ string, tags []string) *store.Asset {
		t.Helper()
		a := &store.Asset{ID: uuid.NewString(), UserID: userID, FilePath: "assets/x/y.png", FileType: typ, FileSize: 42, Tags: tags}
		if err := d.CreateAsset(ctx, a); err != nil {
			t.Fatalf("CreateAsset: %v", err)
		}
		clockStep(d)
		return a
	}
	img := mk(me.ID, store.AssetImage, []string{"cover"})
	aud := mk(me.ID, store.AssetAudio, nil)
	vid := mk(me.ID, store.AssetVideo, []string{"cover", "b-roll"})
	theirs := mk(other.ID, store.AssetImage, []string{"cover"})

	got, err := d.GetAsset(ctx, img.ID)
	if err != nil || got.FileSize != 42 || !cmp.Equal(got.Tags, []string{"cover"}) || got.UserID != me.ID {
		t.Errorf("GetAsset = %+v, %v", got, err)
	}
	tests := map[string]struct {
		p         store.ListAssetsParams
		want      []string
		wantTotal int
	}{
		"all":        {store.ListAssetsParams{Limit: 10}, []string{vid.ID, aud.ID, img.ID}, 3},
		"image":      {store.ListAssetsParams{FileType: "image", Limit: 10}, []string{img.ID}, 1},
		"tag":        {store.ListAssetsParams{Tag: "cover", Limit: 10}, []string{vid.ID, img.ID}, 2},
		"tag+type":   {store.ListAssetsParams{Tag: "cover", FileType: "video", Limit: 10}, []string{vid.ID}, 1},
		"page two":   {store.ListAssetsParams{Limit: 2, Offset: 2}, []string{img.ID}, 3},
		"empty page": {store.ListAssetsParams{Limit: 2, Offset: 4}, []string{}, 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.p.UserID = me.ID
			items, total, err := d.ListAssets(ctx, tc.p)
			if err != nil {
				t.Fatalf("ListAssets: %v", err)
			}
			if diff := cmp.Diff(tc.want, assetIDs(items)); diff != "" || total != tc.wantTotal {
				t.Errorf("ListAssets(%+v) total %d (want %d), ids diff (-want +got):\n%s", tc.p, total, tc.wantTotal, diff)
			}
		})
	}
	del, err := d.DeleteAssets(ctx, me.ID, []string{img.ID, aud.ID, aud.ID, theirs.ID, uuid.NewString()})
	if diff := cmp.Diff([]string{img.ID, aud.ID}, del); err != nil || diff != "" {
		t.Errorf("DeleteAssets = %v; want only the caller's, once each (-want +got):\n%s", err, diff)
	}
	if del, _ := d.DeleteAssets(ctx, me.ID, []string{img.ID}); len(del) != 0 {
		t.Errorf("DeleteAssets(again) = %v, want none", del)
	}
	if _, err := d.GetAsset(ctx, img.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAsset(deleted) = %v, want ErrNotFound: the row is gone", err)
	}
	if a, _ := d.GetAsset(ctx, theirs.ID); a == nil || a.IsDeleted {
		t.Errorf("another user's asset was deleted: %+v", a)
	}
	counts, err := d.CountCorpus(ctx, me.ID, "")
	if err != nil || counts.Asset != 1 {
		t.Errorf("CountCorpus = %+v, %v; want asset 1", counts, err)
	}

	// SetAssetMetadata: the keys set, the others kept, one removed with nil; only the owner's.
	described := &store.Asset{ID: uuid.NewString(), UserID: me.ID, FilePath: "assets/x/d.png", FileType: store.AssetImage,
		Metadata: json.RawMessage(`{"sniffed_mime":"image/png","focus":{"x":0.5,"y":0.5}}`)}
	if err := d.CreateAsset(ctx, described); err != nil {
		t.Fatal(err)
	}
	set, err := d.SetAssetMetadata(ctx, store.AssetMetadataParams{UserID: me.ID, ID: described.ID,
		Set: map[string]any{"focus": map[string]any{"x": 0.25, "y": 0.75}, "description": "A latte with a heart"}})
	want := `{"description":"A latte with a heart","focus":{"x":0.25,"y":0.75},"sniffed_mime":"image/png"}`
	if err != nil || !jsonEqual(set.Metadata, want) {
		t.Errorf("SetAssetMetadata = %s, %v; want %s", set.Metadata, err, want)
	}
	if got, _ := d.GetAsset(ctx, described.ID); got == nil || !jsonEqual(got.Metadata, want) {
		t.Errorf("metadata read back = %+v, want %s", got, want)
	}
	if set, err := d.SetAssetMetadata(ctx, store.AssetMetadataParams{UserID: me.ID, ID: described.ID, Set: map[string]any{"focus": nil}}); err != nil ||
		!jsonEqual(set.Metadata, `{"description":"A latte with a heart","sniffed_mime":"image/png"}`) {
		t.Errorf("SetAssetMetadata(focus nil) = %v, %v; want focus removed, the rest kept", set, err)
	}
	if _, err := d.SetAssetMetadata(ctx, store.AssetMetadataParams{UserID: other.ID, ID: described.ID, Set: map[string]any{"description": "x"}}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetAssetMetadata(another user's) = %v, want ErrNotFound", err)
	}
	// Writers of different keys at once: every key lands (none overwrites another's change).
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.SetAssetMetadata(ctx, store.AssetMetadataParams{UserID: me.ID, ID: vid.ID, Set: map[string]any{fmt.Sprintf("k%d", i): i}}); err != nil {
				t.Errorf("SetAssetMetadata k%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if got, _ := d.GetAsset(ctx, vid.ID); got == nil || !jsonEqual(got.Metadata, `{"k0":0,"k1":1,"k2":2,"k3":3}`) {
		t.Errorf("after concurrent writers metadata = %s, want all four keys", got.Metadata)
	}

	// A run's files: listed by run, found by key for their owner only, a deleted one no longer.
	runID := uuid.NewString()
	made := []*store.Asset{
		{ID: uuid.NewString(), UserID: me.ID, FilePath: "assets/" + me.ID + "/speech/j1.wav", FileType: store.AssetAudio, SourceRunID: runID},
		{ID: uuid.NewString(), UserID: me.ID, FilePath: "assets/" + me.ID + "/video/j2.mp4", FileType: store.AssetVideo, SourceRunID: runID},
	}
	for _, a := range made {
		if err := d.CreateAsset(ctx, a); err != nil {
			t.Fatalf("CreateAsset: %v", err)
		}
		clockStep(d)
	}
	runAssets, err := d.ListRunAssets(ctx, runID)
	if diff := cmp.Diff([]string{made[0].ID, made[1].ID}, assetIDs(runAssets)); err != nil || diff != "" {
		t.Errorf("ListRunAssets = %v (-want +got):\n%s", err, diff)
	}
	if got, err := d.GetAssetByPath(ctx, me.ID, made[1].FilePath); err != nil || got.ID != made[1].ID || got.SourceRunID != runID {
		t.Errorf("GetAssetByPath = %+v, %v", got, err)
	}
	if _, err := d.GetAssetByPath(ctx, other.ID, made[1].FilePath); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAssetByPath(another user) = %v, want ErrNotFound", err)
	}
	// LiveAssetPaths: of the keys asked, those a live asset of the user names, each once.
	twin := &store.Asset{ID: uuid.NewString(), UserID: me.ID, FilePath: made[0].FilePath, FileType: store.AssetAudio}
	if err := d.CreateAsset(ctx, twin); err != nil {
		t.Fatal(err)
	}
	live, err := d.LiveAssetPaths(ctx, me.ID, []string{made[0].FilePath, made[1].FilePath, "assets/" + me.ID + "/none.png"})
	if diff := cmp.Diff([]string{made[0].FilePath, made[1].FilePath}, live, cmpopts.SortSlices(func(a, b string) bool { return a < b })); err != nil || diff != "" {
		t.Errorf("LiveAssetPaths = %v (-want +got):\n%s", err, diff)
	}
	if live, err := d.LiveAssetPaths(ctx, other.ID, []string{made[0].FilePath}); err != nil || len(live) != 0 {
		t.Errorf("LiveAssetPaths(another user) = %v, %v; want none", live, err)
	}
	if live, err := d.LiveAssetPaths(ctx, me.ID, nil); err != nil || len(live) != 0 {
		t.Errorf("LiveAssetPaths(nothing) = %v, %v; want none", live, err)
	}
	if _, err := d.DeleteAssets(ctx, me.ID, []string{made[1].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetAssetByPath(ctx, me.ID, made[1].FilePath); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetAssetByPath(deleted) = %v, want ErrNotFound", err)
	}
	if live, err := d.LiveAssetPaths(ctx, me.ID, []string{made[1].FilePath}); err != nil || len(live) != 0 {
		t.Errorf("LiveAssetPaths(deleted) = %v, %v; want none", live, err)
	}
}

func testBatches(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	u := NewUser(t, d, "")
	b := &store.Batch{ID: uuid.NewString(), UserID: u.ID, Kind: store.BatchRun, Items: json.RawMessage(`[{"index":0,"run_id":"r"}]`)}
	if err := d.CreateBatch(ctx, b); err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	got, err := d.GetBatch(ctx, b.ID)
	if err != nil || got.UserID != u.ID || got.Kind != store.BatchRun || !got.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("GetBatch = %+v, %v", got, err)
	}
	var items []map[string]any
	if err := json.Unmarshal(got.Items, &items); err != nil || len(items) != 1 || items[0]["run_id"] != "r" {
		t.Errorf("batch items = %s, %v", got.Items, err)
	}
	if _, err := d.GetBatch(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetBatch(unknown) = %v, want ErrNotFound", err)
	}
}

// testMaterial: ListMaterial finds a project's pictures and clips however many other assets the
// project holds (a photo uploaded first, then 300 files runs made, audio, another project's and
// deleted pictures), tagged ones first, then the newest; never another user's.
func testMaterial(t *testing.T, open Opener) {
	ctx := context.Background()
	d := open(t)
	me, other := NewUser(t, d, ""), NewUser(t, d, "")
	project := uuid.NewString()
	mk := func(userID, projectID, typ, runID string, tags ...string) *store.Asset {
		t.Helper()
		a := &store.Asset{ID: uuid.NewString(), UserID: userID, ProjectID: projectID, FilePath: "assets/" + userID + "/" + uuid.NewString(),
			FileType: typ, SourceRunID: runID, Tags: tags}
		if err := d.CreateAsset(ctx, a); err != nil {
			t.Fatalf("CreateAsset: %v", err)
		}
		return a
	}
	photo := mk(me.ID, project, store.AssetImage, "", "coffee")
	clockStep(d)
	for i := range 300 {
		switch i % 3 {
		case 0:
			mk(me.ID, project, store.AssetImage, uuid.NewString()) // a run's cover
		case 1:
			mk(me.ID, project, store.AssetVideo, uuid.NewString()) // a run's video
		default:
			mk(me.ID, project, store.AssetAudio, "") // narration, music
		}
	}
	gone := mk(me.ID, project, store.AssetImage, "")
	if _, err := d.DeleteAssets(ctx, me.ID, []string{gone.ID}); err != nil {
		t.Fatal(err)
	}
	mk(me.ID, uuid.NewString(), store.AssetImage, "")     // another project's
	mk(other.ID, project, store.AssetImage, "", "coffee") // another user's, same project id
	clockStep(d)
	clip := mk(me.ID, project, store.AssetVideo, "", "b-roll")

	ids := func(p store.MaterialParams) []string {
		t.Helper()
		got, err := d.ListMaterial(ctx, p)
		if err != nil {
			t.Fatalf("ListMaterial(%+v): %v", p, err)
		}
		var out []string
		for _, a := range got {
			out = append(out, a.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{clip.ID, photo.ID}, ids(store.MaterialParams{UserID: me.ID, ProjectID: project, Limit: 20})); diff != "" {
		t.Errorf("ListMaterial newest first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{photo.ID, clip.ID}, ids(store.MaterialParams{UserID: me.ID, ProjectID: project, Tags: []string{"coffee", "tea"}, Limit: 20})); diff != "" {
		t.Errorf("ListMaterial tagged first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{clip.ID}, ids(store.MaterialParams{UserID: me.ID, ProjectID: project, Limit: 1})); diff != "" {
		t.Errorf("ListMaterial limit 1 (-want +got):\n%s", diff)
	}
}

// jsonEqual reports whether raw is the JSON value of want, whatever its spacing and key order
// (PostgreSQL's jsonb reorders keys).
func jsonEqual(raw json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(raw, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && cmp.Equal(a, b)
}
