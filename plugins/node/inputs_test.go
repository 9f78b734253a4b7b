package node_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// TestDeclaredInputsReachTheirSteps: for every shipped workflow the node engine runs, each input
// its manifest declares reaches at least one step (the cast of short_drama, the material of a
// video, ...): a run with a marker in every input finds each marker in some step's inputs or in a
// job's request.
func TestDeclaredInputsReachTheirSteps(t *testing.T) {
	t.Parallel()
	reg, err := manifest.Load(filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range reg.List() {
		if len(m.Steps) == 0 {
			continue
		}
		t.Run(m.ID, func(t *testing.T) {
			t.Parallel()
			for i, f := range m.Inputs {
				// The input alone (with the content the manifest requires, when it is not that).
				inputs := map[string]any{}
				if len(m.RequiredAny) > 0 && !slices.Contains(m.RequiredAny, f.Name) {
					inputs[m.RequiredAny[0]] = "coffee"
				}
				var mark string
				switch f.Type {
				case manifest.TypeNumber:
					inputs[f.Name], mark = float64(17+i), fmt.Sprint(17+i)
				case manifest.TypeString:
					mark = fmt.Sprintf("mark%02d%s", i, f.Name)
					if f.Name == "platform" {
						mark = "douyin" // a value the templates act on
					}
					inputs[f.Name] = mark
				default:
					continue
				}
				h := &fakeHost{}
				res, err := node.New(node.Options{}).Run(t.Context(), h, &engine.RunRequest{RunID: "run-" + m.ID, Workflow: m.Workflow(),
					Attempt: 1, Inputs: inputs, User: engine.UserContext{UserID: "u", Role: "user"}})
				if err != nil || res == nil {
					t.Fatalf("Run(%v) = %+v, %v", inputs, res, err) // a failed run is fine: what reached its steps counts
				}
				var seen strings.Builder
				h.mu.Lock()
				for _, s := range h.steps {
					b, _ := json.Marshal(s.Inputs)
					seen.Write(b)
				}
				for _, j := range h.jobs {
					seen.Write(j.Request)
				}
				h.mu.Unlock()
				if !strings.Contains(seen.String(), mark) {
					t.Errorf("input %q (%s) reached no step", f.Name, mark)
				}
			}
		})
	}
}
