// The basis of an answer: which hits hold enough of the question to ground it.

package kb

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reelforge/reelforge/host/kb/clean"
	"github.com/reelforge/reelforge/internal/segment"
)

// MinCoverage is how much of a question a passage must hold to ground an answer: the share of
// the question's informative terms (segment.Informative) the knowledge base knows, each weighted by
// its rarity in the index. English words match in any of their simple forms (costs, cost).
const MinCoverage = 0.34

// FactSource is the source name of the user's stored facts when they ground an answer.
const FactSource = "facts"

// basis returns the hits (and the caller's stored facts, as hits of FactSource) that ground an
// answer to question, best coverage first (search order among equals); empty when nothing does.
//
// A passage grounds an answer when it holds at least MinCoverage of the question's known terms, two
// of them at least (or all, when the question has one), and more of them than the question has
// terms the knowledge base has never seen (a name it never saw counts twice). Sharing a stop word,
// a question word or one common term is never enough, and a question mostly about things the base
// never mentions ("the capital of France" in a cooking base) is out of its domain, answered with
// NoBasisAnswer. When a grounding passage holds one of the question's known names (in its text or
// its document's title), the passages holding none of them do not ground. A Chinese bigram the
// index does not hold but one of its overlapping neighbours does is not counted as unseen: it is
// most likely two characters across a word boundary (音账 in 抖音账号), not a word.
func (s *Service) basis(ctx context.Context, userID, question string, hits []Hit) ([]Hit, error) {
	terms := segment.Informative(question)
	if len(terms) == 0 {
		return nil, nil
	}
	bigrams := cjkBigrams(question)
	lookup := append([]string{}, bigrams...)
	forms := map[string][]string{}
	for _, t := range terms {
		forms[t] = wordForms(t)
		lookup = append(lookup, forms[t]...)
	}
	stats, err := s.st.TermStats(ctx, lookup)
	if err != nil {
		return nil, err
	}
	docs, df := stats.Docs, stats.DF
	artifact := map[string]bool{}
	for i, b := range bigrams {
		if df[b] == 0 && ((i > 0 && overlaps(bigrams[i-1], b) && df[bigrams[i-1]] > 0) ||
			(i+1 < len(bigrams) && overlaps(b, bigrams[i+1]) && df[bigrams[i+1]] > 0)) {
			artifact[b] = true
		}
	}
	// The user's facts are part of what the knowledge base knows.
	facts, err := s.st.ListFacts(ctx, userID)
	if err != nil {
		return nil, err
	}
	inFacts := map[string]int{}
	for _, f := range facts {
		seen := map[string]bool{}
		for _, t := range segment.Terms(f.Key + "\n" + f.Value) {
			if st := stem(t); !seen[st] {
				seen[st] = true
				inFacts[st]++
			}
		}
	}
	names := capitalised(question)
	// The known terms, by their stem, in the question's order: a slice, not a map, so that a
	// coverage is always the same sum in the same order. Summed in a map's random order, passages
	// holding the same terms got coverages a rounding apart, which reordered them (and the answer
	// quoting them) from one call to the next.
	type known struct {
		stem string
		w    float64
		name bool // a name of the question (capitalised)
	}
	var weight []known
	total, unseen := 0.0, 0
	for _, t := range terms {
		st := stem(t)
		n := inFacts[st]
		for _, f := range forms[t] {
			n = max(n, df[f])
		}
		switch {
		case n > 0:
			if slices.ContainsFunc(weight, func(k known) bool { return k.stem == st }) {
				continue // two forms of one word in the question (cost, costs) are one term
			}
			w := math.Log(1 + float64(docs+1)/(float64(n)+0.5))
			weight = append(weight, known{st, w, names[t]})
			total += w
		case names[t]:
			unseen += 2 // a name the base never mentions: the question is about something else
		case !artifact[t]:
			unseen++
		}
	}
	if total == 0 {
		return nil, nil
	}
	// grounds returns a passage's coverage, whether it grounds an answer, and whether it holds one
	// of the question's known names.
	grounds := func(text string) (float64, bool, bool) {
		has := map[string]bool{}
		for _, t := range segment.Terms(text) {
			has[stem(t)] = true
		}
		c, matched, named := 0.0, 0, false
		for _, k := range weight {
			if has[k.stem] {
				c += k.w
				matched++
				named = named || k.name
			}
		}
		c /= total
		return c, c >= MinCoverage && matched > unseen && (matched >= 2 || matched == len(weight)), named
	}
	type scored struct {
		h     Hit
		cov   float64
		named bool
	}
	var keep []scored
	for _, h := range hits {
		if c, ok, named := grounds(h.Heading + "\n" + h.ChunkText); ok {
			if !named {
				// A document names its subject in its title as often as in each passage (the
				// Bilibili rules' "sponsored segments must not exceed 90 seconds").
				_, _, named = grounds(h.DocumentTitle)
			}
			keep = append(keep, scored{h, c, named})
		}
	}
	for _, f := range facts {
		if c, ok, named := grounds(f.Key + "\n" + f.Value); ok {
			keep = append(keep, scored{Hit{ChunkID: "fact:" + f.ID, ChunkText: f.Value, Heading: f.Key, SourceName: FactSource,
				DocumentTitle: f.Key, Scores: Scores{Total: c}}, c, named})
		}
	}
	// The names of a question say what it is about (the Osaka of "the budget of the episode filmed
	// in Osaka"): when a grounding passage holds one, a passage holding none is about another thing
	// that shares the common words (the budget of the Kraków episode), and does not ground.
	if slices.ContainsFunc(keep, func(k scored) bool { return k.named }) {
		keep = slices.DeleteFunc(keep, func(k scored) bool { return !k.named })
	}
	sort.SliceStable(keep, func(i, j int) bool { return keep[i].cov > keep[j].cov })
	out := make([]Hit, 0, len(keep))
	for _, k := range keep {
		out = append(out, k.h)
	}
	return out, nil
}

