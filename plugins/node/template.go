package node

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// scriptSystem is the system prompt of the writing agents.
const scriptSystem = "You write scripts for short videos on platforms such as Douyin, Xiaohongshu and Bilibili. " +
	"Answer with the script only: a hook, three short beats and a call to action, one per line."

// brief is what the writing agents work from.
type brief struct {
	format, topic, summary, platform, style, language, prompt string
	duration, days                                            int
	knowledge                                                 []string
}

func newBrief(in map[string]any) brief {
	b := brief{
		format: asString(in["format"]), topic: asString(in["topic"]), summary: asString(in["summary"]),
		platform: asString(in["platform"]), style: asString(in["style"]), language: asString(in["language"]),
		prompt: asString(in["prompt"]), duration: 30, days: 7,
	}
	if d, ok := asNumber(in["duration"]); ok && d >= 1 {
		b.duration = int(d)
	}
	if d, ok := asNumber(in["days"]); ok && d >= 1 {
		b.days = min(int(d), 31)
	}
	if ks, ok := in["knowledge"].([]any); ok {
		for _, k := range ks {
			if s := asString(k); s != "" {
				b.knowledge = append(b.knowledge, s)
			}
		}
	}
	if b.topic == "" {
		b.topic = clip(firstSentences(b.summary, 1), 80)
	}
	if b.topic == "" {
		b.topic = "today's idea"
	}
	return b
}

// zh reports whether the output should be Chinese: asked for, or a Chinese brief.
func (b brief) zh() bool {
	if strings.HasPrefix(strings.ToLower(b.language), "zh") {
		return true
	}
	if b.language != "" {
		return false
	}
	for _, r := range b.topic + b.summary {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func (b brief) title() string {
	return capitalise(b.topic)
}

// modelPrompt is the model prompt for the brief.
func (b brief) modelPrompt() string {
	var p strings.Builder
	switch b.format {
	case "graphic":
		p.WriteString("Write the copy of an image-and-text post: a title, a caption, three bullet points and hashtags.")
	case "music":
		p.WriteString("Write a brief for a background track: mood, genre, tempo, instruments and structure.")
	case "live":
		p.WriteString("Write a live-stream rundown: opening, three segments with talking points, and a closing call to action.")
	case "drama":
		p.WriteString("Write a short drama episode: a hook scene, three scenes with dialogue, and a cliffhanger.")
	case "plan":
		fmt.Fprintf(&p, "Write a content plan of %d posts, one per line: day, angle, idea and hook.", b.days)
	case "voiceover":
		fmt.Fprintf(&p, "Write a voiceover script of about %d seconds.", b.duration)
	default:
		fmt.Fprintf(&p, "Write a short-video script of about %d seconds.", b.duration)
	}
	fmt.Fprintf(&p, "\nTopic: %s", b.topic)
	if b.summary != "" {
		fmt.Fprintf(&p, "\nBrief: %s", b.summary)
	}
	if b.platform != "" {
		fmt.Fprintf(&p, "\nPlatform: %s", b.platform)
	}
	if b.style != "" {
		fmt.Fprintf(&p, "\nStyle: %s", b.style)
	}
	if b.prompt != "" {
		fmt.Fprintf(&p, "\nNotes: %s", b.prompt)
	}
	if b.language != "" {
		fmt.Fprintf(&p, "\nLanguage: %s", b.language)
	}
	if len(b.knowledge) > 0 {
		p.WriteString("\nFacts from the knowledge base (use them where they fit):")
		for i, k := range b.knowledge {
			fmt.Fprintf(&p, "\n[%d] %s", i+1, k)
		}
	}
	return p.String()
}

func (b brief) musicPrompt() string {
	style := firstNonEmpty(b.style, "warm acoustic")
	p := fmt.Sprintf("%s background music for a %d second video about %s", style, b.duration, b.topic)
	if b.prompt != "" {
		p += "; " + b.prompt
	}
	return p
}

// template writes the brief's text without a language model: deterministic, built from the inputs.
func (b brief) template() map[string]any {
	switch b.format {
	case "music":
		prompt := b.musicPrompt()
		script := fmt.Sprintf("Mood: %s\nLength: %d seconds\nStructure: soft intro (%ds), main theme, gentle outro\nFor: %s",
			firstNonEmpty(b.style, "warm, upbeat"), b.duration, max(b.duration/5, 2), b.topic)
		return map[string]any{"script": script, "title": b.title(), "format": b.format, "prompt": prompt}
	case "plan":
		return b.planTemplate()
	}
	hook, beats, cta := b.hook(), b.beats(), b.cta()
	labels := map[string][]string{
		"video":     {"Hook", "Beat 1", "Beat 2", "Beat 3", "Call to action"},
		"voiceover": {"Hook", "Beat 1", "Beat 2", "Beat 3", "Call to action"},
		"live":      {"Opening", "Segment 1", "Segment 2", "Segment 3", "Closing"},
		"drama":     {"Cold open", "Scene 1", "Scene 2", "Scene 3", "Cliffhanger"},
		"graphic":   {"Title", "Point 1", "Point 2", "Point 3", "Caption"},
	}[b.format]
	if labels == nil {
		labels = []string{"Hook", "Beat 1", "Beat 2", "Beat 3", "Call to action"}
	}
	if b.format == "graphic" {
		hook = b.title()
	}
	lines := []string{hook, beats[0], beats[1], beats[2], cta}
	var s strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&s, "[%s] %s\n", labels[i], l)
	}
	out := map[string]any{
		"script": strings.TrimSpace(s.String()), "title": b.title(), "format": b.format,
		"hook": hook, "beats": []any{beats[0], beats[1], beats[2]}, "cta": cta,
	}
	if b.format == "graphic" {
		out["hashtags"] = b.hashtags()
	}
	return out
}

