// Package plugins supervises the engine plugins of the host: one Supervisor per engine launches
// its binary from the plugin directory through go-plugin (engine.NewClient: AutoMTLS, sha256
// check, parent-death signal), health-pings it, restarts it with exponential back-off, and opens a
// circuit after repeated failures. While an engine is not ready, Engine answers an
// EXTERNAL_SERVICE_ERROR and the caller runs the workflow on the in-process node engine.
package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/reelforge/reelforge/internal/backoff"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// State is the health of an engine as /health shows it.
type State string

// States of a Supervisor.
const (
	// StateReady: the plugin runs and answers its health checks.
	StateReady State = "ready"
	// StateDegraded: the plugin is down and being restarted; runs fall back to the node engine.
	StateDegraded State = "degraded"
	// StateDisabled: the circuit is open after repeated failures (a half-open retry comes after
	// Config.CircuitOpenFor), the binary is missing, the handshake refused the plugin, or the
	// supervisor is stopped.
	StateDisabled State = "disabled"
)

// Detailed states (Supervisor.Detail): what an operator needs to know, beyond the three states
// of /health's engines map.
const (
	// DetailReady: the plugin is up and its external tool (when it declares one) answers.
	DetailReady = "ready"
	// DetailUnconfigured: the plugin is up but its tool is not configured (its Health answers
	// VALIDATION_ERROR); runs go to the fallback. State reports it as disabled.
	DetailUnconfigured = "unconfigured"
	// DetailDegraded: the plugin is up but its tool does not answer (runs go to the fallback), or
	// answers but not 2xx at its health route (engine.ToolUnhealthy: runs are still offered to it).
	DetailDegraded = "degraded"
	// DetailRestarting: the plugin is down and being relaunched with back-off.
	DetailRestarting = "restarting"
	// DetailDisabled: see StateDisabled.
	DetailDisabled = "disabled"
)

// Config configures a Supervisor. Name and Dir are required; zero durations take the defaults
// shown.
type Config struct {
	// Name is the engine's name; the binary is Dir/Binary (default Dir/<Name>-plugin).
	Name   string
	Dir    string
	Binary string
	// Env is added to the plugin's environment (the engine's settings, engine.SettingsEnvValue).
	Env []string
	// SHA256 is the binary's hex sha256 from the manifest. Empty: the supervisor computes it from
	// the file when Start runs and pins it, so a binary replaced while the host runs is refused at
	// its next restart. engine.SkipChecksum ("skip") turns the check off: only when configured so.
	SHA256 string
	// Host answers plugin callbacks for calls made with a nil Host (optional).
	Host engine.Host
	// Logger receives the supervisor's logs and the plugin's own log lines. Default: discarded.
	Logger *slog.Logger

	HealthInterval   time.Duration // between health pings; default 3s
	HealthTimeout    time.Duration // for one ping; default 2s
	HealthMisses     int           // consecutive failed pings that count as a failure; default 2
	BackoffMin       time.Duration // first restart delay; default 200ms, doubling
	BackoffMax       time.Duration // default 30s
	FailureThreshold int           // consecutive failures that open the circuit; default 5
	CircuitOpenFor   time.Duration // before a half-open retry; default 1m
	StableAfter      time.Duration // healthy uptime that resets the failure count; default 10s
	StartTimeout     time.Duration // handshake; default 10s
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.HealthInterval, 3*time.Second)
	def(&c.HealthTimeout, 2*time.Second)
	def(&c.BackoffMin, 200*time.Millisecond)
	def(&c.BackoffMax, 30*time.Second)
	def(&c.CircuitOpenFor, time.Minute)
	def(&c.StableAfter, 10*time.Second)
	def(&c.StartTimeout, 10*time.Second)
	if c.HealthMisses <= 0 {
		c.HealthMisses = 2
	}
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = 5
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// exitPoll is how often the supervisor looks whether the plugin process exited.
const exitPoll = 50 * time.Millisecond

