package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// maxBatchItems bounds the items of one batch call.
const maxBatchItems = 20

// batchOperations declares the named-only batch routes (typed: operations.go): POST
// /api/batch/collect {urls, project_id?} collects links as inspirations, POST /api/batch/run
// {workflow, items: [inputs], project_id?} starts one run per item, GET /api/batch/{id}/status
// reports the items (runs refreshed).
func (s *Server) batchOperations(api huma.API) {
	const tag = "Workflow"
	register(api, op{Method: "POST", Path: "/api/batch/collect", Tag: tag, Summary: "Collect up to 20 links as inspirations",
		Status: 201, Errors: []int{403}}, s.batchCollect)
	register(api, op{Method: "POST", Path: "/api/batch/run", Tag: tag, Summary: "Start one run per item (up to 20)",
		Status: 201, Errors: []int{403, 404}}, s.batchRun)
	register(api, op{Method: "GET", Path: "/api/batch/{id}/status", Tag: tag, Summary: "A batch with its items refreshed",
		Errors: []int{404}}, s.batchStatus)
}

// batchItem is one item of a batch.
type batchItem struct {
	Index         int     `json:"index"`
	URL           string  `json:"url,omitempty"`
	InspirationID string  `json:"inspiration_id,omitempty"`
	Platform      string  `json:"platform,omitempty"`
	RunID         string  `json:"run_id,omitempty"`
	Workflow      string  `json:"workflow,omitempty"`
	Status        string  `json:"status"` // collect: completed or failed; run: the run's status, or failed
	Progress      float64 `json:"progress,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// batchAnswer is a batch with its items.
type batchAnswer struct {
	BatchID   string         `json:"batch_id" format:"uuid"`
	Kind      string         `json:"kind" enum:"collect,run"`
	ProjectID string         `json:"project_id" doc:"empty when the batch names no project"`
	Status    string         `json:"status" enum:"running,completed,failed,partial"`
	Items     []batchItem    `json:"items"`
	Total     int            `json:"total"`
	Counts    map[string]int `json:"counts" doc:"items by status"`
	CreatedAt time.Time      `json:"created_at"`
}

func batchSummary(b *store.Batch, items []batchItem) batchAnswer {
	counts := map[string]int{}
	for _, it := range items {
		counts[it.Status]++
	}
	status := "completed"
	switch {
	case counts["pending"]+counts["running"]+counts["paused"] > 0:
		status = "running"
	case counts["completed"] == len(items):
		status = "completed"
	case counts["completed"] == 0:
		status = "failed"
	default:
		status = "partial"
	}
	return batchAnswer{BatchID: b.ID, Kind: b.Kind, ProjectID: b.ProjectID, Status: status, Items: items,
		Total: len(items), Counts: counts, CreatedAt: b.CreatedAt}
}

// doBatch does each of items with do, stores the batch and answers its summary. An item whose do
// fails with a coded error is failed with that error's message; any other error (a store failure)
// fails the call, not one item.
func (s *Server) doBatch(ctx context.Context, kind, projectID string, items []batchItem, do func(i int, it *batchItem) error) (*Data[batchAnswer], error) {
	for i := range items {
		if err := do(i, &items[i]); err != nil {
			if errcode.As(err) == nil {
				return nil, err
			}
			items[i].Status, items[i].Error = "failed", publicMessage(err)
		}
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("api: encode batch: %w", err)
	}
	b := &store.Batch{ID: uuid.NewString(), UserID: caller(ctx).UserID, ProjectID: projectID, Kind: kind, Items: raw}
	if err := s.Store.CreateBatch(ctx, b); err != nil {
		return nil, err
	}
	return answerData(batchSummary(b, items))
}

func publicMessage(err error) string {
	if e := errcode.As(err); e != nil {
		return e.Message()
	}
	return "internal error"
}

// The number of links or items is checked by the handlers: a batch's list may come under either
// of two names, and the limit is on the two together.
type batchCollectInput struct {
	Body *struct { // optional: without one, the links are missing (400)
		ProjectID  string   `json:"project_id,omitempty" doc:"a project of the caller's (403 otherwise)"`
		ProjectID2 string   `json:"projectId,omitempty" doc:"alias of project_id"`
		URLs       []string `json:"urls,omitempty" doc:"1 to 20 links (required, here or as links)"`
		Links      []string `json:"links,omitempty" doc:"alias of urls"`
	}
}

func (s *Server) batchCollect(ctx context.Context, in *batchCollectInput) (*Data[batchAnswer], error) {
	if s.Content == nil {
		return nil, errcode.New(errcode.ResourceExhausted, "Content collection is not available")
	}
	var urls []string
	var pid, pid2 string
	if b := in.Body; b != nil {
		urls, pid, pid2 = append(b.URLs, b.Links...), b.ProjectID, b.ProjectID2
	}
	if len(urls) == 0 {
		return nil, errcode.Invalid("urls", "is required (1 to 20 links)")
	}
	if len(urls) > maxBatchItems {
		return nil, errcode.Invalid("urls", fmt.Sprintf("at most %d links", maxBatchItems))
	}
	project, err := s.namedProjectID(ctx, pid, pid2)
	if err != nil {
		return nil, err
	}
	items := make([]batchItem, len(urls))
	for i, u := range urls {
		items[i] = batchItem{Index: i, URL: strings.TrimSpace(u), Status: "completed"}
	}
	return s.doBatch(ctx, store.BatchCollect, project, items, func(i int, it *batchItem) error {
		rec, _, err := s.Content.Collect(ctx, content.CollectInput{UserID: caller(ctx).UserID, ProjectID: project,
			Type: "link", Content: urls[i]})
		if err != nil {
			return err
		}
		it.InspirationID, it.Platform = rec.ID, rec.SourcePlatform
		return nil
	})
}

type batchRunInput struct {
	Body *struct { // optional: without one, the workflow is missing (400)
		ProjectID  string           `json:"project_id,omitempty" doc:"a project of the caller's (403 otherwise)"`
		ProjectID2 string           `json:"projectId,omitempty" doc:"alias of project_id"`
		Workflow   string           `json:"workflow,omitempty" maxLength:"100" doc:"manifest id (required, here or as workflow_id)"`
		WorkflowID string           `json:"workflow_id,omitempty" maxLength:"100" doc:"alias of workflow"`
		Items      []map[string]any `json:"items,omitempty" doc:"1 to 20: the inputs of one run each, at the top level or under inputs (required, here or as inputs)"`
		Inputs     []map[string]any `json:"inputs,omitempty" doc:"alias of items"`
	}
}

func (s *Server) batchRun(ctx context.Context, in *batchRunInput) (*Data[batchAnswer], error) {
	rs, err := s.runService()
	if err != nil {
		return nil, err
	}
	var wf, pid, pid2 string
	var list []map[string]any
	if b := in.Body; b != nil {
		wf, pid, pid2, list = firstSet(b.Workflow, b.WorkflowID), b.ProjectID, b.ProjectID2, append(b.Items, b.Inputs...)
	}
	if wf == "" {
		return nil, errcode.Invalid("workflow", "is required")
	}
	if len(list) == 0 {
		return nil, errcode.Invalid("items", fmt.Sprintf("is required (1 to %d input objects)", maxBatchItems))
	}
	if len(list) > maxBatchItems {
		return nil, errcode.Invalid("items", fmt.Sprintf("at most %d items", maxBatchItems))
	}
	if _, ok := rs.Manifests().Get(wf); !ok {
		return nil, errcode.New(errcode.WorkflowNotFound, "Workflow not found: "+wf)
	}
	project, err := s.namedProjectID(ctx, pid, pid2)
	if err != nil {
		return nil, err
	}
	items := make([]batchItem, len(list))
	for i := range list {
		items[i] = batchItem{Index: i, Workflow: wf}
	}
	return s.doBatch(ctx, store.BatchRun, project, items, func(i int, it *batchItem) error {
		inputs := list[i]
		if nested, ok := inputs["inputs"].(map[string]any); ok {
			inputs = nested
		}
		r, err := rs.Start(ctx, runs.StartParams{Workflow: wf, Inputs: inputs, User: caller(ctx), ProjectID: project,
			Trigger: store.TriggerAPI, TriggeredBy: "batch"})
		if err != nil {
			return err
		}
		it.RunID, it.Status = r.ID, r.Status
		return nil
	})
}

type batchPath struct {
	ID string `path:"id"`
}

func (s *Server) batchStatus(ctx context.Context, in *batchPath) (*Data[batchAnswer], error) {
	b, err := s.Store.GetBatch(ctx, in.ID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && b.UserID != caller(ctx).UserID) {
		return nil, errcode.New(errcode.NotFound, "Batch not found")
	}
	if err != nil {
		return nil, err
	}
	var items []batchItem
	if err := json.Unmarshal(b.Items, &items); err != nil {
		return nil, fmt.Errorf("api: decode batch %s: %w", b.ID, err)
	}
	if b.Kind == store.BatchRun && s.Runs != nil {
		for i := range items {
			if items[i].RunID == "" {
				continue
			}
			if r, err := s.Runs.Get(ctx, caller(ctx), items[i].RunID); err == nil {
				items[i].Status, items[i].Progress = r.Status, r.Progress
			}
		}
	}
	return answerData(batchSummary(b, items))
}
