//go:build e2ebrowser

// Package browser is the real-browser check of the media a run hands out (`make e2e-browser`):
// headless Chromium, on a page of another origin, uses the API as a front end would, and the video,
// its cover and its captions play from their signed URLs alone.
package browser

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reelforge/reelforge/internal/testtool"
)

//go:embed page.html
var page []byte

// script is narrated for well over 20 s (espeak-ng, about 170 words a minute), so the page can
// seek to 20 s.
const script = "This is the end to end check of Reelforge in a real browser. " +
	"A page on another origin logs in, starts a voiceover video and follows the run on the WebSocket. " +
	"When the video is ready, the page plays it from its signed address, without any header, and seeks past twenty seconds. " +
	"It shows the cover image and loads the captions into a track element. " +
	"Then it reads the content range of a ranged request, the way a player library would. " +
	"Every file address the service hands out is signed and expires after an hour. " +
	"A changed signature or expiry is refused, and a deleted file is gone. " +
	"That is all the page needs to show a library of videos."

// TestBrowser runs the host as `make run` does (bin/reelforge serve from the repository, built by
// the make target), on SQLite in a temporary DATA_DIR or on E2E_DATABASE_URL, and drives Debian's
// Chromium (CHROMIUM, default /usr/bin/chromium) through the page. The screenshot goes to
// E2E_SCREENSHOT (default bin/e2e-browser.png).
func TestBrowser(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	chromium := envOr("CHROMIUM", "/usr/bin/chromium")
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("Chromium not found at %s (scripts/install-browser.sh installs it): %v", chromium, err)
	}
	binary := filepath.Join(root, "bin", "reelforge")
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("%s: %v (make e2e-browser builds it)", binary, err)
	}

	// The page's origin: its own server and port.
	pageSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	defer pageSrv.Close()

	apiURL := startHost(t, root, binary, pageSrv.URL)
	shot := envOr("E2E_SCREENSHOT", filepath.Join(root, "bin", "e2e-browser.png"))

	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 8*time.Minute)
	defer cancelTimeout()

	q := url.Values{"api": {apiURL}, "script": {script}}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(pageSrv.URL+"/?"+q.Encode())); err != nil {
		t.Fatalf("browser: open the page: %v", err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Poll[string](`window.__result`,
		chromedp.WithPollingTimeout(7*time.Minute), chromedp.WithPollingInterval(500*time.Millisecond)))
	if err != nil {
		t.Fatalf("browser: the page's result: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browser: screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(shot), 0o755); err == nil {
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Errorf("screenshot: %v", err)
		} else {
			t.Logf("screenshot: %s", shot)
		}
	}

	var got struct {
		OK             bool
		Error          string
		Steps          []string
		FrameTypes     []string
		VideoURL       string `json:"video_url"`
		ThumbnailURL   string `json:"thumbnail_url"`
		CaptionsVTTURL string `json:"captions_vtt_url"`
		Duration       float64
		SeekedTo       float64
		PlayedAt       float64
		Size           []int
		Cues           int
		FirstCue       string
		WordTimestamps int
		CueWords       int
		Cover          []int
		Range          struct {
			Status                                    int
			ContentRange, ContentLength, AcceptRanges string
			Disposition                               string
			Bytes                                     int
		}
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("page result %q: %v", raw, err)
	}
	t.Logf("page: %s", strings.Join(got.Steps, " | "))
	if !got.OK {
		t.Fatalf("the page failed: %s", got.Error)
	}
	for _, u := range []string{got.VideoURL, got.ThumbnailURL, got.CaptionsVTTURL} {
		if !strings.Contains(u, "signature=") {
			t.Errorf("file URL %q is not signed", u)
		}
	}
	if !contains(got.FrameTypes, "task:progress") || !contains(got.FrameTypes, "task:status") {
		t.Errorf("WebSocket frame types %v, want task:progress and task:status", got.FrameTypes)
	}
	if got.Duration < 20 || got.SeekedTo < 19.9 || got.PlayedAt < got.SeekedTo {
		t.Errorf("video of %.1f s seeked to %.2f s, played at %.2f s; want a seek to 20 s and playing on", got.Duration, got.SeekedTo, got.PlayedAt)
	}
	if len(got.Size) != 2 || got.Size[0] == 0 {
		t.Errorf("video size %v", got.Size)
	}
	if got.ThumbnailURL == "" || len(got.Cover) != 2 || got.Cover[0] == 0 {
		t.Errorf("cover %q shown at %v, want an image (thumbnail_url)", got.ThumbnailURL, got.Cover)
	}
	if got.CaptionsVTTURL == "" || got.Cues == 0 {
		t.Errorf("captions %q: %d cues, want the WebVTT file's (captions_vtt_url)", got.CaptionsVTTURL, got.Cues)
	}
	// Every word but each cue's first has its time (docs/captions.md, the files): Chromium read
	// the word cues as timestamps.
	if got.WordTimestamps == 0 || got.WordTimestamps < got.CueWords-got.Cues {
		t.Errorf("captions: %d word timestamps in Chromium's cues for %d words in %d cues, want one for each word after a cue's first",
			got.WordTimestamps, got.CueWords, got.Cues)
	}
	r := got.Range
	if r.Status != 206 || !strings.HasPrefix(r.ContentRange, "bytes 100-199/") || r.ContentLength != "100" || r.Bytes != 100 ||
		r.AcceptRanges != "bytes" || !strings.HasPrefix(r.Disposition, "inline; filename=") {
		t.Errorf("ranged fetch as JavaScript sees it: %+v", r)
	}

	// A shared link opened directly in a second browser profile: Chromium's own player shows it
	// under the file's sandboxing Content-Security-Policy.
	shared(t, chromium, apiURL+got.VideoURL)
}

