package scheduler_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// BenchmarkTick10kProjects measures one tick over 10,000 projects with due strategy tasks on
// SQLite (target: under 200 ms). Run it with
//
//	go test -run '^$' -bench Tick10k -benchtime 10x ./host/scheduler/
func BenchmarkTick10kProjects(b *testing.B) {
	ctx := context.Background()
	clock := &fakeClock{now: day0}
	st, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{Clock: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	u := storetest.NewUser(&testing.T{}, st, "")
	prios := []string{store.PriorityHigh, store.PriorityMedium, store.PriorityLow}
	start := time.Now()
	err = st.InTx(ctx, func(tx store.Driver) error {
		for i := range 10_000 {
			p := &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: fmt.Sprintf("p%d", i)}
			if err := tx.CreateProject(ctx, p); err != nil {
				return err
			}
			tasks := []store.StrategyTask{
				{TaskID: "a", WorkflowID: "video", Summary: "a", DueDate: "2026-03-0" + fmt.Sprint(1+i%9), Priority: prios[i%3]},
				{TaskID: "b", WorkflowID: "music", Summary: "b", DueDate: "2026-03-10", Priority: prios[(i+1)%3]},
				{TaskID: "c", WorkflowID: "video", Summary: "c", DueDate: "2026-04-10", Priority: store.PriorityHigh},
			}
			if err := tx.ReplaceStrategyTasks(ctx, p.ID, tasks); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded 10,000 projects, 30,000 strategy tasks in %v", time.Since(start))
	s := scheduler.New(st, scheduler.Options{Runner: &fakeRunner{}, Clock: clock.Now})
	b.ResetTimer()
	for b.Loop() {
		rep, err := s.TickNow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Started) != scheduler.MaxProjectsPerTick*scheduler.MaxRunsPerProject {
			b.Fatalf("tick started %d runs, want %d", len(rep.Started), scheduler.MaxProjectsPerTick*scheduler.MaxRunsPerProject)
		}
	}
}