// capitalised returns the (normalised) words of question written with a capital letter other than
// its first word: names (Instagram, Tokyo).
func capitalised(question string) map[string]bool {
	out := map[string]bool{}
	for i, w := range strings.FieldsFunc(question, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		if r, _ := utf8.DecodeRuneInString(w); i > 0 && unicode.IsUpper(r) {
			for _, t := range segment.Terms(w) {
				out[t] = true
			}
		}
	}
	return out
}

// stem is a word's crude English stem (costs, costing and costed are cost; name, names, named and
// naming are name; release, released and releasing are releas); other terms are themselves. It only
// decides whether a question's word and a passage's word are the same word.
func stem(w string) string {
	if segment.IsCJK(w) {
		return strings.TrimSuffix(w, "s")
	}
	st, restore := suffixStem(w)
	// The endings replace a final e (named, releasing): a short stem gets it back, as Porter's
	// stemmer does (nam is name, but plann is plan), and a longer word loses it (release is releas),
	// so that every form of a word ending in e is one stem, without making plane plan or note not.
	switch {
	case restore && measure(st) == 1 && cvc(st):
		st += "e"
	case len(st) > 4 && strings.HasSuffix(st, "e"):
		if b := st[:len(st)-1]; measure(b) > 1 || (measure(b) == 1 && !cvc(b)) {
			st = b
		}
	}
	return st
}

// suffixStem is w without its English ending (ies, ing, ed, es, er, ly, s), and whether that
// ending may have replaced a final e (ing, ed, es, er, unless a doubled consonant was undone).
func suffixStem(w string) (string, bool) {
	if len(w) <= 4 {
		return strings.TrimSuffix(w, "s"), false
	}
	for _, suf := range []string{"ies", "ing", "ed", "es", "er", "ly", "s"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			base := strings.TrimSuffix(w, suf)
			if suf == "ies" {
				base += "y"
			}
			if n := len(base); n >= 2 && base[n-1] == base[n-2] && suf != "es" && base[n-1] != 'l' && base[n-1] != 's' {
				return base[:n-1], false // running, stopped
			}
			return base, suf == "ing" || suf == "ed" || suf == "es" || suf == "er"
		}
	}
	return w, false
}

// isVowel reports whether w[i] is a vowel: a, e, i, o, u, or a y after a consonant.
func isVowel(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	case 'y':
		return i > 0 && !isVowel(w, i-1)
	}
	return false
}

// measure is Porter's m of w: how many vowel-consonant sequences it has (tr 0, name's nam 1,
// releas 2).
func measure(w string) int {
	m := 0
	for i := 1; i < len(w); i++ {
		if !isVowel(w, i) && isVowel(w, i-1) {
			m++
		}
	}
	return m
}

// cvc reports whether w ends consonant, vowel, consonant, the last not w, x or y (nam, plan, hop):
// Porter's sign of a short word that had a final e.
func cvc(w string) bool {
	n := len(w)
	return n >= 3 && !isVowel(w, n-1) && isVowel(w, n-2) && !isVowel(w, n-3) && !strings.ContainsRune("wxy", rune(w[n-1]))
}

// wordForms are the index terms that count as the word w: w, its stem and the stem's common
// endings (for English words); a Chinese term is only itself.
func wordForms(w string) []string {
	if segment.IsCJK(w) {
		return []string{w}
	}
	st := stem(w)
	b := strings.TrimSuffix(st, "e") // name: named, naming
	seen := map[string]bool{}
	var out []string
	for _, f := range []string{w, st, st + "s", b + "es", b + "ed", b + "ing", b + "e", b + "er", b + "ers", st + "y", b + "ies", st + "ly"} {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// cjkBigrams are the Chinese (Han, Kana, Thai) bigrams of text in order, function characters
// included.
func cjkBigrams(text string) []string {
	var out []string
	for _, t := range segment.Tokens(text) {
		if t.CJK && !t.Uni && len([]rune(t.Text)) == 2 {
			out = append(out, t.Text)
		}
	}
	return out
}

// overlaps reports whether bigram b follows bigram a in one run of text (a's second character is
// b's first).
func overlaps(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	return ra[1] == rb[0]
}

// answerText is a hit's text as an answer quotes it: plain sentences under its heading.
func answerText(h Hit) string { return withHeading(clean.Text(h.ChunkText), h.Heading) }
