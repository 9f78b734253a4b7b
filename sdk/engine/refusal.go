package engine

import "strings"

// Refused reports whether a language model's answer declines the task instead of doing it ("I'm
// sorry, I can't ...", "抱歉，我无法 ..."): a short answer that opens with a refusal. Engines treat it
// like a failed call and fall back to their templates.
func Refused(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	if len([]rune(t)) > 300 {
		return false // a long answer did the work, whatever it opens with
	}
	for _, p := range []string{"i'm sorry", "i am sorry", "sorry, i can", "i can't", "i cannot", "i can not",
		"i won't", "i will not", "as an ai", "i'm unable", "i am unable", "抱歉", "对不起", "我无法", "我不能"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
