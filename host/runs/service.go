// Package runs starts, executes and tracks workflow runs and their external jobs.
//
// New builds the Service from its parts (Deps) and settings (Options). A run is stored pending
// before anything executes (Service.Start). The executor (StartExecutor) claims runnable runs from
// the store with a lease, so another host or a restarted one picks up the runs a dead host left:
// they are executed again from their completed steps. Each run goes to the engine its manifest
// names: the live plugin when its supervisor says ready, else the in-process node engine with the
// manifest's steps (the trace says which engine ran each step and why it degraded).
//
// The Service is the engine.Host of every engine: steps, progress, jobs, knowledge search and the
// language model; each engine call gets a Host scoped to its run (scope.go). Jobs carry timeout_at
// and retries by type (their engine's job policies, host/manifest); the job sweeper (StartSweeper,
// Sweep) times them out, retries them with back-off, and fails their run with WORKFLOW_TIMEOUT
// when none are left. Inbound callbacks (Service.Callback) resolve a job once; a repeat is
// reported as a duplicate. Generator jobs go to a JobDispatcher (the host's is PluginJobs).
package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/access"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Searcher is the knowledge base as engines see it (the knowledge service satisfies it).
type Searcher interface {
	Search(ctx context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error)
}

// LLM answers Host.Generate.
type LLM interface {
	Generate(ctx context.Context, req *engine.GenerateRequest) (*engine.GenerateResult, error)
}

// JobDispatcher submits generator jobs (music, videogen, speech, videoparse) to their executor,
// which answers or later posts ai-callback for the job. PluginJobs satisfies it (the generators
// plugin does the work).
type JobDispatcher interface {
	Dispatch(ctx context.Context, job *engine.Job, callbackURL string) error
	// Local reports whether jobs of jobType are worked on by this host (its own processes), so
	// they die with it, rather than by an external executor that calls back.
	Local(jobType string) bool
}

// jobCanceller is a JobDispatcher that can stop its work on a job (PluginJobs).
type jobCanceller interface{ CancelJob(jobID string) }

// AssetRecorder records the files a run made (named in a job's result or the run's outputs) as
// assets of the run's owner, once each, with task.asset.uploaded. host/content satisfies it.
type AssetRecorder interface {
	RecordRunFiles(ctx context.Context, r *store.Run, result json.RawMessage) ([]store.Asset, error)
}

// MediaSource adds the creator's material (the project's images and clips, the run's media input)
// to a render job's payload, tells the engine what the creator said of it (RunMaterialNotes: the
// media_descriptions input), and refuses at start the references a render could not use (400
// naming the item). host/content satisfies it.
type MediaSource interface {
	AddRunMedia(ctx context.Context, r *store.Run, request json.RawMessage) (json.RawMessage, error)
	RunMaterialNotes(ctx context.Context, r *store.Run) ([]any, error)
	CheckRunMedia(ctx context.Context, userID string, inputs map[string]any) error
}

// Engines gives the live plugin engine of a name (host/plugins.Set), or an error when it is down.
type Engines interface {
	Engine(name string) (engine.Engine, error)
}

// Options configure a Service. Zero values take the defaults.
type Options struct {
	FreeRunsPerDay  int           // runs a free_user may start a UTC day; default 20
	Workers         int           // runs executed at once by this host; default 8
	Lease           time.Duration // claim lease, renewed while a run executes; default 30s
	Poll            time.Duration // how often the executor looks for work from other hosts; default 1s
	SweepInterval   time.Duration // job sweeper period; default 1s
	OrphanAfter     time.Duration // a running run with no lease and no open job this long is executed again; default 30s
	CallbackBaseURL string        // base of the callback URLs given to external executors
	// HostID identifies this host across restarts (kept in DATA_DIR): its claims are named
	// HostID/<claim>, so at start it takes back what its previous life held. Default a random id.
	HostID string
	// Life names this start of the host, HostID/<something> (the holder of the jobs it works on
	// itself); default HostID/<random>.
	Life string
	// Policies override the engine registry's job policies per type (tests).
	Policies map[string]manifest.JobPolicy
}

