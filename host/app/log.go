package app

import (
	"io"
	"log/slog"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/reelforge/reelforge/host/config"
)

// NewLogger returns the host's structured logger: JSON unless LOG_FORMAT=text or on a terminal.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	format := cfg.LogFormat
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			format = "text"
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}
