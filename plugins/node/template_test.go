package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/reelforge/reelforge/plugins/node"
	"github.com/reelforge/reelforge/sdk/engine"
)

// spoken counts what a script says aloud: Han characters plus Latin words, without the section
// markers ([Hook]) and speaker names ("Lead:") that are not read.
func spoken(script string) int {
	n := 0
	for _, line := range strings.Split(script, "\n") {
		if i := strings.Index(line, "]"); strings.HasPrefix(line, "[") && i > 0 {
			line = line[i+1:]
		}
		if i := strings.IndexAny(line, ":："); i > 0 && i < 20 {
			line = line[i+1:]
		}
		inWord := false
		for _, r := range line {
			switch {
			case unicode.Is(unicode.Han, r):
				n++
				inWord = false
			case unicode.IsLetter(r) || unicode.IsDigit(r):
				if !inWord {
					n++
				}
				inWord = true
			default:
				inWord = false
			}
		}
	}
	return n
}

func TestTemplateFollowsLanguageLengthAndInputs(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		format  string
		inputs  map[string]any
		target  int // spoken units: 2.5 words or 4 Han characters a second
		want    []string
		wantNot []string
		chinese bool
	}{
		"english voiceover 30s": {format: "voiceover", inputs: map[string]any{"topic": "quick vegan dinners", "duration": 30},
			target: 75, want: []string{"quick vegan dinners"}, wantNot: []string{"[", "Most people get"}},
		"english video 60s": {format: "video", inputs: map[string]any{"topic": "home coffee", "duration": 60,
			"summary": "Grind the beans just before brewing. Use water at 94 degrees. A kilo of beans costs 2.40 dollars a cup at most."},
			target: 150, want: []string{"[Hook]", "2.40 dollars", "Use water at 94 degrees."}},
		"chinese voiceover 20s": {format: "voiceover", inputs: map[string]any{"topic": "快手晚餐", "duration": 20, "language": "zh"},
			target: 80, want: []string{"快手晚餐"}, chinese: true},
		"chinese video from brief": {format: "video", inputs: map[string]any{"topic": "", "summary": "十分钟做一顿素食晚餐。豆腐要先压干水分。", "duration": 15},
			target: 60, want: []string{"[开场]", "豆腐要先压干水分。"}, chinese: true},
		"drama with cast": {format: "drama", inputs: map[string]any{"topic": "a lost cat", "characters": "Mia: a student, Leo (her neighbour)", "duration": 30},
			target: 75, want: []string{"Mia: ", "Leo: ", "[Cold open]", "[Cliffhanger]"}},
		"live chinese": {format: "live", inputs: map[string]any{"topic": "秋季护肤", "language": "zh", "duration": 30},
			target: 120, want: []string{"[开场]", "直播间", "[收尾]"}, chinese: true},
		"casual style": {format: "video", inputs: map[string]any{"topic": "desk plants", "style": "casual", "duration": 20},
			target: 50, want: []string{"Hey friends!"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := &fakeHost{}
			req := request(step("write", "script_writer", `{"format":"`+tt.format+`"}`))
			req.Inputs = tt.inputs
			res := run(t, newEngine(), h, req)
			if res.Status != engine.StatusCompleted {
				t.Fatalf("Run() = %+v", res.Error)
			}
			script, _ := res.Outputs["script"].(string)
			for _, w := range tt.want {
				if !strings.Contains(script, w) {
					t.Errorf("script lacks %q:\n%s", w, script)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(script, w) {
					t.Errorf("script holds %q:\n%s", w, script)
				}
			}
			hasHan := strings.IndexFunc(script, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
			if hasHan != tt.chinese {
				t.Errorf("script Chinese = %v, want %v:\n%s", hasHan, tt.chinese, script)
			}
			if n := spoken(script); n < tt.target*7/10 || n > tt.target*13/10 {
				t.Errorf("script says %d units, want about %d:\n%s", n, tt.target, script)
			}
			st := h.final()["write"]
			if st.Outputs["source"] != "template" || st.Outputs["note"] != node.NoModel {
				t.Errorf("trace outputs source %v note %v, want template and %q", st.Outputs["source"], st.Outputs["note"], node.NoModel)
			}
		})
	}
}

func TestGivenScriptIsUsedAsIs(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	mine := "My own narration. Every word stays."
	req := request(step("write", "script_writer", `{"format":"voiceover","accept_script":true}`), step("polish", "rewriter", "", "write"))
	req.Inputs["script"] = mine
	res := run(t, newEngine(), h, req)
	if res.Outputs["script"] != mine || res.Outputs["source"] != "input" {
		t.Errorf("outputs = %v, want the creator's script as is", res.Outputs)
	}
	if h.generateCalls.Load() != 0 {
		t.Errorf("the model was asked to write a script the creator handed in")
	}
}

func TestRewriteWithoutModelSaysSo(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	steps := request(step("write", "script_writer", ""), step("review", "human_input", "", "write"), step("revise", "rewriter", "", "write", "review"))
	first := run(t, newEngine(), h, steps)
	if first.Status != engine.StatusPaused {
		t.Fatalf("Run() = %s", first.Status)
	}
	req := request(step("write", "script_writer", ""), step("review", "human_input", "", "write"), step("revise", "rewriter", "", "write", "review"))
	req.Completed = map[string]json.RawMessage{"write": mustJSON(t, h.final()["write"].Outputs)}
	req.ResumeInput = map[string]any{"approved": false, "notes": "make it shorter and mention it costs under 3 dollars"}
	h2 := &fakeHost{}
	res := run(t, newEngine(), h2, req)
	st := h2.final()["revise"]
	note, _ := st.Outputs["note"].(string)
	if st.Outputs["source"] != "template" || st.Outputs["notes_applied"] != false ||
		!strings.Contains(note, node.NoModel) || !strings.Contains(note, "reviewer notes not applied") {
		t.Errorf("revise outputs = %v, want it to say the notes were not applied", st.Outputs)
	}
	if res.Outputs["notes_applied"] != false {
		t.Errorf("run outputs = %v, want notes_applied false", res.Outputs)
	}
}

func TestRepurposeWithoutModelSaysSo(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	src := "We tested five pans. The cast iron one held heat best. It costs 2.40 dollars a day to run the oven."
	req := request(step("rewrite", "rewriter", ""))
	req.Inputs = map[string]any{"content": src, "topic": "pans", "duration": 20}
	res := run(t, newEngine(), h, req)
	script, _ := res.Outputs["script"].(string)
	note, _ := res.Outputs["note"].(string)
	if script == src || res.Outputs["repurposed"] != false || !strings.Contains(note, "not repurposed") {
		t.Errorf("outputs = %v, want a template script that says it was not repurposed", res.Outputs)
	}
}

func TestModelFailureFallsBackWithReason(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		gen  func() (*engine.GenerateResult, error)
		want string
	}{
		"error": {func() (*engine.GenerateResult, error) { return nil, errors.New("502 bad gateway") }, "language model failed (502 bad gateway)"},
		"refusal": {func() (*engine.GenerateResult, error) {
			return &engine.GenerateResult{OK: true, Text: "I'm sorry, I can't help with that."}, nil
		}, "language model refused"},
		"empty": {func() (*engine.GenerateResult, error) { return &engine.GenerateResult{OK: true, Text: "  "}, nil }, "empty answer"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := &fakeHost{GenerateFunc: func(context.Context, *engine.GenerateRequest) (*engine.GenerateResult, error) { return tt.gen() }}
			res := run(t, newEngine(), h, request(step("write", "script_writer", "")))
			note, _ := res.Outputs["note"].(string)
			if res.Status != engine.StatusCompleted || res.Outputs["source"] != "template" || !strings.Contains(note, tt.want) {
				t.Errorf("outputs = %v, want a template script with %q", res.Outputs, tt.want)
			}
		})
	}
}

