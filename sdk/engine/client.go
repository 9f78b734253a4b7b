package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/reelforge/reelforge/internal/proc"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// SkipChecksum is the ClientConfig.SHA256 value that turns the binary's sha256 check off. Only use
// it when configuration says so explicitly (development builds).
const SkipChecksum = "skip"

// ClientConfig configures NewClient. Path and SHA256 are required (unless Reattach is set).
type ClientConfig struct {
	// Name is the engine's name, used to name the plugin's log lines.
	Name string
	// Path is the plugin binary; Args and Env are added to its command line and environment (the
	// host's environment is inherited).
	Path string
	Args []string
	Env  []string
	// SHA256 is the hex sha256 the binary must have, checked by go-plugin before it starts the
	// process; SkipChecksum turns the check off.
	SHA256 string
	// Host answers the plugin's callbacks for Run and Callback calls made with a nil Host.
	// Optional: calls that pass their own Host use it.
	Host Host
	// Logger receives the host-side logs of go-plugin and, named after Name, the plugin's own log
	// lines (read from its stderr). Defaults to a null logger.
	Logger hclog.Logger
	// StartTimeout bounds the handshake; default 10s.
	StartTimeout time.Duration
	// Reattach attaches to a plugin started by hand WithDebug instead of launching Path.
	Reattach *plugin.ReattachConfig
}

// Client is a running engine plugin seen from the host. Its methods are safe for concurrent use.
// A Client whose process exited cannot be restarted: make a new one (host/plugins does).
type Client struct {
	pc     *plugin.Client
	cmd    *exec.Cmd
	engine Engine
}

// NewClient launches the plugin binary (with AutoMTLS, the sha256 check, the shared Handshake,
// and on Linux the parent-death signal SIGKILL so the plugin never outlives the host), completes
// the handshake, and connects the Host callback service once for the connection. Errors carry
// errcode.ExternalService.
func NewClient(cfg ClientConfig) (*Client, error) {
	const op = "engine.NewClient"
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if cfg.Name != "" {
		logger = logger.Named(cfg.Name)
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	pcfg := &plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: PluginSets(&GRPCPlugin{Host: cfg.Host}),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Managed:          false,
		Logger:           logger,
		StartTimeout:     timeout,
	}
	var cmd *exec.Cmd
	if cfg.Reattach != nil {
		pcfg.Reattach = cfg.Reattach
	} else {
		if cfg.Path == "" {
			return nil, errcode.E(op, errcode.Validation, "plugin path is required", nil)
		}
		cmd = exec.Command(cfg.Path, cfg.Args...)
		// A plugin runs on one scheduler thread (GOMAXPROCS=1) unless the host's environment says
		// otherwise: engines wait on the host, their external tools or child processes (ffmpeg), and
		// with one thread a call handed from gRPC's reader to its worker and writer goroutines
		// wakes no other thread. Target: make bench's plugin-routed throughput ≥ 50% of in-process
		// (43-48% on the idle 2-core machine with the Go default, 48-56% with one thread) and the
		// round trip p50 ≤ 100 µs (149-158 µs with the default, 75-114 µs with one thread).
		cmd.Env = append(cmd.Env, "GOMAXPROCS=1")
		cmd.Env = append(cmd.Env, cfg.Env...)
		// A plugin never outlives its host, and the host stops its plugins in order on a Ctrl-C
		// to its group: callers must not start plugins from a goroutine locked to its OS thread.
		proc.DieWithParent(cmd)
		switch cfg.SHA256 {
		case SkipChecksum:
		case "":
			return nil, errcode.E(op, errcode.Validation, "plugin sha256 is required (or \"skip\")", nil)
		default:
			sum, err := hex.DecodeString(cfg.SHA256)
			if err != nil || len(sum) != sha256.Size {
				return nil, errcode.E(op, errcode.Validation, "plugin sha256 must be 64 hex digits", err)
			}
			pcfg.SecureConfig = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
		}
		pcfg.Cmd = cmd
	}
	pc := plugin.NewClient(pcfg)
	rpc, err := pc.Client()
	if err != nil {
		pc.Kill()
		return nil, errcode.E(op, errcode.ExternalService, "engine plugin did not start", fmt.Errorf("start %s: %w", cfg.Path, err))
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		pc.Kill()
		return nil, errcode.E(op, errcode.ExternalService, "engine plugin did not start", fmt.Errorf("connect %s: %w", cfg.Path, err))
	}
	return &Client{pc: pc, cmd: cmd, engine: raw.(Engine)}, nil
}

// Engine returns the Engine that forwards every call to the plugin. After the process exits its
// calls fail with errcode.ExternalService ("engine plugin unavailable").
func (c *Client) Engine() Engine { return c.engine }

// PID returns the plugin's process id (0 when attached WithDebug and unknown).
func (c *Client) PID() int {
	if c.cmd != nil && c.cmd.Process != nil {
		return c.cmd.Process.Pid
	}
	if rc := c.pc.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Exited reports whether the plugin process has exited.
func (c *Client) Exited() bool { return c.pc.Exited() }

// Kill ends the plugin: it asks it to exit, waits up to 2 s, then kills it. Safe to call twice.
func (c *Client) Kill() { c.pc.Kill() }
