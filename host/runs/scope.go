package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/internal/lease"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// runHost is the engine.Host an engine gets for one Run or Callback call: every call it answers is
// tied to the run the host gave that call. Steps, progress and jobs of any other run, and jobs of
// other runs, are refused with AUTHORIZATION_ERROR (403) and logged; Search searches as the run's
// owner whatever user id the engine sends, and only in the run's project. A plugin's Host calls
// reach the host through the call id of the Run or Callback they serve (sdk/engine), so a plugin
// can only ever name the runs given to it.
type runHost struct {
	s       *Service
	engine  string // for the log
	runID   string
	userID  string // the run's owner
	project string // the run's project ("" for none)
	// owner is the executor's claim of the run (its fencing token; "" for a callback's calls):
	// steps, progress and jobs are written only while the run is still claimed by it. live is
	// the execution's context: it ends when the claim is lost or its lease could not be renewed,
	// and a call after that is refused, a model call under way cut short.
	owner string
	live  context.Context
	// stopping ends when the host stops its executions (StopExecutor): it cuts short even the
	// model call an execution that lost its claim lets finish (callContext).
	stopping context.Context
	// attempt is the run's attempt, and calls counts this execution's model calls by request
	// digest: together they key the model's answers kept for a re-execution (see Generate).
	attempt int
	mu      sync.Mutex
	calls   map[string]int
}

var _ engine.Host = (*runHost)(nil)

// hostFor returns the Host of engine name's calls for run r.
func (s *Service) hostFor(name string, r *store.Run) *runHost {
	h := &runHost{s: s, engine: name, runID: r.ID, userID: r.UserID, attempt: r.Attempt, calls: map[string]int{}}
	var pc engine.ProjectContext
	if len(r.ProjectContext) > 0 && json.Unmarshal(r.ProjectContext, &pc) == nil {
		h.project = pc.ProjectID
	}
	if h.project == "" {
		h.project = r.ProjectID
	}
	return h
}

// refuse logs and returns the refusal of a call outside the run.
func (h *runHost) refuse(call, what string) error {
	h.s.log.Warn("runs: engine call outside its run refused", "engine", h.engine, "call", call, "run_id", h.runID, "asked", what)
	return errcode.New(errcode.Authorization, fmt.Sprintf("%s: the call serves run %s, not %s", call, h.runID, what))
}

func (h *runHost) own(call, runID string) error {
	if runID != h.runID {
		return h.refuse(call, "run "+runID)
	}
	return h.fenced(call)
}

// fenced refuses a call of an execution that has stopped holding its run: another executor may
// have it now.
func (h *runHost) fenced(call string) error {
	if h.live == nil || h.live.Err() == nil {
		return nil
	}
	return errcode.New(errcode.WorkflowInvalidState, fmt.Sprintf("%s: this execution of run %s no longer holds it (%v)", call, h.runID, context.Cause(h.live)))
}

// bound ends ctx when the execution stops holding its run (the plugin's calls come with contexts
// of their own).
func (h *runHost) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.live == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.live, cancel)
	return ctx, func() { stop(); cancel() }
}

// ReportStep implements engine.Host for the run only.
func (h *runHost) ReportStep(ctx context.Context, runID string, step engine.TraceStep) error {
	if err := h.own("ReportStep", runID); err != nil {
		return err
	}
	return h.s.reportStep(ctx, runID, h.owner, step)
}

// ReportProgress implements engine.Host for the run only.
func (h *runHost) ReportProgress(ctx context.Context, runID string, progress float64, currentStep string) error {
	if err := h.own("ReportProgress", runID); err != nil {
		return err
	}
	return h.s.reportProgress(ctx, runID, h.owner, progress, currentStep)
}

// CreateJob implements engine.Host: jobs of the run only (an empty run id means the run).
func (h *runHost) CreateJob(ctx context.Context, req *engine.JobRequest) (*engine.Job, error) {
	if req == nil {
		return nil, errcode.Invalid("job", "is required")
	}
	if req.RunID == "" {
		r := *req
		r.RunID = h.runID
		req = &r
	}
	if err := h.own("CreateJob", req.RunID); err != nil {
		return nil, err
	}
	return h.s.createJob(ctx, req, h.owner)
}

// WaitJob implements engine.Host: jobs of the run only.
func (h *runHost) WaitJob(ctx context.Context, jobID string) (*engine.Job, error) {
	j, err := h.s.st.GetJob(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errcode.New(errcode.NotFound, "Job not found")
	}
	if err != nil {
		return nil, err
	}
	if j.RunID != h.runID {
		return nil, h.refuse("WaitJob", "job "+jobID+" of another run")
	}
	return h.s.WaitJob(ctx, jobID)
}

