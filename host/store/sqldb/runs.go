package sqldb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/engine"
)

const runCols = `run_id, workflow_id, user_id, project_id, status, progress, current_step, inputs, outputs,
	user_context, project_context, trigger, triggered_by, engine, degraded, error, awaiting, resume_input,
	attempt, claimed_by, lease_until, created_at, updated_at, started_at, completed_at, recoveries`

func scanRun(r Row) (*store.Run, error) {
	var x store.Run
	var in, out, uc, pc, er, aw, ri json.RawMessage
	if err := r.Scan(&x.ID, &x.WorkflowID, &x.UserID, &x.ProjectID, &x.Status, &x.Progress, &x.CurrentStep,
		JSON(&in), JSON(&out), JSON(&uc), JSON(&pc), &x.Trigger, &x.TriggeredBy, &x.Engine, &x.Degraded,
		JSON(&er), JSON(&aw), JSON(&ri), &x.Attempt, &x.ClaimedBy, NullTime(&x.LeaseUntil),
		Time(&x.CreatedAt), Time(&x.UpdatedAt), NullTime(&x.StartedAt), NullTime(&x.CompletedAt), &x.Recoveries); err != nil {
		return nil, err
	}
	x.Inputs, x.Outputs, x.UserContext, x.ProjectContext, x.Error, x.Awaiting, x.ResumeInput = in, out, uc, pc, er, aw, ri
	return &x, nil
}

// CreateRun implements store.Runs.
func (db *DB) CreateRun(ctx context.Context, r *store.Run) error {
	now := db.Now()
	r.CreatedAt, r.UpdatedAt = now, now
	if r.Status == "" {
		r.Status = store.RunPending
	}
	if r.Trigger == "" {
		r.Trigger = "api"
	}
	if r.Engine == "" {
		r.Engine = "node"
	}
	_, err := db.Exec(ctx, `INSERT INTO runs (run_id, workflow_id, user_id, project_id, status, progress, current_step,
		inputs, user_context, project_context, trigger, triggered_by, engine, attempt, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 0, '', $6, $7, $8, $9, $10, $11, 1, $12, $13)`,
		r.ID, r.WorkflowID, r.UserID, r.ProjectID, r.Status, JOr(r.Inputs, "{}"), JOr(r.UserContext, "{}"),
		J(r.ProjectContext), r.Trigger, r.TriggeredBy, r.Engine, db.T(now), db.T(now))
	r.Attempt = 1
	return err
}

// GetRun implements store.Runs.
func (db *DB) GetRun(ctx context.Context, id string) (*store.Run, error) {
	return scanRun(db.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE run_id = $1`, id))
}

// ListRuns implements store.Runs.
func (db *DB) ListRuns(ctx context.Context, p store.ListRunsParams) ([]store.Run, int, error) {
	var a Args
	where := []string{"user_id = " + a.Add(p.UserID)}
	where = a.Eq(where, "status", p.Status)
	where = a.Eq(where, "workflow_id", p.WorkflowID)
	limit := p.Limit
	if limit <= 0 {
		limit = 20
	}
	return queryPage(ctx, db, runCols, ` FROM runs WHERE `+strings.Join(where, " AND "), `created_at DESC, run_id`, &a, limit, p.Offset, scanRun)
}

// DeleteRun implements store.Runs. The run's row is locked while its state is checked (on
// PostgreSQL; SQLite's writers take turns), so a retry cannot restart it half deleted; its steps,
// jobs and assets go before it (trace steps reference it).
func (db *DB) DeleteRun(ctx context.Context, id, userID string) error {
	return db.WithTx(ctx, func(tx *DB) error {
		var owner, status string
		if err := tx.QueryRow(ctx, `SELECT user_id, status FROM runs WHERE run_id = $1`+tx.rowLock(lockUpdate), id).Scan(&owner, &status); err != nil {
			return err
		}
		switch {
		case owner != userID:
			return store.ErrNotFound
		case status != store.RunCompleted && status != store.RunFailed && status != store.RunCancelled:
			return store.ErrStale
		}
		for _, q := range []string{`DELETE FROM trace_steps WHERE run_id = $1`, `DELETE FROM run_model_calls WHERE run_id = $1`,
			`DELETE FROM jobs WHERE run_id = $1`,
			`DELETE FROM assets WHERE source_run_id = $1`, `DELETE FROM runs WHERE run_id = $1`} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// CreateRunInQuota implements store.Runs. The user's row is the lock: on PostgreSQL, FOR NO KEY
// UPDATE makes a second start by the user wait here until the first commits, and its count then
// includes the first's run (READ COMMITTED reads afresh per statement); it still lets the key-share
// locks of inserts referencing the user (a login's refresh token) through. SQLite's transactions
// take the single writer lock at BEGIN, which serialises them already.
func (db *DB) CreateRunInQuota(ctx context.Context, r *store.Run, q store.RunQuota) error {
	return db.WithTx(ctx, func(tx *DB) error {
		lock := tx.rowLock(lockNoKeyUpdate)
		var id string
		if err := tx.QueryRow(ctx, `SELECT id FROM users WHERE id = $1`+lock, r.UserID).Scan(&id); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM runs WHERE user_id = $1 AND created_at >= $2`,
			r.UserID, tx.T(q.Since)).Scan(&n); err != nil {
			return err
		}
		if n >= q.Limit {
			return store.ErrQuotaExceeded
		}
		return tx.CreateRun(ctx, r)
	})
}

