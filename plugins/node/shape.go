package node

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// shape is what a topic promises, read without a language model so that a template script keeps
// the promise: a number of items ("three reasons", "Top 7 hacks", "5个技巧", "十大误区") gives that
// many numbered beats, a question ("Why …?", "为什么…") an answer beat.
type shape struct {
	count int // items promised, 2 to maxItems; 0 for none
	// noun is what is counted, singular ("reason", "hack"; Chinese "理由", "误区"), "" when the
	// topic does not say; unit is the Chinese measure word of the numbered label (个, 招, 步).
	noun, unit string
	question   string // "why", "how" or "what" when the topic asks a question, else ""
	// explain: the question asks how or why something is ("How do astronauts sleep?",
	// "为什么面包会变硬？"), not what the viewer should do ("How do I start running?",
	// "怎么开始跑步"): its beats explain rather than advise.
	explain bool
	// subject is the topic without its number phrase and question words: what knowledge must
	// be about to be used ("pour-over coffee" for "3 reasons to love pour-over coffee").
	subject string
}

// maxItems bounds the numbered beats: "100 tips" is a title, not a 30-second script's plan.
const maxItems = 12

// name says the shape in the trace: "list of 3 reasons", "question (why)", "plain".
func (s shape) name() string {
	var parts []string
	if s.count > 0 {
		n := "list of " + strconv.Itoa(s.count) + " items"
		if s.noun != "" {
			n += " (" + s.noun + ")"
		}
		parts = append(parts, n)
	}
	if s.question != "" {
		parts = append(parts, "question ("+s.question+")")
	}
	if len(parts) == 0 {
		return "plain"
	}
	return strings.Join(parts, ", ")
}

