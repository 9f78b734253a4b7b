// Package app wires the host together and runs it: it opens the store, builds the services,
// serves HTTP, and shuts everything down in order. It is the only package that imports them all.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/reelforge/reelforge/host/api"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/capability"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/leader"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/host/queue"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/tasks"
	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/internal/proc"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
)

// OpenStore opens the database the configuration names: PostgreSQL when DATABASE_URL is set,
// else SQLite in DATA_DIR.
func OpenStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (store.Driver, error) {
	if cfg.DatabaseURL != "" {
		return pgstore.Open(ctx, cfg.DatabaseURL, pgstore.Options{VectorSearch: cfg.VectorSearch != "off", Logger: log,
			Timeout: cfg.DBTimeout, SlowTimeout: cfg.DBSlowTimeout, PoolMax: cfg.DBPoolMax, PoolMin: cfg.DBPoolMin, PoolIdle: cfg.DBPoolIdle})
	}
	log.Info("knowledge search path: in-memory vector scoring (SQLite)")
	return sqlitestore.Open(ctx, filepath.Join(cfg.DataDir, "reelforge.db"), sqlitestore.Options{Timeout: cfg.DBTimeout, SlowTimeout: cfg.DBSlowTimeout})
}

// Host is a wired host, ready to serve.
type Host struct {
	Config *config.Config
	Log    *slog.Logger
	Store  store.Driver
	Server *api.Server
	Runs   *runs.Service
	// Plugins supervises the engine plugins; nil when PLUGINS_ENABLED=false.
	Plugins *plugins.Set

	// leader is the host's leadership (host/leader), followed by the scheduler's tick, the job
	// sweeper and the time-driven events.
	leader *leader.Leader
	// HostID names this host in its leases (hostIdentity); Life this start of it, the holder of
	// the jobs, ingests and Idempotency-Keys it works on (holds.go). unlock gives up
	// DATA_DIR/host.lock.
	HostID, Life string
	unlock       func()
	// soleOnDataDir: no other live host uses DATA_DIR, so what is recorded there of earlier
	// lives (child processes) is this host's to end.
	soleOnDataDir bool

	// FileURLs signs the file URLs the API, the frames and the events hand out, and checks them.
	FileURLs *fileurl.Signer

	Hub       *events.Hub       // WebSocket frames; the events.Notifier of every service
	Events    *events.Worker    // outbound event delivery
	Scheduled *events.Scheduled // subscription.expiring and user.daily.summary
	// Tasks is the project-task worker; Scheduler the scheduler API and its cron fallback.
	// host/runs is wired to both through launch.Runner and their RunEnded methods.
	Tasks     *tasks.Service
	Scheduler *scheduler.Scheduler
	// Queue is the host's River client: its durable background jobs (queue.go, docs/queue.md).
	Queue *queue.Queue
	// queueStarting gives up a start of the queue still waiting for the database (startQueue);
	// nil when the queue started at once.
	queueStarting func()
}

// New opens the store and builds the services; a database that cannot serve fails it.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Host, error) {
	return build(ctx, cfg, log, false)
}

// NewWaiting is New for `reelforge serve`: while the database cannot serve (down, out of
// connections, its disk full), it waits for it with back-off, answering on PORT meanwhile
// (openStoreWaiting), and comes up when the database does.
func NewWaiting(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Host, error) {
	return build(ctx, cfg, log, true)
}

