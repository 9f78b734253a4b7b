package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/launch"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
)

// nopRunner starts nothing; it only hands out run ids.
type nopRunner struct{}

func (nopRunner) Start(context.Context, launch.Params) (string, error) { return uuid.NewString(), nil }
func (nopRunner) Check(context.Context, string, map[string]any) error  { return nil }
func (nopRunner) Cancel(context.Context, string) error                 { return nil }

// benchScheduler times one scheduler tick over 10,000 projects with due strategy tasks on SQLite
// (target: under 200 ms).
func benchScheduler(ctx context.Context, _ *options) error {
	const projects, ticks = 10_000, 10
	dir, err := os.MkdirTemp("", "reelforge-bench-sched")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "bench.db"), sqlitestore.Options{Clock: func() time.Time { return now }})
	if err != nil {
		return err
	}
	defer st.Close()
	u := &store.User{ID: uuid.NewString(), Email: "bench@example.com", Username: "bench", PasswordHash: "x", Role: store.RoleUser}
	if err := st.CreateUser(ctx, u); err != nil {
		return err
	}
	prios := []string{store.PriorityHigh, store.PriorityMedium, store.PriorityLow}
	type seeder interface {
		store.Transactor
		store.Projects
		store.Scheduling
	}
	err = store.InTx[seeder](ctx, st, func(tx seeder) error {
		for i := range projects {
			p := &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: fmt.Sprintf("p%d", i)}
			if err := tx.CreateProject(ctx, p); err != nil {
				return err
			}
			if err := tx.ReplaceStrategyTasks(ctx, p.ID, []store.StrategyTask{
				{TaskID: "a", WorkflowID: "video", DueDate: fmt.Sprintf("2026-03-0%d", 1+i%9), Priority: prios[i%3]},
				{TaskID: "b", WorkflowID: "music", DueDate: "2026-03-10", Priority: prios[(i+1)%3]},
				{TaskID: "c", WorkflowID: "video", DueDate: "2026-04-10", Priority: store.PriorityHigh},
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s := scheduler.New(st, scheduler.Options{Runner: nopRunner{}, Clock: func() time.Time { return now }})
	var took []time.Duration
	runs := 0
	for range ticks {
		start := time.Now()
		rep, err := s.TickNow(ctx)
		if err != nil {
			return err
		}
		took = append(took, time.Since(start))
		runs += len(rep.Started)
	}
	slices.Sort(took)
	fmt.Printf("## Scheduler: one tick over %d projects with due strategy tasks (SQLite)\n\n", projects)
	fmt.Println("| ticks | runs started | p50 ms | max ms |")
	fmt.Println("|---:|---:|---:|---:|")
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("| %d | %d | %.1f | %.1f |\n\n", ticks, runs, ms(took[len(took)/2]), ms(took[len(took)-1]))
	return nil
}
