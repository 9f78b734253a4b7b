package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/engine"
)

// writeScript runs one script_writer step of format over inputs, with search answering the
// step's knowledge-base search (nil: nothing found), and returns the run's outputs and the host.
func writeScript(t *testing.T, format string, inputs map[string]any, search func(*engine.SearchRequest) []engine.SearchHit) (map[string]any, *fakeHost) {
	t.Helper()
	h := &fakeHost{SearchFunc: func(_ context.Context, req *engine.SearchRequest) ([]engine.SearchHit, error) {
		if search == nil {
			return nil, nil
		}
		return search(req), nil
	}}
	req := request(step("write", "script_writer", `{"format":"`+format+`"}`))
	req.Inputs = inputs
	res := run(t, newEngine(), h, req)
	if res.Status != engine.StatusCompleted {
		t.Fatalf("Run() = %+v", res.Error)
	}
	if res.Outputs["source"] != "template" {
		t.Fatalf("source = %v, want template", res.Outputs["source"])
	}
	return res.Outputs, h
}

func TestTemplateKeepsTheTopicsCount(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		topic  string
		format string
		labels []string // the numbered labels, in order; nil: no numbered beats
	}{
		"three reasons":    {topic: "Three reasons to love pour-over coffee", format: "voiceover", labels: []string{"Reason 1: ", "Reason 2: ", "Reason 3: "}},
		"5 tips":           {topic: "5 tips for better sleep", format: "voiceover", labels: []string{"Tip 1: ", "Tip 2: ", "Tip 3: ", "Tip 4: ", "Tip 5: "}},
		"top 7 video":      {topic: "Top 7 travel hacks for Tokyo", format: "video", labels: []string{"Hack 1: ", "Hack 2: ", "Hack 3: ", "Hack 4: ", "Hack 5: ", "Hack 6: ", "Hack 7: "}},
		"four mistakes":    {topic: "4 mistakes beginners make with sourdough", format: "voiceover", labels: []string{"Mistake 1: ", "Mistake 2: ", "Mistake 3: ", "Mistake 4: "}},
		"三个理由":             {topic: "三个理由让你爱上手冲咖啡", format: "voiceover", labels: []string{"第一个理由：", "第二个理由：", "第三个理由："}},
		"5个技巧":             {topic: "5个省钱技巧", format: "voiceover", labels: []string{"第一个技巧：", "第二个技巧：", "第三个技巧：", "第四个技巧：", "第五个技巧："}},
		"十大 video":         {topic: "十大旅行误区", format: "video", labels: []string{"第一个误区：", "第二个误区：", "第三个误区：", "第四个误区：", "第五个误区：", "第六个误区：", "第七个误区：", "第八个误区：", "第九个误区：", "第十个误区："}},
		"3招":               {topic: "3招搞定早餐", format: "voiceover", labels: []string{"第一招：", "第二招：", "第三招："}},
		"a duration":       {topic: "30 seconds of morning yoga", format: "voiceover"},
		"a period in zh":   {topic: "3个月学会游泳", format: "voiceover"},
		"one is no list":   {topic: "One pan pasta", format: "voiceover"},
		"too many to list": {topic: "100 tips for gardeners", format: "voiceover"},
		"kids are no list": {topic: "Life with 3 kids", format: "voiceover"},
		"after a duration": {topic: "In 30 seconds: 3 easy dinners", format: "voiceover", labels: []string{"Dinner 1: ", "Dinner 2: ", "Dinner 3: "}},
		"孩子不是清单":           {topic: "3个孩子的妈妈", format: "voiceover"},
		"a list of places": {topic: "5 cafes in Lisbon worth the queue", format: "voiceover", labels: []string{"Cafe 1: ", "Cafe 2: ", "Cafe 3: ", "Cafe 4: ", "Cafe 5: "}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _ := writeScript(t, tt.format, map[string]any{"topic": tt.topic, "duration": 30}, nil)
			script, _ := out["script"].(string)
			beats, _ := out["beats"].([]any)
			// What the render shows: render.Beats is how speech and video cut the script, so the
			// count must survive it: the hook, one beat per item, the call to action.
			shown := render.Beats(script)
			if tt.labels == nil {
				if strings.Contains(script, "1: ") || strings.Contains(script, "第一") || len(beats) > 3 {
					t.Errorf("a topic without a count got numbered beats:\n%s", script)
				}
				return
			}
			if len(beats) != len(tt.labels) {
				t.Fatalf("beats = %d, want %d:\n%s", len(beats), len(tt.labels), script)
			}
			if len(shown) != len(tt.labels)+2 {
				t.Fatalf("render.Beats = %d beats, want %d (hook, items, close):\n%q", len(shown), len(tt.labels)+2, shown)
			}
			seen := map[string]bool{}
			for i, label := range tt.labels {
				first := shown[i+1][0]
				if !strings.HasPrefix(first, label) {
					t.Errorf("shown beat %d starts %q, want %q", i+1, first, label)
				}
				body := strings.TrimPrefix(fmt.Sprint(beats[i]), label)
				if len([]rune(body)) < 8 || seen[body] {
					t.Errorf("item %d says %q: want a sentence of its own", i+1, body)
				}
				seen[body] = true
			}
			if strings.Contains(script, "concrete example") || strings.Contains(script, "真实的例子") {
				t.Errorf("script promises an example it does not give:\n%s", script)
			}
			if !strings.Contains(fmt.Sprint(out["shape"]), fmt.Sprintf("list of %d", len(tt.labels))) {
				t.Errorf("shape = %v, want the list said", out["shape"])
			}
		})
	}
}

