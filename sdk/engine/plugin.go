package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reelforge/reelforge/sdk/engine/internal/enginepb"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// APIVersion is the version of the engine protocol (sdk/proto/engine/v1) this SDK speaks. It is
// go-plugin's protocol version in the handshake and the key of VersionedPlugins.
const APIVersion = 1

// PluginName is the name under which the engine is registered in go-plugin's plugin set.
const PluginName = "engine"

// Handshake is the go-plugin handshake shared by the host and every engine plugin. The magic
// cookie is a UX feature, not security: it only stops a user from running a plugin binary by hand
// by mistake. Integrity comes from the sha256 check (SecureConfig) and AutoMTLS.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  APIVersion,
	MagicCookieKey:   "REELFORGE_PLUGIN",
	MagicCookieValue: "8b1d0f5e-reelforge-engine-plugin",
}

// GRPCPlugin is the go-plugin adapter of an Engine, used on both sides of the connection. In a
// plugin, Impl is the engine it serves. In the host, Host is the default Host answering the
// plugin's callbacks for calls made with a nil Host. Most code uses Serve and NewClient instead;
// GRPCPlugin is exported for harnesses such as enginetest.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Engine
	Host Host
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// PluginSets returns the VersionedPlugins map holding p under PluginName for APIVersion.
func PluginSets(p *GRPCPlugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{APIVersion: {PluginName: p}}
}

// GRPCServer registers the Engine service of p.Impl (plugin side).
func (p *GRPCPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("engine: GRPCPlugin.Impl is nil")
	}
	enginepb.RegisterEngineServer(s, &engineServer{impl: p.Impl, broker: broker})
	return nil
}

// GRPCClient connects to the plugin's Engine service (host side). It starts, once for this
// connection, a broker server answering the Host service, and tells the plugin its id with Init.
// That server's goroutine exits when the connection's broker closes (the client is killed or the
// plugin exits).
func (p *GRPCPlugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	router := &hostRouter{fallback: p.Host}
	id := broker.NextId()
	go broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := newGRPCServer(opts)
		enginepb.RegisterHostServer(s, router)
		return s
	})
	client := enginepb.NewEngineClient(conn)
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := client.Init(ictx, &enginepb.InitRequest{HostBrokerId: id}); err != nil {
		return nil, fromStatus("engine.Init", "engine plugin", err)
	}
	return &remoteEngine{client: client, router: router}, nil
}

// newGRPCServer is the gRPC server of both ends of an engine connection: the plugin's Engine
// service (Serve) and the host's Host service (GRPCClient). Its calls run on a pool of goroutines
// (grpc.NumStreamWorkers) rather than a new goroutine each: a handler then starts on a stack that
// earlier calls grew, instead of growing (copying) a fresh one on every call, which was a visible
// share of the host's CPU in make bench's plugin-routed runs. When every worker is busy (long
// calls such as WaitJob), gRPC starts a goroutine for the call as before.
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpc.NumStreamWorkers(uint32(4*runtime.GOMAXPROCS(0))))...)
}

// engineServer serves an Engine over gRPC inside the plugin.
type engineServer struct {
	enginepb.UnimplementedEngineServer
	impl   Engine
	broker *plugin.GRPCBroker

	mu   sync.Mutex
	conn *grpc.ClientConn
	host enginepb.HostClient
}

func (s *engineServer) Init(ctx context.Context, req *enginepb.InitRequest) (*enginepb.InitResponse, error) {
	conn, err := s.broker.Dial(req.GetHostBrokerId())
	if err != nil {
		return nil, toStatus(errcode.E("engine.Init", errcode.ExternalService, "cannot reach the host's callback service", err))
	}
	s.mu.Lock()
	old := s.conn
	s.conn, s.host = conn, enginepb.NewHostClient(conn)
	s.mu.Unlock()
	if old != nil {
		_ = old.Close() // a second Init replaces the first connection; its close error is moot
	}
	return &enginepb.InitResponse{}, nil
}

func (s *engineServer) hostFor(callID uint64) Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &remoteHost{client: s.host, callID: callID}
}