// Search implements engine.Host as the run's owner, in the run's project (or none).
func (h *runHost) Search(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
	if req == nil {
		return []engine.SearchHit{}, nil
	}
	if req.ProjectID != "" && req.ProjectID != h.project {
		return nil, h.refuse("Search", "project "+req.ProjectID)
	}
	r := *req
	r.UserID = h.userID // never the user the engine names
	return h.s.Search(ctx, &r)
}

// errClaimLost is the cause with which an execution's work is stopped when it no longer holds its
// run: taken over (store.ErrStale), or its lease could not be renewed for a whole lease.
var errClaimLost = errors.New("the execution lost its claim of the run")

// Generate implements engine.Host: a model call only while the execution holds its run. An
// executor's call is asked once per run attempt, however many executions of the attempt make it
// (a step executed again because the database refused its outcome, or the run taken over): before
// the model is asked the call is recorded as in progress under the claim (BeginModelCall, which
// checks the claim in the store: it may have been taken over since the lease's last renewal), and
// the model's answer is recorded before the engine gets it. A later execution reads the answer
// back, or waits for it while the call is still held (issue 38).
//
// Why a wait and not a second call: an execution that loses its claim while the model is answering
// (its renewals failed for a whole lease: a database that stalled, a host cut off from it) lets the
// call finish and records the answer (callContext), and the store holds the call two leases beyond
// the claim (store.ModelCallHold), so the next executor, which can take the run over only once the
// claim's lease has run out, finds the call still held and waits for that answer instead of paying
// for the call twice. A host that died holds the step back for two leases at most; an answer that
// comes later than that (or is never recorded) is asked for again: the calls are at least once.
func (h *runHost) Generate(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error) {
	if err := h.fenced("Generate"); err != nil {
		return nil, err
	}
	if h.owner == "" || req == nil {
		ctx, cancel := h.bound(ctx)
		defer cancel()
		return h.s.Generate(ctx, req)
	}
	c := store.ModelCall{ModelCallKey: store.ModelCallKey{RunID: h.runID, Attempt: h.attempt, Key: h.callKey(req)}, Owner: h.owner}
	if res, err := h.begin(ctx, c); res != nil || err != nil {
		return res, err
	}
	cctx, cancel := h.callContext(ctx)
	res, err := h.s.Generate(cctx, req)
	cancel()
	if err != nil || res == nil || !res.OK {
		// Nothing the model said to keep: the next execution of the step asks at once (a hold
		// not released runs out by itself).
		if rerr := h.s.st.ReleaseModelCall(context.WithoutCancel(ctx), c); rerr != nil {
			h.s.log.Warn("runs: release a model call that has no answer", "run_id", h.runID, "err", rerr)
		}
		return res, err
	}
	h.s.keepModelCall(context.WithoutCancel(ctx), c.ModelCallKey, res)
	if err := h.fenced("Generate"); err != nil {
		return nil, err // the answer is kept for the run's next executor
	}
	return res, nil
}

// waitAnswer is how often an execution looks again for the answer of a model call in progress
// under another claim: briskly, since the wait is for one answer to be recorded.
var waitAnswer = backoff.Policy{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}

// begin records that the execution is about to ask the model call c (store BeginModelCall). It
// answers the call's recorded answer when there is one; nil, nil when the execution is to ask the
// model itself. While another claim holds the call in progress it waits, polling, for its answer
// or for its hold to run out (ModelCallHold: two leases at most past the claim that made it), or for
// this execution to stop.
func (h *runHost) begin(ctx context.Context, c store.ModelCall) (*engine.GenerateResult, error) {
	for n := 1; ; n++ {
		st, err := h.s.st.BeginModelCall(ctx, c, h.s.opts.Lease)
		if errors.Is(err, store.ErrStale) {
			return nil, errcode.New(errcode.WorkflowInvalidState, fmt.Sprintf("Generate: this execution of run %s no longer holds it", h.runID))
		}
		if err != nil {
			return nil, err
		}
		if len(st.Answer) > 0 {
			var res engine.GenerateResult
			if json.Unmarshal(st.Answer, &res) != nil {
				return nil, nil // not an answer this host can read: asked again
			}
			return &res, nil
		}
		if st.HeldBy == "" {
			return nil, nil
		}
		if n == 1 {
			h.s.log.Info("runs: waiting for the answer of a model call in progress under an earlier claim",
				"run_id", h.runID, "claim", st.HeldBy)
		}
		if !backoff.Sleep(ctx, waitAnswer.Wait(n)) {
			if err := h.fenced("Generate"); err != nil {
				return nil, err
			}
			return nil, ctx.Err()
		}
	}
}