func TestTemplateAnswersTheQuestion(t *testing.T) {
	t.Parallel()
	kb := func(*engine.SearchRequest) []engine.SearchHit {
		return []engine.SearchHit{{ChunkID: "c1", SourceName: "baking", Document: "bread-notes.md",
			ChunkText: "Bread goes stale because its starch crystallises as it cools. 面包变硬，是因为淀粉在冷却时重新结晶。"}}
	}
	tests := map[string]struct {
		topic, wantHook, wantAnswer, wantSource string
		search                                  func(*engine.SearchRequest) []engine.SearchHit
	}{
		"why from the knowledge base": {topic: "Why does bread go stale?", search: kb, wantHook: "Why does bread go stale?",
			wantAnswer: "The short answer: Bread goes stale because its starch crystallises as it cools.", wantSource: "knowledge: bread-notes.md"},
		"为什么 from the knowledge base": {topic: "为什么面包会变硬？", search: kb, wantHook: "为什么面包会变硬？",
			wantAnswer: "简单说：面包变硬，是因为淀粉在冷却时重新结晶。", wantSource: "knowledge: bread-notes.md"},
		"how without sources": {topic: "How do I start running?", wantHook: "How do I start running?",
			wantAnswer: "The short answer: Start small", wantSource: "template"},
		"怎么 without sources": {topic: "怎么开始跑步", wantHook: "怎么开始跑步？", wantAnswer: "简单说：从一小步开始", wantSource: "template"},
		"how something is, without sources": {topic: "How do astronauts sleep? 🚀", wantHook: "How do astronauts sleep? 🚀",
			wantAnswer: "The short answer: It is less strange than it sounds", wantSource: "template"},
		"为什么 without sources": {topic: "为什么手冲咖啡比速溶咖啡更好喝？🤔", wantHook: "为什么手冲咖啡比速溶咖啡更好喝？🤔",
			wantAnswer: "简单说：原因在于几个因素一起起作用", wantSource: "template"},
		"宇航员怎么 without sources": {topic: "宇航员在太空怎么睡觉？", wantHook: "宇航员在太空怎么睡觉？",
			wantAnswer: "简单说：它没有听起来那么神秘", wantSource: "template"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _ := writeScript(t, "voiceover", map[string]any{"topic": tt.topic, "duration": 30}, tt.search)
			lines := strings.Split(fmt.Sprint(out["script"]), "\n")
			if lines[0] != tt.wantHook || !strings.HasPrefix(lines[1], tt.wantAnswer) {
				t.Errorf("script opens %q / %q, want %q / %q", lines[0], lines[1], tt.wantHook, tt.wantAnswer)
			}
			srcs, _ := out["beat_sources"].([]any)
			if len(srcs) == 0 || fmt.Sprint(srcs[0]) != "["+tt.wantSource+"]" {
				t.Errorf("beat_sources = %v, want the answer from %s", srcs, tt.wantSource)
			}
			if !strings.Contains(fmt.Sprint(out["template"]), "question") {
				t.Errorf("template = %v, want the question shape said", out["template"])
			}
		})
	}
}