// ClaimRun implements store.Runs. PostgreSQL skips rows other hosts are claiming (FOR UPDATE SKIP
// LOCKED); SQLite serialises writers, and the outer WHERE repeats the condition as the guard.
func (db *DB) ClaimRun(ctx context.Context, owner string, lease time.Duration) (*store.Run, error) {
	var a Args
	now, until := db.leaseClock(&a, lease)
	cond := `((status = 'pending' AND (lease_until IS NULL OR lease_until < ` + now + `))
		OR (status = 'running' AND lease_until IS NOT NULL AND lease_until < ` + now + `))`
	lock := db.rowLock(lockSkipLocked)
	// A running run still naming a holder was left by a host that stopped renewing: a recovery.
	q := `UPDATE runs SET claimed_by = ` + a.Add(owner) + `, lease_until = ` + until + `, updated_at = ` + a.Add(db.T(db.Now())) + `,
		recoveries = recoveries + CASE WHEN status = 'running' AND claimed_by <> '' THEN 1 ELSE 0 END
		WHERE run_id = (SELECT run_id FROM runs WHERE ` + cond + ` ORDER BY created_at, run_id LIMIT 1` + lock + `)
		AND ` + cond + ` RETURNING ` + runCols
	r, err := scanRun(db.QueryRow(ctx, q, a.List...))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// leaseClock returns the SQL of now and of now plus d for a run lease, their values added to a.
// On PostgreSQL it is the database's clock when the row is written (clock_timestamp()): a claim
// whose statement waited out a stall (the server paused) does not land already expired, as one
// computed by the host before sending it did (issue 38: a run executed twice at once), and hosts
// whose clocks disagree agree on when a lease runs out. On SQLite the database is in the host's
// process: its clock is the store's (db.Now, which tests may set).
func (db *DB) leaseClock(a *Args, d time.Duration) (now, until string) {
	if db.D.Name == "postgres" {
		return "clock_timestamp()", "clock_timestamp() + " + a.Add(d.Microseconds()) + "::bigint * interval '1 microsecond'"
	}
	t := db.Now()
	return a.Add(db.T(t)), a.Add(db.T(t.Add(d)))
}

// leaseNow returns the SQL of now by leaseClock's clock, to read a lease by (the database's on
// PostgreSQL, the store's on SQLite, then added to a).
func (db *DB) leaseNow(a *Args) string {
	if db.D.Name == "postgres" {
		return "clock_timestamp()"
	}
	return a.Add(db.T(db.Now()))
}

// RenewLease implements store.Runs: the run's lease and the holds of the claim's model calls in
// progress, in one transaction.
func (db *DB) RenewLease(ctx context.Context, p store.RunLeaseParams) error {
	return db.WithTx(ctx, func(tx *DB) error {
		// A renewal that lands after the lease ran out (the database stalled under it) renews
		// nothing: by the clock leases are read by, the run was free to be claimed, and a claim
		// held up in the same stall may land next. The execution stops (ErrStale) rather than
		// race it.
		a := Args{List: []any{p.ID, p.Owner}}
		now, until := tx.leaseClock(&a, p.Lease)
		n, err := tx.Exec(ctx, `UPDATE runs SET lease_until = `+until+` WHERE run_id = $1 AND claimed_by = $2
			AND status = 'running' AND lease_until IS NOT NULL AND lease_until > `+now, a.List...)
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrStale
		}
		h := Args{List: []any{p.ID, p.Owner}}
		_, held := tx.leaseClock(&h, store.ModelCallHold(p.Lease))
		_, err = tx.Exec(ctx, `UPDATE run_model_calls SET held_until = `+held+`
			WHERE run_id = $1 AND owner = $2 AND result IS NULL`, h.List...)
		return err
	})
}

