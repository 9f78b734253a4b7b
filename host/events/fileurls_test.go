package events_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
)

const fileURL = "/api/assets/files/u1/video/v.mp4"

// verified fails t unless u is fileURL signed by urls.
func verified(t *testing.T, urls *fileurl.Signer, u any) {
	t.Helper()
	s, _ := u.(string)
	p, err := url.Parse(s)
	if err != nil || p.Path != fileURL {
		t.Fatalf("file URL %v, want %s signed", u, fileURL)
	}
	if _, err := urls.Verify("GET", p.Path, p.Query()); err != nil {
		t.Errorf("file URL %s: %v", s, err)
	}
}

// TestHubSignsFileURLs: a frame's file URLs reach the clients signed.
func TestHubSignsFileURLs(t *testing.T) {
	t.Parallel()
	urls := fileurl.New("hub-secret-0123456789abcdef0123456789", time.Hour)
	h := events.NewHub(events.HubOptions{SignURLs: urls.SignJSON})
	c := h.Register("u1")
	h.Subscribe(c, "p1")
	h.Notify(context.Background(), events.Frame{ProjectID: "p1", Type: events.FrameAssetSync,
		Data: map[string]any{"asset": map[string]any{"file_url": fileURL}}})
	f := recvFrame(t, c, 10*time.Second)
	asset, _ := f["data"].(map[string]any)["asset"].(map[string]any)
	verified(t, urls, asset["file_url"])
}

// TestWorkerSignsFileURLs: an event's file URLs are signed as it is posted.
func TestWorkerSignsFileURLs(t *testing.T) {
	t.Parallel()
	d := openStore(t)
	rec, srv := newReceiver(t, secret)
	urls := fileurl.New("worker-secret-0123456789abcdef0123456789", time.Hour)
	cfg := fastConfig(srv.URL)
	cfg.SignURLs = urls.SignJSON
	w := events.NewWorker(d, cfg)
	if err := d.InTx(context.Background(), func(tx store.Driver) error {
		return events.Emit(context.Background(), tx, events.Event{Name: events.TaskAssetUploaded, Data: map[string]any{"fileUrl": fileURL}})
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := w.RunBatch(t.Context()); err != nil || n != 1 {
		t.Fatalf("RunBatch = %d, %v", n, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies) != 1 {
		t.Fatalf("receiver got %d events, want 1", len(rec.bodies))
	}
	data, _ := rec.bodies[0]["data"].(map[string]any)
	verified(t, urls, data["fileUrl"])
}
