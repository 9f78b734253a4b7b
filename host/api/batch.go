package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/runs"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// maxBatchItems bounds the items of one batch call.
const maxBatchItems = 20

// batchRoutes are the named-only batch routes: POST /api/batch/collect {urls, project_id?}
// collects links as inspirations, POST /api/batch/run {workflow, items: [inputs], project_id?}
// starts one run per item, GET /api/batch/:id/status reports the items (runs refreshed).
func (s *Server) batchRoutes(r fiber.Router) {
	if s.Content != nil {
		r.Post("/batch/collect", s.batchCollect)
	}
	if s.Runs != nil {
		r.Post("/batch/run", s.batchRun)
	}
	if s.Content != nil || s.Runs != nil {
		r.Get("/batch/:id/status", s.batchStatus)
	}
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

func batchSummary(b *store.Batch, items []batchItem) fiber.Map {
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
	return fiber.Map{"batch_id": b.ID, "kind": b.Kind, "project_id": b.ProjectID, "status": status, "items": items,
		"total": len(items), "counts": counts, "created_at": b.CreatedAt}
}

// doBatch does each of items with do, stores the batch and answers its summary. An item whose do
// fails with a coded error is failed with that error's message; any other error (a store failure)
// fails the call, not one item.
func (s *Server) doBatch(c *fiber.Ctx, kind, projectID string, items []batchItem, do func(i int, it *batchItem) error) error {
	for i := range items {
		if err := do(i, &items[i]); err != nil {
			if errcode.As(err) == nil {
				return err
			}
			items[i].Status, items[i].Error = "failed", publicMessage(err)
		}
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("api: encode batch: %w", err)
	}
	b := &store.Batch{ID: uuid.NewString(), UserID: principal(c).UserID, ProjectID: projectID, Kind: kind, Items: raw}
	if err := s.Store.CreateBatch(s.ctx(c), b); err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, batchSummary(b, items))
}

func publicMessage(err error) string {
	if e := errcode.As(err); e != nil {
		return e.Message()
	}
	return "internal error"
}

func (s *Server) batchCollect(c *fiber.Ctx) error {
	var in struct {
		projectRef
		URLs  []string `json:"urls"`
		Links []string `json:"links"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	urls := append(in.URLs, in.Links...)
	if len(urls) == 0 {
		return errcode.Invalid("urls", "is required (1 to 20 links)")
	}
	if len(urls) > maxBatchItems {
		return errcode.Invalid("urls", fmt.Sprintf("at most %d links", maxBatchItems))
	}
	pid, err := s.checkedProject(c, in.id())
	if err != nil {
		return err
	}
	items := make([]batchItem, len(urls))
	for i, u := range urls {
		items[i] = batchItem{Index: i, URL: strings.TrimSpace(u), Status: "completed"}
	}
	return s.doBatch(c, store.BatchCollect, pid, items, func(i int, it *batchItem) error {
		rec, _, err := s.Content.Collect(s.ctx(c), content.CollectInput{UserID: principal(c).UserID, ProjectID: pid,
			Type: "link", Content: urls[i]})
		if err != nil {
			return err
		}
		it.InspirationID, it.Platform = rec.ID, rec.SourcePlatform
		return nil
	})
}

func (s *Server) batchRun(c *fiber.Ctx) error {
	var in struct {
		projectRef
		Workflow   string           `json:"workflow"`
		WorkflowID string           `json:"workflow_id"`
		Items      []map[string]any `json:"items"`
		Inputs     []map[string]any `json:"inputs"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	wf := firstSet(in.Workflow, in.WorkflowID)
	if err := fieldLen("workflow", wf, true, 100); err != nil {
		return err
	}
	list := append(in.Items, in.Inputs...)
	if len(list) == 0 {
		return errcode.Invalid("items", fmt.Sprintf("is required (1 to %d input objects)", maxBatchItems))
	}
	if len(list) > maxBatchItems {
		return errcode.Invalid("items", fmt.Sprintf("at most %d items", maxBatchItems))
	}
	if _, ok := s.Runs.Manifests().Get(wf); !ok {
		return errcode.New(errcode.WorkflowNotFound, "Workflow not found: "+wf)
	}
	pid, err := s.checkedProject(c, in.id())
	if err != nil {
		return err
	}
	items := make([]batchItem, len(list))
	for i := range list {
		items[i] = batchItem{Index: i, Workflow: wf}
	}
	return s.doBatch(c, store.BatchRun, pid, items, func(i int, it *batchItem) error {
		inputs := list[i]
		if nested, ok := inputs["inputs"].(map[string]any); ok {
			inputs = nested
		}
		r, err := s.Runs.Start(s.ctx(c), runs.StartParams{Workflow: wf, Inputs: inputs, User: principal(c), ProjectID: pid,
			Trigger: store.TriggerAPI, TriggeredBy: "batch"})
		if err != nil {
			return err
		}
		it.RunID, it.Status = r.ID, r.Status
		return nil
	})
}

func (s *Server) batchStatus(c *fiber.Ctx) error {
	b, err := s.Store.GetBatch(s.ctx(c), c.Params("id"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && b.UserID != principal(c).UserID) {
		return errcode.New(errcode.NotFound, "Batch not found")
	}
	if err != nil {
		return err
	}
	var items []batchItem
	if err := json.Unmarshal(b.Items, &items); err != nil {
		return fmt.Errorf("api: decode batch %s: %w", b.ID, err)
	}
	if b.Kind == store.BatchRun && s.Runs != nil {
		for i := range items {
			if items[i].RunID == "" {
				continue
			}
			if r, err := s.Runs.Get(s.ctx(c), principal(c), items[i].RunID); err == nil {
				items[i].Status, items[i].Progress = r.Status, r.Progress
			}
		}
	}
	return ok(c, fiber.StatusOK, batchSummary(b, items))
}