// FenceRun implements store.Runs.
func (db *DB) FenceRun(ctx context.Context, id, owner string) error {
	if !db.InTransaction() {
		return db.fenceRun(ctx, id, owner, "") // a lock would end with the statement: a plain read
	}
	return db.fenceRun(ctx, id, owner, lockShare)
}

// fenceRun is FenceRun holding the run's row with lock (on PostgreSQL).
func (db *DB) fenceRun(ctx context.Context, id, owner, lock string) error {
	var holder string
	if lock != "" {
		lock = db.rowLock(lock)
	}
	if err := db.QueryRow(ctx, `SELECT claimed_by FROM runs WHERE run_id = $1`+lock, id).Scan(&holder); err != nil {
		return err
	}
	if holder != owner {
		return store.ErrStale
	}
	return nil
}

// TakeBackRuns implements store.Runs. Pending runs with a claim (claimed, not yet started) and
// running runs under a lease are both ended at now; a running run without a lease awaits a callback
// and stays as it is.
func (db *DB) TakeBackRuns(ctx context.Context, host string) (int64, error) {
	prefix := host + "/"
	a := Args{List: []any{prefix, len(prefix)}}
	_, ended := db.leaseClock(&a, -time.Millisecond) // run out by the clock leases are read by
	var n int64
	err := db.WithTx(ctx, func(tx *DB) error {
		var err error
		if n, err = tx.Exec(ctx, `UPDATE runs SET lease_until = `+ended+` WHERE claimed_by <> '' AND substr(claimed_by, 1, $2) = $1
			AND status IN ('pending', 'running') AND lease_until IS NOT NULL`, a.List...); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM run_model_calls WHERE result IS NULL AND substr(owner, 1, $2) = $1`, prefix, len(prefix))
		return err
	})
	return n, err
}

// UpdateRun implements store.Runs.
func (db *DB) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (*store.Run, error) {
	now := db.Now()
	args := []any{id, u.Status, db.T(now)}
	set := []string{"status = $2", "updated_at = $3"}
	add := func(col string, v any) {
		args = append(args, v)
		set = append(set, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if u.Outputs != nil {
		add("outputs", J(u.Outputs))
	} else if u.ClearOutput {
		set = append(set, "outputs = NULL")
	}
	if u.Error != nil {
		add("error", J(u.Error))
	} else if u.ClearError {
		set = append(set, "error = NULL")
	}
	if u.Awaiting != nil {
		add("awaiting", J(u.Awaiting))
	} else if u.ClearAwait {
		set = append(set, "awaiting = NULL")
	}
	if u.ResumeInput != nil {
		add("resume_input", J(u.ResumeInput))
	}
	if u.Inputs != nil {
		add("inputs", J(u.Inputs))
	}
	if u.Engine != "" {
		add("engine", u.Engine)
	}
	if u.Degraded != nil {
		add("degraded", *u.Degraded)
	}
	if u.Started {
		set = append(set, "started_at = COALESCE(started_at, $3)")
	}
	if u.Completed {
		set = append(set, "completed_at = $3")
	}
	if u.Release {
		set = append(set, "lease_until = NULL", "claimed_by = ''")
	} else if u.Lease != nil {
		add("lease_until", db.T(*u.Lease))
	}
	if u.Unclaim && !u.Release {
		set = append(set, "claimed_by = ''")
	}
	if u.NextAttempt {
		set = append(set, "attempt = attempt + 1")
	}
	if u.Progress != nil {
		add("progress", *u.Progress)
	}
	var in []string
	for _, f := range u.From {
		args = append(args, f)
		in = append(in, fmt.Sprintf("$%d", len(args)))
	}
	where := "run_id = $1 AND status IN (" + strings.Join(in, ", ") + ")"
	if u.Owner != "" {
		args = append(args, u.Owner)
		where += fmt.Sprintf(" AND claimed_by = $%d", len(args))
	}
	r, err := scanRun(db.QueryRow(ctx, `UPDATE runs SET `+strings.Join(set, ", ")+` WHERE `+where+` RETURNING `+runCols, args...))
	if errors.Is(err, store.ErrNotFound) {
		if _, gerr := db.GetRun(ctx, id); gerr != nil {
			return nil, gerr
		}
		return nil, store.ErrStale
	}
	return r, err
}

// orphanCond is the test of a run nothing drives (store.Runs.ListOrphanRuns), over runs aliased r,
// with $1 the time before which it last changed. ClaimOrphanRun repeats it in its UPDATE: a run
// listed a moment ago may have been handed back and claimed by a host since.
const orphanCond = `r.status = 'running' AND r.lease_until IS NULL AND r.updated_at < $1
	AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.run_id AND j.status IN ('pending', 'running'))`

// ListOrphanRuns implements store.Runs.
func (db *DB) ListOrphanRuns(ctx context.Context, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.Query(ctx, `SELECT run_id FROM runs r WHERE `+orphanCond+`
		ORDER BY updated_at LIMIT $2`, db.T(before), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ClaimOrphanRun implements store.Runs. One UPDATE guarded by the orphan test itself: on PostgreSQL
// an UPDATE that waited for another writer of the row re-checks its WHERE against the row that
// writer left, so a run a host claimed meanwhile (its lease set) is left alone.
func (db *DB) ClaimOrphanRun(ctx context.Context, p store.ClaimOrphanRunParams) (*store.Run, error) {
	now := db.T(db.Now())
	r, err := scanRun(db.QueryRow(ctx, `UPDATE runs AS r SET lease_until = $3, claimed_by = $4, updated_at = $3
		WHERE r.run_id = $2 AND `+orphanCond+` RETURNING `+runCols, db.T(p.Before), p.ID, now, p.Holder))
	if errors.Is(err, store.ErrNotFound) {
		if _, gerr := db.GetRun(ctx, p.ID); gerr != nil {
			return nil, gerr
		}
		return nil, store.ErrStale
	}
	return r, err
}

// SetRunProgress implements store.Runs.
func (db *DB) SetRunProgress(ctx context.Context, p store.RunProgressParams) error {
	n, err := db.Exec(ctx, `UPDATE runs SET progress = $2, current_step = CASE WHEN $3 = '' THEN current_step ELSE $3 END, updated_at = $4
		WHERE run_id = $1 AND status = 'running' AND ($5 = '' OR claimed_by = $5)`, p.ID, p.Progress, p.CurrentStep, db.T(db.Now()), p.Owner)
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrStale
	}
	return nil
}

// UpsertTraceStep implements store.Runs. A new step takes the next seq of its run, and the node
// engine reports steps of one run in parallel: two upserts reading one MAX(seq) would share a seq.
// On PostgreSQL the run row is locked first, so the upserts of one run take turns from there to
// the commit; FOR NO KEY UPDATE is enough for that and, unlike FOR UPDATE, neither waits for nor
// holds up inserts elsewhere that only check a foreign key to the run. SQLite's single writer
// takes turns already.
func (db *DB) UpsertTraceStep(ctx context.Context, s *store.TraceStep) error {
	now := db.Now()
	upsert := func(tx *DB) error {
		_, err := tx.Exec(ctx, `INSERT INTO trace_steps (run_id, step_id, seq, status, step, updated_at)
			VALUES ($1, $2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM trace_steps WHERE run_id = $1), $3, $4, $5)
			ON CONFLICT (run_id, step_id) DO UPDATE SET status = excluded.status, step = excluded.step, updated_at = excluded.updated_at`,
			s.RunID, s.StepID, s.Status, JOr(s.Step, "{}"), tx.T(now))
		return err
	}
	var err error
	if s.Owner != "" {
		// Fenced: the claim is checked, holding the row on PostgreSQL, in the upsert's transaction.
		err = db.WithTx(ctx, func(tx *DB) error {
			if err := tx.fenceRun(ctx, s.RunID, s.Owner, lockNoKeyUpdate); err != nil {
				return err
			}
			return upsert(tx)
		})
	} else if lock := db.rowLock(lockNoKeyUpdate); lock != "" {
		err = db.WithTx(ctx, func(tx *DB) error {
			// An unknown run locks nothing; the insert's foreign key refuses it as before.
			if _, err := tx.Exec(ctx, `SELECT 1 FROM runs WHERE run_id = $1`+lock, s.RunID); err != nil {
				return err
			}
			return upsert(tx)
		})
	} else {
		err = upsert(db)
	}
	if err != nil {
		return err
	}
	s.UpdatedAt = now
	return nil
}

// ListTraceSteps implements store.Runs.
func (db *DB) ListTraceSteps(ctx context.Context, runID string) ([]store.TraceStep, error) {
	return queryAll(ctx, db, func(r Row) (*store.TraceStep, error) {
		var s store.TraceStep
		return &s, r.Scan(&s.RunID, &s.StepID, &s.Seq, &s.Status, JSON(&s.Step), Time(&s.UpdatedAt))
	}, `SELECT run_id, step_id, seq, status, step, updated_at FROM trace_steps WHERE run_id = $1 ORDER BY seq`, runID)
}

const jobCols = `job_id, run_id, step_id, type, status, request, callback, result, error, retry_count, max_retries,
	created_at, updated_at, timeout_at, dispatched_at, resolved_at, held_by, lease_until`

func scanJob(r Row) (*store.Job, error) {
	var j store.Job
	var req, cb, res, er json.RawMessage
	if err := r.Scan(&j.ID, &j.RunID, &j.StepID, &j.Type, &j.Status, JSON(&req), JSON(&cb), JSON(&res), JSON(&er),
		&j.RetryCount, &j.MaxRetries, Time(&j.CreatedAt), Time(&j.UpdatedAt), Time(&j.TimeoutAt),
		NullTime(&j.DispatchedAt), NullTime(&j.ResolvedAt), &j.HeldBy, NullTime(&j.LeaseUntil)); err != nil {
		return nil, err
	}
	j.Request, j.Callback, j.Result, j.Error = req, cb, res, er
	return &j, nil
}

// CreateJob implements store.Runs.
func (db *DB) CreateJob(ctx context.Context, j *store.Job) error {
	now := db.Now()
	j.CreatedAt, j.UpdatedAt = now, now
	if j.Status == "" {
		j.Status = engine.JobPending
	}
	_, err := db.Exec(ctx, `INSERT INTO jobs (job_id, run_id, step_id, type, status, request, callback, retry_count,
		max_retries, created_at, updated_at, timeout_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		j.ID, j.RunID, j.StepID, j.Type, j.Status, J(j.Request), J(j.Callback), j.RetryCount, j.MaxRetries,
		db.T(now), db.T(now), db.T(j.TimeoutAt))
	return err
}