func build(ctx context.Context, cfg *config.Config, log *slog.Logger, wait bool) (*Host, error) {
	if err := cfg.EnsureJWTSecret(); err != nil {
		return nil, err
	}
	if err := cfg.EnsureCallbackSecret(); err != nil {
		return nil, err
	}
	blobs, err := newBlobs(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	var st store.Driver
	if wait {
		st, err = openStoreWaiting(ctx, cfg, log)
	} else {
		st, err = OpenStore(ctx, cfg, log)
	}
	if err != nil {
		return nil, err
	}
	h := &Host{Config: cfg, Log: log, Store: st, FileURLs: fileurl.New(cfg.JWTSecret, cfg.FileURLTTL)}
	if h.HostID, h.unlock, h.soleOnDataDir, err = hostIdentity(cfg, log); err != nil {
		st.Close()
		return nil, err
	}
	if cfg.DatabaseURL == "" && !h.soleOnDataDir {
		// One host per SQLite file: the driver keeps projects listing pages that only this
		// process's writes invalidate (sqlitestore.Open). A second host would serve stale pages.
		h.unlock()
		st.Close()
		return nil, errors.New("app: another live host serves the SQLite database in DATA_DIR (DATA_DIR/host.lock is held); " +
			"a SQLite file belongs to one host: hosts that share a database use PostgreSQL (DATABASE_URL)")
	}
	h.Life = h.HostID + "/" + randomHex(4)
	h.leader = leader.New(st, leader.Name, log)
	if err := h.newQueue(); err != nil {
		h.unlock()
		st.Close()
		return nil, err
	}
	// Each service is built with what it uses, in dependency order; the runs service and its two
	// consumers (tasks, scheduler) are joined by launch.Runner one way and OnFinish the other.
	// One auth service: it signs the access tokens the API checks and the tool credentials runs and
	// chat answers hand their external tools (auth.ToolGrant).
	authSvc := auth.New(st, cfg.JWTSecret, 0)
	knowledge := newKB(cfg, st, log, h.Life)
	h.wireEvents()
	contentSvc := newContent(cfg, st, log, h.Hub, kbSearch{knowledge}, blobs, h.FileURLs, authSvc)
	if err := h.wireRuns(cfg, log, knowledge, contentSvc, authSvc); err != nil {
		st.Close()
		return nil, err
	}
	known := h.knownWorkflows
	h.Tasks = tasks.New(st, tasks.Options{Log: log, Known: known, Notifier: h.Hub, Runner: launcher{h.Runs}})
	h.Scheduler = scheduler.New(st, scheduler.Options{Mode: cfg.SchedulerMode, Interval: cfg.SchedulerInterval,
		Known: known, Log: log, Runner: launcher{h.Runs}, Leader: h.leader})
	forwardEnded(h.Runs, h.Scheduler.RunEnded, h.Tasks.RunEnded)
	h.Server = &api.Server{Config: cfg, Store: st, Auth: authSvc, Log: log, Holder: h.Life,
		Engines: engineStates{h}, KB: knowledge, Content: contentSvc, Runs: h.Runs, Tasks: h.Tasks, Scheduler: h.Scheduler,
		Hub: h.Hub, Notifier: h.Hub, Notifications: h.Events, FileURLs: h.FileURLs, Queue: h.Queue}
	return h, nil
}

// newBlobs is where uploaded files go: the S3-compatible bucket when S3_BUCKET is set, else
// DATA_DIR. An unreachable bucket is logged, not fatal: the store may come up after the host, and
// until then uploads and downloads fail with EXTERNAL_SERVICE_ERROR.
func newBlobs(ctx context.Context, cfg *config.Config, log *slog.Logger) (blob.Store, error) {
	if cfg.S3Bucket == "" {
		log.Info("uploaded files: local folder", "dir", cfg.DataDir)
		return blob.NewDir(cfg.DataDir), nil
	}
	s3, err := blob.NewS3(blob.S3Config{Endpoint: cfg.S3Endpoint, Bucket: cfg.S3Bucket, Region: cfg.S3Region,
		AccessKeyID: cfg.S3AccessKeyID, SecretAccessKey: cfg.S3SecretAccessKey, UsePathStyle: cfg.S3UsePathStyle})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s3.Check(cctx); err != nil {
		log.Warn("uploaded files: S3 bucket not reachable yet", "bucket", cfg.S3Bucket, "endpoint", cfg.S3Endpoint, "err", err.Error())
	} else {
		log.Info("uploaded files: S3 bucket", "bucket", cfg.S3Bucket, "endpoint", cfg.S3Endpoint)
	}
	return s3, nil
}

// wireRuns loads the manifests and builds the runs service, its in-process engines and (unless
// PLUGINS_ENABLED=false) one plugin supervisor per engine the manifests name.
func (h *Host) wireRuns(cfg *config.Config, log *slog.Logger, knowledge *kb.Service, contentSvc *content.Service, creds runs.CredentialIssuer) error {
	reg, err := manifest.Load(cfg.ManifestDir)
	if err != nil {
		if _, serr := os.Stat(cfg.ManifestDir); !errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("app: manifests: %w", err)
		}
		log.Warn("no manifest folder: no workflow can be started (set MANIFEST_DIR)", "dir", cfg.ManifestDir)
		reg = manifest.NewRegistry()
	}
	runsLog := log.With("component", "runs")
	deps := runs.Deps{Store: h.Store, Manifests: reg, InProcess: inProcess(reg, cfg, log), Notifier: h.Hub,
		Searcher: kbSearch{knowledge}, Assets: contentSvc, Media: contentSvc, Log: runsLog, Leader: h.leader.IsLeader, Credentials: creds,
		// Generator jobs run in the engine plugin whose entry declares their type, never in the host.
		Jobs: func(s *runs.Service) runs.JobDispatcher { return runs.NewPluginJobs(s) }}
	if cfg.SpeechAPIURL == "" {
		// The local speech generator speaks with espeak-ng: a run's voice must be one of its.
		deps.Voices = render.InstalledVoices
	}
	if cfg.LLMBaseURL != "" {
		deps.LLM = runs.ChatLLM{Client: llm.NewClient(llm.ClientConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey}), Model: cfg.KBAskModel}
	}
	if cfg.PluginsEnabled {
		set, err := plugins.NewSet(pluginConfigs(reg, cfg, runsLog)...)
		if err != nil {
			return fmt.Errorf("app: plugins: %w", err)
		}
		h.Plugins, deps.Plugins = set, set
	}
	h.Runs = runs.New(deps, runs.Options{FreeRunsPerDay: cfg.FreeRunsPerDay, CallbackBaseURL: cfg.CallbackBaseURL,
		HostID: h.HostID, Life: h.Life, Lease: cfg.Lease})
	return nil
}