var (
	numberWords = map[string]int{"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
		"nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
	// A count, then at most two words, then a plural noun: "3 reasons", "Top 7 travel hacks",
	// "five things nobody tells you" (the shortest such phrase).
	enCount = regexp.MustCompile(`(?i)\b(?:top\s+)?(\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+((?:[a-z][a-z'-]*\s+){0,2}?)([a-z][a-z'-]*s|people|men|women|children)\b`)
	// enListNouns are what a list counts (singular): "3 kids", "30 seconds" or "2 dollars" are no list.
	enListNouns = wordSet("reason tip way thing mistake step secret hack idea habit rule lesson myth sign trick fact " +
		"question benefit tool food place book app product recipe exercise word movie film song game destination spot dish " +
		"drink snack gadget strategy technique method principle truth lie example stage type kind error problem solution " +
		"change skill law move stretch pose routine item essential pick brand city country beach cafe restaurant " +
		"feature setting shortcut trap hobby story tactic signal factor quote dinner meal lunch breakfast dessert outfit " +
		"look plant gift")
	// A count and a measure word, then the counted noun: "3个理由", "5个技巧", "十大误区", "3招".
	zhCount = regexp.MustCompile(`([0-9]{1,2}|[一二两三四五六七八九十]{1,3})\s*(个|种|条|件|项|类|大|招|步|点|款|样|句|本|道)(\p{Han}{0,6})`)
	// What follows a measure word that measures time, money or people, not items.
	zhUnits = regexp.MustCompile(`^(月|小时|星期|礼拜|人|钟|分钟)`)
	// Where the counted noun ends: the verb or particle that starts the rest of the topic.
	zhNounEnd = regexp.MustCompile(`[让使帮教的你我他她在和与从给把为就能会要可带，,、：:！!？?。]`)

	enQuestion = regexp.MustCompile(`(?i)^(why|how|what|which|when|where|who|should|can|could|is|are|do|does|did|will|would)\b`)
	zhHow      = regexp.MustCompile(`怎么|如何|怎样`)
	zhAdvice   = regexp.MustCompile(`我|你|咱|该|应该|要不要|能不能`)
	zhQuestion = regexp.MustCompile(`为什么|为何|怎么|如何|怎样|什么|哪|吗|呢|是否|要不要|该不该|能不能`)
)

// zhListNouns are what a Chinese list counts (the noun's last two characters, or one).
var zhListNouns = wordSet("理由 原因 好处 技巧 方法 办法 误区 错误 习惯 建议 秘诀 步骤 问题 细节 要点 窍门 妙招 坑 " +
	"地方 景点 工具 神器 好物 食谱 动作 原则 规则 特点 标准 信号 迹象 心得 经验 教训 真相 秘密 故事 观点 小事 事情 事 " +
	"知识 常识 技能 姿势 菜 店 书 电影 游戏 应用 功能 设置 搭配 做法 用法 区别 阶段 类型 雷区")

func wordSet(words string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(words) {
		out[w] = true
	}
	return out
}

// readShape reads the topic's shape; zh says the script is Chinese. The emoji that end the topic
// are no part of its subject, which beats name mid-sentence ("… about an astronaut's first day.",
// not "… first day 🚀.") and the knowledge search asks for.
func readShape(topic string, zh bool) shape {
	t := strings.TrimSpace(strings.TrimRightFunc(topic, trailingEmoji))
	s := shape{subject: t}
	if zh {
		s.readZH(t)
	} else {
		s.readEN(t)
	}
	return s
}

func (s *shape) readEN(t string) {
	for _, m := range enCount.FindAllStringSubmatchIndex(t, -1) {
		num, noun := strings.ToLower(t[m[2]:m[3]]), strings.ToLower(t[m[6]:m[7]])
		n, ok := numberWords[num]
		if !ok {
			n, _ = strconv.Atoi(num)
		}
		if n >= 2 && n <= maxItems && enListNouns[singular(noun)] {
			s.count, s.noun = n, singular(noun)
			// The subject is what the rest of the topic is about: "to love pour-over coffee".
			s.subject = strings.TrimSpace(t[:m[0]] + " " + t[m[1]:])
			break
		}
	}
	if strings.HasSuffix(t, "?") || enQuestion.MatchString(t) {
		s.question = "what"
		switch w := strings.ToLower(strings.Fields(t)[0]); w {
		case "why", "how":
			s.question = w
		}
		s.explain = s.count == 0 && !enAdvice.MatchString(t)
	}
	s.subject = strings.TrimSpace(strings.TrimRight(enQuestion.ReplaceAllString(s.subject, ""), "?!. "))
	s.subject = strings.TrimSpace(enLead.ReplaceAllString(s.subject, ""))
}

// enAdvice matches a question about what the asker or the viewer should do ("How do I …",
// "How to …", "What should you …", "Can we …"), which the template answers with advice.
var enAdvice = regexp.MustCompile(`(?i)^\W*how\s+to\b|\b(i|you|we|my|your|our|me|us)\b|^\W*(should|can|could)\b`)

// enLead is what joins a list's count to its subject: "to", "for", "about", "you should know about".
var enLead = regexp.MustCompile(`(?i)^(?:(?:that\s+)?(?:you|we|i)\s+(?:should|must|need to|can)\s+(?:know\s+)?|to|for|about|on|of|in|with|when|that)\b\s*`)

func (s *shape) readZH(t string) {
	if m := zhCount.FindStringSubmatch(t); m != nil && !zhUnits.MatchString(m[3]) {
		n := zhNumber(m[1])
		if n >= 2 && n <= maxItems {
			s.count, s.unit = n, m[2]
			noun := m[3]
			if i := zhNounEnd.FindStringIndex(noun); i != nil {
				noun = noun[:i[0]]
			}
			// The label names the noun's head: 理由 of 理由, 误区 of 旅行误区.
			if r := []rune(noun); len(r) > 2 {
				noun = string(r[len(r)-2:])
			}
			switch s.unit {
			case "招", "步", "点":
				// counted by their measure word: 第一招, 第二步
			case "大":
				s.noun = noun // 十大… ranks items, whatever they are
			default:
				if !zhListNouns[noun] {
					*s = shape{subject: t} // "3个孩子的妈妈": a count of what is no list
					break
				}
				s.noun = noun
			}
			if s.count > 0 {
				if s.unit == "大" {
					s.unit = "个"
				}
				// The subject keeps the rest of the noun phrase: 省钱 of 5个省钱技巧.
				s.subject = strings.Replace(strings.Replace(t, m[1]+m[2], "", 1), s.noun, "", 1)
			}
		}
	}
	switch {
	case strings.Contains(t, "为什么"), strings.Contains(t, "为何"):
		s.question = "why"
		s.explain = true
	case strings.Contains(t, "怎么"), strings.Contains(t, "如何"), strings.Contains(t, "怎样"):
		s.question = "how"
		// "宇航员怎么睡觉" asks how something is done, "怎么开始跑步" what to do: a subject
		// before the question word, other than the asker or the viewer, makes it the first.
		before := zhHow.Split(t, 2)[0]
		s.explain = strings.IndexFunc(before, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
	case strings.HasSuffix(t, "？"), strings.HasSuffix(t, "?"), zhQuestion.MatchString(t):
		s.question = "what"
	}
	if s.count > 0 || zhAdvice.MatchString(t) {
		s.explain = false
	}
	s.subject = strings.TrimSpace(strings.TrimRight(zhQuestion.ReplaceAllString(s.subject, ""), "？?！!。 "))
}

// zhNumber reads 2, 十, 十二, 两 and 二十 (0 when it is none of those).
func zhNumber(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	digits := map[rune]int{'一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
	r := []rune(s)
	switch {
	case len(r) == 1 && r[0] == '十':
		return 10
	case len(r) == 1:
		return digits[r[0]]
	case len(r) == 2 && r[0] == '十':
		return 10 + digits[r[1]]
	case len(r) == 2 && r[1] == '十':
		return digits[r[0]] * 10
	case len(r) == 3 && r[1] == '十':
		return digits[r[0]]*10 + digits[r[2]]
	}
	return 0
}

// zhOrdinal writes 1 to 99 in Chinese numerals (第三, 第十二).
func zhOrdinal(n int) string {
	d := []string{"", "一", "二", "三", "四", "五", "六", "七", "八", "九"}
	switch {
	case n < 10:
		return d[n]
	case n == 10:
		return "十"
	case n < 20:
		return "十" + d[n%10]
	case n%10 == 0:
		return d[n/10] + "十"
	}
	return d[n/10] + "十" + d[n%10]
}

// singular is the singular of an English plural noun (reasons, boxes, stories; a few irregulars).
func singular(w string) string {
	switch w {
	case "people":
		return "person"
	case "men":
		return "man"
	case "women":
		return "woman"
	case "children":
		return "child"
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	}
	return strings.TrimSuffix(w, "s")
}

// label is the numbered label that opens item i (1-based) of a list: "Reason 1: ", "第一个理由：".
func (s shape) label(i int, zh bool) string {
	if zh {
		if s.noun == "" {
			if s.unit == "个" || s.unit == "" {
				return "第" + zhOrdinal(i) + "点："
			}
			return "第" + zhOrdinal(i) + s.unit + "："
		}
		return "第" + zhOrdinal(i) + s.unit + s.noun + "："
	}
	switch s.noun {
	case "", "person", "man", "woman", "child", "thing":
		return "Number " + strconv.Itoa(i) + ": "
	}
	return capitalise(s.noun) + " " + strconv.Itoa(i) + ": "
}

// commonFirst are English words that are capitalised at the start of a topic only because they
// start it; mid-sentence they are lower case. A proper noun or acronym is never one of them.
var commonFirst = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an the this that these those my your our their his her its some any every each " +
		"all no one two three four five six seven eight nine ten top best why how what which when where who whose " +
		"should can could is are do does did will would easy quick simple simply small big first last new old good " +
		"great better more most less least why's how's what's getting making learning finding choosing starting " +
		"being living working cooking eating using building writing reading traveling travelling " +
		"morning evening weekend daily everyday home little in on at for with from after before inside life") {
		commonFirst[w] = true
	}
}

// midSentence writes a topic for the middle of a sentence: its first word lower-cased when that
// word is a common one capitalised only for starting the topic ("An astronaut's first day" is
// "an astronaut's first day"); proper nouns ("Tokyo"), acronyms ("AI") and "I" are kept.
func midSentence(topic string) string {
	first, rest, _ := strings.Cut(topic, " ")
	word := strings.TrimFunc(first, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	if word == "" || !commonFirst[strings.ToLower(word)] {
		return topic
	}
	r, _ := utf8.DecodeRuneInString(word)
	if !unicode.IsUpper(r) || strings.ToUpper(word) == word && utf8.RuneCountInString(word) > 1 {
		return topic // already lower case, or an acronym
	}
	first = strings.Replace(first, word, strings.ToLower(word[:1])+word[1:], 1)
	if rest == "" {
		return first
	}
	return first + " " + rest
}