// TestTemplateExplainsRatherThanAdvises: a question about how or why something is ("How do
// astronauts sleep?") gets no advice to the viewer in its beats ("Set it up the night before",
// "一次只改一个地方", what a creator's 60 s videos said), a question about what to do keeps it.
func TestTemplateExplainsRatherThanAdvises(t *testing.T) {
	t.Parallel()
	advice := []string{"Start small", "the night before", "one change at a time", "Change one thing", "一次只改一个地方", "从小处开始", "前一天晚上"}
	tests := map[string]bool{ // topic: whether its script advises
		"How do astronauts sleep?":     false,
		"Why does bread go stale?":     false,
		"What is a flat white?":        false,
		"为什么手冲咖啡比速溶咖啡更好喝？":             false,
		"宇航员在太空怎么睡觉？":                  false,
		"How do I start running?":      true,
		"How to brew pour-over coffee": true,
		"怎么开始跑步":                       true,
		"我该怎么开始跑步？":                    true,
	}
	for topic, advises := range tests {
		t.Run(topic, func(t *testing.T) {
			t.Parallel()
			out, _ := writeScript(t, "voiceover", map[string]any{"topic": topic, "duration": 60}, nil)
			script := fmt.Sprint(out["script"])
			found := ""
			for _, a := range advice {
				if strings.Contains(script, a) {
					found = a
				}
			}
			if (found != "") != advises {
				t.Errorf("script of %q = %q: advice %q, want advice %v", topic, script, found, advises)
			}
		})
	}
}

func TestTemplateCasing(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		topic, platform string
		want, wantNot   []string
	}{
		"article lowered":     {topic: "An astronaut's first day in orbit", want: []string{"Let's talk about an astronaut's first day in orbit."}, wantNot: []string{"about An"}},
		"proper noun kept":    {topic: "Tokyo street food", want: []string{"Let's talk about Tokyo street food."}},
		"acronym kept":        {topic: "AI tools for teachers", want: []string{"Let's talk about AI tools for teachers."}},
		"list hook":           {topic: "Top 5 habits of calm people", want: []string{"Here are the top 5 habits of calm people."}},
		"list headline":       {topic: "In 30 seconds: 3 easy dinners", want: []string{"In 30 seconds: 3 easy dinners.\n"}},
		"xiaohongshu close":   {topic: "Three reasons to walk to work", platform: "xiaohongshu", wantNot: []string{"own three reasons"}},
		"中文收尾":                {topic: "三个理由让你爱上手冲咖啡", platform: "xiaohongshu", want: []string{"三个理由让你爱上手冲咖啡，"}, wantNot: []string{"分享你的三个理由", "心得"}},
		"中文问题收尾":              {topic: "为什么手冲咖啡更香？", wantNot: []string{"怎么看为什么", "？。", "？！"}},
		"中文短题":                {topic: "手冲咖啡", platform: "xiaohongshu", want: []string{"今天聊聊手冲咖啡。", "分享你的手冲咖啡心得"}},
		"question with emoji": {topic: "为什么要学手冲咖啡？☕", want: []string{"为什么要学手冲咖啡？☕"}, wantNot: []string{"☕？", "？？"}},
		"English emoji":       {topic: "Why brew pour-over? ☕", want: []string{"Why brew pour-over? ☕"}, wantNot: []string{"☕?"}},
		"list emoji":          {topic: "3 reasons to brew pour-over ☕", want: []string{"Here are 3 reasons to brew pour-over. ☕"}, wantNot: []string{"☕."}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _ := writeScript(t, "voiceover", map[string]any{"topic": tt.topic, "platform": tt.platform, "duration": 30}, nil)
			script := fmt.Sprint(out["script"])
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
		})
	}
}

