// Package api is the HTTP face of the host: Fiber routes, one file per resource, the middleware
// every request passes (request id, logging, auth, rate limits, body limits, idempotency), and the
// one error handler (errors.go) that writes the failure envelope. Handlers return errors; they
// never write error bodies themselves.
package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/access"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/metrics"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/scheduler"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/tasks"
)

// EngineHealth reports the state of each workflow engine: ready, degraded or disabled. An
// implementation may also have EngineDetails() map[string]plugins.Detail: the detailed state and
// why each engine is not ready (/health shows it as engine_details).
type EngineHealth interface {
	EngineStates() map[string]string
}

// Store is what the handlers read and write themselves; the services they call declare their own.
type Store interface {
	store.Transactor
	Name() string
	Ping(ctx context.Context) error
	Now() time.Time
	SupportsVectorSearch() bool

	access.Getter            // every route that names a project
	auth.KeyStore            // the API key routes
	scheduler.BlueprintStore // a project's blueprint becomes its strategy tasks
	CreateProject(ctx context.Context, p *store.Project) error
	ListProjects(ctx context.Context, p store.ListProjectsParams) ([]store.Project, int, error)
	UpdateProject(ctx context.Context, p store.UpdateProjectParams) (*store.Project, error)
	SoftDeleteProject(ctx context.Context, id string) error
	ListProjectTasks(ctx context.Context, projectID string) ([]store.Task, error)

	// Idempotency-Key replays.
	ReserveIdempotencyKey(ctx context.Context, r *store.IdempotentResponse, since time.Time) (*store.IdempotentResponse, error)
	CompleteIdempotencyKey(ctx context.Context, r *store.IdempotentResponse) error
	ReleaseIdempotencyKey(ctx context.Context, userID, key string) error

	// The knowledge base's listings and batch ingests (searching and asking are kb's).
	GetSource(ctx context.Context, id string) (*store.KnowledgeSource, error)
	GetDocument(ctx context.Context, id string) (*store.KnowledgeDocument, error)
	CanRead(ctx context.Context, v store.Viewer, sourceID string) (bool, error)
	ListSources(ctx context.Context, p store.ListKnowledgeParams) ([]store.KnowledgeSource, int, error)
	ListDocuments(ctx context.Context, p store.ListKnowledgeParams) ([]store.KnowledgeDocument, int, error)
	CreateBatch(ctx context.Context, b *store.Batch) error
	GetBatch(ctx context.Context, id string) (*store.Batch, error)
}

// Server holds what the handlers need, given in the one literal host/app builds it with (no field
// is set afterwards); the optional services (nil when a part is not wired) answer 503
// RESOURCE_EXHAUSTED-free errors.
type Server struct {
	Config  *config.Config
	Store   Store
	Auth    *auth.Service
	Log     *slog.Logger
	Engines EngineHealth
	// Metrics is the Prometheus registry (GET /metrics); nil: App makes one reading the store and
	// Engines (and engine restarts, when Engines also has EngineRestarts() map[string]int).
	Metrics *metrics.Metrics
	// Queue counts the durable queue's jobs by state for /metrics (host/queue); nil: not reported.
	Queue   metrics.QueueCounter
	Content *content.Service // inspiration, corpus, materials, strategy, chat
	Runs    *runs.Service    // workflow runs, jobs and callbacks
	KB      *kb.Service      // the knowledge base (/api/knowledge)
	// Hub serves /ws; Notifier is how handlers send client frames (the hub); Notifications is the
	// outbound event worker behind the webhook test and status routes.
	Hub           *events.Hub
	Notifier      events.Notifier
	Notifications *events.Worker
	// Tasks and Scheduler serve the project tasks and the scheduler API (nil: 503).
	Tasks     *tasks.Service
	Scheduler *scheduler.Scheduler
	// FileURLs signs the file URLs of JSON answers and admits signed requests to the file routes;
	// nil: App makes one from Config (JWTSecret, FileURLTTL), as host/app does.
	FileURLs *fileurl.Signer
	// Holder names this host life in the reservations of Idempotency-Keys it serves (renewed by
	// the host every third of Config.Lease); empty: a reservation lasts until it expires.
	Holder string

	started time.Time
	limits  *limiters
	// routes and groups are the registered route templates and middleware prefixes, the only
	// values the metrics' route label takes (besides "unmatched").
	routes, groups map[string]bool
	wsMu           sync.Mutex
	wsConns        map[string]int // open WebSocket connections per user
	faults         faultLog       // errors.go
}

// App builds the Fiber application with every route.
func (s *Server) App() *fiber.App {
	s.started = time.Now()
	s.limits = newLimiters(s.Config.RateLimitUser, s.Config.RateLimitAuth)
	app := fiber.New(fiber.Config{
		AppName:               "reelforge",
		DisableStartupMessage: true,
		ErrorHandler:          s.handleError,
		// Bodies are streamed and bounded per route from the headers (bodies.go); BodyLimit is
		// only fasthttp's default for a request the HeaderReceived hook does not size.
		BodyLimit:                    s.Config.UploadLimit + formOverhead,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  readTimeout,
		WriteTimeout:                 5 * time.Minute,
		IdleTimeout:                  2 * time.Minute,
		ReadBufferSize:               16 << 10,
		// A page of 20 projects is about 6 KB: with the default 4 KB buffer every such answer
		// took two write calls.
		WriteBufferSize: 32 << 10,
		// goccy/go-json writes the same JSON as encoding/json (HTML-escaped, sorted map keys)
		// without re-validating what time.Time and json.RawMessage marshal to, which was a
		// fifth of the instructions of a projects listing.
		JSONEncoder: gojson.Marshal,
	})
	s.serverHooks(app.Server())
	if s.Metrics == nil {
		s.Metrics = s.defaultMetrics()
	}
	if s.FileURLs == nil {
		s.FileURLs = fileurl.New(s.Config.JWTSecret, s.Config.FileURLTTL)
	}
	app.Use(s.requestHeaders, s.recoverPanics, s.logRequests, s.countRequests, s.limitBodies, latchFaults)
	if len(s.Config.CORSAllowOrigins) > 0 {
		// Before every route and group, so a preflight is answered without a token.
		app.Use(s.cors())
	}
	app.Use(s.cleanInput)
	s.rootOperations(newTypedAPI(app, ""))

	public := app.Group("/api")
	s.publicOperations(newTypedAPI(public, "/api"))
	s.callbackOperations(newTypedAPI(app, ""))
	if s.Content != nil {
		s.fileOperations(newTypedAPI(app, ""))
	}

	api := app.Group("/api", s.signFileURLs, s.authenticate, s.userRateLimit, s.uploadForm, s.idempotency)
	s.typedOperations(newTypedAPI(api, "/api"))

	app.Use(func(c *fiber.Ctx) error { return errNoRoute })
	s.routes, s.groups = map[string]bool{}, map[string]bool{}
	for _, r := range app.GetRoutes(true) {
		s.routes[r.Path] = true
	}
	for _, r := range app.GetRoutes(false) {
		if !s.routes[r.Path] {
			s.groups[r.Path] = true
		}
	}
	return app
}

// Shutdown stops taking requests and waits for those in flight, up to the configured timeout.
func Shutdown(app *fiber.App, timeout time.Duration) error {
	return app.ShutdownWithTimeout(timeout)
}

func (s *Server) ctx(c *fiber.Ctx) context.Context { return c.UserContext() }
