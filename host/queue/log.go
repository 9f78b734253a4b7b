package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// riverLog is River's log: its warnings and errors only (at INFO it logs its job counts every five
// seconds), rationed as internal/backoff rations the host's loops (issue 38). With the database
// down River repeats the same few messages every second (PostgreSQL killed for 60 s: 96 lines,
// 57 of them "producer: Error fetching jobs"). Its warnings are one stream, whatever their
// message, since they have one cause (the database) which the host's own loops name already:
// the stream is logged at its 1st, 2nd, 4th, 8th... warning with the count, and at least every
// five minutes while it lasts. Counted per message, a full disk still wrote 24 lines a minute
// of River's, six messages each at its 1st, 2nd, 4th and 8th.
type riverLog struct {
	slog.Handler
	seen *seen
}

// seen counts River's warnings.
type seen struct {
	mu sync.Mutex
	occurrences
}

type occurrences struct {
	n            int
	last, logged time.Time
}

// quiet is how long River must be silent for the count to start again, and the longest silence
// of warnings that keep coming.
const quiet = 5 * time.Minute

func newRiverLog(h slog.Handler) riverLog {
	return riverLog{Handler: h, seen: &seen{}}
}

func (r riverLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && r.Handler.Enabled(ctx, l)
}

func (r riverLog) Handle(ctx context.Context, rec slog.Record) error {
	now := time.Now()
	r.seen.mu.Lock()
	o := &r.seen.occurrences
	if now.Sub(o.last) >= quiet {
		*o = occurrences{}
	}
	o.n++
	o.last = now
	log := o.n&(o.n-1) == 0 || now.Sub(o.logged) >= quiet
	if log {
		o.logged = now
	}
	n := o.n
	r.seen.mu.Unlock()
	if !log {
		return nil
	}
	if n > 1 {
		rec = rec.Clone()
		rec.AddAttrs(slog.Int("occurrences", n))
	}
	return r.Handler.Handle(ctx, rec)
}

func (r riverLog) WithAttrs(a []slog.Attr) slog.Handler {
	return riverLog{Handler: r.Handler.WithAttrs(a), seen: r.seen}
}

func (r riverLog) WithGroup(name string) slog.Handler {
	return riverLog{Handler: r.Handler.WithGroup(name), seen: r.seen}
}
