package crashtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/eventsink"
	"github.com/reelforge/reelforge/internal/testtool"
)

// proc is a process as /proc shows it; start (its start time in clock ticks) tells it from a later
// process given the same pid.
type proc struct {
	pid, ppid, pgid int
	start           string
	comm            string
	zombie          bool
}

// procs reads every process of the machine.
func procs() map[int]proc {
	out := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	return out
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(s[end+1:]) // state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return proc{pid: pid, ppid: ppid, pgid: pgid, start: f[19], comm: s[open+1 : end], zombie: f[0] == "Z"}, true
}

// alive reports whether p still runs (the same process, not a zombie).
func (p proc) alive() bool {
	q, ok := readProc(p.pid)
	return ok && q.start == p.start && !q.zombie
}

// family answers the processes descended from root or in the process group of root or of one of
// its descendants (the renderer's tools run in process groups of their own).
func family(root int) []proc {
	all := procs()
	in := map[int]bool{root: true}
	for changed := true; changed; {
		changed = false
		for pid, p := range all {
			if !in[pid] && (in[p.ppid] || in[p.pgid]) {
				in[pid], changed = true, true
			}
		}
	}
	var out []proc
	for pid := range in {
		if p, ok := all[pid]; ok && pid != root {
			out = append(out, p)
		}
	}
	return out
}

// generatorsPlugin answers the live generators plugin of the host process hostPID.
func generatorsPlugin(hostPID int) (proc, bool) {
	for _, p := range procs() {
		if p.ppid == hostPID && !p.zombie && strings.HasPrefix(p.comm, "generators-plug") {
			return p, true
		}
	}
	return proc{}, false
}

// awaitRender starts a voiceover_video run and waits until the plugin's ffmpeg renders it; it
// answers the run, the plugin and the processes of the plugin's family then.
func (h *host) awaitRender(t *testing.T) (string, proc, []proc) {
	t.Helper()
	plugin, ok := generatorsPlugin(h.PID())
	if !ok {
		t.Fatal("the host runs no generators plugin")
	}
	var out struct {
		RunID string `json:"run_id"`
	}
	// A long video, so that the render is still going when the test acts.
	if st := h.Call("POST", "/api/workflow/start", map[string]any{"workflow": "voiceover_video",
		"inputs": map[string]any{"topic": "the harbour at dawn", "duration": 120}}, &out); st != 201 && st != 200 {
		t.Fatalf("start voiceover_video = %d", st)
	}
	var fam []proc
	testtool.Eventually(t, 2*time.Minute, fmt.Sprintf("run %s: an ffmpeg of the generators plugin (pid %d)", out.RunID, plugin.pid), func() bool {
		fam = family(plugin.pid)
		for _, p := range fam {
			if p.comm == "ffmpeg" && !p.zombie {
				return true
			}
		}
		return false
	})
	return out.RunID, plugin, fam
}

// gone waits until none of ps runs any more and answers those still running after a minute.
func gone(ps []proc) []proc {
	var left []proc
	testtool.Within(time.Minute, func() bool {
		left = nil
		for _, p := range ps {
			if p.alive() {
				left = append(left, p)
			}
		}
		return len(left) == 0
	})
	return left
}

// renderJob answers the status and error code of the run's videogen job and of its render step.
func (h *host) renderJob(t *testing.T, runID string) (jobStatus, stepStatus, code string) {
	t.Helper()
	var st struct {
		Jobs []struct{ Type, Status string } `json:"jobs"`
	}
	h.Call("GET", "/api/workflow/status/"+runID, nil, &st)
	for _, j := range st.Jobs {
		if j.Type == "videogen" {
			jobStatus = j.Status
		}
	}
	var tr struct {
		Trace []struct {
			StepID string `json:"step_id"`
			Status string
			Error  *struct{ Code string }
		} `json:"trace"`
	}
	h.Call("GET", "/api/workflow/trace/"+runID, nil, &tr)
	for _, s := range tr.Trace {
		if s.StepID == "render" {
			stepStatus = s.Status
			if s.Error != nil {
				code = s.Error.Code
			}
		}
	}
	return jobStatus, stepStatus, code
}

func needTools(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a host and renders with espeak-ng and ffmpeg")
	}
	testtool.Need(t, "espeak-ng", "ffmpeg")
}

func databases() map[string]string {
	dbs := map[string]string{"sqlite": ""}
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		dbs["postgres"] = u
	}
	return dbs
}

