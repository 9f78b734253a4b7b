package metrics_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/reelforge/reelforge/host/metrics"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/pgstore"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// scrape writes m and parses it back with the Prometheus text parser.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	return mfs
}

// series flattens a family to "label=value,..." -> value (gauge, counter, or summary count).
func series(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Summary != nil:
			v = float64(m.GetSummary().GetSampleCount())
		case m.Histogram != nil:
			v = float64(m.GetHistogram().GetSampleCount())
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}

type fakeOps struct{}

func (fakeOps) CountOps(context.Context) (*store.OpsCounts, error) {
	return &store.OpsCounts{
		Runs:   []store.StateCount{{Kind: "node", State: "completed", N: 7}, {Kind: "graph", State: "failed", N: 1}},
		Jobs:   []store.StateCount{{Kind: "music", State: "timeout", N: 2}},
		Outbox: []store.StateCount{{State: "dead", N: 3}},
	}, nil
}

type fakeEngines struct{}

func (fakeEngines) EngineStates() map[string]string { return map[string]string{"graph": "degraded"} }
func (fakeEngines) EngineRestarts() map[string]int  { return map[string]int{"graph": 4} }

type fakeKB struct{}

func (fakeKB) RecentQueryLatencies(_ context.Context, mode string, n int) ([]float64, error) {
	if mode == "ask" {
		return []float64{1000, 3000, 2000}, nil
	}
	return []float64{}, nil
}

type fakeVectorCache struct{}

func (fakeVectorCache) VectorCacheStats() metrics.VectorCacheStats {
	return metrics.VectorCacheStats{Bytes: 6200, BudgetBytes: 1 << 20, Entries: 1, Hits: 9, Misses: 2, Evictions: 1}
}

type fakeQueue struct{}

func (fakeQueue) Counts(context.Context) (map[string]int, error) {
	return map[string]int{"available": 2, "running": 1, "discarded": 0}, nil
}

type fakePool struct{}

func (fakePool) PoolStats() store.PoolStats {
	return store.PoolStats{MaxOpen: 8, Open: 3, InUse: 2, Idle: 1, WaitCount: 5, WaitDuration: 1500 * time.Millisecond}
}

func TestScrapeFakeSources(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Sources{Ops: fakeOps{}, Queue: fakeQueue{}, Engines: fakeEngines{}, Restarts: fakeEngines{},
		Knowledge: fakeKB{}, VectorCache: fakeVectorCache{}, Pool: fakePool{}, Driver: "sqlite"})
	m.ObserveRequest("GET", "/api/projects/:id", 200, 20*time.Millisecond)
	m.ObserveRequest("GET", "/api/projects/:id", 200, 30*time.Millisecond)
	m.ObserveRequest("POST", "/api/auth/login", 401, time.Millisecond)
	mfs := scrape(t, m)

	tests := map[string]struct {
		family string
		want   map[string]float64
	}{
		"requests": {"reelforge_http_requests_total", map[string]float64{
			"method=GET,route=/api/projects/:id,status=200": 2, "method=POST,route=/api/auth/login,status=401": 1}},
		"latency": {"reelforge_http_request_duration_seconds", map[string]float64{
			"method=GET,route=/api/projects/:id": 2, "method=POST,route=/api/auth/login": 1}},
		"runs":   {"reelforge_runs", map[string]float64{"engine=node,status=completed": 7, "engine=graph,status=failed": 1}},
		"jobs":   {"reelforge_jobs", map[string]float64{"status=timeout,type=music": 2}},
		"outbox": {"reelforge_outbox_events", map[string]float64{"status=dead": 3, "status=pending": 0, "status=failed": 0}},
		"queue":  {"reelforge_queue_jobs", map[string]float64{"state=available": 2, "state=running": 1, "state=discarded": 0}},
		"engine state": {"reelforge_engine_state", map[string]float64{
			"engine=graph,state=ready": 0, "engine=graph,state=degraded": 1, "engine=graph,state=disabled": 0}},
		"restarts":               {"reelforge_engine_restarts_total", map[string]float64{"engine=graph": 4}},
		"kb":                     {"reelforge_knowledge_query_latency_seconds", map[string]float64{"mode=ask": 3, "mode=search": 0}},
		"vector cache bytes":     {"reelforge_knowledge_vector_cache_bytes", map[string]float64{"": 6200}},
		"vector cache budget":    {"reelforge_knowledge_vector_cache_budget_bytes", map[string]float64{"": 1 << 20}},
		"vector cache entries":   {"reelforge_knowledge_vector_cache_entries", map[string]float64{"": 1}},
		"vector cache hits":      {"reelforge_knowledge_vector_cache_hits_total", map[string]float64{"": 9}},
		"vector cache misses":    {"reelforge_knowledge_vector_cache_misses_total", map[string]float64{"": 2}},
		"vector cache evictions": {"reelforge_knowledge_vector_cache_evictions_total", map[string]float64{"": 1}},
		"pool max":               {"reelforge_db_pool_max_connections", map[string]float64{"driver=sqlite": 8}},
		"pool":                   {"reelforge_db_pool_connections", map[string]float64{"driver=sqlite,state=in_use": 2, "driver=sqlite,state=idle": 1}},
		"waits":                  {"reelforge_db_pool_wait_seconds_total", map[string]float64{"driver=sqlite": 1.5}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, series(mfs[tt.family])); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.family, diff)
			}
		})
	}
	ask := mfs["reelforge_knowledge_query_latency_seconds"]
	for _, mt := range ask.GetMetric() {
		if mt.GetLabel()[0].GetValue() != "ask" {
			continue
		}
		for _, q := range mt.GetSummary().GetQuantile() {
			if q.GetQuantile() == 0.95 && q.GetValue() != 3 {
				t.Errorf("ask p95 = %v s, want 3", q.GetValue())
			}
		}
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("the Go runtime collector is missing")
	}
}