// Supervisor keeps one engine plugin running. Its methods are safe for concurrent use.
type Supervisor struct {
	cfg  Config
	orig Config // as given to New, before defaults and the sha256 pinned at Start
	path string
	log  *slog.Logger

	mu         sync.Mutex
	client     *engine.Client
	eng        engine.Engine // client's Engine, calling only what the plugin's Info declares
	info       *engine.Info
	refused    bool  // the handshake refused the plugin: no restart until the binary is replaced
	toolHealth bool  // the plugin declared engine.CapToolHealth: Health checks its tool
	toolErr    error // the last tool check's failure (nil: the tool answers)
	state      State
	restarts   int
	failures   int
	started    bool
	readySince time.Time
	lastErr    error

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Supervisor for cfg; nothing runs before Start.
func New(cfg Config) *Supervisor {
	orig := cfg
	cfg.setDefaults()
	bin := cfg.Binary
	if bin == "" {
		bin = cfg.Name + "-plugin"
	}
	return &Supervisor{
		cfg:   cfg,
		orig:  orig,
		path:  filepath.Join(cfg.Dir, bin),
		log:   cfg.Logger.With("engine", cfg.Name),
		state: StateDisabled,
	}
}

// Start checks the binary (and pins its sha256 when the manifest gives none), launches the plugin
// once, and starts the supervising goroutine, which exits when ctx ends or Stop is called. A
// first launch that fails is not an error: the supervisor keeps retrying (state degraded). Start
// fails, leaving the state disabled, when the binary is missing or unreadable or Start ran before.
func (s *Supervisor) Start(ctx context.Context) error {
	const op = "plugins.Start"
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errcode.E(op, errcode.WorkflowInvalidState, "supervisor already started", nil)
	}
	s.started = true
	s.mu.Unlock()
	var failed error
	if s.cfg.SHA256 == "" {
		sum, err := FileSHA256(s.path)
		if err != nil {
			failed = errcode.E(op, errcode.ExternalService, fmt.Sprintf("engine %s plugin binary unreadable", s.cfg.Name), err)
		}
		s.cfg.SHA256 = sum
	} else if _, err := os.Stat(s.path); err != nil {
		failed = errcode.E(op, errcode.ExternalService, fmt.Sprintf("engine %s plugin binary missing", s.cfg.Name), err)
	}
	if failed != nil {
		s.mu.Lock()
		s.lastErr = failed
		s.mu.Unlock()
		return failed
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.done = make(chan struct{})
	s.mu.Lock()
	s.state = StateDegraded
	s.mu.Unlock()
	s.launch(false)
	go s.loop(ctx)
	return nil
}

// Stop stops supervising and kills the plugin. It returns after the supervising goroutine has
// exited. Safe to call more than once and before Start.
func (s *Supervisor) Stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.mu.Lock()
	c := s.client
	s.client = nil
	s.state = StateDisabled
	s.mu.Unlock()
	if c != nil {
		c.Kill()
	}
}

// Engine returns the live plugin's Engine, or an EXTERNAL_SERVICE_ERROR when the plugin is not
// ready (the caller then falls back to the in-process node engine). A call on the returned
// Engine fails with EXTERNAL_SERVICE_ERROR ("engine plugin unavailable") if the plugin dies during
// it.
func (s *Supervisor) Engine() (engine.Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateReady || s.client == nil {
		return nil, errcode.E("plugins.Engine", errcode.ExternalService,
			fmt.Sprintf("engine %s plugin is %s", s.cfg.Name, s.state), s.lastErr)
	}
	if s.toolErr != nil && !engine.ToolAnswers(s.toolErr) {
		// A tool that answers, if not at its health route, is still offered runs (ToolUnhealthy).
		return nil, errcode.E("plugins.Engine", errcode.ExternalService,
			fmt.Sprintf("engine %s is %s: %s", s.cfg.Name, s.detailLocked(), errMessage(s.toolErr)), s.toolErr)
	}
	return s.eng, nil
}

// Detail returns the engine's detailed state (Detail* constants) and why it is not ready.
func (s *Supervisor) Detail() (state, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.detailLocked()
	switch {
	case d == DetailReady:
		return d, ""
	case s.toolErr != nil && s.state == StateReady:
		return d, errMessage(s.toolErr)
	case s.lastErr != nil:
		return d, errMessage(s.lastErr)
	}
	return d, "engine plugin is " + d
}

func (s *Supervisor) detailLocked() string {
	switch {
	case s.state == StateDisabled:
		return DetailDisabled
	case s.state != StateReady || s.client == nil:
		return DetailRestarting
	}
	return toolState(s.toolErr)
}

// errMessage is err's public message with its cause, for an operator's eyes.
func errMessage(err error) string {
	if e := errcode.As(err); e != nil && e.Err != nil {
		return e.Message() + ": " + e.Err.Error()
	} else if e != nil {
		return e.Message()
	}
	return err.Error()
}

// Reason says why the engine is not ready ("" when it is): the handshake's refusal, the last
// failure of its plugin, why it could not start, or its tool's check.
func (s *Supervisor) Reason() string {
	_, r := s.Detail()
	return r
}

// Info returns what the running plugin said of itself at launch (nil before its first launch).
func (s *Supervisor) Info() *engine.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// Name returns the engine's name.
func (s *Supervisor) Name() string { return s.cfg.Name }

