package engine

import (
	"encoding/json"
	"time"

	"github.com/reelforge/reelforge/sdk/engine/internal/enginepb"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// This file holds the toproto/fromproto conversions between the plain Go types of engine.go and
// the generated protobuf messages. Free-form values travel as JSON: nil encodes as empty bytes and
// empty bytes decode as nil. Numbers inside map[string]any come back as float64, as with any JSON.

func encodeJSON(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		if x == nil {
			return nil, nil
		}
	case json.RawMessage:
		return x, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errcode.E("engine.toproto", errcode.Validation, "value cannot be encoded as JSON", err)
	}
	return b, nil
}

func decodeMap(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, errcode.E("engine.fromproto", errcode.Validation, "value is not a JSON object", err)
	}
	return m, nil
}

func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func unixNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNS(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func optUnixNS(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	ns := t.UnixNano()
	return &ns
}

func fromOptUnixNS(ns *int64) *time.Time {
	if ns == nil {
		return nil
	}
	t := time.Unix(0, *ns).UTC()
	return &t
}

func toProtoInfo(in *Info) *enginepb.InfoResponse {
	return &enginepb.InfoResponse{Name: in.Name, Version: in.Version, ApiVersion: int32(in.APIVersion), Capabilities: in.Capabilities}
}

func fromProtoInfo(in *enginepb.InfoResponse) *Info {
	return &Info{Name: in.GetName(), Version: in.GetVersion(), APIVersion: int(in.GetApiVersion()), Capabilities: in.GetCapabilities()}
}

func toProtoWorkflow(w *Workflow) *enginepb.Workflow {
	out := &enginepb.Workflow{
		Id: w.ID, Name: w.Name, Version: w.Version, Engine: w.Engine,
		SettingsJson: w.Settings, TimeoutNs: int64(w.Timeout),
	}
	for _, s := range w.Steps {
		ps := &enginepb.Step{Id: s.ID, Name: s.Name, Agent: s.Agent, DependsOn: s.DependsOn, WithJson: s.With}
		if s.Retries != nil {
			r := int32(*s.Retries)
			ps.Retries = &r
		}
		out.Steps = append(out.Steps, ps)
	}
	return out
}

func fromProtoWorkflow(w *enginepb.Workflow) Workflow {
	out := Workflow{
		ID: w.GetId(), Name: w.GetName(), Version: w.GetVersion(), Engine: w.GetEngine(),
		Settings: raw(w.GetSettingsJson()), Timeout: time.Duration(w.GetTimeoutNs()),
	}
	for _, s := range w.GetSteps() {
		st := Step{ID: s.GetId(), Name: s.GetName(), Agent: s.GetAgent(), DependsOn: s.GetDependsOn(), With: raw(s.GetWithJson())}
		if s.Retries != nil {
			r := int(*s.Retries)
			st.Retries = &r
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

func toProtoRunRequest(r *RunRequest) (*enginepb.RunRequest, error) {
	inputs, err := encodeJSON(r.Inputs)
	if err != nil {
		return nil, err
	}
	resume, err := encodeJSON(r.ResumeInput)
	if err != nil {
		return nil, err
	}
	var completed map[string][]byte
	if r.Completed != nil {
		completed = make(map[string][]byte, len(r.Completed))
		for k, v := range r.Completed {
			completed[k] = v
		}
	}
	return &enginepb.RunRequest{
		RunId: r.RunID, Workflow: toProtoWorkflow(&r.Workflow), InputsJson: inputs,
		User:            &enginepb.UserContext{UserId: r.User.UserID, Username: r.User.Username, Role: r.User.Role},
		Project:         &enginepb.ProjectContext{ProjectId: r.Project.ProjectID, ProjectName: r.Project.ProjectName, StrategyTaskId: r.Project.StrategyTaskID},
		Completed:       completed,
		ResumeInputJson: resume, Attempt: int32(r.Attempt), CallbackUrl: r.CallbackURL, Degraded: r.Degraded,
		Credential: r.Credential,
	}, nil
}

func fromProtoRunRequest(r *enginepb.RunRequest) (*RunRequest, error) {
	inputs, err := decodeMap(r.GetInputsJson())
	if err != nil {
		return nil, err
	}
	resume, err := decodeMap(r.GetResumeInputJson())
	if err != nil {
		return nil, err
	}
	var completed map[string]json.RawMessage
	if r.GetCompleted() != nil {
		completed = make(map[string]json.RawMessage, len(r.GetCompleted()))
		for k, v := range r.GetCompleted() {
			completed[k] = json.RawMessage(v)
		}
	}
	u, p := r.GetUser(), r.GetProject()
	return &RunRequest{
		RunID: r.GetRunId(), Workflow: fromProtoWorkflow(r.GetWorkflow()), Inputs: inputs,
		User:        UserContext{UserID: u.GetUserId(), Username: u.GetUsername(), Role: u.GetRole()},
		Project:     ProjectContext{ProjectID: p.GetProjectId(), ProjectName: p.GetProjectName(), StrategyTaskID: p.GetStrategyTaskId()},
		Completed:   completed,
		ResumeInput: resume, Attempt: int(r.GetAttempt()), CallbackURL: r.GetCallbackUrl(), Degraded: r.GetDegraded(),
		Credential: r.GetCredential(),
	}, nil
}

func toProtoRunError(e *RunError) (*enginepb.RunError, error) {
	if e == nil {
		return nil, nil
	}
	d, err := encodeJSON(e.Details)
	if err != nil {
		return nil, err
	}
	return &enginepb.RunError{Code: e.Code, Message: e.Message, StepId: e.StepID, DetailsJson: d}, nil
}

func fromProtoRunError(e *enginepb.RunError) *RunError {
	if e == nil {
		return nil
	}
	out := &RunError{Code: e.GetCode(), Message: e.GetMessage(), StepID: e.GetStepId()}
	if d := raw(e.GetDetailsJson()); d != nil {
		out.Details = d
	}
	return out
}

func toProtoRunResult(r *RunResult) (*enginepb.RunResult, error) {
	if r == nil {
		return &enginepb.RunResult{}, nil
	}
	outputs, err := encodeJSON(r.Outputs)
	if err != nil {
		return nil, err
	}
	re, err := toProtoRunError(r.Error)
	if err != nil {
		return nil, err
	}
	out := &enginepb.RunResult{Status: r.Status, OutputsJson: outputs, Error: re, Duplicate: r.Duplicate}
	if r.Awaiting != nil {
		out.Awaiting = &enginepb.Awaiting{StepId: r.Awaiting.StepID, Prompt: r.Awaiting.Prompt}
	}
	return out, nil
}

func fromProtoRunResult(r *enginepb.RunResult) (*RunResult, error) {
	outputs, err := decodeMap(r.GetOutputsJson())
	if err != nil {
		return nil, err
	}
	out := &RunResult{Status: r.GetStatus(), Outputs: outputs, Error: fromProtoRunError(r.GetError()), Duplicate: r.GetDuplicate()}
	if a := r.GetAwaiting(); a != nil {
		out.Awaiting = &Awaiting{StepID: a.GetStepId(), Prompt: a.GetPrompt()}
	}
	return out, nil
}

func toProtoJob(j *Job) (*enginepb.Job, error) {
	re, err := toProtoRunError(j.Error)
	if err != nil {
		return nil, err
	}
	return &enginepb.Job{
		JobId: j.JobID, RunId: j.RunID, Type: j.Type, Status: j.Status,
		RequestJson: j.Request, ResultJson: j.Result, Error: re,
		RetryCount: int32(j.RetryCount), MaxRetries: int32(j.MaxRetries),
		CreatedAtUnixNs: unixNS(j.CreatedAt), TimeoutAtUnixNs: unixNS(j.TimeoutAt),
		ResolvedAtUnixNs: optUnixNS(j.ResolvedAt),
	}, nil
}

func fromProtoJob(j *enginepb.Job) *Job {
	return &Job{
		JobID: j.GetJobId(), RunID: j.GetRunId(), Type: j.GetType(), Status: j.GetStatus(),
		Request: raw(j.GetRequestJson()), Result: raw(j.GetResultJson()), Error: fromProtoRunError(j.GetError()),
		RetryCount: int(j.GetRetryCount()), MaxRetries: int(j.GetMaxRetries()),
		CreatedAt: fromUnixNS(j.GetCreatedAtUnixNs()), TimeoutAt: fromUnixNS(j.GetTimeoutAtUnixNs()),
		ResolvedAt: fromOptUnixNS(j.ResolvedAtUnixNs),
	}
}

func toProtoCallbackRequest(r *CallbackRequest) (*enginepb.CallbackRequest, error) {
	j, err := toProtoJob(&r.Job)
	if err != nil {
		return nil, err
	}
	return &enginepb.CallbackRequest{RunId: r.RunID, Job: j, Kind: r.Kind, PayloadJson: r.Payload}, nil
}

func fromProtoCallbackRequest(r *enginepb.CallbackRequest) *CallbackRequest {
	return &CallbackRequest{RunID: r.GetRunId(), Job: *fromProtoJob(r.GetJob()), Kind: r.GetKind(), Payload: raw(r.GetPayloadJson())}
}

func toProtoTraceStep(s *TraceStep) (*enginepb.TraceStep, error) {
	inputs, err := encodeJSON(s.Inputs)
	if err != nil {
		return nil, err
	}
	outputs, err := encodeJSON(s.Outputs)
	if err != nil {
		return nil, err
	}
	out := &enginepb.TraceStep{
		StepId: s.StepID, StepName: s.StepName, Agent: s.Agent, Status: s.Status,
		InputsJson: inputs, OutputsJson: outputs,
		StartedAtUnixNs: optUnixNS(s.StartedAt), CompletedAtUnixNs: optUnixNS(s.CompletedAt),
		DurationMs: s.DurationMS, Confidence: s.Confidence, TokensUsed: s.TokensUsed, CostUsd: s.CostUSD,
		Engine: s.Engine, Degraded: s.Degraded,
	}
	if s.Error != nil {
		out.Error = &enginepb.StepError{Code: s.Error.Code, Message: s.Error.Message}
	}
	return out, nil
}

func fromProtoTraceStep(s *enginepb.TraceStep) (TraceStep, error) {
	inputs, err := decodeMap(s.GetInputsJson())
	if err != nil {
		return TraceStep{}, err
	}
	outputs, err := decodeMap(s.GetOutputsJson())
	if err != nil {
		return TraceStep{}, err
	}
	out := TraceStep{
		StepID: s.GetStepId(), StepName: s.GetStepName(), Agent: s.GetAgent(), Status: s.GetStatus(),
		Inputs: inputs, Outputs: outputs,
		StartedAt: fromOptUnixNS(s.StartedAtUnixNs), CompletedAt: fromOptUnixNS(s.CompletedAtUnixNs),
		DurationMS: s.DurationMs, Confidence: s.Confidence, TokensUsed: s.TokensUsed, CostUSD: s.CostUsd,
		Engine: s.GetEngine(), Degraded: s.GetDegraded(),
	}
	if e := s.GetError(); e != nil {
		out.Error = &StepError{Code: e.GetCode(), Message: e.GetMessage()}
	}
	return out, nil
}

func toProtoSearchHits(hits []SearchHit) *enginepb.SearchResponse {
	out := &enginepb.SearchResponse{Hits: make([]*enginepb.SearchHit, 0, len(hits))}
	for _, h := range hits {
		out.Hits = append(out.Hits, &enginepb.SearchHit{ChunkId: h.ChunkID, ChunkText: h.ChunkText, Heading: h.Heading,
			SourceName: h.SourceName, Document: h.Document, Score: h.Score})
	}
	return out
}

func fromProtoSearchHits(r *enginepb.SearchResponse) []SearchHit {
	out := make([]SearchHit, 0, len(r.GetHits()))
	for _, h := range r.GetHits() {
		out = append(out, SearchHit{ChunkID: h.GetChunkId(), ChunkText: h.GetChunkText(), Heading: h.GetHeading(),
			SourceName: h.GetSourceName(), Document: h.GetDocument(), Score: h.GetScore()})
	}
	return out
}

func toProtoGenerateResult(r *GenerateResult) *enginepb.GenerateResult {
	if r == nil {
		return &enginepb.GenerateResult{}
	}
	return &enginepb.GenerateResult{Text: r.Text, Ok: r.OK, TokensUsed: r.TokensUsed, CostUsd: r.CostUSD, Model: r.Model}
}

func fromProtoGenerateResult(r *enginepb.GenerateResult) *GenerateResult {
	return &GenerateResult{Text: r.GetText(), OK: r.GetOk(), TokensUsed: r.GetTokensUsed(), CostUSD: r.GetCostUsd(), Model: r.GetModel()}
}