func TestScrapeNilSources(t *testing.T) {
	t.Parallel()
	mfs := scrape(t, metrics.New(metrics.Sources{}))
	for name := range mfs {
		if strings.HasPrefix(name, "reelforge_runs") || strings.HasPrefix(name, "reelforge_db_") ||
			strings.HasPrefix(name, "reelforge_knowledge_vector_cache") {
			t.Errorf("family %s reported without a source", name)
		}
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   []float64
		p    float64
		want float64
	}{
		"empty":  {nil, 0.95, 0},
		"one":    {[]float64{4}, 0.5, 4},
		"median": {[]float64{1, 2, 3, 4}, 0.5, 2},
		"p95":    {[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 0.95, 19},
		"max":    {[]float64{1, 2, 3}, 1, 3},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := metrics.Quantile(tt.in, tt.p); got != tt.want {
				t.Errorf("Quantile(%v, %v) = %v, want %v", tt.in, tt.p, got, tt.want)
			}
		})
	}
}

// execer is the raw statement runner both drivers expose through sqldb.DB.
type execer interface {
	Exec(ctx context.Context, q string, args ...any) (int64, error)
	T(t time.Time) any
}

func TestScrapeStore(t *testing.T) {
	t.Parallel()
	opens := map[string]func(t *testing.T) store.Driver{
		"sqlite": func(t *testing.T) store.Driver {
			d, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "m.db"), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		},
		"postgres": func(t *testing.T) store.Driver {
			url := storetest.PostgresURL(t)
			schema := storetest.SchemaName()
			d, err := pgstore.Open(t.Context(), url, pgstore.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				d.Close()
				storetest.DropSchema(url, schema)
			})
			return d
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			x := d.(execer)
			ctx := t.Context()
			now := time.Now()
			run := func(id, engine, status string) {
				t.Helper()
				if _, err := x.Exec(ctx, `INSERT INTO runs (run_id, workflow_id, user_id, status, inputs, user_context, engine, created_at, updated_at)
					VALUES ($1, 'voiceover', 'u1', $2, '{}', '{}', $3, $4, $4)`, id, status, engine, x.T(now)); err != nil {
					t.Fatal(err)
				}
			}
			run("r1", "node", "completed")
			run("r2", "node", "completed")
			run("r3", "graph", "failed")
			if _, err := x.Exec(ctx, `INSERT INTO jobs (job_id, run_id, type, status, created_at, updated_at, timeout_at)
				VALUES ('j1', 'r3', 'graph', 'timeout', $1, $1, $1)`, x.T(now)); err != nil {
				t.Fatal(err)
			}
			for i, ev := range []struct {
				status   string
				attempts int
			}{{"pending", 0}, {"pending", 2}, {"dead", 9}, {"delivered", 1}} {
				if _, err := x.Exec(ctx, `INSERT INTO outbox (id, event, payload, status, attempts, next_attempt_at, created_at)
					VALUES ($1, 'job.completed', '{}', $2, $3, $4, $4)`, "e"+string(rune('a'+i)), ev.status, ev.attempts, x.T(now)); err != nil {
					t.Fatal(err)
				}
			}
			for i, ms := range []float64{100, 300, 200} {
				if _, err := x.Exec(ctx, `INSERT INTO knowledge_queries (id, user_id, mode, query_text, top_k, latency_ms, created_at)
					VALUES ($1, 'u1', 'search', 'q', 5, $2, $3)`, "q"+string(rune('a'+i)), ms, x.T(now.Add(time.Duration(i)*time.Second))); err != nil {
					t.Fatal(err)
				}
			}
			mfs := scrape(t, metrics.New(metrics.Sources{}.FromStore(d)))
			checks := map[string]map[string]float64{
				"reelforge_runs":                            {"engine=node,status=completed": 2, "engine=graph,status=failed": 1},
				"reelforge_jobs":                            {"status=timeout,type=graph": 1},
				"reelforge_outbox_events":                   {"status=pending": 1, "status=failed": 1, "status=dead": 1, "status=delivered": 1},
				"reelforge_knowledge_query_latency_seconds": {"mode=search": 3, "mode=ask": 0},
			}
			for fam, want := range checks {
				if diff := cmp.Diff(want, series(mfs[fam])); diff != "" {
					t.Errorf("%s (-want +got):\n%s", fam, diff)
				}
			}
			pool := series(mfs["reelforge_db_pool_max_connections"])
			if pool["driver="+d.Name()] < 1 {
				t.Errorf("pool max = %v, want at least 1", pool)
			}
			if _, ok := mfs["reelforge_scrape_errors"]; ok {
				t.Errorf("scrape errors: %v", series(mfs["reelforge_scrape_errors"]))
			}
		})
	}
}