func TestRunOutputsSayTemplate(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	req := request(step("write", "script_writer", `{"format":"voiceover"}`), step("polish", "rewriter", "", "write"),
		step("assemble", "assemble", "", "polish"))
	res := run(t, newEngine(), h, req)
	note, _ := res.Outputs["note"].(string)
	if res.Outputs["source"] != "template" || !strings.Contains(note, node.NoModel) {
		t.Errorf("run outputs source %v note %q, want template and %q", res.Outputs["source"], note, node.NoModel)
	}
}

func TestTemplateDoesNotNarrateTableRows(t *testing.T) {
	t.Parallel()
	h := &fakeHost{SearchFunc: func(context.Context, *engine.SearchRequest) ([]engine.SearchHit, error) {
		return []engine.SearchHit{{ChunkID: "c1", SourceName: "notes",
			ChunkText: "brand: OatBloom; pay: 300 dollars a video; platform: douyin.\nOatBloom oat milk makes morning coffee creamy."}}, nil
	}}
	req := request(step("lookup", "kb_lookup", ""), step("write", "script_writer", `{"format":"voiceover"}`, "lookup"))
	res := run(t, newEngine(), h, req)
	script, _ := res.Outputs["script"].(string)
	if strings.Contains(script, "brand: OatBloom") || !strings.Contains(script, "OatBloom oat milk makes morning coffee creamy.") {
		t.Errorf("script = %q, want the sentence and not the table row", script)
	}
}