// callContext is the context of a model call the execution makes under ctx: it ends with ctx, but
// for one case. When the execution lost its claim (errClaimLost) while the model is answering, the
// call goes on for lease.Safe(lease) more, within the hold the store keeps for it a lease past the
// claim's last renewal (store.ModelCallHold), so that its answer is recorded for the next executor,
// which waits for it. The host stopping cuts it short all the same.
func (h *runHost) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopCtx := context.AfterFunc(ctx, func() {
		if h.live != nil && errors.Is(context.Cause(h.live), errClaimLost) {
			time.AfterFunc(lease.Safe(h.s.opts.Lease), cancel)
			return
		}
		cancel()
	})
	stopStopping := func() bool { return false }
	if h.stopping != nil {
		stopStopping = context.AfterFunc(h.stopping, cancel)
	}
	return cctx, func() {
		stopCtx()
		stopStopping()
		cancel()
	}
}

// callKey is the key of req's answer: a digest of the request and how many calls of this
// execution made the same request before it, so that a step asking what an earlier one asked
// still gets an answer of its own.
func (h *runHost) callKey(req *engine.GenerateRequest) string {
	b, _ := json.Marshal(req) // strings and a number: Marshal cannot fail
	sum := sha256.Sum256(b)
	digest := hex.EncodeToString(sum[:16])
	h.mu.Lock()
	h.calls[digest]++
	n := h.calls[digest]
	h.mu.Unlock()
	return fmt.Sprintf("%s#%d", digest, n)
}

// NoRunHost answers the Host calls of engine name's plugin that serve no Run or Callback call of
// the host (no call id, or one that has ended): each is refused with AUTHORIZATION_ERROR and
// logged to log (nil: discarded). It is the fallback Host of the plugin supervisors.
func NoRunHost(name string, log *slog.Logger) engine.Host {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return noRunHost{log: log, engine: name}
}

type noRunHost struct {
	log    *slog.Logger
	engine string
}

func (n noRunHost) refuse(call string) error {
	n.log.Warn("runs: engine call outside any run refused", "engine", n.engine, "call", call)
	return errcode.New(errcode.Authorization, call+": the call serves no run the host gave this engine")
}

func (n noRunHost) ReportStep(context.Context, string, engine.TraceStep) error {
	return n.refuse("ReportStep")
}

func (n noRunHost) ReportProgress(context.Context, string, float64, string) error {
	return n.refuse("ReportProgress")
}

func (n noRunHost) CreateJob(context.Context, *engine.JobRequest) (*engine.Job, error) {
	return nil, n.refuse("CreateJob")
}

func (n noRunHost) WaitJob(context.Context, string) (*engine.Job, error) {
	return nil, n.refuse("WaitJob")
}

func (n noRunHost) Search(context.Context, *engine.SearchRequest) ([]engine.SearchHit, error) {
	return nil, n.refuse("Search")
}

func (n noRunHost) Generate(context.Context, *engine.GenerateRequest) (*engine.GenerateResult, error) {
	return nil, n.refuse("Generate")
}

// CredentialIssuer signs tool credentials (auth.Service.IssueTool).
type CredentialIssuer interface {
	IssueTool(g auth.ToolGrant) (string, error)
}

// credentialMargin is how long a run's tool credential outlives the workflow's timeout: the tool
// may still be answering its last call when the run times out (the run's end refuses it anyway).
const credentialMargin = 5 * time.Minute

// defaultCredentialTTL bounds a tool credential of a workflow without a timeout.
const defaultCredentialTTL = 2 * time.Hour

// toolCredential is the credential Run call of r hands its engine to give its external tool (the
// chatflow's Flowise, the graph runner, the automation tool): it lets the tool call
// /api/knowledge/context and /api/knowledge/search as the run's owner, in the run's project, and
// nothing else, until the run ends (CheckGrant) or the workflow's timeout has passed. Each Run call
// (a resume, a retry, a recovery) gets a fresh one. "" when no issuer is configured or signing failed
// (logged: the tool then cannot read the knowledge base, the run goes on).
func (s *Service) toolCredential(r *store.Run, project string, timeout time.Duration) string {
	if s.creds == nil {
		return ""
	}
	ttl := defaultCredentialTTL
	if timeout > 0 {
		ttl = timeout + credentialMargin
	}
	tok, err := s.creds.IssueTool(auth.ToolGrant{UserID: r.UserID, ProjectID: project, RunID: r.ID, Expires: s.st.Now().Add(ttl)})
	if err != nil {
		s.log.Warn("runs: no tool credential for the run", "run_id", r.ID, "err", err)
		return ""
	}
	return tok
}

// CheckGrant refuses a tool credential whose run has ended or is not its owner's (the credential
// dies with its run): 401, as for an expired credential. A credential of no run passes.
func (s *Service) CheckGrant(ctx context.Context, p *auth.Principal) error {
	if !p.IsTool() || p.ToolRun == "" {
		return nil
	}
	r, err := s.st.GetRun(ctx, p.ToolRun)
	if errors.Is(err, store.ErrNotFound) || err == nil && (r.UserID != p.UserID || r.Terminal()) {
		return errcode.New(errcode.Authentication, "The run of this tool credential has ended")
	}
	return err
}
