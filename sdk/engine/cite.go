package engine

import (
	"regexp"
	"strconv"
)

// CiteMarker is the citation marker of the n-th cited fragment, the one format of every answer and
// script that cites the knowledge base (ask, chat, workflow outputs): [#n].
func CiteMarker(n int) string { return "[#" + strconv.Itoa(n) + "]" }

var citeMarkers = regexp.MustCompile(`[\[(（【]\s*#?\s*(\d{1,2})\s*[\])）】]`)

// NormalizeCitations rewrites the citation markers a model or tool wrote ([1], (#1), 【1】, [ #1 ])
// into CiteMarker form for n from 1 to cited, the number of fragments given; other bracketed
// numbers are left alone.
func NormalizeCitations(text string, cited int) string {
	return citeMarkers.ReplaceAllStringFunc(text, func(m string) string {
		k, err := strconv.Atoi(citeMarkers.FindStringSubmatch(m)[1])
		if err != nil || k < 1 || k > cited {
			return m
		}
		return CiteMarker(k)
	})
}