// pluginConfigs are the supervisor configs of the enabled engines of reg. A plugin's Host calls
// that serve no run of the host are refused and logged to log (runs.NoRunHost).
func pluginConfigs(reg *manifest.Registry, cfg *config.Config, log *slog.Logger) []plugins.Config {
	var cfgs []plugins.Config
	for _, e := range reg.EngineList() {
		if !e.Enabled {
			log.Info("engine disabled in its manifest: its workflows run on their fallback", "engine", e.Name, "file", e.File)
			continue
		}
		cfgs = append(cfgs, plugins.Config{Name: e.Name, Dir: cfg.PluginDir, Binary: e.Plugin, SHA256: e.SHA256,
			Env: []string{engine.SettingsEnvValue(EngineSettings(e, cfg))}, Host: runs.NoRunHost(e.Name, log), Logger: log})
	}
	return cfgs
}

// Reload re-reads the workflow manifests and the engine registry of MANIFEST_DIR (SIGHUP). A valid
// set replaces the old one for the runs that start from now on (runs in flight finish on the
// manifest they started with), and the plugin supervisors follow the registry: new engines are
// launched, removed or disabled ones stopped, changed ones relaunched. An invalid set is refused,
// with every problem's file and field in the error and the log, and the old set stays. The
// in-process copies of the engines keep the settings they were built with at start.
func (h *Host) Reload() error {
	reg, err := manifest.Load(h.Config.ManifestDir)
	if err != nil {
		h.Log.Error("manifests reload refused: the previous manifests stay in force", "dir", h.Config.ManifestDir, "error", err.Error())
		return fmt.Errorf("app: reload: %w", err)
	}
	h.Runs.SetManifests(reg)
	if h.Plugins != nil {
		if err := h.Plugins.Apply(pluginConfigs(reg, h.Config, h.Log.With("component", "runs"))); err != nil {
			h.Log.Warn("after the reload some engine plugins did not start: their workflows run on node", "err", err)
		}
	}
	h.Log.Info("manifests reloaded", "dir", h.Config.ManifestDir, "workflows", len(reg.List()), "engines", len(reg.EngineList()))
	return nil
}

// reloadOnHangup reloads the manifests on every SIGHUP until ctx ends or the returned stop is
// called; stop returns once its goroutine has exited.
func (h *Host) reloadOnHangup(ctx context.Context) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-hup:
				_ = h.Reload() // Reload logs a refused set; the old one stays
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-exited
	}
}

