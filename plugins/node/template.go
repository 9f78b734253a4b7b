package node

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reelforge/reelforge/internal/sentence"
)

// scriptSystem is the system prompt of the writing agents.
const scriptSystem = "You write scripts for short videos on platforms such as Douyin, Xiaohongshu and Bilibili. " +
	"Answer with the script only: a hook, three short beats and a call to action, one per line."

// brief is what the writing agents work from.
type brief struct {
	format, topic, summary, platform, style, language, prompt, characters string
	duration, days                                                        int
	knowledge                                                             []string
	knowSources                                                           []string // the document or source of each knowledge passage
	described                                                             []note   // the creator's descriptions of the run's pictures and clips
}

// note is a description of one picture or clip the run shows, and the asset's name.
type note struct{ name, text string }

func newBrief(in map[string]any) brief {
	b := brief{
		format: asString(in["format"]), topic: asString(in["topic"]), summary: asString(in["summary"]),
		platform: asString(in["platform"]), style: asString(in["style"]), language: asString(in["language"]),
		prompt: asString(in["prompt"]), characters: asString(in["characters"]), duration: 30, days: 7,
	}
	if d, ok := asNumber(in["duration"]); ok && d >= 1 {
		b.duration = int(d)
	}
	if d, ok := asNumber(in["days"]); ok && d >= 1 {
		b.days = min(int(d), 31)
	}
	cites, _ := in["citations"].([]any)
	if ks, ok := in["knowledge"].([]any); ok {
		for i, k := range ks {
			if s := asString(k); s != "" {
				src := ""
				if i < len(cites) {
					if c, ok := cites[i].(map[string]any); ok {
						src = firstNonEmpty(asString(c["document"]), asString(c["source"]))
					}
				}
				b.knowledge = append(b.knowledge, s)
				b.knowSources = append(b.knowSources, src)
			}
		}
	}
	if ms, ok := in["material"].([]any); ok {
		for _, m := range ms {
			if m, ok := m.(map[string]any); ok && asString(m["description"]) != "" {
				b.described = append(b.described, note{asString(m["name"]), asString(m["description"])})
			}
		}
	}
	if b.topic == "" {
		b.topic = clip(firstSentences(b.summary, 1), 80)
	}
	// A topic is a headline: the title, and words in the middle of the hook ("Here is … in 30
	// seconds."), so its closing full stop goes (a brief's first sentence always has one). A
	// question mark stays: it makes the topic a question (readShape).
	b.topic = strings.TrimRight(b.topic, ".。!！ ")
	if b.topic == "" {
		b.topic = "today's idea"
	}
	return b
}

// zh reports whether the output should be Chinese: asked for, or a Chinese brief.
func (b brief) zh() bool {
	switch l := strings.ToLower(b.language); {
	case strings.HasPrefix(l, "zh"), l == "cn", l == "chinese", l == "中文", l == "汉语", l == "普通话":
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
		fmt.Fprintf(&p, "Write a short drama episode of about %d seconds: a hook scene, three scenes with dialogue, and a cliffhanger.", b.duration)
	case "plan":
		fmt.Fprintf(&p, "Write a content plan of %d posts, one per line: day, angle, idea and hook.", b.days)
	case "voiceover":
		fmt.Fprintf(&p, "Write a voiceover script of about %d seconds.", b.duration)
	default:
		fmt.Fprintf(&p, "Write a short-video script of about %d seconds.", b.duration)
	}
	switch b.format {
	case "voiceover", "video", "drama", "live":
		if b.zh() {
			fmt.Fprintf(&p, " It is read aloud: about %d Chinese characters (%d per second).", b.target(), hanPerSecond)
		} else {
			fmt.Fprintf(&p, " It is read aloud: about %d words (%.1f per second).", b.target(), wordsPerSecond)
		}
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
	if b.characters != "" {
		fmt.Fprintf(&p, "\nCharacters: %s", b.characters)
	}
	if b.zh() {
		p.WriteString("\nLanguage: write in Chinese (zh)")
	} else if b.language != "" {
		fmt.Fprintf(&p, "\nLanguage: %s", b.language)
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

// NoModel is what a step's outputs (and so its trace) say when it wrote its text from templates
// because no language model is configured.
const NoModel = "no language model: template output"

// Speech rates the templates size a script by: about 2.5 English words or 4 Chinese characters a
// second of narration.
const (
	wordsPerSecond = 2.5
	hanPerSecond   = 4
)

// spokenLength is how long text is to say: Han characters plus Latin words (section markers such
// as [Hook] and speaker names are not counted by the caller, which measures the spoken lines).
func spokenLength(text string) int {
	n, inWord := 0, false
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Han, r):
			n++
			inWord = false
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'':
			if !inWord {
				n++
			}
			inWord = true
		default:
			inWord = false
		}
	}
	return n
}