func (b brief) hook() string {
	if b.zh() {
		return fmt.Sprintf("关于%s，很多人都做错了！%d秒带你搞懂。", b.topic, b.duration)
	}
	return fmt.Sprintf("Most people get %s wrong. Here is how to get it right in %d seconds.", b.topic, b.duration)
}

// beats are three points: sentences of the brief, then facts from the knowledge base, then
// generic but topic-specific steps.
func (b brief) beats() []string {
	var cands []string
	for _, s := range splitSentences(b.summary) {
		if s != b.topic {
			cands = append(cands, s)
		}
	}
	for _, k := range b.knowledge {
		cands = append(cands, clip(firstSentences(k, 1), 160))
	}
	if b.zh() {
		cands = append(cands, "先说最关键的一点："+b.topic+"的核心是什么。",
			"再用一个真实的例子演示"+b.topic+"。", "最后总结效果，以及你马上可以做的一步。")
	} else {
		cands = append(cands, "Start with the one thing that matters most about "+b.topic+".",
			"Show it in action with a quick, concrete example of "+b.topic+".",
			"Wrap up with the result and one step viewers can take today.")
	}
	var beats []string
	seen := map[string]bool{}
	for _, c := range cands {
		if c = strings.TrimSpace(c); c != "" && !seen[c] {
			seen[c] = true
			beats = append(beats, c)
		}
		if len(beats) == 3 {
			break
		}
	}
	return beats
}

func (b brief) cta() string {
	p := strings.ToLower(b.platform)
	if b.zh() {
		switch p {
		case "xiaohongshu":
			return "收藏这篇笔记，评论区分享你的" + b.topic + "心得！"
		case "bilibili":
			return "一键三连，我们下期见！"
		}
		return "关注我，评论区告诉我你怎么看" + b.topic + "！"
	}
	switch p {
	case "douyin", "tiktok":
		return "Follow for more, and tell us in the comments how you do " + b.topic + "!"
	case "xiaohongshu":
		return "Save this note and share your own " + b.topic + " tips below!"
	case "bilibili":
		return "Like, coin and follow if this helped, and see you in the next one!"
	}
	return "Follow for more on " + b.topic + ", and share this with a friend who needs it!"
}

func (b brief) hashtags() []any {
	words := strings.Fields(b.topic)
	for i, w := range words {
		words[i] = capitalise(w)
	}
	tag := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, strings.Join(words, ""))
	tags := []any{"#" + tag}
	if b.platform != "" {
		tags = append(tags, "#"+b.platform)
	}
	return tags
}

var planAngles = []string{"Myth vs fact", "Beginner's guide", "Behind the scenes", "Common mistakes",
	"Quick tip", "Story time", "Questions answered"}

