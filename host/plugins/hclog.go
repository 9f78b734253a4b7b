package plugins

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogHCLog adapts an slog.Logger to hclog.Logger, so go-plugin's logs and the plugins' own log
// lines (which go-plugin reads from their stderr) land in the host's log stream, with the logger
// name ("engine.echo") as attribute "plugin".
type slogHCLog struct {
	l    *slog.Logger
	name string
	args []any
}

var _ hclog.Logger = (*slogHCLog)(nil)

func newHCLog(l *slog.Logger, name string) *slogHCLog { return &slogHCLog{l: l, name: name} }

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *slogHCLog) Log(level hclog.Level, msg string, args ...any) {
	lvl := slogLevel(level)
	ctx := context.Background()
	if !h.l.Enabled(ctx, lvl) {
		return
	}
	all := make([]any, 0, len(h.args)+len(args)+2)
	all = append(all, "plugin", h.name)
	all = append(all, h.args...)
	all = append(all, args...)
	// "plugin" is this logger's name; go-plugin logs the binary's path under a "plugin" key of its
	// own ("plugin process exited"), which would make a second "plugin" key in the line.
	for i := 2; i < len(all)-1; i += 2 {
		if k, ok := all[i].(string); ok && k == "plugin" {
			all[i] = "path"
		}
	}
	h.l.Log(ctx, lvl, msg, all...)
}

func (h *slogHCLog) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *slogHCLog) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *slogHCLog) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *slogHCLog) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *slogHCLog) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *slogHCLog) enabled(l slog.Level) bool { return h.l.Enabled(context.Background(), l) }
func (h *slogHCLog) IsTrace() bool             { return h.enabled(slog.LevelDebug) }
func (h *slogHCLog) IsDebug() bool             { return h.enabled(slog.LevelDebug) }
func (h *slogHCLog) IsInfo() bool              { return h.enabled(slog.LevelInfo) }
func (h *slogHCLog) IsWarn() bool              { return h.enabled(slog.LevelWarn) }
func (h *slogHCLog) IsError() bool             { return h.enabled(slog.LevelError) }
func (h *slogHCLog) ImpliedArgs() []any        { return h.args }

func (h *slogHCLog) With(args ...any) hclog.Logger {
	return &slogHCLog{l: h.l, name: h.name, args: append(append([]any(nil), h.args...), args...)}
}

func (h *slogHCLog) Name() string { return h.name }

func (h *slogHCLog) Named(name string) hclog.Logger {
	n := name
	if h.name != "" {
		n = h.name + "." + name
	}
	return &slogHCLog{l: h.l, name: n, args: h.args}
}

func (h *slogHCLog) ResetNamed(name string) hclog.Logger {
	return &slogHCLog{l: h.l, name: name, args: h.args}
}

// SetLevel is a no-op: the slog handler decides.
func (h *slogHCLog) SetLevel(hclog.Level) {}

func (h *slogHCLog) GetLevel() hclog.Level {
	switch {
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (h *slogHCLog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *slogHCLog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(h.writeLine)
}

func (h *slogHCLog) writeLine(p []byte) (int, error) {
	h.Info(string(trimNewline(p)))
	return len(p), nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
