package content

import (
	"context"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/kb/llm"
)

// Limits of the ai_summary of a collected inspiration. The feed's smart tab lists the records
// that have one.
const (
	maxSummaryLen   = 200  // runes kept of a summary
	extractiveLen   = 160  // runes of leading sentences an extractive summary aims for
	maxSummaryInput = 4000 // runes of the text given to the language model
	// defaultSummaryTimeout bounds the language model's summary: collect answers within it and
	// falls back to the extractive summary, so a slow or failing model never holds a collect up.
	defaultSummaryTimeout = 5 * time.Second
)

// Summary sources, kept in the record's metadata.summary_source.
const (
	SummaryModel      = "model"
	SummaryExtractive = "extractive"
)

// summarize makes the ai_summary of a collected text: through the language model when one is
// configured and it answers within the summary timeout, else the extractive summary. It returns
// "" when there is no text to summarize.
func (s *Service) summarize(ctx context.Context, title, text string) (summary, source string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", ""
	}
	if s.llm != nil {
		ctx, cancel := context.WithTimeout(ctx, s.summaryTimeout)
		defer cancel()
		user := clip(text, maxSummaryInput)
		if title != "" {
			user = "Title: " + title + "\n\n" + user
		}
		out, err := s.llm.Chat(ctx, s.model, []llm.Message{
			{Role: "system", Content: "You summarise a note a short-video creator saved for inspiration. Answer with one or " +
				"two sentences, at most 120 characters, in the language of the note, and nothing else."},
			{Role: "user", Content: user},
		})
		if out = oneLine(out); err == nil && out != "" {
			return clipEllipsis(out, maxSummaryLen), SummaryModel
		}
		if err != nil {
			s.log.Warn("inspiration summary: language model failed, using the extractive summary", "err", err.Error())
		}
	}
	return ExtractiveSummary(text), SummaryExtractive
}

// ExtractiveSummary is the summary made without a language model: the leading sentences of text,
// as many as fit in about extractiveLen runes (at least the first, cut at maxSummaryLen).
func ExtractiveSummary(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	sep := " "
	if hasHan(text) {
		sep = "" // Chinese sentences are written without a space between them
	}
	var parts []string
	n := 0
	for _, sn := range sentences(text) {
		if sn = oneLine(sn); sn == "" {
			continue
		}
		l := len([]rune(sn))
		if len(parts) > 0 && n+l > extractiveLen {
			break
		}
		parts = append(parts, sn)
		n += l
	}
	return clipEllipsis(strings.Join(parts, sep), maxSummaryLen)
}

// oneLine collapses runs of white space (line breaks included) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipEllipsis cuts s to at most n runes, marking a cut with an ellipsis.
func clipEllipsis(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
