package node

import (
	"fmt"
	"strings"

	"github.com/reelforge/reelforge/internal/extract"
	"github.com/reelforge/reelforge/internal/sentence"
)

// The middle of a template script: its beats, each a few sentences and where they came from.

// line is one sentence a beat says and where it comes from: "brief", "material: <asset name>",
// "knowledge: <document>", or "template" (the template's own general lines, said in the trace as such).
type line struct{ text, source string }

// sourceTemplate names the template's own lines.
const sourceTemplate = "template"

// beat is one beat of a script: an optional numbered label ("Reason 1: ") and its sentences.
type beat struct {
	label string
	lines []line
}

func (bt beat) text(zh bool) string {
	ss := make([]string, len(bt.lines))
	for i, l := range bt.lines {
		ss[i] = l.text
	}
	return bt.label + joinSentences(ss, zh)
}

// sources are the distinct sources of the beat's sentences, in order.
func (bt beat) sources() []string {
	var out []string
	for _, l := range bt.lines {
		if !containsString(out, l.source) {
			out = append(out, l.source)
		}
	}
	return out
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// material is what the beats can say from the run's own sources, in order: the brief's
// sentences, the creator's descriptions of the pictures and clips the run shows, then the
// knowledge base's sentences. A description or knowledge sentence is taken only when it is about
// the topic (sharing an informative word with its subject or the brief): a photo of something
// else, or a passage the search found for other words, is left out. Only whole sentences in the
// script's language are taken, never a table row.
func (b brief) material(sh shape) []line {
	zh := b.zh()
	var cands []line
	for _, s := range sentence.Split(b.summary, sentence.Ends) {
		if s != b.topic {
			cands = append(cands, line{s, "brief"})
		}
	}
	about := sh.subject + " " + b.summary
	for _, d := range b.described {
		for _, s := range sentence.Split(d.text, sentence.Ends) {
			if s = strings.TrimSpace(s); s != "" && extract.Shared(about, s) > 0 {
				// A caption-like description ("latte art on oat milk") becomes a sentence to say.
				if !endsSentence(s) {
					s += map[bool]string{false: ".", true: "。"}[zh]
				}
				cands = append(cands, line{capitalise(s), "material: " + d.name})
			}
		}
	}
	for i, k := range b.knowledge {
		src := "knowledge"
		if i < len(b.knowSources) && b.knowSources[i] != "" {
			src += ": " + b.knowSources[i]
		}
		for _, s := range sentence.Split(k, sentence.Ends) {
			if extract.Shared(about, s) > 0 {
				cands = append(cands, line{s, src})
			}
		}
	}
	var out []line
	seen := map[string]bool{}
	for _, c := range cands {
		c.text = strings.TrimSpace(c.text)
		if c.text == "" || seen[c.text] || hasHan(c.text) != zh || !endsSentence(c.text) || recordLike.MatchString(c.text) {
			continue
		}
		seen[c.text] = true
		out = append(out, c)
	}
	return out
}

// pool is the template's own lines for the shape: reasons for "3 reasons" and "why" topics, tips
// for "5 tips" and "how" topics, mistakes for "7 mistakes", general advice otherwise. Each is a
// whole, concrete statement; the trace names them as the template's.
func (b brief) pool(sh shape) []line {
	zh := b.zh()
	kind := poolOf[sh.noun]
	switch {
	case kind != "":
	case sh.explain:
		kind = "explain"
	case sh.count > 0, sh.question == "how":
		kind = "tips"
	default:
		kind = "general"
	}
	lines := pools[kind][boolIndex(zh)]
	subject := midSentence(strings.TrimSpace(sh.subject))
	if subject == "" {
		subject = midSentence(b.topic)
	}
	out := make([]line, 0, len(lines))
	for _, l := range lines {
		if strings.Contains(l, "%s") {
			if sh.count > 0 || sh.question != "" {
				continue // the subject of a list or a question is no noun phrase to name
			}
			l = fmt.Sprintf(l, subject)
		}
		out = append(out, line{l, sourceTemplate})
	}
	return out
}

// answerLine is the answer beat's sentence: the brief's or knowledge base's sentence sharing the
// most words with the question, else the template's plain answer for the kind of question.
func (b brief) answerLine(sh shape, mat []line) (line, int) {
	best, at := 0, -1
	for i, l := range mat {
		if n := extract.Shared(b.topic, l.text); n > best {
			best, at = n, i
		}
	}
	if at >= 0 {
		return mat[at], at
	}
	if sh.explain {
		return line{explanations[sh.question][boolIndex(b.zh())], sourceTemplate}, -1
	}
	return line{answers[sh.question][boolIndex(b.zh())], sourceTemplate}, -1
}

// beats writes the script's middle to fill budget (spoken length), in the shape of the topic:
// sh.count numbered beats for a list, an answer beat first for a question, else up to three
// beats. Sentences come from the brief and the knowledge base first, then the template's pool;
// every beat gets at least one.
func (b brief) beats(sh shape, budget int) []beat {
	zh := b.zh()
	mat := b.material(sh)
	var out []beat
	if sh.question != "" {
		a, at := b.answerLine(sh, mat)
		if at >= 0 {
			mat = append(mat[:at:at], mat[at+1:]...)
		}
		out = append(out, beat{label: map[bool]string{false: "The short answer: ", true: "简单说："}[zh], lines: []line{a}})
		budget -= spokenLength(a.text) + 3
	}
	cands := append(mat, b.pool(sh)...)
	n := 3
	if sh.question != "" {
		n = 2
	}
	numbered := sh.count > 0 && b.format != "drama"
	if numbered {
		n = sh.count
	}
	if !numbered {
		// Sentences in their order (the brief reads on), cut into beats of nearly equal size.
		var picked []line
		used := 0
		for _, c := range cands {
			size := spokenLength(c.text)
			if len(picked) > 0 && used+size > budget+budget/10 {
				continue
			}
			picked = append(picked, c)
			if used += size; used >= budget-budget/10 {
				break
			}
		}
		n = min(n, len(picked))
		for i := range n {
			out = append(out, beat{lines: picked[i*len(picked)/n : (i+1)*len(picked)/n]})
		}
		return out
	}
	// Fill the numbered beats in turns, one sentence each a turn, so the sources spread over
	// every item and the first items do not take all the material.
	body := make([]beat, n)
	used, next := 0, 0
	for turn := 0; next < len(cands); turn++ {
		took := false
		for i := range body {
			if next >= len(cands) {
				break
			}
			c := cands[next]
			size := spokenLength(c.text)
			if turn > 0 && used+size > budget+budget/10 {
				continue
			}
			next++
			body[i].lines = append(body[i].lines, c)
			used += size
			took = true
		}
		if !took || used >= budget-budget/10 {
			break
		}
	}
	for i := range body {
		if len(body[i].lines) == 0 {
			continue // only when the pool ran out: a list never promises more than pools hold
		}
		body[i].label = sh.label(i+1, zh)
		out = append(out, body[i])
	}
	return out
}

// poolOf is the pool of the nouns a list counts that are not tips.
var poolOf = map[string]string{
	"reason": "reasons", "benefit": "reasons", "理由": "reasons", "好处": "reasons", "原因": "reasons",
	"mistake": "mistakes", "myth": "mistakes", "error": "mistakes", "trap": "mistakes", "sign": "mistakes",
	"误区": "mistakes", "错误": "mistakes", "坑": "mistakes", "雷区": "mistakes",
}

var answers = map[string][2]string{
	"why":  {"It comes down to a few small choices, and each one is easy to change.", "原因往往藏在几个小细节里，而且每一个都不难改。"},
	"how":  {"Start small, change one thing at a time, and build from there.", "从一小步开始，一次只改一件事，再慢慢加。"},
	"what": {"It depends on what you want from it, so start with your goal.", "这取决于你想要什么，所以先想清楚你的目标。"},
}

// explanations are the plain answers of a question that asks how or why something is: the
// template knows no facts, so it says what the answer is made of, not what to do.
var explanations = map[string][2]string{
	"why":  {"A few things work together here, and each one is simple on its own.", "原因在于几个因素一起起作用，单看每一个都不复杂。"},
	"how":  {"It is less strange than it sounds, and each part has a simple reason.", "它没有听起来那么神秘，每一步都有简单的道理。"},
	"what": {"It is simpler than it sounds, once you see what it is made of.", "把它拆开来看，其实比听起来简单。"},
}

// pools hold at least maxItems lines each, so a list of up to maxItems gets a beat per item.
var pools = map[string][2][]string{
	"reasons": {{
		"It saves time — once the routine is set, it runs almost on its own.",
		"It costs less than most people expect, and the basics are enough to start.",
		"You see progress fast, often within the first week.",
		"It turns an ordinary moment of the day into one you look forward to.",
		"It is easy to share, and friends tend to ask how you did it.",
		"It teaches you a skill that carries over to other things.",
		"It fits a busy day — ten minutes is enough.",
		"It is forgiving — a small slip does not ruin the result.",
		"There is always a next step to try, so it does not get boring.",
		"It gives you something to talk about with people who love it too.",
		"It is good for your focus — for a few minutes, you do one thing only.",
		"Once it clicks, you will wonder why you did not start sooner.",
	}, {
		"它省时间，流程一旦固定下来，几乎不用多想。",
		"花费比想象中少，最基础的配置就够用了。",
		"进步看得见，往往第一周就有变化。",
		"它让平常的一段时间，变成你期待的时刻。",
		"它很好分享，朋友常常会问你是怎么做到的。",
		"学会它，练出的能力也能用在别的地方。",
		"再忙也做得到，十分钟就够。",
		"它很宽容，小小的失误不会毁掉结果。",
		"总有下一步可以尝试，所以不会腻。",
		"它让你认识同样喜欢它的人，多了共同话题。",
		"它让人专注，那几分钟里，你只做一件事。",
		"一旦上手，你会后悔没有早点开始。",
	}},
	"tips": {{
		"Start small — pick one part and do only that for a week.",
		"Set it up the night before, so the first step takes no willpower.",
		"Change one thing at a time, so you know what made the difference.",
		"Write down what worked, so the next round is faster.",
		"If a step feels hard, split it into two smaller ones.",
		"Copy someone good first, then make it your own.",
		"Keep the tools you need within reach, and put the rest away.",
		"Give it a few tries before you judge the result.",
		"Set a timer — a fixed ten minutes beats an open-ended hour.",
		"Take a photo of each result, so you can compare the next one with it.",
		"Ask someone who does it well what they wish they had known sooner.",
		"Repeat what works until it is a habit, then add the next thing.",
	}, {
		"从小处开始，先只做一个部分，坚持一周。",
		"前一天晚上准备好，第二天开始就不费力。",
		"一次只改一个地方，才知道是什么起了作用。",
		"把有效的做法记下来，下次会更快。",
		"如果某一步太难，就把它拆成两小步。",
		"先模仿做得好的人，再慢慢变成自己的方法。",
		"常用的工具放在手边，其他的先收起来。",
		"多试几次，再判断效果好不好。",
		"定一个十分钟的计时器，比没有期限的一小时更管用。",
		"每次拍张照片留底，下次拿来对比。",
		"问问做得好的人，他们最希望早点知道什么。",
		"有效的做法重复到变成习惯，再加下一件事。",
	}},
	"mistakes": {{
		"Doing everything at once — pick one change and make it stick first.",
		"Skipping the basics because they look boring, when they carry everything else.",
		"Buying gear before you know what you need.",
		"Judging the result after one try instead of five.",
		"Copying every trend instead of what suits you.",
		"Not writing anything down, so every round starts from zero.",
		"Rushing the slow part, which is usually where the quality comes from.",
		"Comparing your first week with someone else's fifth year.",
		"Ignoring small problems until they are big ones.",
		"Changing three things at once, so you never learn what worked.",
		"Stopping right before it starts to get easier.",
		"Doing it alone, when a friend would keep you going.",
	}, {
		"一下子全都想做，先选一个改变，把它坚持下来。",
		"觉得基础无聊就跳过，其实基础撑起了一切。",
		"还不知道需要什么，就先买了一堆装备。",
		"只试一次就下结论，其实应该试五次。",
		"什么流行就跟什么，而不是选适合自己的。",
		"什么都不记录，每次都从零开始。",
		"在慢工出细活的地方图快。",
		"拿自己的第一周，去比别人的第五年。",
		"小问题放着不管，拖成了大问题。",
		"一次改三个地方，结果不知道哪个起了作用。",
		"在快要变轻松的时候放弃了。",
		"一个人硬撑，其实找个朋友一起更容易坚持。",
	}},
	// explain: the beats of a question that asks how or why something is, with no facts of
	// their own (those come from the brief, the material and the knowledge base).
	"explain": {{
		"Most people picture it one way, but the real answer is more practical.",
		"Start with the conditions — change them, and everything else changes too.",
		"Then look at the process: what happens step by step, from start to finish.",
		"The tools matter as well, and each one solves a problem you might not think of.",
		"There is a human side too: how it feels, and what people do to make it easier.",
		"The details that surprise people most are usually the small, practical ones.",
		"People who do it every day describe it far more plainly than the myths do.",
		"Once you see the reason behind each step, the whole thing makes sense.",
		"Some of it has been measured and tested, and some of it is still being studied.",
		"It has changed over time, as people learned what works and what does not.",
		"A good way to check any answer is to ask what would happen if one step were skipped.",
		"So next time you wonder about it, look at the conditions, the process and the tools.",
	}, {
		"很多人想象的是一种样子，真正的答案要实际得多。",
		"先看条件，条件一变，其他一切都跟着变。",
		"再看过程，从开始到结束，每一步都有讲究。",
		"工具也很重要，每一样都解决了一个你可能没想到的问题。",
		"还有人的感受：过程中是什么体验，大家又是怎么让它更轻松的。",
		"最让人意外的，往往是那些小而实际的细节。",
		"每天都在做这件事的人，说得比传言朴素得多。",
		"弄懂每一步背后的原因，整件事就说得通了。",
		"其中一些已经被测量和验证，还有一些仍在研究。",
		"它也在随着时间变化，人们一直在摸索什么有效、什么无效。",
		"检验一个答案的好办法，是问问：如果少了这一步会怎样？",
		"下次再好奇，就从条件、过程和工具这三点去看。",
	}},
	"general": {{
		"Start with the one thing that matters most about %s.",
		"Keep it simple — one change at a time is enough.",
		"The most common slip is trying to do everything at once.",
		"Give it a few tries before you judge the result.",
		"Write down what worked, so the next round is faster.",
		"If a step feels hard, split it into two smaller ones.",
		"Small, steady changes beat one big push.",
		"Ask yourself how you would explain %s to a friend who is just starting.",
		"Compare where you started with where you are after a week.",
		"Set aside ten minutes a day for it, at the same time each day.",
		"Notice which part you enjoy most, and do more of that.",
		"Share what you tried with a friend, and ask what they would change.",
	}, {
		"先说最关键的一点：%s的核心是什么。",
		"一次只改一个地方，就够了。",
		"最常见的误区，是一下子想做太多。",
		"多试几次，再判断效果好不好。",
		"把有效的做法记下来，下次会更快。",
		"如果某一步太难，就把它拆成两小步。",
		"小而稳定的改变，胜过一次用力过猛。",
		"想一想，你会怎么把%s讲给刚入门的朋友听。",
		"一周之后，对比一下起点和现在。",
		"每天固定留出十分钟，放在同一个时间。",
		"留意你最喜欢的部分，多做一点。",
		"把你的尝试分享给朋友，听听他们会怎么改。",
	}},
}
