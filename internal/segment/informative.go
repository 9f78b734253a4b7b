package segment

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// questionWords are English words that carry no information about what a question asks for:
// question words, auxiliaries, pronouns and other function words. They are never evidence that a
// text answers a question (Informative); the keyword index keeps them, so the index and the
// embedder stay as they are.
var questionWords = map[string]bool{}

// functionHan are Chinese characters of question words and grammar (什么, 哪里, 多少, 的, 吗, ...):
// a bigram holding one of them is not evidence either.
var functionHan = map[rune]bool{}

func init() {
	for _, w := range strings.Fields("what whats which who whom whose when where why how much many long often " +
		"do does did done doing can could should would may might must shall will is are was were be been being am " +
		"a an the of to in on at by for from with about as into than then that this these those there here " +
		"their they them it its i you we he she me my your our us his her him one ones any some all " +
		"per each very also just only or and but if not no yes please tell know need want get gets got " +
		"have has had give show explain describe say says said ll ve re " +
		"kind type sort way ways thing things someone something anyone anything called named") {
		questionWords[w] = true
	}
	for _, r := range "的了是在有和与及或也就还要会能可以这那个一不吗呢吧啊呀么什怎哪谁几多少为何如该应让把被给对从到于而之其些我你他她它们请问得地着过候" {
		functionHan[r] = true
	}
}

// Informative returns the distinct terms of a question that can show a text answers it: its
// words without stop and question words, and the Chinese bigrams without a function character.
// Chinese unigrams are left out (a single character is no evidence); a question of one Chinese
// character keeps it, for it is a word (猫). A word of one letter is never one: the Q of an FAQ's
// "Q:", the s of "it's", an initial.
func Informative(question string) []string {
	var out []string
	seen := map[string]bool{}
	toks := Tokens(question)
	for _, t := range toks {
		switch {
		case seen[t.Text], t.Stop, !t.CJK && questionWords[t.Text]:
			continue
		case !t.CJK && oneLetter(t.Text):
			continue
		case t.CJK && t.Uni:
			continue
		case t.CJK:
			if hasFunction(t.Text) {
				continue
			}
		}
		seen[t.Text] = true
		out = append(out, t.Text)
	}
	return out
}

func hasFunction(s string) bool {
	for _, r := range s {
		if functionHan[r] {
			return true
		}
	}
	return false
}

// IsCJK reports whether term is a term of a script written without spaces (a Chinese unigram or
// bigram).
func IsCJK(term string) bool {
	for _, r := range term {
		return isBigramScript(r)
	}
	return false
}

// oneLetter reports whether w is a single letter (q, x, é); a single digit is a number, not a letter.
func oneLetter(w string) bool {
	r, n := utf8.DecodeRuneInString(w)
	return n == len(w) && unicode.IsLetter(r)
}
