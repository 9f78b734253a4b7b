package pgstore

import (
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgtype"
)

// PostgreSQL's limits on a tsvector's positions (tsearch/ts_type.h): at most MAXNUMPOS - 1
// positions a lexeme, and positions past MAXENTRYPOS - 1 count as that one.
const (
	tsMaxPositions = 255
	tsMaxPosition  = 16383
)

// searchVector is the value of search_tsv for a chunk's search text (segment.IndexForm: its terms
// joined by single spaces): what to_tsvector('simple', searchText) makes of it, built here so the
// server does not run its text-search parser on every chunk it stores. Every term is a lexeme with
// the 1-based positions it occurs at, within PostgreSQL's limits; lexemes are in the server's
// order (bytewise, as Go compares strings). TestSearchTSV checks it against to_tsvector.
func searchVector(searchText string) pgtype.TSVector {
	sc := tsvScratchPool.Get().(*tsvScratch)
	defer tsvScratchPool.Put(sc)
	words, count, ids := sc.words[:0], sc.count[:0], sc.ids[:0]
	for rest := searchText; rest != ""; {
		var t string
		if t, rest, _ = strings.Cut(rest, " "); t == "" {
			continue
		}
		i, ok := sc.at[t]
		if !ok {
			i = int32(len(words))
			sc.at[t] = i
			words = append(words, t)
			count = append(count, 0)
		}
		count[i]++
		ids = append(ids, i)
	}
	// Lexemes in sorted order, their positions in one backing array.
	order := sc.order[:0]
	for i := range words {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(words[a], words[b]) })
	total := 0
	for _, n := range count {
		total += int(min(n, tsMaxPositions))
	}
	backing := make([]pgtype.TSVectorPosition, total)
	lex := make([]pgtype.TSVectorLexeme, len(words))
	slot := slices.Grow(sc.slot[:0], len(words))[:len(words)] // lexeme number → its place in lex
	off := 0
	for j, i := range order {
		n := int(min(count[i], tsMaxPositions))
		lex[j] = pgtype.TSVectorLexeme{Word: words[i], Positions: backing[off : off : off+n]}
		slot[i] = int32(j)
		off += n
	}
	for k, i := range ids {
		p := uint16(min(k+1, tsMaxPosition))
		l := &lex[slot[i]]
		n := len(l.Positions)
		if n == cap(l.Positions) || (n > 0 && l.Positions[n-1].Position == p) {
			continue
		}
		l.Positions = append(l.Positions, pgtype.TSVectorPosition{Position: p})
	}
	// The pool must not keep the text alive.
	clear(sc.at)
	clear(words)
	sc.words, sc.count, sc.ids, sc.order, sc.slot = words, count, ids, order, slot
	return pgtype.TSVector{Lexemes: lex, Valid: true}
}

// tsvScratch is searchVector's working memory, reused across calls.
type tsvScratch struct {
	at          map[string]int32 // lexeme → its number, in order of first occurrence
	words       []string         // lexeme number → lexeme
	count       []int32          // lexeme number → occurrences
	ids         []int32          // each term's lexeme number
	order, slot []int32
}

var tsvScratchPool = sync.Pool{New: func() any { return &tsvScratch{at: make(map[string]int32, 512)} }}
