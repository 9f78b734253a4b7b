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
		"three videos a week":         3,
		"3 posts per week":            3,
		"twice a week":                2,
		"daily":                       7,
		"one video every day":         7,
		"每周3条":                        3,
		"每天更新":                        7,
		"whenever I can":              0,
		"每周能更新3次":                     3,
		"一周三更":                        3,
		"每周更新两次":                      2,
		"I can post 4 times per week": 4,
		"twice weekly":                2,
		"2 videos a day":              14,
		"3-4 times a week":            3,
		"I have 3 kids":               0,
		"students aged 18-24":         0,
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
		// The month varies: no post's summary repeats, and the days between posts differ too.
		seen, engagement := map[string]int{}, map[string]bool{}
		for _, d := range bp.Days {
			if d.Priority == "low" {
				engagement[d.Summary] = true
				continue
			}
			if prev, ok := seen[d.Summary]; ok {
				t.Errorf("%s: days %d and %d have one summary %q", name, prev, d.Day, d.Summary)
			}
			seen[d.Summary] = d.Day
			if !strings.Contains(d.Summary, "food vlogger") {
				t.Errorf("%s: day %d summary %q does not name the niche", name, d.Day, d.Summary)
			}
		}
		if len(engagement) < 4 {
			t.Errorf("%s: the engagement days say only %v", name, engagement)
		}
	}
	if _, _, err := s.Diagnose(context.Background(), []Answer{{Question: "q"}}, nil); err == nil {
		t.Errorf("Diagnose(no answers) succeeded")
	}
}

func TestDiagnoseReadsAnswersOrLeavesThemUnset(t *testing.T) {
	t.Parallel()
	s := New(Config{Now: func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }})
	tests := map[string]struct {
		answers             []Answer
		niche, audience     string
		ppw                 int
		platforms           []string
		positioningHas      []string
		positioningHasNot   []string
		assumptions, planPP int
	}{
		"english sentence": {answers: []Answer{{Answer: "I run a cooking channel about quick vegan dinners"}, {Question: "Who is your audience?", Answer: "students"},
			{Answer: "每周能更新3次"}}, niche: "quick vegan dinners", audience: "students", ppw: 3, platforms: []string{},
			positioningHas: []string{"quick vegan dinners for students"}, positioningHasNot: []string{"A I run"}, assumptions: 1, planPP: 3},
		"chinese": {answers: []Answer{{Question: "你做什么内容？", Answer: "我是做家常菜的博主"}, {Question: "主要在哪个平台？", Answer: "小红书和B站"},
			{Question: "更新频率？", Answer: "每周能更新2次"}}, niche: "家常菜", ppw: 2, platforms: []string{PlatformXiaohongshu, PlatformBilibili},
			positioningHas: []string{"小红书"}, planPP: 2},
		"one sentence says it all": {answers: []Answer{{Answer: "I make home coffee videos for beginners on douyin, 3 times a week"}},
			niche: "home coffee", audience: "beginners", ppw: 3, platforms: []string{PlatformDouyin}, planPP: 3, assumptions: 0},
		"a platform is the niche": {answers: []Answer{{Answer: "I make YouTube growth tips on TikTok and Bilibili"}},
			niche: "YouTube growth tips", ppw: 0, platforms: []string{PlatformDouyin, PlatformBilibili, "youtube"}, planPP: 3, assumptions: 1},
		"nothing said": {answers: []Answer{{Answer: "I like red peppers and wearing shorts"}}, ppw: 0, platforms: []string{}, assumptions: 2, planPP: 3},
	}
	for name, tt := range tests {
		rep, bp, err := s.Diagnose(context.Background(), tt.answers, nil)
		if err != nil {
			t.Fatalf("%s: Diagnose = %v", name, err)
		}
		if tt.niche != "" && rep.Niche != tt.niche {
			t.Errorf("%s: niche = %q, want %q", name, rep.Niche, tt.niche)
		}
		if tt.audience != "" && rep.Audience != tt.audience {
			t.Errorf("%s: audience = %q, want %q", name, rep.Audience, tt.audience)
		}
		if rep.Cadence.PostsPerWeek != tt.ppw || bp.PostsPerWeek != tt.planPP {
			t.Errorf("%s: posts a week = %d (blueprint %d), want %d (%d)", name, rep.Cadence.PostsPerWeek, bp.PostsPerWeek, tt.ppw, tt.planPP)
		}
		if strings.Join(rep.Platforms, ",") != strings.Join(tt.platforms, ",") {
			t.Errorf("%s: platforms = %v, want %v", name, rep.Platforms, tt.platforms)
		}
		for _, w := range tt.positioningHas {
			if !strings.Contains(rep.Positioning, w) {
				t.Errorf("%s: positioning %q lacks %q", name, rep.Positioning, w)
			}
		}
		for _, w := range tt.positioningHasNot {
			if strings.Contains(rep.Positioning, w) {
				t.Errorf("%s: positioning %q holds %q", name, rep.Positioning, w)
			}
		}
		if len(rep.Assumptions) != tt.assumptions || rep.Note != NoModel || rep.Source != "template" {
			t.Errorf("%s: assumptions %v note %q source %q", name, rep.Assumptions, rep.Note, rep.Source)
		}
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

func TestBlueprintVariesInChinese(t *testing.T) {
	t.Parallel()
	s := New(Config{Now: func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }})
	_, bp, err := s.Diagnose(context.Background(), []Answer{{Question: "你做什么内容？", Answer: "我是做家常菜的博主"},
		{Question: "更新频率？", Answer: "每周能更新4次"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen, engagement := map[string]bool{}, map[string]bool{}
	for _, d := range bp.Days {
		if d.Priority == "low" {
			engagement[d.Summary] = true
			continue
		}
		if seen[d.Summary] || !strings.Contains(d.Summary, "家常菜") {
			t.Errorf("day %d summary %q: repeated, or without the niche", d.Day, d.Summary)
		}
		seen[d.Summary] = true
	}
	if len(seen) < 16 || len(engagement) < 4 {
		t.Errorf("%d distinct posts and %d distinct engagement days, want 16+ and 4+", len(seen), len(engagement))
	}
}

// TestBlueprintNamesTheAudienceOnce: an audience the post's angle already names ("A step-by-step
// guide to home coffee for beginners") is not added again; another audience is.
func TestBlueprintNamesTheAudienceOnce(t *testing.T) {
	t.Parallel()
	s := New(Config{Now: func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }})
	for _, tt := range []struct{ audience, first string }{
		{"beginners", "A step-by-step guide to home coffee for beginners."},
		{"busy parents", "A step-by-step guide to home coffee for beginners, for busy parents."},
	} {
		_, bp, err := s.Diagnose(context.Background(), []Answer{{Question: "What is your niche?", Answer: "home coffee"},
			{Question: "Who is your audience?", Answer: tt.audience}, {Question: "How often do you post?", Answer: "3 times a week"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := bp.Days[0].Summary; got != tt.first {
			t.Errorf("audience %q: day 1 summary %q, want %q", tt.audience, got, tt.first)
		}
		for _, d := range bp.Days {
			if strings.Count(strings.ToLower(d.Summary), strings.ToLower(tt.audience)) > 1 {
				t.Errorf("audience %q: day %d summary %q names it twice", tt.audience, d.Day, d.Summary)
			}
		}
	}
}
