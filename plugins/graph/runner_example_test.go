package graph_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/plugins/graph"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/enginetest"
)

// startExampleRunner starts examples/graph-runner/runner.py on a free port and returns its URL.
func startExampleRunner(t *testing.T, secret string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the Python example runner: skipped under -short")
	}
	testtool.Need(t, "python3")
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, py, filepath.Join("..", "..", "examples", "graph-runner", "runner.py"), "--port", "0", "--delay", "0.05")
	cmd.Env = append(cmd.Environ(), "CALLBACK_SECRET="+secret)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start runner: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() { // exits when the runner's stderr closes (the process ends at cleanup)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`listening on (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case u := <-addr:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("the example runner did not start within 10 s")
	}
	return ""
}

// callbackSink receives graph-callbacks and checks their signatures like the host does.
func callbackSink(t *testing.T, secret string) (string, <-chan json.RawMessage) {
	t.Helper()
	got := make(chan json.RawMessage, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(raw)
		if r.URL.Path != engine.CallbackPathGraph || !hmac.Equal([]byte(r.Header.Get("X-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil)))) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		got <- raw
		_, _ = w.Write([]byte(`{"success":true}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

func awaitCallback(t *testing.T, got <-chan json.RawMessage) json.RawMessage {
	t.Helper()
	select {
	case raw := <-got:
		return raw
	case <-time.After(15 * time.Second):
		t.Fatal("no signed callback within 15 s")
	}
	return nil
}

func TestExampleRunnerEndToEnd(t *testing.T) {
	t.Parallel()
	const secret = "example-secret"
	runnerURL := startExampleRunner(t, secret)
	base, got := callbackSink(t, secret)
	eng, host := enginetest.New(t, graph.New(graph.Options{Tool: outbound.Tool{URL: runnerURL}}))
	callback := func(raw json.RawMessage) *engine.RunResult {
		t.Helper()
		var p struct {
			JobID string `json:"job_id"`
		}
		_ = json.Unmarshal(raw, &p)
		res, err := eng.Callback(t.Context(), nil, &engine.CallbackRequest{RunID: "run-e2e", Kind: "graph", Job: engine.Job{JobID: p.JobID}, Payload: raw})
		if err != nil {
			t.Fatalf("Callback() error = %v", err)
		}
		return res
	}

	req := request()
	req.RunID, req.CallbackURL = "run-e2e", base
	req.Inputs = map[string]any{"topic": "pour-over coffee", "review": true}
	if res, err := eng.Run(t.Context(), nil, req); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Run() = %+v, %v; want waiting", res, err)
	}
	paused := callback(awaitCallback(t, got))
	if paused.Status != engine.StatusPaused || paused.Awaiting == nil || paused.Awaiting.StepID != "review" || !strings.Contains(paused.Awaiting.Prompt, "pour-over") {
		t.Fatalf("first callback = %+v, want paused at review", paused)
	}

	req.ResumeInput = map[string]any{"feedback": "mention the bloom"}
	if _, err := eng.Run(t.Context(), nil, req); err != nil {
		t.Fatalf("resume Run() error = %v", err)
	}
	done := callback(awaitCallback(t, got))
	script, _ := done.Outputs["script"].(string)
	if done.Status != engine.StatusCompleted || !strings.Contains(script, "mention the bloom") {
		t.Fatalf("resumed callback = %+v, want completed with the feedback in the script", done)
	}
	ids := map[string]bool{}
	for _, s := range host.Steps() {
		ids[s.StepID] = true
	}
	for _, want := range []string{"research", "review", "write", graph.SummaryStepID} {
		if !ids[want] {
			t.Errorf("trace lacks step %q: %v", want, ids)
		}
	}
}
