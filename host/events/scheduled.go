package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/internal/backoff"
)

// ExpiryThresholds are the days before a subscription ends at which subscription.expiring is
// emitted (SPEC.md: 7, 3 and 1 days remain).
var ExpiryThresholds = []int{1, 3, 7}

// ScheduledStore is what the scheduled events need of the store.
type ScheduledStore interface {
	store.Outbox
}

// ScheduledOptions configure the scheduled events. Zero values take the defaults noted.
type ScheduledOptions struct {
	Every       time.Duration    // how often to look (1 min)
	SummaryHour int              // local hour of user.daily.summary (9)
	Location    *time.Location   // the zone of SummaryHour (UTC)
	Now         func() time.Time // injected clock (time.Now)
	// Leader, when set, says whether this host should emit now (a leader lock); nil: always.
	// Deterministic event ids make several hosts emitting harmless anyway: the outbox keeps one.
	Leader func(ctx context.Context) bool
	Log    *slog.Logger
}

// Scheduled emits the time-driven events: subscription.expiring when 7, 3 and 1 days remain
// (once per threshold and subscription end) and user.daily.summary at SummaryHour every day.
// Each event id is derived from what it is about, so a repeat (another host, a restart) is
// refused by the outbox instead of sent twice.
type Scheduled struct {
	st  ScheduledStore
	opt ScheduledOptions

	mu          sync.Mutex
	summaryDone string // date of the last summary run by this process
	cancel      context.CancelFunc
	done        chan struct{}
}

// NewScheduled returns the scheduled events; Start runs them.
func NewScheduled(st ScheduledStore, opt ScheduledOptions) *Scheduled {
	if opt.Every <= 0 {
		opt.Every = time.Minute
	}
	if opt.SummaryHour == 0 {
		opt.SummaryHour = 9
	}
	if opt.Location == nil {
		opt.Location = time.UTC
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	return &Scheduled{st: st, opt: opt}
}

// Start ticks every opt.Every until ctx ends or Stop.
func (s *Scheduled) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return errors.New("events: scheduled events already started")
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		t := time.NewTicker(s.opt.Every)
		defer t.Stop()
		retry := backoff.Retry{Log: s.opt.Log, What: "events: scheduled events"}
		for {
			if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
				if !backoff.Sleep(ctx, retry.Failed(err)) {
					return
				}
				continue
			}
			retry.Succeeded()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}(s.done)
	return nil
}

// Stop ends the ticks and waits for the one in flight.
func (s *Scheduled) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Tick emits what is due at the clock's now.
func (s *Scheduled) Tick(ctx context.Context) error {
	if s.opt.Leader != nil && !s.opt.Leader(ctx) {
		return nil
	}
	now := s.opt.Now()
	_, err1 := s.expiring(ctx, now)
	_, err2 := s.summaries(ctx, now)
	return errors.Join(err1, err2)
}

// emitOnce stores e; an id stored already (emitted before) is not an error.
func (s *Scheduled) emitOnce(ctx context.Context, e Event) (bool, error) {
	err := Emit(ctx, s.st, e)
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

func (s *Scheduled) expiring(ctx context.Context, now time.Time) (int, error) {
	maxDays := ExpiryThresholds[len(ExpiryThresholds)-1]
	n, after := 0, ""
	for {
		due, err := s.st.ListSubscriptionsDue(ctx, &store.ListSubscriptionsParams{From: now,
			To: now.Add(time.Duration(maxDays) * 24 * time.Hour), AfterID: after, Limit: 500})
		if err != nil {
			return n, err
		}
		for _, d := range due {
			after = d.UserID
			left := d.ExpiresAt.Sub(now)
			days := 0
			for _, t := range ExpiryThresholds { // the smallest threshold not yet passed
				if left <= time.Duration(t)*24*time.Hour {
					days = t
					break
				}
			}
			if days == 0 {
				continue
			}
			end := d.ExpiresAt.UTC().Format(time.RFC3339)
			id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("reelforge:"+SubscriptionExpiring+":"+d.UserID+":"+end+":"+strconv.Itoa(days))).String()
			ok, err := s.emitOnce(ctx, Event{ID: id, Name: SubscriptionExpiring, UserID: d.UserID,
				Data: map[string]any{"userId": d.UserID, "daysRemaining": days, "expiresAt": end}})
			if err != nil {
				return n, fmt.Errorf("events: emit %s: %w", SubscriptionExpiring, err)
			}
			if ok {
				n++
			}
		}
		if len(due) < 500 {
			return n, nil
		}
	}
}

// summaries emits, once the day's SummaryHour has come, one user.daily.summary per user with
// activity in the 24 hours before it (users with none get no summary).
func (s *Scheduled) summaries(ctx context.Context, now time.Time) (int, error) {
	local := now.In(s.opt.Location)
	at := time.Date(local.Year(), local.Month(), local.Day(), s.opt.SummaryHour, 0, 0, 0, s.opt.Location)
	if local.Before(at) {
		return 0, nil
	}
	day := at.Format(time.DateOnly)
	s.mu.Lock()
	doneAlready := s.summaryDone == day
	s.mu.Unlock()
	if doneAlready {
		return 0, nil
	}
	since := at.Add(-24 * time.Hour)
	n, after := 0, ""
	for {
		acts, err := s.st.ListUserActivity(ctx, &store.ListActivityParams{Since: since, Until: at, AfterID: after, Limit: 500})
		if err != nil {
			return n, err
		}
		for _, a := range acts {
			after = a.UserID
			if a.ProjectsCreated+a.TasksCreated+a.TasksCompleted+a.RunsStarted+a.AssetsUploaded == 0 {
				continue
			}
			id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("reelforge:"+UserDailySummary+":"+a.UserID+":"+day)).String()
			ok, err := s.emitOnce(ctx, Event{ID: id, Name: UserDailySummary, UserID: a.UserID, Data: map[string]any{
				"userId": a.UserID, "date": day, "periodStart": since.UTC().Format(time.RFC3339), "periodEnd": at.UTC().Format(time.RFC3339),
				"projectsCreated": a.ProjectsCreated, "tasksCreated": a.TasksCreated, "tasksCompleted": a.TasksCompleted,
				"runsStarted": a.RunsStarted, "assetsUploaded": a.AssetsUploaded}})
			if err != nil {
				return n, fmt.Errorf("events: emit %s: %w", UserDailySummary, err)
			}
			if ok {
				n++
			}
		}
		if len(acts) < 500 {
			break
		}
	}
	s.mu.Lock()
	s.summaryDone = day
	s.mu.Unlock()
	return n, nil
}
