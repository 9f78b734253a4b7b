// Package metrics is the host's Prometheus instrumentation: its own registry (never the global
// default), HTTP request counters and latency histograms by route template, and collectors that
// read gauges on scrape: runs, jobs and outbox events by state, the durable queue's jobs by state
// (host/queue), engine states and restarts,
// knowledge search and ask latency, the knowledge base's vector cache, and the database pool.
//
// Every source is optional: a nil source is simply not collected, so parts can be wired as they
// land. Write renders the registry in the Prometheus text format; host/api serves it at /metrics.
package metrics

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/reelforge/reelforge/host/store"
)

// Namespace prefixes every metric of the host.
const Namespace = "reelforge"

// OpsCounter counts runs, jobs and outbox events by state (both store drivers implement it).
type OpsCounter interface {
	CountOps(ctx context.Context) (*store.OpsCounts, error)
}

// QueueCounter counts the durable queue's jobs by River state (host/queue's Queue).
type QueueCounter interface {
	Counts(ctx context.Context) (map[string]int, error)
}

// PoolStater reports database pool statistics (both store drivers implement it).
type PoolStater interface {
	PoolStats() store.PoolStats
}

// EngineStates reports each engine's state: ready, degraded or disabled (api.EngineHealth).
type EngineStates interface {
	EngineStates() map[string]string
}

// EngineRestarts reports how many times each engine's plugin was restarted since the host started.
type EngineRestarts interface {
	EngineRestarts() map[string]int
}

// KnowledgeLatency reports the latencies, in milliseconds, of the most recent knowledge queries of
// one mode ("search" or "ask"), at most n of them.
type KnowledgeLatency interface {
	RecentQueryLatencies(ctx context.Context, mode string, n int) ([]float64, error)
}

// VectorCache reports the knowledge base's cache of decoded vectors (kb.Service, adapted by
// host/api).
type VectorCache interface {
	VectorCacheStats() VectorCacheStats
}

// VectorCacheStats are the vector cache's figures: what it holds against its budget, and its
// lookups and evictions since the host started.
type VectorCacheStats struct {
	Bytes, BudgetBytes      int64
	Entries                 int
	Hits, Misses, Evictions uint64
}

// Sources are what the collectors read on scrape. Every field is optional.
type Sources struct {
	Ops         OpsCounter
	Queue       QueueCounter
	Pool        PoolStater
	Engines     EngineStates
	Restarts    EngineRestarts
	Knowledge   KnowledgeLatency
	VectorCache VectorCache
	// Driver names the database in the pool metrics ("postgres", "sqlite").
	Driver string
	// Log receives collection errors (a scrape still answers with what it could read).
	Log *slog.Logger
}

// Store is a database FromStore reads: its name, and whichever of OpsCounter, PoolStater and
// KnowledgeLatency it also offers.
type Store interface {
	Name() string
}

// FromStore fills the sources a store driver offers (counts, pool, knowledge latency) by probing
// it; the engine sources stay as they are.
func (s Sources) FromStore(d Store) Sources {
	if d == nil {
		return s
	}
	s.Driver = d.Name()
	if v, ok := d.(OpsCounter); ok {
		s.Ops = v
	}
	if v, ok := d.(PoolStater); ok {
		s.Pool = v
	}
	if v, ok := d.(KnowledgeLatency); ok {
		s.Knowledge = v
	}
	return s
}

// Metrics is the host's registry with its HTTP instruments. It is safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	log      *slog.Logger
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// New returns Metrics collecting from src, plus the Go runtime and process collectors.
func New(src Sources) *Metrics {
	if src.Log == nil {
		src.Log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		log: src.Log,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests by method, route template and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request latency by method and route template.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, .8, 1, 2.5, 3, 5, 10, 30},
		}, []string{"method", "route"}),
	}
	m.reg.MustRegister(m.requests, m.latency,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&collector{src: src})
	return m
}