func (s *engineServer) Info(ctx context.Context, _ *enginepb.InfoRequest) (*enginepb.InfoResponse, error) {
	info, err := s.impl.Info(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return toProtoInfo(info), nil
}

func (s *engineServer) Run(ctx context.Context, req *enginepb.RunRequest) (*enginepb.RunResult, error) {
	r, err := fromProtoRunRequest(req)
	if err != nil {
		return nil, toStatus(err)
	}
	res, err := s.impl.Run(ctx, s.hostFor(req.GetCallId()), r)
	if err != nil {
		return nil, toStatus(err)
	}
	out, err := toProtoRunResult(res)
	return out, toStatus(err)
}

func (s *engineServer) Callback(ctx context.Context, req *enginepb.CallbackRequest) (*enginepb.RunResult, error) {
	res, err := s.impl.Callback(ctx, s.hostFor(req.GetCallId()), fromProtoCallbackRequest(req))
	if err != nil {
		return nil, toStatus(err)
	}
	out, err := toProtoRunResult(res)
	return out, toStatus(err)
}

func (s *engineServer) Cancel(ctx context.Context, req *enginepb.CancelRequest) (*enginepb.CancelResponse, error) {
	err := s.impl.Cancel(ctx, &CancelRequest{RunID: req.GetRunId(), JobIDs: req.GetJobIds()})
	return &enginepb.CancelResponse{}, toStatus(err)
}

func (s *engineServer) Health(ctx context.Context, _ *enginepb.HealthRequest) (*enginepb.HealthResponse, error) {
	return &enginepb.HealthResponse{}, toStatus(s.impl.Health(ctx))
}

// remoteHost is the Host a plugin's engine sees: it calls the host over the one broker connection
// and tags each request with the call id of the Run or Callback it serves.
type remoteHost struct {
	client enginepb.HostClient // nil when the host never called Init
	callID uint64
}

var _ Host = (*remoteHost)(nil)

const hostPeer = "host"

func (h *remoteHost) ready(op string) error {
	if h.client == nil {
		return errcode.E(op, errcode.ExternalService, "host callback service not connected", nil)
	}
	return nil
}

func (h *remoteHost) ReportStep(ctx context.Context, runID string, step TraceStep) error {
	const op = "engine.Host.ReportStep"
	if err := h.ready(op); err != nil {
		return err
	}
	ps, err := toProtoTraceStep(&step)
	if err != nil {
		return err
	}
	_, err = h.client.ReportStep(ctx, &enginepb.ReportStepRequest{CallId: h.callID, RunId: runID, Step: ps})
	return fromStatus(op, hostPeer, err)
}

func (h *remoteHost) ReportProgress(ctx context.Context, runID string, progress float64, currentStep string) error {
	const op = "engine.Host.ReportProgress"
	if err := h.ready(op); err != nil {
		return err
	}
	_, err := h.client.ReportProgress(ctx, &enginepb.ReportProgressRequest{CallId: h.callID, RunId: runID, Progress: progress, CurrentStep: currentStep})
	return fromStatus(op, hostPeer, err)
}

func (h *remoteHost) CreateJob(ctx context.Context, req *JobRequest) (*Job, error) {
	const op = "engine.Host.CreateJob"
	if err := h.ready(op); err != nil {
		return nil, err
	}
	j, err := h.client.CreateJob(ctx, &enginepb.CreateJobRequest{CallId: h.callID, RunId: req.RunID, StepId: req.StepID,
		Type: req.Type, RequestJson: req.Request, Dispatch: req.Dispatch})
	if err != nil {
		return nil, fromStatus(op, hostPeer, err)
	}
	return fromProtoJob(j), nil
}

func (h *remoteHost) WaitJob(ctx context.Context, jobID string) (*Job, error) {
	const op = "engine.Host.WaitJob"
	if err := h.ready(op); err != nil {
		return nil, err
	}
	j, err := h.client.WaitJob(ctx, &enginepb.WaitJobRequest{CallId: h.callID, JobId: jobID})
	if err != nil {
		return nil, fromStatus(op, hostPeer, err)
	}
	return fromProtoJob(j), nil
}

func (h *remoteHost) Search(ctx context.Context, req *SearchRequest) ([]SearchHit, error) {
	const op = "engine.Host.Search"
	if err := h.ready(op); err != nil {
		return nil, err
	}
	r, err := h.client.Search(ctx, &enginepb.SearchRequest{CallId: h.callID, UserId: req.UserID, ProjectId: req.ProjectID,
		Query: req.Query, TopK: int32(req.TopK), Ground: req.Ground})
	if err != nil {
		return nil, fromStatus(op, hostPeer, err)
	}
	return fromProtoSearchHits(r), nil
}

func (h *remoteHost) Generate(ctx context.Context, req *GenerateRequest) (*GenerateResult, error) {
	const op = "engine.Host.Generate"
	if err := h.ready(op); err != nil {
		return nil, err
	}
	r, err := h.client.Generate(ctx, &enginepb.GenerateRequest{CallId: h.callID, System: req.System, Prompt: req.Prompt,
		MaxTokens: int32(req.MaxTokens)})
	if err != nil {
		return nil, fromStatus(op, hostPeer, err)
	}
	return fromProtoGenerateResult(r), nil
}

// hostRouter serves the Host service in the host process. Each Run or Callback registers the Host
// given to it under a fresh call id for the length of the call; requests carrying id 0 (or an id
// no longer registered) go to the fallback Host.
type hostRouter struct {
	enginepb.UnimplementedHostServer
	fallback Host
	next     atomic.Uint64
	calls    sync.Map // uint64 -> Host
}

func (r *hostRouter) register(h Host) (id uint64, release func()) {
	if h == nil {
		return 0, func() {}
	}
	id = r.next.Add(1)
	r.calls.Store(id, h)
	return id, func() { r.calls.Delete(id) }
}

func (r *hostRouter) host(op string, id uint64) (Host, error) {
	if id != 0 {
		if h, ok := r.calls.Load(id); ok {
			return h.(Host), nil
		}
	}
	if r.fallback == nil {
		return nil, toStatus(errcode.E(op, errcode.WorkflowInvalidState, "no host for this call (it has ended)", nil))
	}
	return r.fallback, nil
}

func (r *hostRouter) ReportStep(ctx context.Context, req *enginepb.ReportStepRequest) (*enginepb.Empty, error) {
	h, err := r.host("host.ReportStep", req.GetCallId())
	if err != nil {
		return nil, err
	}
	step, err := fromProtoTraceStep(req.GetStep())
	if err != nil {
		return nil, toStatus(err)
	}
	return &enginepb.Empty{}, toStatus(h.ReportStep(ctx, req.GetRunId(), step))
}

func (r *hostRouter) ReportProgress(ctx context.Context, req *enginepb.ReportProgressRequest) (*enginepb.Empty, error) {
	h, err := r.host("host.ReportProgress", req.GetCallId())
	if err != nil {
		return nil, err
	}
	return &enginepb.Empty{}, toStatus(h.ReportProgress(ctx, req.GetRunId(), req.GetProgress(), req.GetCurrentStep()))
}

func (r *hostRouter) CreateJob(ctx context.Context, req *enginepb.CreateJobRequest) (*enginepb.Job, error) {
	h, err := r.host("host.CreateJob", req.GetCallId())
	if err != nil {
		return nil, err
	}
	j, err := h.CreateJob(ctx, &JobRequest{RunID: req.GetRunId(), StepID: req.GetStepId(), Type: req.GetType(),
		Request: raw(req.GetRequestJson()), Dispatch: req.GetDispatch()})
	if err != nil {
		return nil, toStatus(err)
	}
	out, err := toProtoJob(j)
	return out, toStatus(err)
}

func (r *hostRouter) WaitJob(ctx context.Context, req *enginepb.WaitJobRequest) (*enginepb.Job, error) {
	h, err := r.host("host.WaitJob", req.GetCallId())
	if err != nil {
		return nil, err
	}
	j, err := h.WaitJob(ctx, req.GetJobId())
	if err != nil {
		return nil, toStatus(err)
	}
	out, err := toProtoJob(j)
	return out, toStatus(err)
}

func (r *hostRouter) Search(ctx context.Context, req *enginepb.SearchRequest) (*enginepb.SearchResponse, error) {
	h, err := r.host("host.Search", req.GetCallId())
	if err != nil {
		return nil, err
	}
	hits, err := h.Search(ctx, &SearchRequest{UserID: req.GetUserId(), ProjectID: req.GetProjectId(), Query: req.GetQuery(), TopK: int(req.GetTopK()), Ground: req.GetGround()})
	if err != nil {
		return nil, toStatus(err)
	}
	return toProtoSearchHits(hits), nil
}

func (r *hostRouter) Generate(ctx context.Context, req *enginepb.GenerateRequest) (*enginepb.GenerateResult, error) {
	h, err := r.host("host.Generate", req.GetCallId())
	if err != nil {
		return nil, err
	}
	res, err := h.Generate(ctx, &GenerateRequest{System: req.GetSystem(), Prompt: req.GetPrompt(), MaxTokens: int(req.GetMaxTokens())})
	if err != nil {
		return nil, toStatus(err)
	}
	return toProtoGenerateResult(res), nil
}

// callErr converts the error of a call to the plugin. A call that ended cancelled while the caller's
// context was not is a connection torn down under it (the plugin was killed, its client closed):
// the plugin is unavailable (EXTERNAL_SERVICE_ERROR, so the host falls back), the run was not
// cancelled.
func callErr(ctx context.Context, op string, err error) error {
	if err != nil && ctx.Err() == nil {
		// An engine's own WORKFLOW_CANCELLED carries its code (ErrorInfo); a torn-down connection
		// carries none.
		if st, ok := status.FromError(err); ok && st.Code() == codes.Canceled && len(st.Details()) == 0 {
			return errcode.E(op, errcode.ExternalService, enginePeer+" unavailable", err)
		}
	}
	return fromStatus(op, enginePeer, err)
}

// remoteEngine is the Engine the host sees: every method is one gRPC call to the plugin.
type remoteEngine struct {
	client enginepb.EngineClient
	router *hostRouter
}

var _ Engine = (*remoteEngine)(nil)

const enginePeer = "engine plugin"

func (e *remoteEngine) Info(ctx context.Context) (*Info, error) {
	r, err := e.client.Info(ctx, &enginepb.InfoRequest{})
	if err != nil {
		return nil, callErr(ctx, "engine.Info", err)
	}
	return fromProtoInfo(r), nil
}

func (e *remoteEngine) Run(ctx context.Context, h Host, req *RunRequest) (*RunResult, error) {
	const op = "engine.Run"
	pr, err := toProtoRunRequest(req)
	if err != nil {
		return nil, err
	}
	id, release := e.router.register(h)
	defer release()
	pr.CallId = id
	r, err := e.client.Run(ctx, pr)
	if err != nil {
		return nil, callErr(ctx, op, err)
	}
	return fromProtoRunResult(r)
}

func (e *remoteEngine) Callback(ctx context.Context, h Host, req *CallbackRequest) (*RunResult, error) {
	const op = "engine.Callback"
	pr, err := toProtoCallbackRequest(req)
	if err != nil {
		return nil, err
	}
	id, release := e.router.register(h)
	defer release()
	pr.CallId = id
	r, err := e.client.Callback(ctx, pr)
	if err != nil {
		return nil, callErr(ctx, op, err)
	}
	return fromProtoRunResult(r)
}

func (e *remoteEngine) Cancel(ctx context.Context, req *CancelRequest) error {
	_, err := e.client.Cancel(ctx, &enginepb.CancelRequest{RunId: req.RunID, JobIds: req.JobIDs})
	return callErr(ctx, "engine.Cancel", err)
}

func (e *remoteEngine) Health(ctx context.Context) error {
	_, err := e.client.Health(ctx, &enginepb.HealthRequest{})
	return callErr(ctx, "engine.Health", err)
}