// shared opens link as the page of a fresh browser profile and waits for its video's metadata.
func shared(t *testing.T, chromium, link string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0], chromedp.ExecPath(chromium), chromedp.Flag("headless", true),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(link)); err != nil {
		t.Errorf("shared link in a second profile: %v", err)
		return
	}
	duration, err := chromedp.Run(ctx, chromedp.Poll[float64](
		`(() => { const v = document.querySelector("video"); return v && v.readyState >= 1 ? v.duration : 0; })()`,
		chromedp.WithPollingTimeout(45*time.Second)))
	if err != nil || duration < 20 {
		t.Errorf("shared link in a second profile: duration %.1f, %v", duration, err)
	}
	// The same link with its expiry moved on: refused, in the envelope.
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("expires", q.Get("expires")+"0")
	u.RawQuery = q.Encode()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(u.String())); err != nil {
		t.Errorf("altered link: %v", err)
		return
	}
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil || !strings.Contains(body, `"AUTHORIZATION_ERROR"`) {
		t.Errorf("altered link in a second profile shows %q (%v), want the 403 envelope", body, err)
	}
}

// startHost starts bin/reelforge serve on a free port with CORS for origin and returns its URL;
// the host is stopped when the test ends.
func startHost(t *testing.T, root, binary, origin string) string {
	t.Helper()
	port := fmt.Sprint(testtool.FreePort(t))
	dataDir := t.TempDir()
	cmd := exec.Command(binary, "serve")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PORT="+port, "DATA_DIR="+dataDir, "CORS_ALLOW_ORIGINS="+origin,
		"DATABASE_URL="+os.Getenv("E2E_DATABASE_URL"), "LOG_FORMAT=text")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs, err := os.Create(filepath.Join(dataDir, "host.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logs.Close()
		if t.Failed() {
			tail(t, logs.Name())
		}
	})
	base := "http://127.0.0.1:" + port
	up := testtool.WithinEvery(2*time.Minute, 200*time.Millisecond, func() bool {
		select {
		case err := <-exited:
			tail(t, logs.Name())
			t.Fatalf("the host exited: %v", err)
		default:
		}
		res, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	if !up {
		t.Fatalf("the host did not answer /health within 2 minutes")
	}
	db := "SQLite in a temporary DATA_DIR"
	if os.Getenv("E2E_DATABASE_URL") != "" {
		db = "PostgreSQL (E2E_DATABASE_URL)"
	}
	t.Logf("host %s on %s", base, db)
	return base
}

// tail logs the last lines of the host's log.
func tail(t *testing.T, name string) {
	f, err := os.Open(name)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	t.Logf("host log (last lines):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