// Registry returns the registry, for tests and for adding instruments.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRequest counts one HTTP request. route is the route template (/api/projects/:id), never
// the raw path, so the number of series stays bounded.
func (m *Metrics) ObserveRequest(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

// ContentType is the media type Write produces (the Prometheus text format 0.0.4).
var ContentType = string(expfmt.NewFormat(expfmt.TypeTextPlain))

// Write gathers every metric and writes it in the Prometheus text format. Collection errors are
// logged and skipped (reelforge_scrape_errors names the source): the rest is still written.
func (m *Metrics) Write(w io.Writer) error {
	mfs, gerr := m.reg.Gather()
	if gerr != nil {
		m.log.Warn("metrics: gather", "err", gerr.Error())
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------

var (
	descRuns = prometheus.NewDesc(Namespace+"_runs", "Workflow runs by engine and status.",
		[]string{"engine", "status"}, nil)
	descJobs = prometheus.NewDesc(Namespace+"_jobs", "External jobs by type and status.",
		[]string{"type", "status"}, nil)
	descOutbox = prometheus.NewDesc(Namespace+"_outbox_events",
		"Outbound events by status (failed: pending after a failed attempt; dead: given up).",
		[]string{"status"}, nil)
	descQueue = prometheus.NewDesc(Namespace+"_queue_jobs",
		"Jobs of the durable queue (River) by state: scheduled, available, running, retryable, completed, cancelled, discarded.",
		[]string{"state"}, nil)
	descEngineState = prometheus.NewDesc(Namespace+"_engine_state",
		"1 for the current state of each engine (ready, degraded, disabled), else 0.",
		[]string{"engine", "state"}, nil)
	descEngineRestarts = prometheus.NewDesc(Namespace+"_engine_restarts_total",
		"Plugin restarts of each engine since the host started.", []string{"engine"}, nil)
	descKB = prometheus.NewDesc(Namespace+"_knowledge_query_latency_seconds",
		"Latency of the most recent knowledge queries (window of 200) by mode (search, ask).",
		[]string{"mode"}, nil)
	descVecBytes = prometheus.NewDesc(Namespace+"_knowledge_vector_cache_bytes",
		"Bytes the knowledge base's cache of decoded vectors holds (estimated as its budget counts them).", nil, nil)
	descVecBudget = prometheus.NewDesc(Namespace+"_knowledge_vector_cache_budget_bytes",
		"Memory budget of the knowledge base's vector cache (KB_VECTOR_CACHE_MB).", nil, nil)
	descVecEntries = prometheus.NewDesc(Namespace+"_knowledge_vector_cache_entries",
		"Vectors the knowledge base's vector cache holds.", nil, nil)
	descVecHits = prometheus.NewDesc(Namespace+"_knowledge_vector_cache_hits_total",
		"Vector cache lookups that found the vector.", nil, nil)
	descVecMisses = prometheus.NewDesc(Namespace+"_knowledge_vector_cache_misses_total",
		"Vector cache lookups that did not (the vector was loaded from the database).", nil, nil)
	descVecEvictions = prometheus.NewDesc(Namespace+"_knowledge_vector_cache_evictions_total",
		"Vectors evicted from the vector cache to stay within its budget.", nil, nil)
	descPoolMax = prometheus.NewDesc(Namespace+"_db_pool_max_connections",
		"Connection limit of the database pool.", []string{"driver"}, nil)
	descPoolConns = prometheus.NewDesc(Namespace+"_db_pool_connections",
		"Database pool connections by state (in_use, idle).", []string{"driver", "state"}, nil)
	descPoolWaits = prometheus.NewDesc(Namespace+"_db_pool_waits_total",
		"Acquisitions that waited for a connection.", []string{"driver"}, nil)
	descPoolWaitSeconds = prometheus.NewDesc(Namespace+"_db_pool_wait_seconds_total",
		"Total time spent waiting for a connection.", []string{"driver"}, nil)
	descScrapeErrors = prometheus.NewDesc(Namespace+"_scrape_errors",
		"Sources that failed during this scrape (1) by source.", []string{"source"}, nil)
)

// engineStateNames are the states engine_state always reports, so a state's series never vanishes.
var engineStateNames = []string{"ready", "degraded", "disabled"}

// kbWindow is the number of recent queries the latency summaries cover (SPEC.md: 200).
const kbWindow = 200

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

// collector reads the Sources on every scrape.
type collector struct{ src Sources }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRuns, descJobs, descOutbox, descQueue, descEngineState, descEngineRestarts,
		descKB, descVecBytes, descVecBudget, descVecEntries, descVecHits, descVecMisses, descVecEvictions,
		descPoolMax, descPoolConns, descPoolWaits, descPoolWaitSeconds, descScrapeErrors} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	failed := func(source string, err error) {
		c.src.Log.Warn("metrics: collect", "source", source, "err", err.Error())
		ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, 1, source)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if c.src.Ops != nil {
		if n, err := c.src.Ops.CountOps(ctx); err != nil {
			failed("store", err)
		} else {
			for _, s := range n.Runs {
				gauge(descRuns, float64(s.N), s.Kind, s.State)
			}
			for _, s := range n.Jobs {
				gauge(descJobs, float64(s.N), s.Kind, s.State)
			}
			seen := map[string]bool{}
			for _, s := range n.Outbox {
				seen[s.State] = true
				gauge(descOutbox, float64(s.N), s.State)
			}
			for _, st := range []string{"pending", "failed", "dead"} { // always present, for alerts
				if !seen[st] {
					gauge(descOutbox, 0, st)
				}
			}
		}
	}
	if c.src.Queue != nil {
		if n, err := c.src.Queue.Counts(ctx); err != nil {
			failed("queue", err)
		} else {
			for state, v := range n {
				gauge(descQueue, float64(v), state)
			}
		}
	}
	if c.src.Engines != nil {
		for name, state := range c.src.Engines.EngineStates() {
			for _, st := range engineStateNames {
				v := 0.0
				if st == state {
					v = 1
				}
				gauge(descEngineState, v, name, st)
			}
		}
	}
	if c.src.Restarts != nil {
		for name, n := range c.src.Restarts.EngineRestarts() {
			ch <- prometheus.MustNewConstMetric(descEngineRestarts, prometheus.CounterValue, float64(n), name)
		}
	}
	if c.src.Knowledge != nil {
		for _, mode := range []string{"search", "ask"} {
			ms, err := c.src.Knowledge.RecentQueryLatencies(ctx, mode, kbWindow)
			if err != nil {
				failed("knowledge", err)
				break
			}
			ch <- summary(descKB, ms, mode)
		}
	}
	if c.src.VectorCache != nil {
		v := c.src.VectorCache.VectorCacheStats()
		gauge(descVecBytes, float64(v.Bytes))
		gauge(descVecBudget, float64(v.BudgetBytes))
		gauge(descVecEntries, float64(v.Entries))
		ch <- prometheus.MustNewConstMetric(descVecHits, prometheus.CounterValue, float64(v.Hits))
		ch <- prometheus.MustNewConstMetric(descVecMisses, prometheus.CounterValue, float64(v.Misses))
		ch <- prometheus.MustNewConstMetric(descVecEvictions, prometheus.CounterValue, float64(v.Evictions))
	}
	if c.src.Pool != nil {
		p := c.src.Pool.PoolStats()
		d := c.src.Driver
		gauge(descPoolMax, float64(p.MaxOpen), d)
		gauge(descPoolConns, float64(p.InUse), d, "in_use")
		gauge(descPoolConns, float64(p.Idle), d, "idle")
		ch <- prometheus.MustNewConstMetric(descPoolWaits, prometheus.CounterValue, float64(p.WaitCount), d)
		ch <- prometheus.MustNewConstMetric(descPoolWaitSeconds, prometheus.CounterValue, p.WaitDuration.Seconds(), d)
	}
}

// summary turns a window of latencies in milliseconds into a summary in seconds with the median,
// p95 and p99.
func summary(d *prometheus.Desc, ms []float64, labels ...string) prometheus.Metric {
	s := slices.Clone(ms)
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v / 1000
	}
	q := map[float64]float64{}
	for _, p := range []float64{0.5, 0.95, 0.99} {
		q[p] = Quantile(s, p) / 1000
	}
	return prometheus.MustNewConstSummary(d, uint64(len(s)), sum, q, labels...)
}

// Quantile returns the p-quantile (0..1) of sorted values by the nearest-rank method; 0 for none.
func Quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
