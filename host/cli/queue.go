package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/queue"
)

// queueList prints the durable queue's jobs by state, then its most recent jobs (filtered by state
// and kind): what an operator looks at when background work seems stuck. It reads the database
// only; it works no job.
func (e *env) queueList(ctx context.Context, args []string) error {
	fs := e.flags("queue")
	state := fs.String("state", "", "only jobs in this state (available, running, retryable, completed, discarded, ...)")
	kind := fs.String("kind", "", "only jobs of this kind (ingest_recovery, ...)")
	limit := fs.Int("limit", 20, "list at most this many jobs")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
	}
	if *state != "" && !knownState(*state) {
		return fmt.Errorf("%w: queue: unknown state %q (one of %s)", errUsage, *state, stateNames())
	}
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	defer st.Close()
	q, err := queue.New(queue.Params{Store: st, Log: e.log})
	if err != nil {
		return err
	}
	counts, err := q.Counts(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, s := range queue.States {
		fmt.Fprintf(w, "%s\t%d\n", s, counts[string(s)])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	p := queue.ListParams{Limit: *limit}
	if *state != "" {
		p.States = []rivertype.JobState{rivertype.JobState(*state)}
	}
	if *kind != "" {
		p.Kinds = []string{*kind}
	}
	jobs, err := q.List(ctx, p)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(w, "ID\tKIND\tSTATE\tATTEMPT\tCREATED\tLAST ERROR")
	for _, j := range jobs {
		last := ""
		if n := len(j.Errors); n > 0 {
			last = strings.ReplaceAll(j.Errors[n-1].Error, "\n", " ")
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Kind, j.State, j.Attempt, j.MaxAttempts,
			j.CreatedAt.UTC().Format(time.RFC3339), last)
	}
	return w.Flush()
}

func knownState(s string) bool {
	for _, k := range queue.States {
		if string(k) == s {
			return true
		}
	}
	return false
}

func stateNames() string {
	names := make([]string, len(queue.States))
	for i, s := range queue.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
