package content

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/kb/llm"
)

func TestExtractiveSummary(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 80) + "end."
	s60 := strings.Repeat("a", 59) + "." // three of them are more than extractiveLen
	tests := map[string]string{
		"":                           "",
		"   ":                        "",
		"One idea.":                  "One idea.",
		"Line one\nline two":         "Line one line two",
		s60 + " " + s60 + "\n" + s60: s60 + " " + s60,
		"早餐要吃好。午餐要吃饱。晚餐要吃少。": "早餐要吃好。午餐要吃饱。晚餐要吃少。",
		long: strings.TrimSpace(string([]rune(long)[:maxSummaryLen-1])) + "…",
	}
	for in, want := range tests {
		if got := ExtractiveSummary(in); got != want {
			t.Errorf("ExtractiveSummary(%.40q) = %q, want %q", in, got, want)
		}
		if n := len([]rune(ExtractiveSummary(in))); n > maxSummaryLen {
			t.Errorf("ExtractiveSummary(%.40q) has %d runes, want at most %d", in, n, maxSummaryLen)
		}
	}
}

// chatter is a language model answering with answer and err, or waiting for its context when slow.
type chatter struct {
	answer string
	err    error
	slow   bool
}

func (c chatter) Chat(ctx context.Context, _ string, _ []llm.Message) (string, error) {
	if c.slow {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return c.answer, c.err
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	const text = "Five latte art patterns in one minute. Start with the heart. Then the tulip."
	extractive := ExtractiveSummary(text)
	tests := map[string]struct {
		llm        Chatter
		want, from string
	}{
		"no model":      {nil, extractive, SummaryExtractive},
		"model":         {chatter{answer: "  Five latte art patterns,\n fast. "}, "Five latte art patterns, fast.", SummaryModel},
		"model fails":   {chatter{err: errors.New("503")}, extractive, SummaryExtractive},
		"model blank":   {chatter{answer: " \n"}, extractive, SummaryExtractive},
		"model slow":    {chatter{slow: true}, extractive, SummaryExtractive},
		"model rambles": {chatter{answer: strings.Repeat("x", 500)}, strings.Repeat("x", maxSummaryLen-1) + "…", SummaryModel},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := New(Config{LLM: tc.llm, SummaryTimeout: 100 * time.Millisecond})
			start := time.Now()
			got, from := s.summarize(context.Background(), "Latte art", text)
			if got != tc.want || from != tc.from {
				t.Errorf("summarize = %q (%s), want %q (%s)", got, from, tc.want, tc.from)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("summarize took %v, want it bounded by the summary timeout", d)
			}
		})
	}
	if got, from := New(Config{}).summarize(context.Background(), "t", " "); got != "" || from != "" {
		t.Errorf("summarize of nothing = %q (%s), want nothing", got, from)
	}
}

func TestExtractiveSummaryKeepsNumbers(t *testing.T) {
	t.Parallel()
	got := ExtractiveSummary("The starter kit costs 2.40 dollars at shop.example.com today. Buy it.")
	if !strings.Contains(got, "2.40 dollars at shop.example.com today.") {
		t.Errorf("ExtractiveSummary = %q, want the first sentence whole", got)
	}
	if got := RewriteTemplate("It costs 2.40 dollars. Really.", "concise"); !strings.Contains(got, "2.40 dollars") {
		t.Errorf("RewriteTemplate = %q, want 2.40 kept", got)
	}
}