// State returns ready, degraded or disabled: a plugin whose tool is not configured is disabled,
// one whose tool does not answer degraded (runs go to the fallback either way).
func (s *Supervisor) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.detailLocked() {
	case DetailUnconfigured:
		return StateDisabled
	case DetailDegraded:
		return StateDegraded
	}
	return s.state
}

// PID returns the plugin's process id, or 0 when none runs.
func (s *Supervisor) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		return 0
	}
	return s.client.PID()
}

// Restarts returns how many times the plugin was launched again after the first launch.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// launch starts a new plugin process; it reports whether the plugin is up.
func (s *Supervisor) launch(restart bool) bool {
	c, err := engine.NewClient(engine.ClientConfig{
		Name:         "engine." + s.cfg.Name,
		Path:         s.path,
		Env:          s.cfg.Env,
		SHA256:       s.cfg.SHA256,
		Host:         s.cfg.Host,
		Logger:       newHCLog(s.log, ""), // go-plugin's and the plugin's own lines carry engine=<name>
		StartTimeout: s.cfg.StartTimeout,
	})
	var info *engine.Info
	if err == nil {
		info, err = s.handshake(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if restart {
		s.restarts++
	}
	if errors.Is(err, errRefused) {
		s.refused, s.state, s.lastErr = true, StateDisabled, err
		s.log.Error("engine plugin refused: disabled until its binary is replaced and the host restarted", "reason", err.Error())
		return false
	}
	if err != nil {
		s.failures++
		s.lastErr = err
		s.log.Warn("engine plugin did not start", "error", err, "failures", s.failures)
		return false
	}
	s.client, s.state, s.readySince, s.lastErr = c, StateReady, time.Now(), nil
	s.info, s.eng = info, declared(c.Engine(), info)
	s.toolHealth, s.toolErr = slices.Contains(info.Capabilities, engine.CapToolHealth), nil
	if s.toolHealth {
		s.setToolErrLocked(s.checkTool(c))
	}
	s.log.Info("engine plugin started", "pid", c.PID(), "restarts", s.restarts, "version", info.Version, "capabilities", info.Capabilities)
	return true
}

// checkTool asks the plugin's Health, which checks its external tool (engine.CapToolHealth).
func (s *Supervisor) checkTool(c *engine.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HealthTimeout)
	defer cancel()
	return c.Engine().Health(ctx)
}

// setToolErrLocked records a tool check's outcome and logs only a change of the tool's state
// (answers, unconfigured, failing), not every check: the check runs every HealthInterval (3 s by
// default), and the default setup configures no tool for several engines. An engine without a
// tool is a setting, told at INFO; a configured tool that fails is a WARN.
func (s *Supervisor) setToolErrLocked(err error) {
	was, now := toolState(s.toolErr), toolState(err)
	s.toolErr = err
	if was == now {
		return
	}
	switch {
	case now == DetailReady:
		s.log.Info("engine's external tool answers again")
	case now == DetailUnconfigured:
		s.log.Info("engine's external tool is not configured: its workflows run on their fallback", "reason", errMessage(err))
	case engine.ToolAnswers(err):
		s.log.Warn("engine's external tool answers but is not healthy: its runs are still offered to it", "error", errMessage(err))
	default:
		s.log.Warn("engine's external tool check failed: its workflows run on their fallback", "error", errMessage(err))
	}
}

// toolState is the Detail* a tool check's outcome gives a running plugin.
func toolState(err error) string {
	switch {
	case err == nil:
		return DetailReady
	case errcode.Of(err) == errcode.Validation:
		return DetailUnconfigured
	}
	return DetailDegraded
}

// errRefused marks a plugin the handshake refused.
var errRefused = errors.New("refused")

// handshake asks a freshly launched plugin's Info and refuses (errRefused, the plugin killed) one
// that reports another engine name or another contract version; a plugin that does not answer is
// killed and counts as a failure to start.
func (s *Supervisor) handshake(c *engine.Client) (*engine.Info, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StartTimeout)
	defer cancel()
	info, err := c.Engine().Info(ctx)
	switch {
	case err != nil:
		c.Kill()
		return nil, fmt.Errorf("plugins: engine %s plugin did not answer Info: %w", s.cfg.Name, err)
	case info.Name != s.cfg.Name:
		c.Kill()
		return nil, fmt.Errorf("%w: %s reports engine %q, want %q", errRefused, s.path, info.Name, s.cfg.Name)
	case info.APIVersion != engine.APIVersion:
		c.Kill()
		return nil, fmt.Errorf("%w: %s speaks engine contract version %d, this host speaks %d (rebuild it with this host's sdk)",
			errRefused, s.path, info.APIVersion, engine.APIVersion)
	}
	return info, nil
}

