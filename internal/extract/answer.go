// The extractive answerer: the answer sentences of the passages that ground an answer, without a
// language model. /api/knowledge/ask (host/kb) and the workflows' answer step (the node engine and
// the chatflow fallback) quote through it, so one question over the same passages gets one answer.

package extract

import (
	"regexp"
	"sort"
	"strings"

	"github.com/reelforge/reelforge/internal/segment"
	"github.com/reelforge/reelforge/internal/sentence"
	"github.com/reelforge/reelforge/sdk/engine"
)

// NoBasis is the answer when no passage grounds one (SPEC.md, Knowledge rule 7): no citable basis,
// so any answer would be uncertain. It is in English and Chinese, the languages of the knowledge
// base's users, and it is the one wording of the refusal: /api/knowledge/ask, the workflows' answer
// step and the chatflow fallback all refuse with it, whatever language the question is in.
const NoBasis = "No citable basis was found in the knowledge base for this question, so any answer would be uncertain. " +
	"知识库中没有找到可引用的依据，答案不确定。"

// Extractive answers without a model: it picks whole sentences of the fragments (never cut inside
// a number, an address or an abbreviation) that share the most informative question terms (weighted
// by rarity across the fragments), preferring a sentence that holds the kind of answer asked for
// (an amount for "how much", a duration for "how long", a name for "which"), and cites each as [#n].
// A sentence is quoted once, however many times the fragments hold it, with the citation of each
// fragment that holds it ([#1] [#2]).
// MaxSentences bounds the answer (0 means 3). Headings, when given, are the headings of the
// fragments (by index): they are never quoted, but a sentence under a heading that shares terms with
// the question scores a little higher.
type Extractive struct {
	MaxSentences int
	Headings     []string
}

// Answer returns the answer; with no fragments it returns "", and when no sentence shares a term
// with the question it returns the first fragment's opening sentence, cited.
func (e Extractive) Answer(query string, fragments []string) string {
	maxS := e.MaxSentences
	if maxS <= 0 {
		maxS = 3
	}
	if len(fragments) == 0 {
		return ""
	}
	q := segment.Informative(query)
	if len(q) == 0 {
		q = segment.Query(query)
	}
	want := KindOf(query)
	type sent struct {
		frag, pos int
		text      string
		score     float64
	}
	df := map[string]int{}
	var sents []sent
	for fi, f := range fragments {
		fterms := map[string]bool{}
		for _, t := range segment.Terms(f) {
			fterms[t] = true
		}
		for t := range fterms {
			df[t]++
		}
		for pi, s := range sentence.Split(f, sentence.Ends) {
			if len([]rune(s)) >= 2 {
				sents = append(sents, sent{frag: fi, pos: pi, text: s})
			}
		}
	}
	headingTerms := make([]map[string]bool, len(fragments))
	for i := range fragments {
		headingTerms[i] = map[string]bool{}
		if i < len(e.Headings) {
			for _, t := range segment.Terms(e.Headings[i]) {
				headingTerms[i][t] = true
			}
		}
	}
	for i := range sents {
		ts := map[string]bool{}
		for _, t := range segment.Terms(sents[i].text) {
			ts[t] = true
		}
		for _, t := range q {
			if ts[t] {
				sents[i].score += 1 / float64(df[t]+1)
			}
		}
		if sents[i].score > 0 {
			for _, t := range q {
				if !ts[t] && headingTerms[sents[i].frag][t] {
					sents[i].score += 0.5 / float64(df[t]+1)
				}
			}
		}
		if sents[i].score > 0 && want != KindNone && Holds(sents[i].text, want) {
			sents[i].score *= 2 // the kind of answer asked for
		}
		sents[i].score -= 0.001 * float64(sents[i].frag) // prefer better-ranked fragments
	}
	sort.SliceStable(sents, func(a, b int) bool { return sents[a].score > sents[b].score })
	var out []string
	quoted := map[string]int{} // a quoted sentence's index in out, by its words
	cites := map[[2]int]bool{} // {index in out, fragment}: the citations out holds
	for _, s := range sents {
		// Further sentences only when they are a third as relevant as the best at least: no tangents.
		if len(out) > 0 && (s.score <= 0 || s.score < sents[0].score/3) {
			break
		}
		// A sentence quoted already (repeated in its fragment, or held by another fragment too) is
		// quoted once, citing every fragment that holds it; it does not count against maxS.
		key := strings.Join(strings.Fields(s.text), " ")
		if i, ok := quoted[key]; ok {
			if !cites[[2]int{i, s.frag}] {
				cites[[2]int{i, s.frag}] = true
				out[i] += " " + engine.CiteMarker(s.frag+1)
			}
			continue
		}
		if len(out) == maxS {
			continue // a later sentence may still be one of out's, held by another fragment
		}
		quoted[key] = len(out)
		cites[[2]int{len(out), s.frag}] = true
		out = append(out, s.text+" "+engine.CiteMarker(s.frag+1))
	}
	if len(out) == 0 {
		first := strings.TrimSpace(fragments[0])
		if ss := sentence.Split(first, sentence.Ends); len(ss) > 0 {
			first = ss[0]
		}
		out = append(out, first+" "+engine.CiteMarker(1))
	}
	return strings.Join(out, " ")
}

