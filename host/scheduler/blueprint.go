package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/store"
)

// BlueprintStore is what SyncBlueprint needs of the store.
type BlueprintStore interface {
	Now() time.Time
	ReplaceStrategyTasks(ctx context.Context, projectID string, tasks []store.StrategyTask) error
}

// SyncBlueprint makes the dated tasks of a project's blueprint its strategy tasks, replacing the
// earlier ones. Call it whenever a blueprint is set (PUT /api/projects/:id, the strategy
// diagnosis). A null or empty blueprint removes them.
//
// The blueprint is an object holding tasks under "tasks", or days under "days" (or "calendar"),
// each a task or {date|day, tasks: [...]}. A task has id, date (YYYY-MM-DD; or day n, counted from
// the blueprint's start_date or today), workflow_id, summary, platform, priority (high, medium,
// low) and optional inputs. Missing ids are derived from the date and position.
func SyncBlueprint(ctx context.Context, st BlueprintStore, projectID string, blueprint json.RawMessage) error {
	tasks := ParseBlueprint(blueprint, st.Now())
	if err := st.ReplaceStrategyTasks(ctx, projectID, tasks); err != nil {
		return fmt.Errorf("scheduler: sync blueprint: %w", err)
	}
	return nil
}

// ParseBlueprint returns the strategy tasks of a blueprint (see SyncBlueprint); now dates
// day-numbered tasks when the blueprint has no start_date.
func ParseBlueprint(blueprint json.RawMessage, now time.Time) []store.StrategyTask {
	var bp map[string]any
	if len(blueprint) == 0 || json.Unmarshal(blueprint, &bp) != nil || bp == nil {
		return nil
	}
	start := now.UTC().Truncate(24 * time.Hour)
	if d, ok := parseDate(str(bp, "start_date", "startDate")); ok {
		start = d
	}
	p := &parser{start: start, ids: map[string]int{}}
	p.list(bp["tasks"], nil)
	for _, key := range []string{"days", "calendar"} {
		days, _ := bp[key].([]any)
		for i, d := range days {
			day, ok := d.(map[string]any)
			if !ok {
				continue
			}
			if inner, ok := day["tasks"].([]any); ok {
				if _, has := day["day"]; !has {
					day["day"] = float64(i + 1)
				}
				p.list(inner, day)
			} else {
				p.task(day, nil)
			}
		}
	}
	return p.out
}

type parser struct {
	start time.Time
	ids   map[string]int
	out   []store.StrategyTask
}

func (p *parser) list(v any, day map[string]any) {
	items, _ := v.([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			p.task(m, day)
		}
	}
}

func (p *parser) task(m, day map[string]any) {
	due, ok := p.date(m)
	if !ok && day != nil {
		due, ok = p.date(day)
	}
	if !ok {
		return // an undated task is not a scheduled one
	}
	t := store.StrategyTask{
		WorkflowID: str(m, "workflow_id", "workflowId", "workflow"),
		Summary:    str(m, "summary", "title", "task", "description", "content"),
		Platform:   str(m, "platform"),
		DueDate:    due,
		Priority:   strings.ToLower(str(m, "priority")),
	}
	if t.WorkflowID == "" {
		t.WorkflowID = "video"
	}
	if t.Platform == "" && day != nil {
		t.Platform = str(day, "platform")
	}
	switch t.Priority {
	case store.PriorityHigh, store.PriorityMedium, store.PriorityLow:
	default:
		t.Priority = store.PriorityMedium
	}
	if in, ok := m["inputs"].(map[string]any); ok {
		if b, err := json.Marshal(in); err == nil {
			t.Inputs = b
		}
	}
	id := str(m, "id", "task_id", "taskId")
	if id == "" {
		id = fmt.Sprintf("%s-%d", due, len(p.out)+1)
	}
	// A repeated id gets the first free suffix: a task's key is its id in the project, and a
	// suffixed id may be another task's own ("a-2", "a", "a" make "a-2", "a", "a-3").
	if n := p.ids[id]; n > 0 {
		base := id
		for k := n + 1; ; k++ {
			if id = fmt.Sprintf("%s-%d", base, k); p.ids[id] == 0 {
				p.ids[base] = k
				break
			}
		}
	}
	p.ids[id]++
	t.TaskID = id
	p.out = append(p.out, t)
}

func (p *parser) date(m map[string]any) (string, bool) {
	if d, ok := parseDate(str(m, "date", "due_date", "dueDate", "scheduled_date")); ok {
		return d.Format(time.DateOnly), true
	}
	if n, ok := num(m["day"]); ok && n >= 1 {
		return p.start.AddDate(0, 0, n-1).Format(time.DateOnly), true
	}
	return "", false
}

func parseDate(s string) (time.Time, bool) {
	if len(s) < 10 {
		return time.Time{}, false
	}
	d, err := time.Parse(time.DateOnly, s[:10])
	return d, err == nil
}

// str returns the first non-empty string (or number, as text) under keys.
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if s := strings.TrimSpace(v); s != "" {
				return s
			}
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ""
}

func num(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		return int(x), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}