// Store is what the runs service needs of the database: runs, their trace and jobs, the users
// and projects they belong to, and the outbox of the job events (written in the transaction of
// the change, through store.InTx).
type Store interface {
	store.Transactor
	events.Outbox
	access.Getter
	Now() time.Time
	GetUser(ctx context.Context, id string) (*store.User, error)

	CreateRun(ctx context.Context, r *store.Run) error
	CreateRunInQuota(ctx context.Context, r *store.Run, q store.RunQuota) error
	GetRun(ctx context.Context, id string) (*store.Run, error)
	ListRuns(ctx context.Context, p store.ListRunsParams) ([]store.Run, int, error)
	UpdateRun(ctx context.Context, id string, u store.RunUpdate) (*store.Run, error)
	SetRunProgress(ctx context.Context, p store.RunProgressParams) error
	ClaimRun(ctx context.Context, owner string, lease time.Duration) (*store.Run, error)
	RenewLease(ctx context.Context, p store.RunLeaseParams) error
	FenceRun(ctx context.Context, id, owner string) error
	ListOrphanRuns(ctx context.Context, before time.Time, limit int) ([]string, error)
	ClaimOrphanRun(ctx context.Context, p store.ClaimOrphanRunParams) (*store.Run, error)
	TakeBackRuns(ctx context.Context, hostID string) (int64, error)
	UpsertTraceStep(ctx context.Context, s *store.TraceStep) error
	ListTraceSteps(ctx context.Context, runID string) ([]store.TraceStep, error)
	BeginModelCall(ctx context.Context, c store.ModelCall, lease time.Duration) (store.ModelCallState, error)
	PutModelCall(ctx context.Context, k store.ModelCallKey, result json.RawMessage) error
	ReleaseModelCall(ctx context.Context, c store.ModelCall) error

	CreateJob(ctx context.Context, j *store.Job) error
	GetJob(ctx context.Context, id string) (*store.Job, error)
	ListRunJobs(ctx context.Context, runID string) ([]store.Job, error)
	ResolveJob(ctx context.Context, p store.ResolveJobParams) (*store.Job, error)
	RetryJob(ctx context.Context, id string, timeoutAt time.Time) (*store.Job, error)
	MarkJobDispatched(ctx context.Context, p store.DispatchJobParams) error
	RenewJobLeases(ctx context.Context, holder string, lease time.Duration) (int64, error)
	ListDueJobs(ctx context.Context, now time.Time, limit int) ([]store.Job, error)
	ExtendJob(ctx context.Context, id string, timeoutAt time.Time) (*store.Job, error)
	TimeOutJob(ctx context.Context, p store.TimeOutJobParams) (*store.Job, error)
	ListAbandonedJobs(ctx context.Context, now time.Time, limit int) ([]store.Job, error)
	TakeBackJobs(ctx context.Context, hostID string) (int64, error)
}

// Deps are the parts a Service works with, handed to New. Store is required; a nil part leaves
// out what its comment says.
type Deps struct {
	Store     Store
	Manifests *manifest.Registry // the workflow manifests and engine registry at start (nil: none; SetManifests replaces them)
	Plugins   Engines            // nil: plugins off, everything in process
	// InProcess are the engines this process runs itself, by registry name: "node" (every
	// workflow's fallback) and the adapters that serve callbacks while their plugin is down.
	InProcess map[string]engine.Engine
	Notifier  events.Notifier // nil: no WebSocket frames
	Searcher  Searcher        // nil: no knowledge base, searches find nothing
	LLM       LLM             // nil: Generate answers OK=false
	// Jobs makes the dispatcher of generator jobs for the Service it reports to (the host's is
	// NewPluginJobs); nil: generator jobs fail with their type's code.
	Jobs   func(*Service) JobDispatcher
	Assets AssetRecorder // nil: the files runs make are not recorded as assets
	Media  MediaSource   // nil: renders get only the files their payload names
	// Voices lists the voices of the speech generator (render.InstalledVoices: espeak-ng's);
	// nil: a run's voice input is not checked (an external speech generator has its own).
	Voices func() (*render.Voices, error)
	Log    *slog.Logger // nil: discarded
	// Leader reports whether this host is the leader (host/leader: the advisory lock on
	// PostgreSQL); the job sweeper works only on the leader. nil: always.
	Leader func(ctx context.Context) bool
	// Credentials signs the tool credential each Run call hands its engine (RunRequest.Credential,
	// toolCredential in scope.go); nil: runs hand none.
	Credentials CredentialIssuer
}