// TestGeneratorsPluginKilledDuringRender: the renders run in the generators plugin. SIGKILL it
// while ffmpeg renders a voiceover_video: the host keeps answering, the videogen job fails with
// VIDEO_GEN_ERROR (its entry allows no retry), no process of the plugin's family (its children,
// their process groups) survives, and the plugin is restarted (health ready, a new process).
func TestGeneratorsPluginKilledDuringRender(t *testing.T) {
	needTools(t)
	bin := build(t)
	for name, url := range databases() {
		t.Run(name, func(t *testing.T) {
			h := newHost(t, bin, url, eventsink.New(t), newEmail())
			runID, plugin, fam := h.awaitRender(t)
			h.awaitVideoBytes(t) // mid-render: the video file has been written to
			if err := syscall.Kill(plugin.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if st := h.Call("GET", "/health", nil, nil); st != 200 && st != 503 {
				t.Errorf("GET /health after the kill = %d: the host does not answer", st)
			}
			if left := gone(fam); len(left) > 0 {
				t.Errorf("processes of the killed plugin still run a minute later: %+v", left)
			}
			var job, step, code string
			testtool.WithinEvery(bound, poll, func() bool {
				job, step, code = h.renderJob(t, runID)
				return job != "" && job != "running" && job != "pending" && step != "running" && step != ""
			})
			if job != "failed" || code != "VIDEO_GEN_ERROR" {
				t.Errorf("videogen job %q, render step %q with code %q; want the job failed and the step's code VIDEO_GEN_ERROR", job, step, code)
			}
			h.checkNoCutOffVideo(t)
			restarted := testtool.WithinEvery(bound, poll, func() bool {
				var health struct {
					Details map[string]struct{ State string } `json:"engine_details"`
				}
				h.Call("GET", "/health", nil, &health)
				p, ok := generatorsPlugin(h.PID())
				return ok && p.pid != plugin.pid && health.Details["generators"].State == "ready"
			})
			if !restarted {
				t.Fatal("the generators plugin was not restarted (no new process with health ready)")
			}
			// The new plugin renders: the next run makes its video.
			runID, _, _ = h.awaitRender(t)
			if err := h.waitRun(t, runID); err != nil {
				t.Fatal(err)
			}
			if job, _, code := h.renderJob(t, runID); job != "completed" {
				t.Errorf("after the restart: videogen job %q (%s), want completed", job, code)
			}
			// The next start of the host removes the partial file the killed render left.
			h.Stop()
			h.start(t)
			if left, _ := filepath.Glob(filepath.Join(h.DataDir, "assets", "*", "video", "*.partial.mp4")); len(left) > 0 {
				t.Errorf("partial files still there after the host's restart: %v", left)
			}
		})
	}
}

// awaitVideoBytes waits until ffmpeg has written to a video file of DATA_DIR (its partial name or
// its final one).
func (h *host) awaitVideoBytes(t *testing.T) {
	t.Helper()
	testtool.Eventually(t, 2*time.Minute, "a video file written to", func() bool {
		videos, _ := filepath.Glob(filepath.Join(h.DataDir, "assets", "*", "video", "*.mp4"))
		for _, v := range videos {
			if st, err := os.Stat(v); err == nil && st.Size() > 0 {
				return true
			}
		}
		return false
	})
}

// checkNoCutOffVideo checks what a render killed with its plugin left: no video at a final name
// (where a creator or the asset recording would take it for a result), and its partial file, if
// any, neither listed nor served.
func (h *host) checkNoCutOffVideo(t *testing.T) {
	t.Helper()
	videos, _ := filepath.Glob(filepath.Join(h.DataDir, "assets", "*", "video", "*.mp4"))
	for _, v := range videos {
		if !strings.HasSuffix(v, ".partial.mp4") {
			t.Errorf("the killed render left %s at its final name", v)
			continue
		}
		rel, _ := filepath.Rel(filepath.Join(h.DataDir, "assets"), v)
		if st := h.Call("GET", "/api/assets/files/"+filepath.ToSlash(rel), nil, nil); st != 404 {
			t.Errorf("GET the partial file %s = %d, want 404", rel, st)
		}
	}
	var list struct {
		Data json.RawMessage `json:"data"`
	}
	h.Call("GET", "/api/materials", nil, &list)
	if strings.Contains(string(list.Data), ".partial.") {
		t.Errorf("the asset listing names a partial file: %s", list.Data)
	}
}

// TestCancelKillsRender: cancelling a run while its video renders kills the render: the plugin's
// ffmpeg ends, no video file is left (a render left alone would have written it), and the job
// ends failed with WORKFLOW_CANCELLED.
func TestCancelKillsRender(t *testing.T) {
	needTools(t)
	bin := build(t)
	h := newHost(t, bin, "", eventsink.New(t), newEmail())
	runID, _, fam := h.awaitRender(t)
	var ffmpeg []proc
	for _, p := range fam {
		if p.comm == "ffmpeg" {
			ffmpeg = append(ffmpeg, p)
		}
	}
	if st := h.Call("POST", "/api/workflow/cancel/"+runID, nil, nil); st != 200 {
		t.Fatalf("cancel = %d", st)
	}
	if left := gone(ffmpeg); len(left) > 0 {
		t.Fatalf("ffmpeg still runs after the cancel: %+v", left)
	}
	if matches, _ := filepath.Glob(filepath.Join(h.DataDir, "assets", "*", "video", "*.mp4")); len(matches) > 0 {
		t.Errorf("the cancelled render left %v: it was not stopped", matches)
	}
	if job, _, _ := h.renderJob(t, runID); job != "failed" {
		t.Errorf("videogen job %q after the cancel, want failed", job)
	}
}

// waitRun waits for a run to end.
func (h *host) waitRun(t *testing.T, runID string) error {
	t.Helper()
	if o := h.SettleRuns([]string{runID}, bound); len(o.Stuck) > 0 || len(o.Lost) > 0 {
		return fmt.Errorf("run %s did not end within %s (%+v)", runID, bound, o)
	}
	return nil
}
