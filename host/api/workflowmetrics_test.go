package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/store"
)

// rawExec is the statement runner both drivers expose through sqldb.DB.
type rawExec interface {
	Exec(ctx context.Context, q string, args ...any) (int64, error)
	T(t time.Time) any
	TP(t *time.Time) any
}

// TestWorkflowMetrics computes the figures of GET /api/workflow/metrics from known runs, jobs and
// trace steps, as the owner and as an admin, on both drivers.
func TestWorkflowMetrics(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d.open)
			ann, annID := b.user("ann")
			_, bobID := b.user("bob")
			_, rootID := b.user("root")
			if err := b.st.SetUserRole(t.Context(), rootID, store.RoleAdmin); err != nil {
				t.Fatal(err)
			}
			login := b.do("POST", "/api/auth/login", "", map[string]any{"email": "root@example.com", "password": "password-root"})
			root := login.data("token").(string)

			x := b.st.(rawExec)
			ctx := t.Context()
			now := time.Now().UTC()
			at := func(ago time.Duration) *time.Time { v := now.Add(-ago); return &v }
			n := 0
			run := func(user, workflow, engine, status, degraded string, created time.Duration, took time.Duration) string {
				t.Helper()
				n++
				id := fmt.Sprintf("00000000-0000-0000-0000-%012d", n)
				var started, completed *time.Time
				if status != "pending" {
					started = at(created - time.Second)
				}
				if status == "completed" || status == "failed" {
					completed = at(created - time.Second - took)
				}
				if _, err := x.Exec(ctx, `INSERT INTO runs (run_id, workflow_id, user_id, status, inputs, user_context, engine, degraded,
					created_at, updated_at, started_at, completed_at) VALUES ($1, $2, $3, $4, '{}', '{}', $5, $6, $7, $7, $8, $9)`,
					id, workflow, user, status, engine, degraded, x.T(*at(created)), x.TP(started), x.TP(completed)); err != nil {
					t.Fatal(err)
				}
				return id
			}
			job := func(runID, typ, status string, dispatched, external, resolved *time.Time) {
				t.Helper()
				n++
				if _, err := x.Exec(ctx, `INSERT INTO jobs (job_id, run_id, type, status, created_at, updated_at, timeout_at,
					dispatched_at, external_completed_at, resolved_at) VALUES ($1, $2, $3, $4, $5, $5, $5, $6, $7, $8)`,
					fmt.Sprintf("job-%d", n), runID, typ, status, x.T(now.Add(-time.Hour)), x.TP(dispatched), x.TP(external), x.TP(resolved)); err != nil {
					t.Fatal(err)
				}
			}
			step := func(runID, stepID, agent, status string, seq int) {
				t.Helper()
				raw, _ := json.Marshal(map[string]any{"step_id": stepID, "agent": agent, "status": status})
				if _, err := x.Exec(ctx, `INSERT INTO trace_steps (run_id, step_id, seq, status, step, updated_at) VALUES ($1, $2, $3, $4, $5, $6)`,
					runID, stepID, seq, status, string(raw), x.T(now)); err != nil {
					t.Fatal(err)
				}
			}
			// ann: 3 completed (10 s, 20 s, 90 s), 1 failed, 1 cancelled, 1 running; one degraded.
			r1 := run(annID, "voiceover", "node", "completed", "", time.Hour, 10*time.Second)
			run(annID, "voiceover", "node", "completed", "", time.Hour, 20*time.Second)
			r3 := run(annID, "live", "node", "completed", "graph plugin degraded", 2*time.Hour, 90*time.Second)
			r4 := run(annID, "live", "graph", "failed", "", 3*time.Hour, 5*time.Second)
			run(annID, "voiceover", "node", "cancelled", "", 3*time.Hour, 0)
			run(annID, "voiceover", "node", "running", "", 10*time.Minute, 0)
			run(annID, "voiceover", "node", "completed", "", 48*time.Hour, time.Second) // outside the window
			// bob: 1 failed run, seen by the admin only.
			run(bobID, "music", "automation", "failed", "", time.Hour, time.Second)
			// jobs of ann: graph completed with an external completion 2 s before the callback,
			// music completed 8 s after dispatch (no external time), music timed out, one pending.
			job(r4, "graph", "completed", at(40*time.Minute), at(30*time.Minute+2*time.Second), at(30*time.Minute))
			job(r3, "music", "completed", at(20*time.Minute+8*time.Second), nil, at(20*time.Minute))
			job(r3, "music", "timeout", at(50*time.Minute), nil, at(45*time.Minute))
			job(r1, "speech", "pending", nil, nil, nil)
			// steps: script_writer 2 completed; generator 1 completed 1 failed; a skipped one.
			step(r1, "script", "script_writer", "completed", 0)
			step(r3, "script", "script_writer", "completed", 0)
			step(r3, "music", "generator", "completed", 1)
			step(r4, "music", "generator", "failed", 0)
			step(r4, "review", "human_input", "skipped", 1)

			own := b.do("GET", "/api/workflow/metrics", ann, nil)
			if own.status != 200 {
				t.Fatalf("metrics = %d %s", own.status, own.raw)
			}
			var got struct {
				Scope string `json:"scope"`
				Runs  struct {
					Total       int            `json:"total"`
					ByStatus    map[string]int `json:"by_status"`
					SuccessRate struct {
						Value   float64 `json:"value"`
						Samples int     `json:"samples"`
						Met     *bool   `json:"met"`
					} `json:"success_rate"`
				} `json:"runs"`
				ByEngine map[string]struct {
					Total int `json:"total"`
				} `json:"by_engine"`
				Duration struct {
					Avg struct {
						Value float64 `json:"value"`
						Met   *bool   `json:"met"`
					} `json:"avg_s"`
					P95 float64 `json:"p95_s"`
				} `json:"duration"`
				JobTimeouts struct {
					Overall struct{ Total, Failures int } `json:"overall"`
					ByType  map[string]struct {
						Total, Failures int
						Rate            struct{ Value float64 } `json:"rate"`
					} `json:"by_type"`
				} `json:"job_timeouts"`
				AgentErrors struct {
					ByAgent map[string]struct{ Total, Failures int } `json:"by_agent"`
				} `json:"agent_errors"`
				CallbackDelay struct {
					P50 float64 `json:"p50_s"`
					P95 struct {
						Value   float64 `json:"value"`
						Samples int     `json:"samples"`
						Target  float64 `json:"target"`
					} `json:"p95_s"`
				} `json:"callback_delay"`
				Degraded struct {
					Count    int            `json:"count"`
					ByReason map[string]int `json:"by_reason"`
				} `json:"degraded"`
			}
			if err := json.Unmarshal([]byte(own.raw), &got); err != nil {
				t.Fatal(err)
			}
			if got.Scope != "own" || got.Runs.Total != 6 {
				t.Errorf("scope %q, %d runs; want own and 6 (%s)", got.Scope, got.Runs.Total, own.raw)
			}
			if diff := cmp.Diff(map[string]int{"completed": 3, "failed": 1, "cancelled": 1, "running": 1}, got.Runs.ByStatus); diff != "" {
				t.Errorf("by_status (-want +got):\n%s", diff)
			}
			if sr := got.Runs.SuccessRate; sr.Value != 0.75 || sr.Samples != 4 || sr.Met == nil || *sr.Met {
				t.Errorf("success rate = %+v, want 0.75 of 4, not met", sr)
			}
			if got.ByEngine["node"].Total != 5 || got.ByEngine["graph"].Total != 1 {
				t.Errorf("by_engine = %+v", got.ByEngine)
			}
			if a := got.Duration.Avg; a.Value != 40 || a.Met == nil || !*a.Met || got.Duration.P95 != 90 {
				t.Errorf("duration = %+v, want avg 40 s (met), p95 90 s", got.Duration)
			}
			if o := got.JobTimeouts.Overall; o.Total != 3 || o.Failures != 1 {
				t.Errorf("job time-outs overall = %+v, want 1 of 3 resolved", o)
			}
			if m := got.JobTimeouts.ByType["music"]; m.Total != 2 || m.Failures != 1 || m.Rate.Value != 0.5 {
				t.Errorf("music time-outs = %+v, want 1 of 2", m)
			}
			if diff := cmp.Diff(map[string]struct{ Total, Failures int }{"script_writer": {2, 0}, "generator": {2, 1}}, got.AgentErrors.ByAgent); diff != "" {
				t.Errorf("agent errors (-want +got):\n%s", diff)
			}
			if cd := got.CallbackDelay; cd.P50 != 2 || cd.P95.Value != 8 || cd.P95.Samples != 2 || cd.P95.Target != 5 {
				t.Errorf("callback delay = %+v, want p50 2 s, p95 8 s of 2", cd)
			}
			if got.Degraded.Count != 1 || got.Degraded.ByReason["graph plugin degraded"] != 1 {
				t.Errorf("degraded = %+v", got.Degraded)
			}

			all := b.do("GET", "/api/workflow/metrics?window=7d", root, nil)
			if err := json.Unmarshal([]byte(all.raw), &got); err != nil || got.Scope != "all" || got.Runs.Total != 8 {
				t.Errorf("admin 7d: scope %q, %d runs, want all and 8 (%s)", got.Scope, got.Runs.Total, all.raw)
			}
			for q, want := range map[string]int{"window=30m": 200, "window=nope": 400, "window=100d": 400, "since=yesterday": 400} {
				if r := b.do("GET", "/api/workflow/metrics?"+q, ann, nil); r.status != want {
					t.Errorf("?%s = %d, want %d (%s)", q, r.status, want, r.raw)
				}
			}
			if r := b.do("GET", "/api/workflow/metrics", "", nil); r.status != 401 {
				t.Errorf("without a token = %d, want 401", r.status)
			}
		})
	}
}
