package app

import (
	"strings"
	"testing"

	"github.com/reelforge/reelforge/internal/extract"
)

// The answer of a kb_chat run without a chatflow tool (the engines' answer step) grounds and quotes by
// the rule of /api/knowledge/ask: the same question over the same notes gets the same sentences, or
// the same refusal, on both paths, in English and in Chinese (Chinese numerals are numbers: 四十五分钟
// answers 多长时间). Issue 39, item 7.
func TestAnswerStepFollowsAsk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the host with its plugins")
	}
	for name, dbURL := range map[string]func(t *testing.T) string{
		"sqlite":   func(*testing.T) string { return "" },
		"postgres": freshDatabase,
	} {
		t.Run(name, func(t *testing.T) {
			hh := startHost(t, dbURL(t))
			for _, text := range []string{
				"The Quorvath kiln needs forty minutes to heat up. It cools down in 45 minutes, with the door shut.",
				"Zelbrin glaze is mixed from ash and feldspar. Each batch of Zelbrin glaze costs 12 euros.",
				"剪辑一集短视频需要四十五分钟。封面由设计组负责。",
				"直播前要检查麦克风和灯光。",
			} {
				if status, _, _, raw := hh.call("POST", "/api/knowledge/text", map[string]any{"text": text}); status != 201 {
					t.Fatalf("POST /api/knowledge/text = %d %s", status, raw)
				}
			}
			for _, tc := range []struct {
				question string
				want     string // a sentence the answer quotes; "" for the refusal
			}{
				{"How long does the Quorvath kiln take to cool down?", "It cools down in 45 minutes"},
				{"How much does a batch of Zelbrin glaze cost?", "costs 12 euros"},
				{"剪辑一集短视频需要多长时间？", "四十五分钟"},
				{"What is the capital of France?", ""},
				{"Zelbrin glaze 多长时间能烧好？", ""}, // about the glaze, but no duration in its note
				{"北京的天气怎么样？", ""},
			} {
				t.Run(tc.question, func(t *testing.T) {
					_, ask, _, raw := hh.call("POST", "/api/knowledge/ask", map[string]any{"query": tc.question})
					asked, _ := ask["answer"].(string)
					if asked == "" {
						t.Fatalf("ask = %s", raw)
					}
					runID := hh.completedRun(map[string]any{"workflow": "kb_chat", "inputs": map[string]any{"question": tc.question}})
					_, run, _, raw := hh.call("GET", "/api/workflow/result/"+runID, nil)
					out, _ := run["outputs"].(map[string]any)
					answered, _ := out["answer"].(string)
					t.Logf("ask: %q\nrun: %q", asked, answered)
					if _, st, _, _ := hh.call("GET", "/api/workflow/status/"+runID, nil); st["engine"] != "node" {
						t.Errorf("run engine %v; want node, kb_chat's fallback without a chatflow tool", st["engine"])
					}
					if tc.want == "" {
						if cites, _ := out["citations"].([]any); len(cites) != 0 {
							t.Errorf("run citations %v; want none with the refusal", cites)
						}
						// One refusal, word for word, in English and Chinese on both paths.
						if asked != extract.NoBasis || answered != extract.NoBasis {
							t.Errorf("ask %q, run %q; want both to refuse with extract.NoBasis (run %s)", asked, answered, raw)
						}
						return
					}
					if !strings.Contains(asked, tc.want) {
						t.Errorf("ask = %q; want it to quote %q", asked, tc.want)
					}
					if got := strings.TrimPrefix(answered, "From the knowledge base: "); got != asked {
						t.Errorf("run answer %q; want ask's %q (run %s)", got, asked, raw)
					}
				})
			}
		})
	}
}