// target is the spoken length the brief's duration asks for.
func (b brief) target() int {
	if b.zh() {
		return b.duration * hanPerSecond
	}
	return int(float64(b.duration) * wordsPerSecond)
}

// sectionLabels are the section names of each format, English then Chinese: opening, beat (with
// %d), closing.
var sectionLabels = map[string][2][3]string{
	"video":   {{"Hook", "Beat %d", "Call to action"}, {"开场", "要点%d", "结尾"}},
	"live":    {{"Opening", "Segment %d", "Closing"}, {"开场", "环节%d", "收尾"}},
	"drama":   {{"Cold open", "Scene %d", "Cliffhanger"}, {"开场", "第%d场", "悬念"}},
	"graphic": {{"Title", "Point %d", "Caption"}, {"标题", "要点%d", "文案"}},
}

// template writes the brief's text without a language model: deterministic, built from the inputs
// in the brief's language and sized to its duration, in the shape of its topic (readShape). The
// caller marks it source "template"; the outputs say the shape and each beat's sources.
func (b brief) template() map[string]any {
	switch b.format {
	case "music":
		return b.musicTemplate()
	case "plan":
		return b.planTemplate()
	}
	zh := b.zh()
	sh := readShape(b.topic, zh)
	hook, cta := b.hook(sh), b.cta(sh)
	if b.format == "graphic" {
		hook = b.title()
	}
	budget := b.target() - spokenLength(hook) - spokenLength(cta)
	if b.format == "graphic" {
		budget = min(budget, 120)
	}
	beats := b.beats(sh, budget)
	out := map[string]any{"title": b.title(), "format": b.format, "hook": hook, "cta": cta, "language": map[bool]string{false: "en", true: "zh"}[zh],
		"shape": sh.name()}
	if b.style != "" {
		out["style"] = b.style
	}
	var s strings.Builder
	switch b.format {
	case "voiceover": // narration only: every line is read aloud
		s.WriteString(hook + "\n")
		for _, bt := range beats {
			s.WriteString(bt.text(zh) + "\n")
		}
		s.WriteString(cta)
	case "drama":
		cast := b.cast()
		out["characters"] = anySlice(cast)
		labels := sectionLabels["drama"][boolIndex(zh)]
		fmt.Fprintf(&s, "[%s]\n%s: %s\n", labels[0], cast[0], hook)
		n := 1
		for i, bt := range beats {
			fmt.Fprintf(&s, "[%s]\n", fmt.Sprintf(labels[1], i+1))
			for j, l := range bt.lines {
				text := l.text
				if j == 0 {
					text = bt.label + text
				}
				fmt.Fprintf(&s, "%s: %s\n", cast[n%len(cast)], text)
				n++
			}
		}
		fmt.Fprintf(&s, "[%s]\n%s: %s", labels[2], cast[n%len(cast)], b.cliffhanger())
	default:
		labels, ok := sectionLabels[b.format]
		if !ok {
			labels = sectionLabels["video"]
		}
		l := labels[boolIndex(zh)]
		fmt.Fprintf(&s, "[%s] %s\n", l[0], hook)
		for i, bt := range beats {
			fmt.Fprintf(&s, "[%s] %s\n", fmt.Sprintf(l[1], i+1), bt.text(zh))
		}
		fmt.Fprintf(&s, "[%s] %s", l[2], cta)
	}
	beatTexts := make([]any, len(beats))
	beatSources := make([]any, len(beats))
	var sources []string
	for i, bt := range beats {
		beatTexts[i] = bt.text(zh)
		bs := bt.sources()
		beatSources[i] = anySlice(bs)
		for _, src := range bs {
			if src != sourceTemplate && !containsString(sources, src) {
				sources = append(sources, src)
			}
		}
	}
	out["beats"], out["beat_sources"] = beatTexts, beatSources
	if len(sources) > 0 {
		out["sources"] = anySlice(sources)
	}
	out["script"] = strings.TrimSpace(s.String())
	if b.format == "graphic" {
		out["hashtags"] = b.hashtags()
	} else {
		// How long the script takes to say, so a template short of material says it is short.
		n := spokenLength(hook + " " + cta)
		for _, bt := range beats {
			n += spokenLength(bt.text(zh))
		}
		rate := wordsPerSecond
		if zh {
			rate = hanPerSecond
		}
		out["target_seconds"], out["estimated_seconds"] = b.duration, int(float64(n)/rate+0.5)
	}
	return out
}