func TestTemplateUsesKnowledgeThatMatches(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		topic, chunk string
		used         bool
	}{
		"matches":           {topic: "3 reasons to drink green tea", chunk: "Green tea holds about 30 mg of caffeine a cup, a third of a coffee.", used: true},
		"does not match":    {topic: "3 reasons to drink green tea", chunk: "Our office closes at 6 pm on Fridays.", used: false},
		"中文 matches":        {topic: "三个理由让你爱上绿茶", chunk: "一杯绿茶大约含有30毫克咖啡因，是咖啡的三分之一。", used: true},
		"中文 does not match": {topic: "三个理由让你爱上绿茶", chunk: "办公室周五下午六点关门。", used: false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var asked []*engine.SearchRequest
			out, _ := writeScript(t, "voiceover", map[string]any{"topic": tt.topic, "duration": 30}, func(req *engine.SearchRequest) []engine.SearchHit {
				asked = append(asked, req)
				return []engine.SearchHit{{ChunkID: "c1", SourceName: "tea", Document: "tea-facts.md", ChunkText: tt.chunk}}
			})
			if len(asked) != 1 || asked[0].UserID != "u-1" || asked[0].ProjectID != "p-1" {
				t.Fatalf("searches = %+v, want one, as the run's owner in its project", asked)
			}
			script := fmt.Sprint(out["script"])
			if got := strings.Contains(script, tt.chunk); got != tt.used {
				t.Errorf("knowledge used = %v, want %v:\n%s", got, tt.used, script)
			}
			sources := fmt.Sprint(out["sources"])
			if got := strings.Contains(sources, "tea-facts.md"); got != tt.used {
				t.Errorf("sources = %v, want the document named = %v", sources, tt.used)
			}
			if !strings.Contains(fmt.Sprint(out["knowledge_search"]), "passages found: 1") {
				t.Errorf("knowledge_search = %v, want the search said", out["knowledge_search"])
			}
		})
	}
}

func TestTemplateSaysAFailedSearch(t *testing.T) {
	t.Parallel()
	h := &fakeHost{SearchFunc: func(context.Context, *engine.SearchRequest) ([]engine.SearchHit, error) {
		return nil, fmt.Errorf("connection refused")
	}}
	req := request(step("write", "script_writer", `{"format":"voiceover"}`))
	req.Inputs = map[string]any{"topic": "5 tips for better sleep"}
	res := run(t, newEngine(), h, req)
	if res.Status != engine.StatusCompleted || !strings.Contains(fmt.Sprint(res.Outputs["knowledge_search"]), "not searched (connection refused)") {
		t.Errorf("Run() = %s %v, want a script that says the search failed", res.Status, res.Outputs["knowledge_search"])
	}
}

// TestTemplateTopicEmojiEndsTheSentence: a topic's closing emoji ("pour-over coffee ☕") is never
// said in the middle of a sentence (a creator's plan read "Are you making this pour-over coffee ☕
// mistake?"); a hook that names the topic ends with it.
func TestTemplateTopicEmojiEndsTheSentence(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		format, topic, platform string
		wantHook                string // "" when the format has no hook of its own
	}{
		"plan":            {format: "plan", topic: "pour-over coffee ☕"},
		"plan zh":         {format: "plan", topic: "手冲咖啡☕️"},
		"plain voiceover": {format: "voiceover", topic: "pour-over coffee ☕", platform: "douyin", wantHook: "Let's talk about pour-over coffee. ☕"},
		"plain zh":        {format: "voiceover", topic: "手冲咖啡☕️", platform: "xiaohongshu", wantHook: "今天聊聊手冲咖啡。☕️"},
		"drama":           {format: "drama", topic: "pour-over coffee ☕"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _ := writeScript(t, tt.format, map[string]any{"topic": tt.topic, "days": 7, "platform": tt.platform}, nil)
			script := fmt.Sprint(out["script"])
			for _, l := range strings.Split(script, "\n") {
				for _, e := range []string{"☕ ", "☕️，", "☕，", "☕ mistake", "☕️心得", "☕?"} {
					if strings.Contains(l, e) {
						t.Errorf("line %q says the emoji mid-sentence (%q)", l, e)
					}
				}
			}
			if tt.wantHook != "" && out["hook"] != tt.wantHook {
				t.Errorf("hook = %q, want %q", out["hook"], tt.wantHook)
			}
		})
	}
}