// engineStates reports /health's engines: the supervisors' states, disabled for the registry's
// disabled engines, or with plugins off the in-process node engine ready and the others disabled.
type engineStates struct{ h *Host }

func (e engineStates) EngineStates() map[string]string {
	out := map[string]string{}
	for _, name := range e.h.Runs.Manifests().Engines() {
		out[name] = string(plugins.StateDisabled)
	}
	if e.h.Plugins == nil {
		out["node"] = string(plugins.StateReady)
		return out
	}
	for name, st := range e.h.Plugins.States() {
		out[name] = string(st)
	}
	if d, ok := e.h.Plugins.Details()[generators.Name]; ok && d.State == plugins.DetailReady {
		if GeneratorsDetail(e.h.Config, d).State != plugins.DetailReady {
			out[generators.Name] = string(plugins.StateDegraded) // its tools are missing
		}
	}
	return out
}

// EngineDetails gives /health's engine_details: each engine's detailed state (ready,
// unconfigured, degraded, restarting or disabled) and why it is not ready.
func (e engineStates) EngineDetails() map[string]plugins.Detail {
	out := map[string]plugins.Detail{}
	for _, name := range e.h.Runs.Manifests().Engines() {
		out[name] = plugins.Detail{State: plugins.DetailDisabled, Reason: "no engine entry: it runs in process only"}
		if e.h.Plugins == nil {
			out[name] = plugins.Detail{State: plugins.DetailDisabled,
				Reason: "plugins are switched off (PLUGINS_ENABLED=false): its workflows run on the in-process node engine"}
		}
	}
	for _, en := range e.h.Runs.Manifests().EngineList() {
		if !en.Enabled {
			out[en.Name] = plugins.Detail{State: plugins.DetailDisabled, Reason: "disabled in " + en.File + ": its workflows run on their fallback"}
		}
	}
	if e.h.Plugins == nil {
		out[manifest.EngineNode] = plugins.Detail{State: plugins.DetailReady}
		return out
	}
	for name, d := range e.h.Plugins.Details() {
		out[name] = d
	}
	if d, ok := out[generators.Name]; ok {
		out[generators.Name] = GeneratorsDetail(e.h.Config, d)
	}
	return out
}

// Capabilities gives /health's capabilities: what the host can do of speech, video, music, image,
// a language model and embeddings, with the generators engine as it runs now.
func (e engineStates) Capabilities() map[string]capability.Capability {
	gen := plugins.Detail{State: plugins.DetailDisabled, Reason: "plugins are switched off (PLUGINS_ENABLED=false)"}
	if e.h.Plugins != nil {
		gen = e.h.Plugins.Details()[generators.Name] // zero when it has no entry
	}
	return Capabilities(e.h.Config, gen)
}

// knownWorkflows reports whether a workflow id is in the manifests in force (they may be reloaded).
func (h *Host) knownWorkflows(id string) bool {
	_, ok := h.Runs.Manifests().Get(id)
	return ok
}

