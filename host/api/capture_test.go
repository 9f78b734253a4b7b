package api_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
)

// TestCaptureTasks: the shoots convert-to-task makes can be listed (by status), read, completed
// (emitting task.completed) and cancelled by their owner only; a task no longer pending is 409.
func TestCaptureTasks(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setupContent(t, d.open, 0)
			a, _ := b.user("cap-owner")
			other, _ := b.user("cap-other")
			var ids []string
			for _, text := range []string{"a shot idea", "another shot idea"} {
				r := b.do("POST", "/api/inspiration/collect", a, map[string]any{"type": "text", "content": text})
				if r.status != 201 {
					t.Fatalf("collect = %d %s", r.status, r.raw)
				}
				insp, _ := r.data("id").(string)
				if insp == "" {
					insp, _ = r.data("corpus").(map[string]any)["id"].(string)
				}
				r = b.do("POST", "/api/inspiration/"+insp+"/convert-to-task", a, nil)
				if r.status != 201 {
					t.Fatalf("convert = %d %s", r.status, r.raw)
				}
				ids = append(ids, r.data("task_id").(string))
			}
			if r := b.do("GET", "/api/capture-tasks", a, nil); r.status != 200 || r.body["total"] != 2.0 {
				t.Errorf("owner's list = %d %s, want 2 tasks", r.status, r.raw)
			}
			if r := b.do("GET", "/api/capture-tasks", other, nil); r.status != 200 || r.body["total"] != 0.0 {
				t.Errorf("another user's list = %d %s, want none", r.status, r.raw)
			}
			if r := b.do("GET", "/api/capture-tasks/"+ids[0], a, nil); r.status != 200 || r.data("task").(map[string]any)["status"] != "pending" {
				t.Errorf("read = %d %s", r.status, r.raw)
			}
			for _, path := range []string{"/api/capture-tasks/" + ids[0], "/api/capture-tasks/" + uuid.NewString()} {
				if r := b.do("GET", path, other, nil); r.status != 404 {
					t.Errorf("GET %s by another user = %d, want 404", path, r.status)
				}
			}
			if r := b.do("POST", "/api/capture-tasks/"+ids[0]+"/complete", other, nil); r.status != 404 {
				t.Errorf("another user completes = %d, want 404", r.status)
			}
			if r := b.do("POST", "/api/capture-tasks/"+ids[0]+"/complete", a, nil); r.status != 200 || r.data("task").(map[string]any)["status"] != "completed" {
				t.Errorf("complete = %d %s", r.status, r.raw)
			}
			if r := b.do("POST", "/api/capture-tasks/"+ids[0]+"/cancel", a, nil); r.status != 409 {
				t.Errorf("cancel a completed task = %d %s, want 409", r.status, r.raw)
			}
			if r := b.do("POST", "/api/capture-tasks/"+ids[1]+"/cancel", a, nil); r.status != 200 || r.data("task").(map[string]any)["status"] != "cancelled" {
				t.Errorf("cancel = %d %s", r.status, r.raw)
			}
			if r := b.do("GET", "/api/capture-tasks?status=completed", a, nil); r.body["total"] != 1.0 {
				t.Errorf("completed tasks = %s, want 1", r.raw)
			}
			if r := b.do("GET", "/api/capture-tasks?status=done", a, nil); r.status != 400 {
				t.Errorf("unknown status filter = %d, want 400", r.status)
			}
			evs, err := b.st.ClaimOutboxEvents(context.Background(), &store.ClaimOutboxParams{Limit: 100, Token: uuid.NewString(),
				Lease: 60e9})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range evs {
				if e.Event == "task.completed" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("task.completed events = %d, want 1 (the completed shoot)", n)
			}
		})
	}
}
