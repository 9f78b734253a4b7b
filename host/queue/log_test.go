package queue

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// River's repeated warnings are logged at their 1st, 2nd, 4th, 8th... occurrence with the count;
// its INFO lines not at all.
func TestRiverLogRationed(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newRiverLog(slog.NewTextHandler(&buf, nil))).With("component", "river")
	for range 60 {
		log.Warn("producer: Error fetching jobs", "err", "connection refused")
		log.Info("producer: Producer job counts")
	}
	log.Warn("notifier.Notifier: Error connecting listener")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 { // 1 2 4 8 16 32, then the other message
		t.Fatalf("%d lines, want 7:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[5], "occurrences=32") || !strings.Contains(lines[6], "Error connecting listener") {
		t.Errorf("lines:\n%s", buf.String())
	}
}