// Kind is the kind of answer a question asks for.
type Kind int

// Kinds of answers.
const (
	KindNone     Kind = iota
	KindAmount        // how much: a price, a sum, a share
	KindDuration      // how long: a length of time
	KindCount         // how many: a number
	KindSize          // what size: dimensions
	KindTime          // when: a date, a day or a time
	KindName          // which, who, what is it called: a name
	KindNumber        // any number (what an amount or a count needs at least)
)

var kindQuestions = []struct {
	kind Kind
	re   *regexp.Regexp
}{
	{KindDuration, regexp.MustCompile(`(?i)\bhow long\b|\bfor how long\b|多久|多长时间|多长|时长|几天|几个月|几年|几分钟|几小时`)},
	{KindAmount, regexp.MustCompile(`(?i)\bhow much\b|\bprice\b|\bcost|\bfee\b|\bpay\b|\bpaid\b|\braise|\bcharge|多少钱|价格|价钱|费用|收费|售价|多少元|融资|付费`)},
	{KindSize, regexp.MustCompile(`(?i)\bwhat size\b|\bdimensions?\b|\bresolution\b|尺寸|多大|分辨率|像素`)},
	{KindCount, regexp.MustCompile(`(?i)\bhow many\b|\bwhat (?:percentage|share|rate|number)\b|几个|几条|几次|多少个|多少条|多少次|多少`)},
	{KindTime, regexp.MustCompile(`(?i)^\s*when\b|\bwhat (?:date|day|time|year|month)\b|\bon what date\b|什么时候|哪天|哪一天|几点|哪几天|什么时段|日期|何时`)},
	{KindName, regexp.MustCompile(`(?i)^\s*(?:which|who)\b|\bwhat (?:name|is the name)\b|\bcalled\b|\bnamed?\b|叫什么|什么名字|名称|是谁|谁|哪个|哪位|哪款|哪种|简称|什么动物|什么颜色`)},
}

// KindOf returns the kind of answer question asks for, KindNone when it is not one of those.
func KindOf(question string) Kind {
	for _, k := range kindQuestions {
		if k.re.MatchString(question) {
			return k.kind
		}
	}
	return KindNone
}

// hanNumber is a number written in Chinese numerals (四十五, 十五, 两百, 一千二): as much a number to
// the rules below as 45.
const hanNumber = `[零〇一二三四五六七八九十百千万亿两]+`

var kindAnswers = map[Kind]*regexp.Regexp{
	KindAmount: regexp.MustCompile(`(?i)[$¥€£]\s*\d|(?:\d[\d,.]*|` + hanNumber + `)\s*(?:%|percent|元|块|万|亿|美元|dollars?|yuan|usd|rmb|eur|euros?|cents?|million|billion|个百分点)`),
	KindDuration: regexp.MustCompile(`(?i)(?:\d[\d,.]*|` + hanNumber + `半?)\s*(?:seconds?|secs?|s\b|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|秒|分钟|小时|天|周|个月|月|年)` +
		`|半\s*(?:小时|天|年|个月)` +
		`|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty)\s+(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)`),
	KindCount:  regexp.MustCompile(`\d|` + hanNumber),
	KindNumber: regexp.MustCompile(`\d|[零〇一二三四五六七八九十百千万两半]`),
	KindSize:   regexp.MustCompile(`(?i)\d+\s*[×xX*]\s*\d+|\d+\s*(?:px|像素|mb|gb|kb|cm|mm|inch)`),
	KindTime: regexp.MustCompile(`(?i)\b(?:19|20)\d{2}\b|\d{1,2}:\d{2}|\d+\s*(?:月|日|号|点)|周[一二三四五六日天]|星期|` +
		`\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day|\b(?:am|pm)\b|早上|下午|晚上|上午`),
	KindName: regexp.MustCompile(`[“"「『《][^”"」』》]{1,40}[”"」』》]|\S\s+[A-Z][A-Za-z0-9]+(?:[\s-][A-Z][A-Za-z0-9]+)*|\b[a-z]+-[a-z0-9]+(?:-[a-z0-9]+)*\b|\b[A-Z]{2,}\b`),
}

// Holds reports whether text holds an answer of kind k (an amount, a duration, a name, ...).
func Holds(text string, k Kind) bool {
	re, ok := kindAnswers[k]
	return ok && re.MatchString(text)
}