// templateNote says, for the trace, the shape the template read and where each beat came from.
func templateNote(out map[string]any) string {
	shape, _ := out["shape"].(string)
	if shape == "" {
		return ""
	}
	note := "template shape: " + shape
	srcs, _ := out["beat_sources"].([]any)
	var parts []string
	for i, s := range srcs {
		names := []string{}
		for _, n := range s.([]any) {
			if n == sourceTemplate {
				n = "the template's general lines"
			}
			names = append(names, n.(string))
		}
		parts = append(parts, fmt.Sprintf("beat %d from %s", i+1, strings.Join(names, " and ")))
	}
	if len(parts) > 0 {
		note += "; " + strings.Join(parts, ", ")
	}
	return note
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func joinSentences(ss []string, zh bool) string {
	if zh {
		return strings.Join(ss, "")
	}
	return strings.Join(ss, " ")
}

// recordLike matches a table or CSV row the knowledge base turned into "field: value; field: value.":
// facts to answer from, not sentences to read aloud.
var recordLike = regexp.MustCompile(`^[^:：;；]{1,40}[:：][^;；]+[;；]\s*[^:：;；]{1,40}[:：]`)

// endsSentence reports whether s is a whole sentence (ends in sentence punctuation), so a fragment
// of a table or a heading is not narrated.
func endsSentence(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return strings.ContainsRune(sentence.Ends+"…", r)
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// stylePrefix opens the hook in the brief's style.
func (b brief) stylePrefix() string {
	st := strings.ToLower(b.style)
	has := func(keys ...string) bool {
		for _, k := range keys {
			if strings.Contains(st, k) {
				return true
			}
		}
		return false
	}
	zh := b.zh()
	switch {
	case st == "":
		return ""
	case has("casual", "friendly", "轻松", "口语"):
		return map[bool]string{false: "Hey friends! ", true: "嘿，朋友们！"}[zh]
	case has("energetic", "punchy", "hype", "激情", "燃"):
		return map[bool]string{false: "Okay, listen up! ", true: "注意了！"}[zh]
	case has("humor", "funny", "幽默", "搞笑"):
		return map[bool]string{false: "Confession time: ", true: "说个大实话："}[zh]
	case has("emotion", "heart", "情感", "走心"):
		return map[bool]string{false: "This one matters to me. ", true: "这件事，我想认真地讲给你听。"}[zh]
	case has("story", "narrat", "故事"):
		return map[bool]string{false: "Let me tell you how this started. ", true: "给你讲个故事。"}[zh]
	}
	return ""
}

// hooks are the openings of each format, English then Chinese: %[1]s is the topic, %[2]d the
// duration in seconds.
var hooks = map[string][2]string{
	"voiceover": {"Let's talk about %[1]s.", "今天聊聊%[1]s。"},
	"live":      {"Welcome in! Today we are talking about %[1]s, and I will take your questions as we go.", "欢迎来到直播间！今天我们聊%[1]s，边聊边回答大家的问题。"},
	"drama":     {"I thought I knew everything about %[1]s. Then that day happened.", "我一直以为自己很懂%[1]s，直到那天。"},
	"video":     {"Here is %[1]s in %[2]d seconds.", "%[2]d秒讲清楚%[1]s。"},
}

// hook opens the script. A list or a question opens with the topic's own promise ("Here are 3
// reasons to love pour-over coffee.", "为什么手冲咖啡更香？"); any other topic with its format's
// opening. The topic is written for the middle of a sentence (midSentence).
func (b brief) hook(sh shape) string {
	zh := b.zh()
	// Emoji that end the topic end the hook, after its punctuation: "为什么要学手冲咖啡？☕",
	// "Here are 3 reasons to brew pour-over. ☕", "Let's talk about pour-over coffee. ☕".
	core, tail := b.topicParts()
	topic := strings.TrimRight(core, ".。!！ ")
	var h string
	switch {
	case b.format == "drama":
	case sh.question != "" && !zh && strings.HasPrefix(strings.ToLower(topic), "how to "):
		h = "Here is " + midSentence(topic) + "."
	case sh.question != "":
		h = capitalise(strings.TrimRight(topic, "?？ "))
		h += map[bool]string{false: "?", true: "？"}[zh]
	case sh.count > 0 && zh:
		h = topic + "，我们一条一条来看。"
	case sh.count > 0 && listFirst.MatchString(topic):
		t := midSentence(topic)
		if strings.HasPrefix(t, "top ") {
			t = "the " + t
		}
		h = "Here are " + t + "."
	case sh.count > 0: // "In 30 seconds: 3 easy dinners" is its own headline
		h = capitalise(topic) + "."
	}
	if h != "" {
		h += tail
		if b.format == "live" {
			h = map[bool]string{false: "Welcome in! ", true: "欢迎来到直播间！"}[zh] + h
		}
		return b.stylePrefix() + h
	}
	f, ok := hooks[b.format]
	if !ok {
		f = hooks["video"]
	}
	t := topic
	if !zh {
		t = midSentence(t)
	}
	return b.stylePrefix() + fmt.Sprintf(f[boolIndex(zh)], t, b.duration) + tail
}

// topicParts splits the topic into its words and the emoji that end it ("pour-over coffee" and
// " ☕"), so a sentence that names the topic in its middle leaves the emoji out ("Are you making
// this pour-over coffee mistake?", not "… coffee ☕ mistake?") and a hook puts them at its end.
// The tail is "" when the topic ends in no emoji; in English it starts with a space.
func (b brief) topicParts() (core, tail string) {
	core = strings.TrimRightFunc(b.topic, trailingEmoji)
	if core == "" {
		return b.topic, ""
	}
	tail = strings.TrimSpace(b.topic[len(core):])
	if tail != "" && !b.zh() {
		tail = " " + tail
	}
	return core, tail
}

// trailingEmoji is what topicParts and readShape take off a topic's end: emoji (with their
// variation selectors and joiners) and spaces.
func trailingEmoji(r rune) bool {
	return unicode.IsSpace(r) || unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r) || r == 0xFE0F || r == 0x200D
}

// listFirst matches a topic that starts with its count, so "Here are …" reads as a sentence.
var listFirst = regexp.MustCompile(`(?i)^(top\s+)?(\d|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)`)

func (b brief) cliffhanger() string {
	topic, _ := b.topicParts()
	if b.zh() {
		return fmt.Sprintf("等等，关于%s，最关键的那件事你还不知道？", topic)
	}
	return fmt.Sprintf("Wait. Nobody told you the last part about %s?", topic)
}

// cast is the drama's characters: the names of the `characters` input (split at commas, 、 and
// line breaks, a description after a colon or dash dropped), else two generic roles.
func (b brief) cast() []string {
	var out []string
	for _, part := range castSplit.Split(b.characters, -1) {
		name := strings.TrimSpace(castDesc.Split(part, 2)[0])
		if name != "" && utf8.RuneCountInString(name) <= 30 {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		if b.zh() {
			return []string{"主角", "朋友"}
		}
		return []string{"Lead", "Friend"}
	}
	if len(out) == 1 {
		out = append(out, map[bool]string{false: "Friend", true: "朋友"}[b.zh()])
	}
	return out
}

var (
	castSplit = regexp.MustCompile(`[,，、;；\n]+|\band\b|和`)
	castDesc  = regexp.MustCompile(`[:：(（]| - | – `)
)

// cta closes the script. A list asks which item the viewer would add or agrees with most, a
// question asks for the viewer's answer; the topic itself is named only when it reads as a noun
// phrase there (a plain topic; in Chinese, a short one), never "分享你的三个理由让你爱上手冲咖啡心得".
func (b brief) cta(sh shape) string {
	p := strings.ToLower(b.platform)
	list, question := sh.count > 0, sh.question != ""
	core, _ := b.topicParts()
	if b.zh() {
		named := !list && !question && utf8.RuneCountInString(core) <= 8 && !zhNounEnd.MatchString(core)
		switch {
		case p == "bilibili":
			return "一键三连，我们下期见！"
		case b.format == "live":
			return "喜欢今天的内容就点个关注，我们下次直播见！"
		case p == "xiaohongshu" && list:
			return "收藏这篇笔记，你最认同哪一条？评论区告诉我！"
		case p == "xiaohongshu" && named:
			return "收藏这篇笔记，评论区分享你的" + core + "心得！"
		case p == "xiaohongshu":
			return "收藏这篇笔记，评论区聊聊你的看法！"
		case list:
			return "关注我，评论区告诉我你最认同哪一条！"
		case question:
			return "关注我，评论区说说你的答案！"
		case named:
			return "关注我，评论区告诉我你怎么看" + core + "！"
		}
		return "关注我，评论区告诉我你的看法！"
	}
	topic := midSentence(strings.TrimRight(core, ".!? "))
	switch {
	case p == "bilibili":
		return "Like, coin and follow if this helped, and see you in the next one!"
	case b.format == "live":
		return "Follow so you do not miss the next live, and thanks for joining!"
	case list && (p == "douyin" || p == "tiktok" || p == "xiaohongshu"):
		return "Follow for more, and tell us in the comments which one you would add!"
	case question && (p == "douyin" || p == "tiktok" || p == "xiaohongshu"):
		return "Follow for more, and tell us your own answer in the comments!"
	case p == "douyin", p == "tiktok":
		return "Follow for more, and tell us in the comments how you do " + topic + "!"
	case p == "xiaohongshu":
		return "Save this note and share your own " + topic + " tips below!"
	case list, question:
		return "Follow for more like this, and share it with a friend who needs it!"
	}
	return "Follow for more on " + topic + ", and share this with a friend who needs it!"
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

func (b brief) musicTemplate() map[string]any {
	prompt := b.musicPrompt()
	var script string
	if b.zh() {
		script = fmt.Sprintf("风格：%s\n时长：%d秒\n结构：轻柔前奏（%d秒）、主旋律、温和收尾\n用于：%s",
			firstNonEmpty(b.style, "温暖、轻快"), b.duration, max(b.duration/5, 2), b.topic)
	} else {
		script = fmt.Sprintf("Mood: %s\nLength: %d seconds\nStructure: soft intro (%ds), main theme, gentle outro\nFor: %s",
			firstNonEmpty(b.style, "warm, upbeat"), b.duration, max(b.duration/5, 2), b.topic)
	}
	if b.prompt != "" {
		script += map[bool]string{false: "\nBrief: ", true: "\n要求："}[b.zh()] + b.prompt
	}
	return map[string]any{"script": script, "title": b.title(), "format": b.format, "prompt": prompt}
}

// planAngle is one kind of post a plan can hold: its name, the idea and the hook (%s is the topic)
// in English then Chinese, and the format that suits it.
type planAngle struct {
	name, idea, hook [2]string
	format           string
	facts            bool // a knowledge-base fact can be its hook
}

// planAngles are the kinds of post a plan rotates through. Day d takes angle (3d + d/10) mod 10:
// ten days in a row never repeat one, consecutive days differ, and each ten days start one angle
// later, so a 30-day plan does not repeat a week's pattern.
var planAngles = []planAngle{
	{[2]string{"Myth vs fact", "误区与真相"}, [2]string{"Bust one myth about %s, then show what is true", "拆穿一个关于%s的误区，再讲清真相"},
		[2]string{"Everyone says this about %s. It is not quite right.", "关于%s，大家都这么说，其实不完全对。"}, "video", true},
	{[2]string{"Beginner's guide", "新手指南"}, [2]string{"The first three steps of %s for someone starting today", "给今天刚开始的人：%s的前三步"},
		[2]string{"Never tried %s? Start here.", "没试过%s？从这里开始。"}, "voiceover", true},
	{[2]string{"Behind the scenes", "幕后花絮"}, [2]string{"Film your own %s routine as it really happens, mess included", "拍下你真实的%s日常，包括翻车的部分"},
		[2]string{"This is what %s really looks like on a normal day.", "这才是%s平常真实的样子。"}, "video", false},
	{[2]string{"Common mistakes", "常见错误"}, [2]string{"One mistake people make with %s, and the fix", "大家在%s上常犯的一个错误，和改法"},
		[2]string{"Are you making this %s mistake?", "你是不是也在%s上犯了这个错？"}, "voiceover", false},
	{[2]string{"Quick tip", "快速技巧"}, [2]string{"A 15-second tip on %s that viewers can try today", "一个15秒就能学会的%s小技巧"},
		[2]string{"One small change that makes %s easier.", "一个小改变，让%s轻松很多。"}, "video", true},
	{[2]string{"Story time", "故事时间"}, [2]string{"The moment %s changed something for you, told in one minute", "用一分钟讲%s给你带来的一次改变"},
		[2]string{"I did not expect %s to change this.", "没想到%s会改变这件事。"}, "voiceover", false},
	{[2]string{"Questions answered", "问题解答"}, [2]string{"Answer the three questions your viewers ask most about %s", "回答粉丝问得最多的三个%s问题"},
		[2]string{"You asked about %s. Here are the answers.", "你们问的%s问题，答案都在这里。"}, "live", true},
	{[2]string{"Before and after", "前后对比"}, [2]string{"Show a before and after of %s, one week apart", "展示%s的前后对比，相隔一周"},
		[2]string{"Same %s, one week apart.", "同样的%s，相隔一周。"}, "graphic", false},
	{[2]string{"What you need", "装备清单"}, [2]string{"The few things %s really needs, and what to skip", "做%s真正需要的几样东西，和可以省掉的"},
		[2]string{"You need less for %s than you think.", "做%s，你需要的比想象中少。"}, "graphic", true},
	{[2]string{"Challenge", "打卡挑战"}, [2]string{"Invite viewers to a 7-day %s challenge", "邀请粉丝一起做7天%s挑战"},
		[2]string{"Try this %s challenge with me for a week.", "和我一起做一周%s挑战吧。"}, "video", false},
}

// planTemplate writes a plan of b.days posts: each day an angle of its own (see planAngles), its
// format, an idea and a hook; the knowledge base's facts about the topic become the hooks of the
// angles that can open with a fact, each day naming where its hook came from.
func (b brief) planTemplate() map[string]any {
	zh := b.zh()
	lang := boolIndex(zh)
	topic, _ := b.topicParts()
	if !zh {
		topic = midSentence(topic)
	}
	var facts []line // the knowledge base's, not the brief's own sentences
	for _, l := range b.material(readShape(b.topic, zh)) {
		if l.source != "brief" {
			facts = append(facts, l)
		}
	}
	plan := make([]any, b.days)
	var s strings.Builder
	for d := range b.days {
		a := planAngles[(3*d+d/10)%len(planAngles)]
		idea, hook, src := fmt.Sprintf(a.idea[lang], topic), fmt.Sprintf(a.hook[lang], topic), sourceTemplate
		if a.facts && len(facts) > 0 {
			hook, src = clip(facts[0].text, 160), facts[0].source
			facts = facts[1:]
		}
		plan[d] = map[string]any{"day": d + 1, "angle": a.name[lang], "format": a.format, "idea": idea, "hook": hook,
			"platform": b.platform, "source": src}
		if zh {
			fmt.Fprintf(&s, "第%d天｜%s（%s）：%s。开场：%s\n", d+1, a.name[lang], a.format, idea, hook)
		} else {
			fmt.Fprintf(&s, "Day %d, %s (%s): %s. Hook: %s\n", d+1, a.name[lang], a.format, idea, hook)
		}
	}
	title := "Content plan: " + b.topic
	if zh {
		title = "内容计划：" + b.topic
	}
	return map[string]any{"script": strings.TrimSpace(s.String()), "title": title, "format": b.format, "plan": plan}
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

// splitSentences splits text into sentences (Latin and Chinese), never inside a number, an address
// or an abbreviation.
func splitSentences(text string) []string { return sentence.Split(text, sentence.Ends) }

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