// Run serves until ctx ends, then shuts down gracefully: stop taking requests, finish those in
// flight (up to SHUTDOWN_TIMEOUT_MS), stop the workers, close the store.
func (h *Host) Run(ctx context.Context) error {
	app := h.Server.App()
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(h.Config.Port))
	if err != nil {
		h.Store.Close()
		return fmt.Errorf("app: listen: %w", err)
	}
	// Tools a previous life started (renders, speech) and the kernel did not end with it: end
	// them before anything new starts.
	if !h.soleOnDataDir {
		h.Log.Warn("another live host uses DATA_DIR: its child processes are not swept")
	} else if n, err := (proc.Registry{Dir: generators.ChildrenDir(h.Config.DataDir)}).Sweep(); err != nil {
		h.Log.Warn("sweep the previous life's child processes", "err", err)
	} else if n > 0 {
		h.Log.Warn("killed child processes left by this host's previous life", "processes", n)
	}
	if h.soleOnDataDir && h.Config.S3Bucket == "" {
		h.sweepUploads(ctx)
	}
	// Renders a killed plugin cut off left their partial files (never served: no result names
	// them); with no other host on DATA_DIR, none of them is a render in progress.
	if h.soleOnDataDir {
		if n, err := generators.RemovePartials(h.Config.DataDir); err != nil {
			h.Log.Warn("remove the partial files of cut-off renders", "err", err)
		} else if n > 0 {
			h.Log.Warn("removed the partial files of renders cut off before this start", "files", n)
		}
	}
	if err := h.startEvents(ctx); err != nil {
		ln.Close()
		h.Store.Close()
		return fmt.Errorf("app: start events: %w", err)
	}
	if h.Plugins != nil {
		if perr := h.Plugins.Start(ctx); perr != nil {
			h.Log.Warn("some engine plugins did not start: their workflows run on the in-process node engine", "err", perr)
		}
	}
	stopHolds := h.keepHolds(ctx)
	if err := h.startQueue(ctx); err != nil {
		stopHolds()
		ln.Close()
		h.Store.Close()
		return err
	}
	stopReload := h.reloadOnHangup(ctx)
	defer stopReload()
	h.Runs.StartExecutor(ctx)
	h.Runs.StartSweeper(ctx)
	h.Log.Info("reelforge listening", "port", h.Config.Port, "database", h.Store.Name(), "version", h.Config.Version)
	if err := h.Tasks.Start(ctx); err != nil {
		h.stopQueue()
		h.Store.Close()
		return err
	}
	if err := h.Scheduler.Serve(ctx); err != nil {
		h.Tasks.Stop()
		h.stopQueue()
		h.Store.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	var stopping time.Time // when the stop signal came (zero: the listener failed, no grace)
	select {
	case err = <-served:
	case <-ctx.Done():
		stopping = time.Now()
		h.Log.Info("shutting down")
		err = api.Shutdown(app, h.Config.ShutdownTimeout)
	}
	// Runs in flight get what is left of SHUTDOWN_TIMEOUT_MS to finish; those still going are
	// handed back (leases ended), so the next start or another host takes them over at once.
	h.Runs.StopSweeper()
	h.Runs.DrainExecutor(time.Until(stopping.Add(h.Config.ShutdownTimeout)))
	h.Runs.StopJobs()
	h.stopQueue()
	stopHolds()
	if h.Plugins != nil {
		h.Plugins.Stop()
	}
	h.stopEvents()
	h.Scheduler.Shutdown()
	h.Tasks.Stop()
	h.leader.Release()
	if cerr := h.Store.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	h.unlock()
	return err
}

// newContent builds the content service: the language model when LLM_BASE_URL is set, the
// chatflow tool when CHATFLOW_URL is set, templates and local answers otherwise; asset:sync frames
// through the hub; a diagnosis blueprint becomes the project's strategy tasks in its transaction.
func newContent(cfg *config.Config, st store.Driver, log *slog.Logger, notifier events.Notifier, searcher content.Searcher, blobs blob.Store,
	urls *fileurl.Signer, creds content.CredentialIssuer) *content.Service {
	var model content.Chatter
	if cfg.LLMBaseURL != "" {
		model = llm.NewClient(llm.ClientConfig{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey})
	}
	return content.New(content.Config{
		Store:       st,
		DataDir:     cfg.DataDir,
		Blobs:       blobs,
		UploadLimit: int64(cfg.UploadLimit),
		Fetcher:     content.NewFetcher(content.FetcherConfig{Allow: cfg.ContentFetchAllow}),
		LLM:         model,
		Model:       cfg.KBAskModel,
		Chatflow:    chatflow.Options{Tool: outbound.Tool{URL: cfg.ChatflowURL}, APIKey: cfg.ChatflowAPIKey, DefaultChatflowID: cfg.ChatflowKBID},
		Notifier:    notifier,
		Log:         log,
		FileURLs:    urls,
		SyncBlueprint: func(ctx context.Context, tx content.StrategyTasks, projectID string, bp json.RawMessage) error {
			return scheduler.SyncBlueprint(ctx, tx, projectID, bp)
		},
		KB:          searcher,
		Credentials: creds,
		HostURL:     cfg.CallbackBaseURL,
	})
}
