package queue

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// River's warnings are one stream, logged at its 1st, 2nd, 4th, 8th... warning with the count,
// whatever the message; its INFO lines not at all.
func TestRiverLogRationed(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newRiverLog(slog.NewTextHandler(&buf, nil))).With("component", "river")
	for range 60 {
		log.Warn("producer: Error fetching jobs", "err", "connection refused")
		log.Info("producer: Producer job counts")
	}
	for range 4 {
		log.Warn("notifier.Notifier: Error connecting listener")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 { // 1 2 4 8 16 32 of the first message, then the 64th: the other
		t.Fatalf("%d lines, want 7:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[5], "occurrences=32") || !strings.Contains(lines[6], "Error connecting listener") ||
		!strings.Contains(lines[6], "occurrences=64") {
		t.Errorf("lines:\n%s", buf.String())
	}
}
