package engine

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// ServeOption configures Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	debug  bool
	logger hclog.Logger
}

// WithDebug runs the plugin standalone instead of under a host: it serves on a local socket and
// prints, on stdout, a REELFORGE_REATTACH line holding the go-plugin ReattachConfig as JSON, so a
// host (ClientConfig.Reattach) can attach to a plugin started by hand, for example under a
// debugger. Serve then returns when the connection ends.
func WithDebug() ServeOption { return func(c *serveConfig) { c.debug = true } }

// WithLogger replaces the default logger (hclog, JSON, to stderr, level from REELFORGE_LOG_LEVEL,
// default info). Logs must go to stderr: go-plugin forwards stderr lines into the host's log.
func WithLogger(l hclog.Logger) ServeOption { return func(c *serveConfig) { c.logger = l } }

// Serve serves the engine built by factory to the host that launched this process. Call it from
// the plugin's main and nothing else: it speaks go-plugin's handshake on stdout (nothing else may
// be written to stdout before it), serves gRPC only, logs JSON to stderr, and returns only in debug
// mode. factory is called once.
func Serve(factory func() Engine, opts ...ServeOption) {
	cfg := serveConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		level := hclog.LevelFromString(os.Getenv("REELFORGE_LOG_LEVEL"))
		if level == hclog.NoLevel {
			level = hclog.Info
		}
		cfg.logger = hclog.New(&hclog.LoggerOptions{Output: os.Stderr, JSONFormat: true, Level: level})
	}
	sc := &plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: PluginSets(&GRPCPlugin{Impl: factory()}),
		GRPCServer:       newGRPCServer,
		Logger:           cfg.logger,
	}
	if cfg.debug {
		ch := make(chan *plugin.ReattachConfig, 1)
		closeCh := make(chan struct{})
		sc.Test = &plugin.ServeTestConfig{ReattachConfigCh: ch, CloseCh: closeCh}
		go printReattach(ch)
		plugin.Serve(sc)
		<-closeCh
		return
	}
	plugin.Serve(sc)
}

// ServeConfigured is Serve for an engine built from the settings of its engine entry (Settings)
// and a logger that writes JSON to stderr: go-plugin forwards the plugin's stderr into the host's
// log, and stdout belongs to the handshake. build is called once.
func ServeConfigured(build func(settings map[string]string, log *slog.Logger) Engine, opts ...ServeOption) {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	settings := Settings()
	Serve(func() Engine { return build(settings, log) }, opts...)
}

// reattachJSON is the printed form of a ReattachConfig (net.Addr does not marshal by itself).
type reattachJSON struct {
	Protocol        string `json:"protocol"`
	ProtocolVersion int    `json:"protocol_version"`
	Network         string `json:"network"`
	Addr            string `json:"addr"`
	Pid             int    `json:"pid"`
}

func printReattach(ch <-chan *plugin.ReattachConfig) {
	rc := <-ch
	b, err := json.Marshal(reattachJSON{Protocol: string(rc.Protocol), ProtocolVersion: rc.ProtocolVersion,
		Network: rc.Addr.Network(), Addr: rc.Addr.String(), Pid: rc.Pid})
	if err != nil {
		fmt.Fprintf(os.Stderr, "engine: print reattach config: %v\n", err)
		return
	}
	fmt.Printf("REELFORGE_REATTACH='%s'\n", b)
}

// ParseReattach parses the JSON printed by a plugin started WithDebug into a ReattachConfig for
// ClientConfig.Reattach.
func ParseReattach(s string) (*plugin.ReattachConfig, error) {
	var r reattachJSON
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("engine: parse reattach config: %w", err)
	}
	var addr interface {
		Network() string
		String() string
	}
	switch r.Network {
	case "unix":
		addr = &unixAddr{r.Addr}
	default:
		addr = &tcpAddr{r.Addr}
	}
	return &plugin.ReattachConfig{Protocol: plugin.Protocol(r.Protocol), ProtocolVersion: r.ProtocolVersion,
		Addr: addr, Pid: r.Pid, Test: true}, nil
}

type unixAddr struct{ s string }

func (a *unixAddr) Network() string { return "unix" }
func (a *unixAddr) String() string  { return a.s }

type tcpAddr struct{ s string }

func (a *tcpAddr) Network() string { return "tcp" }
func (a *tcpAddr) String() string  { return a.s }
