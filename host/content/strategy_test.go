package content

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPostsPerWeek(t *testing.T) {
	t.Parallel()
	tests := map[string]int{
		"three videos a week": 3,
		"3 posts per week":    3,
		"twice a week":        2,
		"daily":               7,
		"one video every day": 7,
		"每周3条":                3,
		"每天更新":                7,
		"whenever I can":      0,
	}
	for in, want := range tests {
		if got := postsPerWeek(in); got != want {
			t.Errorf("postsPerWeek(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestDiagnoseTemplates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	s := New(Config{Now: func() time.Time { return now }})
	tests := map[string][]Answer{
		"strings": {{Answer: "food vlogger"}, {Answer: "douyin"}, {Answer: "three videos a week"}, {Answer: "grow followers"},
			{Answer: "office workers aged 25-35"}},
		"questions": {{Question: "What is your niche?", Answer: "food vlogger"}, {Question: "Which platform?", Answer: "douyin"},
			{Question: "How often do you post?", Answer: "three videos a week"}, {Question: "Your goal?", Answer: "grow followers"},
			{Question: "Who is your audience?", Answer: "office workers aged 25-35"}},
	}
	for name, answers := range tests {
		rep, bp, err := s.Diagnose(context.Background(), answers, nil)
		if err != nil {
			t.Fatalf("%s: Diagnose = %v", name, err)
		}
		if rep.Niche != "food vlogger" || rep.Audience != "office workers aged 25-35" || rep.Goal != "grow followers" ||
			rep.Cadence.PostsPerWeek != 3 || rep.Platforms[0] != PlatformDouyin || len(rep.ContentPillars) == 0 || rep.Source != "template" {
			t.Errorf("%s: report = %+v", name, rep)
		}
		if len(bp.Days) != BlueprintDays || bp.Days[0].Date != "2026-11-21" || bp.Days[29].Date != "2026-12-20" {
			t.Fatalf("%s: blueprint days = %d from %s", name, len(bp.Days), bp.Days[0].Date)
		}
		posts := 0
		for i, d := range bp.Days {
			if d.Day != i+1 || !validWorkflow(d.WorkflowID) || d.Summary == "" || d.Platform != "douyin" ||
				(d.Priority != "high" && d.Priority != "medium" && d.Priority != "low") {
				t.Errorf("%s: day %d = %+v", name, i, d)
			}
			if d.Priority != "low" {
				posts++
			}
		}
		if posts < 12 || posts > 14 {
			t.Errorf("%s: %d posting days in 30 at 3 a week", name, posts)
		}
	}
	if _, _, err := s.Diagnose(context.Background(), []Answer{{Question: "q"}}, nil); err == nil {
		t.Errorf("Diagnose(no answers) succeeded")
	}
}

func TestCalendar(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(Blueprint{Days: []BlueprintDay{{Date: "2026-11-22", Day: 2}, {Date: "2026-11-21", Day: 1}, {Date: "2026-11-21", Day: 1}}})
	cal := Calendar(raw)
	if len(cal) != 2 || cal[0].Date != "2026-11-21" || len(cal[0].Tasks) != 2 || cal[1].Weekday != "Sunday" {
		t.Errorf("Calendar = %+v", cal)
	}
	if c := Calendar(nil); c == nil || len(c) != 0 {
		t.Errorf("Calendar(nil) = %#v, want empty", c)
	}
}

func TestRewriteTemplate(t *testing.T) {
	t.Parallel()
	in := "Today I will show you how to brew coffee at home in three easy steps. It is really just hot water and patience."
	seen := map[string]string{}
	for _, style := range Styles {
		out := RewriteTemplate(in, style)
		if strings.TrimSpace(out) == "" || out == in {
			t.Errorf("RewriteTemplate(%s) = %q, want a changed script", style, out)
		}
		for other, prev := range seen {
			if prev == out {
				t.Errorf("styles %s and %s give the same script", style, other)
			}
		}
		seen[style] = out
	}
	if got := RewriteTemplate(in, "concise"); strings.Contains(got, "really") {
		t.Errorf("concise rewrite kept filler: %q", got)
	}
	if got := RewriteTemplate("今天教你在家做咖啡。其实很简单。", "humorous"); !hasHan(got) {
		t.Errorf("Chinese script rewritten without Chinese: %q", got)
	}
	for in, want := range map[string]string{"": "professional", "幽默": "humorous", "Funny": "humorous"} {
		if got, err := NormalizeStyle(in); err != nil || got != want {
			t.Errorf("NormalizeStyle(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := NormalizeStyle("klingon"); err == nil {
		t.Errorf("NormalizeStyle(unknown) succeeded")
	}
}