// GetJob implements store.Runs.
func (db *DB) GetJob(ctx context.Context, id string) (*store.Job, error) {
	return scanJob(db.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE job_id = $1`, id))
}

func (db *DB) queryJobs(ctx context.Context, q string, args ...any) ([]store.Job, error) {
	return queryAll(ctx, db, scanJob, q, args...)
}

// ListRunJobs implements store.Runs.
func (db *DB) ListRunJobs(ctx context.Context, runID string) ([]store.Job, error) {
	return db.queryJobs(ctx, `SELECT `+jobCols+` FROM jobs WHERE run_id = $1 ORDER BY created_at, job_id`, runID)
}

// ResolveJob implements store.Runs.
func (db *DB) ResolveJob(ctx context.Context, p store.ResolveJobParams) (*store.Job, error) {
	now := db.Now()
	j, err := scanJob(db.QueryRow(ctx, `UPDATE jobs SET status = $2, result = $3, error = $4, resolved_at = $5, updated_at = $5
		WHERE job_id = $1 AND status IN ('pending', 'running') RETURNING `+jobCols, p.ID, p.Status, J(p.Result), J(p.Error), db.T(now)))
	if errors.Is(err, store.ErrNotFound) {
		if _, gerr := db.GetJob(ctx, p.ID); gerr != nil {
			return nil, gerr
		}
		return nil, store.ErrStale
	}
	return j, err
}

// MarkJobDispatched implements store.Runs. A held job's lease is set by the clock run leases are
// (leaseClock): hosts whose clocks disagree agree on when it runs out, and a statement that waited
// out a stall does not land it already expired.
func (db *DB) MarkJobDispatched(ctx context.Context, p store.DispatchJobParams) error {
	now := db.Now()
	a := Args{List: []any{p.ID, db.T(now), p.Holder}}
	until := "NULL"
	if p.Holder != "" {
		_, until = db.leaseClock(&a, p.Lease)
	}
	_, err := db.Exec(ctx, `UPDATE jobs SET status = 'running', dispatched_at = $2, updated_at = $2, held_by = $3, lease_until = `+until+`
		WHERE job_id = $1 AND status IN ('pending', 'running')`, a.List...)
	return err
}

// RenewJobLeases implements store.Runs, by the clock of leases (leaseClock).
func (db *DB) RenewJobLeases(ctx context.Context, holder string, lease time.Duration) (int64, error) {
	if holder == "" {
		return 0, nil
	}
	a := Args{List: []any{holder}}
	_, until := db.leaseClock(&a, lease)
	return db.Exec(ctx, `UPDATE jobs SET lease_until = `+until+` WHERE held_by = $1 AND status IN ('pending', 'running')`, a.List...)
}

// TakeBackJobs implements store.Runs.
func (db *DB) TakeBackJobs(ctx context.Context, host string) (int64, error) {
	prefix := host + "/"
	a := Args{List: []any{prefix, len(prefix)}}
	_, ended := db.leaseClock(&a, -time.Millisecond) // run out by the clock leases are read by
	return db.Exec(ctx, `UPDATE jobs SET lease_until = `+ended+` WHERE held_by <> '' AND substr(held_by, 1, $2) = $1
		AND status IN ('pending', 'running')`, a.List...)
}

// ListAbandonedJobs implements store.Runs.
func (db *DB) ListAbandonedJobs(ctx context.Context, now time.Time, limit int) ([]store.Job, error) {
	if limit <= 0 {
		limit = 100
	}
	// On PostgreSQL a lease runs out by the database's clock (leaseClock), whatever now says.
	a := Args{List: []any{limit}}
	cutoff := "clock_timestamp()" // leaseClock's now on PostgreSQL
	if db.D.Name != "postgres" {
		cutoff = a.Add(db.T(now))
	}
	return db.queryJobs(ctx, `SELECT `+jobCols+` FROM jobs WHERE held_by <> '' AND status IN ('pending', 'running')
		AND (lease_until IS NULL OR lease_until < `+cutoff+`) ORDER BY lease_until, job_id LIMIT $1`, a.List...)
}

// RetryJob implements store.Runs.
func (db *DB) RetryJob(ctx context.Context, id string, timeoutAt time.Time) (*store.Job, error) {
	now := db.Now()
	j, err := scanJob(db.QueryRow(ctx, `UPDATE jobs SET retry_count = retry_count + 1, timeout_at = $2, status = 'running', updated_at = $3
		WHERE job_id = $1 AND status IN ('pending', 'running') AND timeout_at <= $3 AND retry_count < max_retries
		RETURNING `+jobCols, id, db.T(timeoutAt), db.T(now)))
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrStale
	}
	return j, err
}

// ListDueJobs implements store.Runs.
func (db *DB) ListDueJobs(ctx context.Context, now time.Time, limit int) ([]store.Job, error) {
	if limit <= 0 {
		limit = 100
	}
	return db.queryJobs(ctx, `SELECT `+jobCols+` FROM jobs WHERE status IN ('pending', 'running') AND timeout_at <= $1
		ORDER BY timeout_at, job_id LIMIT $2`, db.T(now), limit)
}

// ExtendJob implements store.Runs.
func (db *DB) ExtendJob(ctx context.Context, id string, timeoutAt time.Time) (*store.Job, error) {
	j, err := scanJob(db.QueryRow(ctx, `UPDATE jobs SET timeout_at = $2, updated_at = $3
		WHERE job_id = $1 AND status IN ('pending', 'running') RETURNING `+jobCols, id, db.T(timeoutAt), db.T(db.Now())))
	if errors.Is(err, store.ErrNotFound) {
		if _, gerr := db.GetJob(ctx, id); gerr != nil {
			return nil, gerr
		}
		return nil, store.ErrStale
	}
	return j, err
}

// TimeOutJob implements store.Runs.
func (db *DB) TimeOutJob(ctx context.Context, p store.TimeOutJobParams) (*store.Job, error) {
	at := db.Now()
	j, err := scanJob(db.QueryRow(ctx, `UPDATE jobs SET status = 'timeout', error = $3, resolved_at = $4, updated_at = $4
		WHERE job_id = $1 AND status IN ('pending', 'running') AND timeout_at <= $2 RETURNING `+jobCols,
		p.ID, db.T(p.Now), J(p.Error), db.T(at)))
	if errors.Is(err, store.ErrNotFound) {
		if _, gerr := db.GetJob(ctx, p.ID); gerr != nil {
			return nil, gerr
		}
		return nil, store.ErrStale
	}
	return j, err
}

// GetModelCall implements store.Runs.
func (db *DB) GetModelCall(ctx context.Context, k store.ModelCallKey) (json.RawMessage, error) {
	var res json.RawMessage
	err := db.QueryRow(ctx, `SELECT result FROM run_model_calls WHERE run_id = $1 AND attempt = $2 AND call_key = $3
		AND result IS NOT NULL`, k.RunID, k.Attempt, k.Key).Scan(JSON(&res))
	return res, err
}

// BeginModelCall implements store.Runs. The claim is checked holding the run's row (PostgreSQL), so
// the begins of one run take turns with each other and with a claim of the run; the call's row is
// inserted held by c.Owner, or, when it exists, read (locked) and taken over only once its hold has
// run out by the clock leases are read by.
func (db *DB) BeginModelCall(ctx context.Context, c store.ModelCall, lease time.Duration) (store.ModelCallState, error) {
	var st store.ModelCallState
	err := db.WithTx(ctx, func(tx *DB) error {
		st = store.ModelCallState{}
		if err := tx.fenceRun(ctx, c.RunID, c.Owner, lockNoKeyUpdate); err != nil {
			return err
		}
		a := Args{List: []any{c.RunID, c.Attempt, c.Key, c.Owner, tx.T(tx.Now())}}
		_, until := tx.leaseClock(&a, store.ModelCallHold(lease))
		n, err := tx.Exec(ctx, `INSERT INTO run_model_calls (run_id, attempt, call_key, owner, created_at, held_until)
			VALUES ($1, $2, $3, $4, $5, `+until+`) ON CONFLICT (run_id, attempt, call_key) DO NOTHING`, a.List...)
		if err != nil || n == 1 {
			return err
		}
		r := Args{List: []any{c.RunID, c.Attempt, c.Key}}
		now := tx.leaseNow(&r)
		var lapsed int
		if err := tx.QueryRow(ctx, `SELECT result, owner, CASE WHEN held_until IS NULL OR held_until < `+now+` THEN 1 ELSE 0 END
			FROM run_model_calls WHERE run_id = $1 AND attempt = $2 AND call_key = $3`+tx.rowLock(lockUpdate), r.List...).
			Scan(JSON(&st.Answer), &st.HeldBy, &lapsed); err != nil {
			return err
		}
		if len(st.Answer) > 0 {
			st.HeldBy = ""
			return nil
		}
		if st.HeldBy != c.Owner && lapsed == 0 {
			return nil
		}
		st.HeldBy = ""
		u := Args{List: []any{c.RunID, c.Attempt, c.Key, c.Owner}}
		_, until = tx.leaseClock(&u, store.ModelCallHold(lease))
		_, err = tx.Exec(ctx, `UPDATE run_model_calls SET owner = $4, held_until = `+until+`
			WHERE run_id = $1 AND attempt = $2 AND call_key = $3`, u.List...)
		return err
	})
	if err != nil {
		return store.ModelCallState{}, err
	}
	return st, nil
}

// PutModelCall implements store.Runs.
func (db *DB) PutModelCall(ctx context.Context, k store.ModelCallKey, result json.RawMessage) error {
	_, err := db.Exec(ctx, `INSERT INTO run_model_calls (run_id, attempt, call_key, result, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id, attempt, call_key)
		DO UPDATE SET result = excluded.result, owner = '', held_until = NULL WHERE run_model_calls.result IS NULL`,
		k.RunID, k.Attempt, k.Key, JOr(result, "{}"), db.T(db.Now()))
	return err
}

// ReleaseModelCall implements store.Runs.
func (db *DB) ReleaseModelCall(ctx context.Context, c store.ModelCall) error {
	_, err := db.Exec(ctx, `DELETE FROM run_model_calls WHERE run_id = $1 AND attempt = $2 AND call_key = $3
		AND owner = $4 AND result IS NULL`, c.RunID, c.Attempt, c.Key, c.Owner)
	return err
}