// down records a failure of the running plugin and kills it.
func (s *Supervisor) down(reason error) {
	s.mu.Lock()
	c := s.client
	s.client = nil
	if !s.readySince.IsZero() && time.Since(s.readySince) >= s.cfg.StableAfter {
		s.failures = 0
	}
	s.failures++
	s.state, s.lastErr = StateDegraded, reason
	s.log.Warn("engine plugin down", "reason", reason, "failures", s.failures)
	s.mu.Unlock()
	if c != nil {
		c.Kill()
	}
}

func (s *Supervisor) backoff(failures int) time.Duration {
	d := s.cfg.BackoffMin
	for i := 1; i < failures && d < s.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, s.cfg.BackoffMax)
}

// loop supervises until ctx ends; it closes s.done on exit.
func (s *Supervisor) loop(ctx context.Context) {
	defer close(s.done)
	poll := time.NewTicker(exitPoll)
	defer poll.Stop()
	nextPing := time.Now().Add(s.cfg.HealthInterval)
	misses := 0
	for {
		s.mu.Lock()
		c, failures := s.client, s.failures
		s.mu.Unlock()

		s.mu.Lock()
		refused := s.refused
		s.mu.Unlock()
		if refused { // a wrong binary stays wrong: nothing to restart
			<-ctx.Done()
			return
		}
		if c == nil { // down: wait, then relaunch (half-open after the circuit opened)
			wait := s.backoff(failures)
			if failures >= s.cfg.FailureThreshold {
				wait = s.cfg.CircuitOpenFor
				s.mu.Lock()
				s.state = StateDisabled
				s.mu.Unlock()
				s.log.Error("engine plugin circuit open", "failures", failures, "retry_in", wait)
			}
			if !backoff.Sleep(ctx, wait) {
				return
			}
			if s.launch(true) {
				misses, nextPing = 0, time.Now().Add(s.cfg.HealthInterval)
			}
			continue
		}

		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		if c.Exited() {
			s.down(fmt.Errorf("plugins: engine %s plugin exited", s.cfg.Name))
			continue
		}
		if time.Now().Before(nextPing) {
			continue
		}
		nextPing = time.Now().Add(s.cfg.HealthInterval)
		s.mu.Lock()
		toolHealth := s.toolHealth
		s.mu.Unlock()
		pctx, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
		var err error
		if toolHealth {
			// Its Health checks its tool, not itself: Info says whether the plugin answers.
			_, err = c.Engine().Info(pctx)
		} else {
			err = c.Engine().Health(pctx)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			misses = 0
			if toolHealth {
				terr := s.checkTool(c)
				s.mu.Lock()
				s.setToolErrLocked(terr)
				s.mu.Unlock()
			}
			continue
		}
		misses++
		s.log.Warn("engine plugin health check failed", "error", err, "misses", misses)
		if misses >= s.cfg.HealthMisses {
			misses = 0
			s.down(fmt.Errorf("plugins: engine %s plugin stopped answering: %w", s.cfg.Name, err))
		}
	}
}

// FileSHA256 is the hex SHA-256 of the file at path: the sum a plugin binary is pinned to
// (go-plugin's SecureConfig checks it at every start).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("plugins: hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// capped is a plugin's Engine that calls Callback and Cancel only when the plugin's Info declared
// them (engine.CapCallbacks, engine.CapCancel): an engine built on engine.Base need not answer them.
type capped struct {
	engine.Engine
	callbacks, cancel bool
}

// declared wraps e by the capabilities info declares.
func declared(e engine.Engine, info *engine.Info) engine.Engine {
	c := capped{Engine: e}
	for _, cp := range info.Capabilities {
		switch cp {
		case engine.CapCallbacks:
			c.callbacks = true
		case engine.CapCancel:
			c.cancel = true
		}
	}
	if c.callbacks && c.cancel {
		return e
	}
	return c
}

func (c capped) Callback(ctx context.Context, h engine.Host, req *engine.CallbackRequest) (*engine.RunResult, error) {
	if !c.callbacks {
		return nil, errcode.New(errcode.WorkflowInvalidState, "the engine declares no callbacks")
	}
	return c.Engine.Callback(ctx, h, req)
}

func (c capped) Cancel(ctx context.Context, req *engine.CancelRequest) error {
	if !c.cancel {
		return nil // the run's Run call is cancelled through its context
	}
	return c.Engine.Cancel(ctx, req)
}