func (b brief) planTemplate() map[string]any {
	plan := make([]any, b.days)
	var s strings.Builder
	for d := range b.days {
		angle := planAngles[d%len(planAngles)]
		idea := fmt.Sprintf("%s: %s", angle, b.topic)
		hook := fmt.Sprintf("%s about %s you will want to know.", angle, b.topic)
		if d < len(b.knowledge) {
			hook = clip(firstSentences(b.knowledge[d], 1), 160)
		}
		plan[d] = map[string]any{"day": d + 1, "angle": angle, "idea": idea, "hook": hook, "platform": b.platform}
		fmt.Fprintf(&s, "Day %d: %s (hook: %s)\n", d+1, idea, hook)
	}
	return map[string]any{"script": strings.TrimSpace(s.String()), "title": "Content plan: " + b.topic,
		"format": b.format, "plan": plan}
}

// ---------------------------------------------------------------- rewriting rules

var (
	spaces     = regexp.MustCompile(`[ \t]+`)
	fillers    = regexp.MustCompile(`(?i)\b(really|very|just|actually|basically|literally|kind of|sort of)\s+`)
	expansions = [][2]string{
		{"do not", "don't"}, {"does not", "doesn't"}, {"cannot", "can't"}, {"it is", "it's"},
		{"you are", "you're"}, {"we are", "we're"}, {"I am", "I'm"}, {"that is", "that's"},
		{"will not", "won't"}, {"is not", "isn't"}, {"you will", "you'll"},
	}
)

// rewriteTemplate rewrites script in style by fixed rules and names the rules it applied.
func rewriteTemplate(script, style string) (string, []any) {
	var lines []string
	for _, l := range strings.Split(script, "\n") {
		if l = strings.TrimSpace(spaces.ReplaceAllString(l, " ")); l != "" {
			lines = append(lines, l)
		}
	}
	rules := []any{"tidy whitespace"}
	text := strings.Join(lines, "\n")
	st := strings.ToLower(style)
	switch {
	case strings.Contains(st, "casual"), strings.Contains(st, "friendly"), strings.Contains(st, "humor"), strings.Contains(st, "funny"):
		for _, e := range expansions {
			text = replaceWord(text, e[0], e[1])
		}
		rules = append(rules, "contractions")
	case strings.Contains(st, "formal"), strings.Contains(st, "professional"):
		for _, e := range expansions {
			text = replaceWord(text, e[1], e[0])
		}
		rules = append(rules, "no contractions")
	case strings.Contains(st, "energetic"), strings.Contains(st, "punchy"), strings.Contains(st, "pop"), strings.Contains(st, "hype"):
		text = fillers.ReplaceAllString(text, "")
		ls := strings.Split(text, "\n")
		for i, l := range ls {
			if strings.HasSuffix(l, ".") {
				ls[i] = strings.TrimSuffix(l, ".") + "!"
			}
		}
		text = strings.Join(ls, "\n")
		rules = append(rules, "drop filler words", "exclamations")
	default: // concise and anything unknown
		text = fillers.ReplaceAllString(text, "")
		rules = append(rules, "drop filler words")
	}
	return text, rules
}

// replaceWord replaces whole-word, case-sensitive occurrences of old (and its capitalised form).
func replaceWord(s, old, new string) string {
	for _, pair := range [][2]string{{old, new}, {capitalise(old), capitalise(new)}} {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(pair[0]) + `\b`)
		s = re.ReplaceAllLiteralString(s, pair[1])
	}
	return s
}

func capitalise(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// ---------------------------------------------------------------- text helpers

var sentenceEnd = regexp.MustCompile(`([.!?。！？])\s*`)

// splitSentences splits text after sentence punctuation (Latin and Chinese).
func splitSentences(text string) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	marked := sentenceEnd.ReplaceAllString(text, "$1\x00")
	var out []string
	for _, s := range strings.Split(marked, "\x00") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func firstSentences(text string, n int) string {
	ss := splitSentences(text)
	if len(ss) > n {
		ss = ss[:n]
	}
	return strings.Join(ss, " ")
}

// clip cuts s to at most n runes, at a word boundary when one is near, and marks the cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(spaces.ReplaceAllString(strings.ReplaceAll(s, "\n", " "), " "))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)[:n]
	cut := string(rs)
	if i := strings.LastIndex(cut, " "); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut) + "…"
}