func TestTemplateSaysWhenItIsShort(t *testing.T) {
	t.Parallel()
	h := &fakeHost{}
	req := request(step("write", "script_writer", `{"format":"voiceover"}`))
	req.Inputs = map[string]any{"topic": "tofu", "duration": 300}
	res := run(t, newEngine(), h, req)
	note, _ := res.Outputs["note"].(string)
	est, _ := res.Outputs["estimated_seconds"].(int)
	if est <= 0 || est >= 210 || !strings.Contains(note, "of the 300 seconds asked") {
		t.Errorf("outputs estimated_seconds %v note %q, want a short estimate said in the note", res.Outputs["estimated_seconds"], note)
	}
}

// TestTemplateTopicIsAHeadline: a topic is said and titled without its closing full stop, whether
// it is a brief's first sentence (what the scheduler sends: a summary and no topic) or a topic
// typed with one; the hook no longer reads "… for beginners. in 30 seconds." as two sentences.
func TestTemplateTopicIsAHeadline(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		format    string
		inputs    map[string]any
		wantHook  string
		wantTitle string
	}{
		"scheduler's brief": {format: "video", inputs: map[string]any{"summary": "A step-by-step guide to home coffee for beginners. Start with the grinder.", "platform": "douyin"},
			wantHook: "[Hook] Here is a step-by-step guide to home coffee for beginners in 30 seconds.\n", wantTitle: "A step-by-step guide to home coffee for beginners"},
		"topic typed with a full stop": {format: "voiceover", inputs: map[string]any{"topic": "Morning light.", "duration": 20},
			wantHook: "Let's talk about morning light.\n", wantTitle: "Morning light"},
		"chinese brief": {format: "video", inputs: map[string]any{"summary": "十分钟做一顿素食晚餐。豆腐要先压干水分。", "duration": 15},
			wantHook: "[开场] 15秒讲清楚十分钟做一顿素食晚餐。\n", wantTitle: "十分钟做一顿素食晚餐"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := request(step("write", "script_writer", `{"format":"`+tt.format+`"}`))
			req.Inputs = tt.inputs
			res := run(t, newEngine(), &fakeHost{}, req)
			if res.Status != engine.StatusCompleted {
				t.Fatalf("Run() = %+v", res.Error)
			}
			script, _ := res.Outputs["script"].(string)
			if !strings.HasPrefix(script, tt.wantHook) {
				t.Errorf("script opens\n%s\nwant it to open %q", script, tt.wantHook)
			}
			if res.Outputs["title"] != tt.wantTitle {
				t.Errorf("title = %q, want %q", res.Outputs["title"], tt.wantTitle)
			}
		})
	}
}

// TestTemplateKeepsTheTopicsEmojiInTheHook: a topic's emoji ends the hook and nothing else; a beat
// that names the topic mid-sentence leaves it out (a creator's plain topic gave "Start with the
// one thing that matters most about an astronaut's first day in orbit 🚀." and
// "先说最关键的一点：手冲咖啡入门☕的核心是什么。").
func TestTemplateKeepsTheTopicsEmojiInTheHook(t *testing.T) {
	t.Parallel()
	for topic, emoji := range map[string]string{
		"An astronaut's first day in orbit 🚀": "🚀",
		"手冲咖啡入门☕":                             "☕",
		"5 tips for better sleep 😴":           "😴",
		"为什么手冲咖啡更好喝？☕":                        "☕",
	} {
		t.Run(topic, func(t *testing.T) {
			t.Parallel()
			req := request(step("write", "script_writer", `{"format":"voiceover"}`))
			req.Inputs = map[string]any{"topic": topic, "duration": 60}
			res := run(t, newEngine(), &fakeHost{}, req)
			script, _ := res.Outputs["script"].(string)
			hook, _, _ := strings.Cut(script, "\n")
			if strings.Count(script, emoji) != 1 || !strings.HasSuffix(hook, emoji) {
				t.Errorf("script of %q:\n%s\nwant %s once, at the end of the hook", topic, script, emoji)
			}
		})
	}
}