// Service runs workflows: New builds it with its parts, StartExecutor and StartSweeper start its
// work.
type Service struct {
	st         Store
	plugins    Engines
	inProcess  map[string]engine.Engine
	notifier   events.Notifier
	searcher   Searcher
	llm        LLM
	dispatcher JobDispatcher
	assets     AssetRecorder
	media      MediaSource
	voices     func() (*render.Voices, error)
	log        *slog.Logger
	leader     func(ctx context.Context) bool
	creds      CredentialIssuer

	opts Options
	reg  atomic.Pointer[manifest.Registry] // the workflow manifests and engine registry in force

	mu      sync.Mutex
	active  map[string]*execution      // run id -> its execution on this host
	waiters map[string][]chan struct{} // job id -> WaitJob callers
	hooks   []func(context.Context, *store.Run)
	// progressSent is the last task:progress frame sent per run ("<progress>|<step>"), so that
	// the same progress reported twice (a step's start and end, the engine's 100 and the run's
	// completion) makes one frame.
	progressSent map[string]string
	wake         chan struct{}

	exec  *lifecycle
	sweep *lifecycle
	// life names this start of the host (HostID/<random>): the holder of the jobs whose work it
	// does itself, renewed while it lives.
	life string
	// slots bounds the runs that compute at once (Options.Workers); a run awaiting a job gives
	// its slot back meanwhile. admit bounds the runs held by this host at all.
	slots, admit chan struct{}
}

var _ engine.Host = (*Service)(nil)