func TestTemplatePlansVaryOverTheDays(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		topic string
		days  int
		fact  string // a knowledge-base fact about the topic that some day's hook uses
	}{
		"7 days":    {topic: "home coffee", days: 7, fact: "Home coffee tastes best within two weeks of roasting."},
		"30 days":   {topic: "home coffee", days: 30},
		"7天":        {topic: "家庭咖啡", days: 7, fact: "家庭咖啡在烘焙后两周内最好喝。"},
		"30天":       {topic: "家庭咖啡", days: 30},
		"off-topic": {topic: "home coffee", days: 7, fact: ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			chunk := tt.fact
			if name == "off-topic" {
				chunk = "Our office closes at 6 pm on Fridays."
			}
			h := &fakeHost{SearchFunc: func(context.Context, *engine.SearchRequest) ([]engine.SearchHit, error) {
				if chunk == "" {
					return nil, nil
				}
				return []engine.SearchHit{{ChunkID: "c1", SourceName: "kb", Document: "facts.md", ChunkText: chunk}}, nil
			}}
			req := request(step("lookup", "kb_lookup", ""), step("write_plan", "script_writer", `{"format":"plan"}`, "lookup"))
			req.Inputs = map[string]any{"topic": tt.topic, "days": tt.days}
			res := run(t, newEngine(), h, req)
			plan, _ := res.Outputs["plan"].([]any)
			if len(plan) != tt.days {
				t.Fatalf("plan has %d days, want %d", len(plan), tt.days)
			}
			var angles, hooks, formats []string
			usedFact := false
			for _, p := range plan {
				day := p.(map[string]any)
				angles = append(angles, fmt.Sprint(day["angle"]))
				hooks = append(hooks, fmt.Sprint(day["hook"]))
				formats = append(formats, fmt.Sprint(day["format"]))
				if day["hook"] == tt.fact && day["source"] == "knowledge: facts.md" {
					usedFact = true
				}
			}
			for i := 1; i < len(angles); i++ {
				if angles[i] == angles[i-1] {
					t.Errorf("days %d and %d are both %q", i, i+1, angles[i])
				}
			}
			if n := distinct(angles[:min(10, len(angles))]); n != min(10, len(angles)) {
				t.Errorf("the first days repeat an angle: %v", angles)
			}
			if n := distinct(hooks[:7]); n != 7 {
				t.Errorf("a week's hooks repeat: %v", hooks[:7])
			}
			if distinct(formats) < 3 {
				t.Errorf("formats = %v, want the formats to vary", formats)
			}
			if tt.days == 30 && strings.Join(angles[:7], "|") == strings.Join(angles[7:14], "|") {
				t.Errorf("week 2 repeats week 1's pattern: %v", angles[:14])
			}
			if got := usedFact; got != (tt.fact != "") {
				t.Errorf("a day's hook is the knowledge-base fact = %v, want %v: %v", got, tt.fact != "", hooks)
			}
			if strings.Contains(fmt.Sprint(res.Outputs["script"]), "Our office") {
				t.Errorf("the plan uses an off-topic passage:\n%s", res.Outputs["script"])
			}
		})
	}
}

func distinct(ss []string) int {
	seen := map[string]bool{}
	for _, s := range ss {
		seen[s] = true
	}
	return len(seen)
}
