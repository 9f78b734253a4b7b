// Package extract picks the sentences of knowledge-base passages that answer a question, without a
// language model: Extractive, the answerer of /api/knowledge/ask and of the workflows' answer step
// (the node engine, the chatflow fallback), with the kinds of answer a question asks for (KindOf,
// Holds); and Shared, whether a sentence is about a topic (the node engine's templates).
package extract

import (
	"strings"
	"unicode"
)

// Shared counts the informative words (see terms) that s shares with query: zero when s only
// shares function words with it. The node engine's templates use it to take a knowledge-base
// sentence into a script only when it is about the topic.
func Shared(query, s string) int {
	q, n := terms(query), 0
	for t := range terms(s) {
		if q[t] {
			n++
		}
	}
	return n
}

// stop are English words that say nothing about what a question asks: question words, auxiliaries
// and other function words (three letters or more; shorter words are never terms).
var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields("what which who whom whose when where why how much many long does did can could should " +
		"would the and for are was were with from that this these those there their they them its you your our his her " +
		"has have had not but into about than then will shall may might must also just only any some all each per") {
		stop[w] = true
	}
}

// functionHan are Chinese characters of question words and grammar: a bigram holding one is not
// informative.
const functionHan = "的了是在有和与及或也就还要会能可以这那个一不吗呢吧啊呀么什怎哪谁几多少为何如该应让把被给对从到于而之其些我你他她它们请问得地着过候"

// terms are the informative words of s: lower-cased Latin words of three letters or more that are
// not stop words (without a plural s), and Chinese character bigrams without a function character.
func terms(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		var han []rune
		latin := 0
		for _, r := range w {
			if unicode.Is(unicode.Han, r) {
				han = append(han, r)
			} else {
				latin++
			}
		}
		for i := 0; i+1 < len(han); i++ {
			if !strings.ContainsRune(functionHan, han[i]) && !strings.ContainsRune(functionHan, han[i+1]) {
				out[string(han[i:i+2])] = true
			}
		}
		if len(han) == 0 && latin > 2 && !stop[w] {
			if len(w) > 3 {
				w = strings.TrimSuffix(w, "s") // costs is cost
			}
			out[w] = true
		}
	}
	return out
}