// New returns a Service over deps; zero Options take their defaults.
func New(deps Deps, opts Options) *Service {
	if opts.FreeRunsPerDay <= 0 {
		opts.FreeRunsPerDay = 20
	}
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.OrphanAfter <= 0 {
		opts.OrphanAfter = 30 * time.Second
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = time.Second
	}
	if opts.HostID == "" {
		opts.HostID = "host-" + uuid.NewString()[:8]
	}
	if opts.Life == "" {
		opts.Life = opts.HostID + "/" + uuid.NewString()[:8]
	}
	s := &Service{
		st: deps.Store, plugins: deps.Plugins, inProcess: maps.Clone(deps.InProcess), notifier: deps.Notifier,
		searcher: deps.Searcher, llm: deps.LLM, assets: deps.Assets, media: deps.Media, voices: deps.Voices, log: deps.Log, leader: deps.Leader, creds: deps.Credentials,
		opts:   opts,
		active: map[string]*execution{}, waiters: map[string][]chan struct{}{}, progressSent: map[string]string{},
		wake:  make(chan struct{}, 1),
		life:  opts.Life,
		slots: make(chan struct{}, opts.Workers), admit: make(chan struct{}, opts.Workers*maxWaitingPerSlot),
	}
	if s.inProcess == nil {
		s.inProcess = map[string]engine.Engine{}
	}
	if s.notifier == nil {
		s.notifier = events.Discard{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if deps.Jobs != nil {
		s.dispatcher = deps.Jobs(s)
	}
	reg := deps.Manifests
	if reg == nil {
		reg = manifest.NewRegistry()
	}
	s.reg.Store(reg)
	return s
}

// StopJobs stops the dispatcher's work in flight and waits for it, when the dispatcher can be
// stopped (PluginJobs); it refuses new work afterwards. The host calls it after DrainExecutor.
func (s *Service) StopJobs() {
	if d, ok := s.dispatcher.(interface{ Stop() }); ok {
		d.Stop()
	}
}

// Manifests returns the workflow manifests and engine registry in force. A run reads its manifest
// once, when it starts executing: a reload (SetManifests) applies to the runs that start after it.
func (s *Service) Manifests() *manifest.Registry { return s.reg.Load() }

// SetManifests replaces the manifests and engine registry for the runs that start from now on.
func (s *Service) SetManifests(reg *manifest.Registry) { s.reg.Store(reg) }

// OnFinish registers fn, called once for every run that reaches completed, failed or cancelled.
func (s *Service) OnFinish(fn func(ctx context.Context, r *store.Run)) {
	s.mu.Lock()
	s.hooks = append(s.hooks, fn)
	s.mu.Unlock()
}

// StartParams describe a run to start.
type StartParams struct {
	Workflow       string
	Inputs         map[string]any
	User           *auth.Principal
	ProjectID      string
	ProjectName    string
	StrategyTaskID string
	Trigger        string
	TriggeredBy    string
}

// Start checks and stores a pending run, and wakes the executor. Errors: WORKFLOW_NOT_FOUND (404),
// VALIDATION_ERROR (400), AUTHORIZATION_ERROR for a project that is not the user's (403),
// QUOTA_EXCEEDED for a free user over the daily run quota (429, Retry-After until midnight UTC).
//
// A run belongs to its project's owner whoever starts it: a run an admin or an automation key
// starts for someone's project is that owner's (their lists, status, events and quota), and
// records who started it in triggered_by (a key's name). Every run counts toward its owner's daily
// quota, whatever started it.
func (s *Service) Start(ctx context.Context, p StartParams) (*store.Run, error) {
	if p.User == nil {
		return nil, errcode.New(errcode.Authentication, "")
	}
	if p.User.IsAutomation() && p.ProjectID == "" {
		return nil, errcode.Invalid("project_id", "is required with an automation key (the run belongs to the project's owner)")
	}
	if p.Inputs == nil {
		p.Inputs = map[string]any{}
	}
	m, err := s.check(p.Workflow, p.Inputs)
	if err != nil {
		return nil, err
	}
	var pctx json.RawMessage
	if p.ProjectID != "" {
		proj, err := access.Project(ctx, s.st, p.User, p.ProjectID, access.InBody)
		if err != nil {
			return nil, err
		}
		if p.ProjectName == "" {
			p.ProjectName = proj.Name
		}
		pctx, _ = json.Marshal(engine.ProjectContext{ProjectID: proj.ID, ProjectName: p.ProjectName, StrategyTaskID: p.StrategyTaskID}) // a struct of strings and numbers: Marshal cannot fail
		if proj.UserID != p.User.UserID {
			if p.User, err = s.onBehalf(ctx, &p, proj); err != nil {
				return nil, err
			}
		}
	}
	if s.media != nil && (m.Declares("media") || m.Declares("music_url")) {
		// The references are the owner's to make: checked as the run's owner, whoever starts it.
		if err := s.media.CheckRunMedia(ctx, p.User.UserID, p.Inputs); err != nil {
			return nil, err
		}
	}
	quota := p.User.Role == store.RoleFreeUser
	if p.Trigger == "" {
		p.Trigger = store.TriggerAPI
	}
	in, jerr := json.Marshal(p.Inputs)
	if jerr != nil {
		return nil, errcode.Invalid("inputs", "must be a JSON object")
	}
	uc, _ := json.Marshal(engine.UserContext{UserID: p.User.UserID, Username: p.User.Username, Role: p.User.Role}) // a struct of strings and numbers: Marshal cannot fail
	r := &store.Run{ID: uuid.NewString(), WorkflowID: m.ID, UserID: p.User.UserID, ProjectID: p.ProjectID,
		Inputs: in, UserContext: uc, ProjectContext: pctx, Trigger: p.Trigger, TriggeredBy: p.TriggeredBy, Engine: m.Engine}
	if quota {
		// The store counts the day's runs and stores this one in one step, so concurrent starts
		// cannot all pass the count before any of them is stored.
		now := s.st.Now()
		day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		err = s.st.CreateRunInQuota(ctx, r, store.RunQuota{Since: day, Limit: s.opts.FreeRunsPerDay})
		switch {
		case errors.Is(err, store.ErrQuotaExceeded):
			e := errcode.Newf(errcode.QuotaExceeded, "Free users may start %d runs a day", s.opts.FreeRunsPerDay)
			e.RetryAfter = max(int(math.Ceil(day.Add(24*time.Hour).Sub(now).Seconds())), 1)
			return nil, e
		case errors.Is(err, store.ErrNotFound): // the token names a user that is gone
			return nil, errcode.New(errcode.Authentication, "")
		}
	} else {
		err = s.st.CreateRun(ctx, r)
	}
	if err != nil {
		return nil, fmt.Errorf("runs: store run: %w", err)
	}
	s.notifyStatus(ctx, r)
	s.kick()
	return r, nil
}

// onBehalf returns the principal a run started by someone other than the project's owner (an
// admin or an automation key) belongs to: the owner. A key's run is a scheduler run named after
// the key; an admin's keeps its trigger and names the admin when nothing else does.
func (s *Service) onBehalf(ctx context.Context, p *StartParams, proj *store.Project) (*auth.Principal, error) {
	owner, err := s.st.GetUser(ctx, proj.UserID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, access.Forbidden()
		}
		return nil, fmt.Errorf("runs: load project owner: %w", err)
	}
	switch {
	case p.User.KeyName != "":
		p.Trigger, p.TriggeredBy = store.TriggerScheduler, p.User.KeyName
	case p.TriggeredBy == "":
		p.TriggeredBy = "admin:" + p.User.Username
	}
	return &auth.Principal{UserID: owner.ID, Role: owner.Role, Username: owner.Username}, nil
}

// Check answers whether a run of workflow with inputs would be accepted: 404 WORKFLOW_NOT_FOUND
// for an unknown workflow, 400 VALIDATION_ERROR naming the field for inputs its manifest refuses
// (a required input missing, a wrong type or length). Start checks the same way; the task worker,
// which starts its runs later, checks at task creation with it.
func (s *Service) Check(workflow string, inputs map[string]any) error {
	_, err := s.check(workflow, inputs)
	return err
}

// check is the one place a run's workflow and inputs are judged.
func (s *Service) check(workflow string, inputs map[string]any) (*manifest.Manifest, error) {
	if workflow == "" {
		return nil, errcode.Invalid("workflow", "is required")
	}
	m, ok := s.Manifests().Get(workflow)
	if !ok {
		return nil, errcode.Newf(errcode.WorkflowNotFound, "Workflow %q not found", workflow)
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	if err := m.ValidateInputs(inputs); err != nil {
		return nil, err
	}
	if v, _ := inputs["voice"].(string); strings.TrimSpace(v) != "" && m.Declares("voice") && s.voices != nil {
		vs, err := s.voices()
		switch {
		case err != nil:
			return nil, errcode.Invalid("voice", fmt.Sprintf("%q cannot be used: %v", v, err))
		case !vs.Known(v):
			return nil, errcode.Invalid("voice", fmt.Sprintf("%q is not a voice of the speech generator (GET /api/workflow/voices lists them)", v))
		}
	}
	return m, nil
}

// Voices returns the voices a run's voice input may name; ok is false when they are not known
// here (an external speech generator).
func (s *Service) Voices() (v *render.Voices, ok bool, err error) {
	if s.voices == nil {
		return nil, false, nil
	}
	v, err = s.voices()
	return v, true, err
}

// Get returns the run when p may see it (its owner, or an admin); else 404 NOT_FOUND.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*store.Run, error) {
	r, err := s.st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (p == nil || (r.UserID != p.UserID && !p.IsAdmin()))) {
		return nil, errcode.New(errcode.NotFound, "Run not found")
	}
	if err != nil {
		return nil, fmt.Errorf("runs: load run: %w", err)
	}
	return r, nil
}

