// Package storetest is the conformance suite every store driver passes. Drivers call Run from
// their tests; each domain adds its checks to the suites table below (one file per domain).
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
)

// Opener returns a fresh, empty, migrated driver for one test (closed by the opener's cleanup).
type Opener func(t *testing.T) store.Driver

// suites lists the conformance checks, by domain.
var suites = []struct {
	name string
	fn   func(t *testing.T, open Opener)
}{
	{"users", testUsers},
	{"refresh_tokens", testRefreshTokens},
	{"api_keys", testAPIKeys},
	{"projects", testProjects},
	{"project_listing_follows_writes", testProjectListingFollowsWrites},
	{"idempotency", testIdempotency},
	{"idempotency_concurrent_release", testIdempotencyConcurrentRelease},
	{"idempotency_dead_holder", testIdempotencyDeadHolder},
	{"transactions", testTransactions},
	{"corpus", testCorpus},
	{"assets", testAssets},
	{"material", testMaterial},
	{"batches", testBatches},
	{"runs", testRuns},
	{"delete_run", testDeleteRun},
	{"run_quota_concurrent_starts", testRunQuotaConcurrentStarts},
	{"runs_orphan_claim", testRunsOrphanClaim},
	{"runs_take_back", testRunsTakeBack},
	{"trace_concurrent_steps", testTraceConcurrentSteps},
	{"run_model_calls", testRunModelCalls},
	{"run_model_calls_in_progress", testRunModelCallsInProgress},
	{"jobs", testJobs},
	{"job_deadline", testJobDeadline},
	{"knowledge_sources", testKnowledgeSources},
	{"knowledge_concurrent_uploads", testKnowledgeConcurrentUploads},
	{"knowledge_visibility", testKnowledgeVisibility},
	{"knowledge_chunks", testKnowledgeChunks},
	{"knowledge_batch", testKnowledgeBatch},
	{"knowledge_batch_as_singles", testKnowledgeBatchAsSingles},
	{"knowledge_term_stats", testKnowledgeTermStats},
	{"knowledge_vector_candidates", testKnowledgeVectorCandidates},
	{"knowledge_delete", testKnowledgeDelete},
	{"knowledge_queries", testKnowledgeQueries},
	{"outbox", testOutbox},
	{"outbox_concurrent_claims", testOutboxConcurrentClaims},
	{"outbox_hand_back", testOutboxHandBack},
	{"event_sources", testEventSources},
	{"tasks", testTasks},
	{"task_orphan_claims", testTaskOrphanClaims},
	{"task_backoff_claims", testTaskBackoffClaims},
	{"scheduling", testScheduling},
	{"strategy_tasks_concurrent_replace", testStrategyTasksConcurrentReplace},
	{"auto_run_once", testAutoRunOnce},
	{"leader_lock", testLeaderLock},
}

// Run runs every conformance check against the driver open makes.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.fn(t, open)
		})
	}
}

// PostgresURL returns TEST_DATABASE_URL or skips the test.
func PostgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		t.Skip("set TEST_DATABASE_URL to run Postgres tests")
	}
	return u
}

// SchemaName returns a fresh schema name for one PostgreSQL test.
func SchemaName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "t_" + hex.EncodeToString(b)
}

// DropSchema drops a test's schema (SchemaName) from the PostgreSQL database at url, with all it
// holds, if it is there; a test calls it from its clean-up, after closing its drivers. A failure is
// ignored: the test database is thrown away after the run anyway.
func DropSchema(url, schema string) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return
	}
	defer c.Close(ctx)
	_, _ = c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
}

// NewUser inserts a user and returns it.
func NewUser(t testing.TB, d store.Users, role string) *store.User {
	t.Helper()
	if role == "" {
		role = store.RoleFreeUser
	}
	id := uuid.NewString()
	u := &store.User{ID: id, Email: fmt.Sprintf("u-%s@example.com", id[:8]), Username: "u" + id[:8], PasswordHash: "x", Role: role}
	if err := d.CreateUser(context.Background(), u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return u
}

// NewProject inserts a project owned by userID and returns it.
func NewProject(t *testing.T, d store.Projects, userID string) *store.Project {
	t.Helper()
	p := &store.Project{ID: uuid.NewString(), UserID: userID, Name: "p " + userID[:4], Description: "d"}
	if err := d.CreateProject(context.Background(), p); err != nil {
		t.Fatalf("CreateProject: %v", err)
	}
	return p
}

// Together calls fn(0) to fn(n-1), each in its own goroutine, all released at once (they wait on
// one channel that is closed when every goroutine exists), so that calls racing in the product
// overlap in a test; it returns when all are done.
func Together(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}