// Trace returns the run's trace steps in order.
func (s *Service) Trace(ctx context.Context, runID string) ([]json.RawMessage, error) {
	steps, err := s.st.ListTraceSteps(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("runs: load trace: %w", err)
	}
	out := make([]json.RawMessage, 0, len(steps))
	for _, st := range steps {
		out = append(out, st.Step)
	}
	return out, nil
}

// JobRef is a job as a run lists it (SPEC.md JobReference).
type JobRef struct {
	JobID      string     `json:"job_id"`
	Type       string     `json:"type"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// Jobs returns the run's jobs, oldest first.
func (s *Service) Jobs(ctx context.Context, runID string) ([]JobRef, error) {
	jobs, err := s.st.ListRunJobs(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("runs: load jobs: %w", err)
	}
	out := make([]JobRef, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, JobRef{JobID: j.ID, Type: j.Type, Status: j.Status, CreatedAt: j.CreatedAt, ResolvedAt: j.ResolvedAt})
	}
	return out, nil
}

// List lists the caller's runs.
func (s *Service) List(ctx context.Context, p store.ListRunsParams) ([]store.Run, int, error) {
	return s.st.ListRuns(ctx, p)
}

var cancellable = []string{store.RunPending, store.RunRunning, store.RunPaused}

// Cancel cancels a pending, running or paused run of p: its execution here, its jobs, and the
// engine's outside work. Any other state: 409 WORKFLOW_INVALID_STATE.
func (s *Service) Cancel(ctx context.Context, p *auth.Principal, id string) (*store.Run, error) {
	if _, err := s.Get(ctx, p, id); err != nil {
		return nil, err
	}
	return s.CancelRun(ctx, id)
}

// CancelRun cancels a run whoever owns it (the scheduler and the task worker use it). Unknown run:
// 404 NOT_FOUND; a run not pending, running or paused: 409 WORKFLOW_INVALID_STATE.
func (s *Service) CancelRun(ctx context.Context, id string) (*store.Run, error) {
	errObj, _ := json.Marshal(engine.RunError{Code: string(errcode.WorkflowCancelled), Message: "Run cancelled"}) // a struct of strings and numbers: Marshal cannot fail
	r, err := s.st.UpdateRun(ctx, id, store.RunUpdate{From: cancellable, Status: store.RunCancelled, Error: errObj,
		Completed: true, Release: true, ClearAwait: true})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errcode.New(errcode.NotFound, "Run not found")
	}
	if errors.Is(err, store.ErrStale) {
		return nil, errcode.Newf(errcode.WorkflowInvalidState, "Run is %s and cannot be cancelled", s.status(ctx, id))
	}
	if err != nil {
		return nil, fmt.Errorf("runs: cancel: %w", err)
	}
	s.mu.Lock()
	ex := s.active[id]
	s.mu.Unlock()
	if ex != nil {
		ex.cancel()
	}
	jobIDs := s.failJobs(ctx, jobFailure{RunID: id, Generators: true, Err: &engine.RunError{Code: string(errcode.WorkflowCancelled), Message: "run cancelled"}})
	if jc, ok := s.dispatcher.(jobCanceller); ok {
		for _, jid := range jobIDs {
			jc.CancelJob(jid) // its render stops now, not when it would have ended
		}
	}
	if eng := s.route(r.Engine).eng; eng != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := eng.Cancel(cctx, &engine.CancelRequest{RunID: id, JobIDs: jobIDs}); err != nil {
			s.log.Warn("engine cancel", "run_id", id, "err", err)
		}
		cancel()
	}
	s.finished(ctx, r)
	return r, nil
}

// Resume continues a paused run with input (merged into the run's inputs). Other states: 409.
func (s *Service) Resume(ctx context.Context, p *auth.Principal, id string, input map[string]any) (*store.Run, error) {
	r, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if r.Status != store.RunPaused {
		return nil, onlyFrom(r.Status, store.RunPaused, "resumed")
	}
	if input == nil {
		input = map[string]any{}
	}
	merged := map[string]any{}
	_ = json.Unmarshal(r.Inputs, &merged) // Start stored them from a JSON object
	maps.Copy(merged, input)
	// JSON decoded (merged) and the resume body the API decoded: both marshal.
	in, _ := json.Marshal(merged)
	ri, _ := json.Marshal(input)
	now := s.st.Now()
	return s.restart(ctx, id, "resume", store.RunPaused, "resumed", store.RunUpdate{Status: store.RunRunning,
		Inputs: in, ResumeInput: ri, ClearAwait: true, Lease: &now})
}

// Retry runs a failed run again from its failed step, reusing the outputs of the steps that
// completed. Other states: 409 WORKFLOW_INVALID_STATE.
func (s *Service) Retry(ctx context.Context, p *auth.Principal, id string) (*store.Run, error) {
	r, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if r.Status != store.RunFailed {
		return nil, onlyFrom(r.Status, store.RunFailed, "retried")
	}
	return s.restart(ctx, id, "retry", store.RunFailed, "retried", store.RunUpdate{Status: store.RunPending,
		ClearError: true, ClearOutput: true, NextAttempt: true, Release: true})
}

// restart (op: resume, retry) puts run id, in state from, back to work with the guarded update u,
// then tells its watchers and wakes the workers. A run no longer in from: onlyFrom's error.
func (s *Service) restart(ctx context.Context, id, op, from, done string, u store.RunUpdate) (*store.Run, error) {
	u.From = []string{from}
	r, err := s.st.UpdateRun(ctx, id, u)
	if errors.Is(err, store.ErrStale) {
		return nil, onlyFrom(s.status(ctx, id), from, done)
	}
	if err != nil {
		return nil, fmt.Errorf("runs: %s: %w", op, err)
	}
	s.notifyStatus(ctx, r)
	s.kick()
	return r, nil
}

// onlyFrom is the 409 WORKFLOW_INVALID_STATE of a run in state status that only a run in state from
// can be done to (resumed, retried).
func onlyFrom(status, from, done string) error {
	return errcode.Newf(errcode.WorkflowInvalidState, "Run is %s, only a %s run can be %s", status, from, done)
}

func (s *Service) status(ctx context.Context, id string) string {
	if r, err := s.st.GetRun(ctx, id); err == nil {
		return r.Status
	}
	return "gone"
}

// finished calls the OnFinish hooks for a run that just reached a terminal state (a completed
// run's files were recorded before it was stored as completed: apply).
func (s *Service) finished(ctx context.Context, r *store.Run) {
	s.notifyStatus(ctx, r)
	s.mu.Lock()
	hooks := append([]func(context.Context, *store.Run){}, s.hooks...)
	delete(s.progressSent, r.ID)
	s.mu.Unlock()
	for _, h := range hooks {
		h(context.WithoutCancel(ctx), r)
	}
}

// notifyStatus sends the task:status frame of r; a failed or cancelled run's carries its error
// ({code, message, step_id}), a completed run's its warnings.
func (s *Service) notifyStatus(ctx context.Context, r *store.Run) {
	data := map[string]any{"taskId": r.ID, "runId": r.ID, "status": r.Status, "workflow": r.WorkflowID}
	if (r.Status == store.RunFailed || r.Status == store.RunCancelled) && len(r.Error) > 0 {
		data["error"] = r.Error
	}
	if w := WarningsOf(r); w != nil {
		data["warnings"] = w
	}
	s.notifier.Notify(ctx, events.Frame{ProjectID: r.ProjectID, UserID: r.UserID, Type: events.FrameTaskStatus, Data: data})
}

// recordFiles records the files result names as assets of run r. A file that cannot be recorded
// is logged: the run's outcome stands, and its result still names the file.
func (s *Service) recordFiles(ctx context.Context, r *store.Run, result json.RawMessage) {
	if s.assets == nil || len(result) == 0 {
		return
	}
	if _, err := s.assets.RecordRunFiles(context.WithoutCancel(ctx), r, result); err != nil {
		s.log.Warn("runs: the run's files were not all recorded as assets", "run_id", r.ID, "err", err)
	}
}

// kick wakes an idle executor worker.
func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
