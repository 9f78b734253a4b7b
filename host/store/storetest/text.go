package storetest

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// The store keeps whatever search text and vectors the caller hands it and matches the terms it is
// asked for; how text is segmented and embedded is host/kb's policy, not the store's. These helpers
// make simple, deterministic inputs so the conformance suite tests the store alone.

// VectorDims is the size of the vectors the suite writes (the PostgreSQL vector column's dimension).
const VectorDims = 1536

// Model names the suite's vectors (Vector).
const Model = "storetest-words-1536"

// Terms lower-cases text and splits it into words; each Han character is a term of its own.
func Terms(text string) []string {
	var out []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			out = append(out, word.String())
			word.Reset()
		}
	}
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.Is(unicode.Han, r):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// SearchText is the keyword index form of text: its Terms joined by spaces.
func SearchText(text string) string { return strings.Join(Terms(text), " ") }

// Vector is text's bag of terms hashed into VectorDims, unit length: texts sharing terms are close.
func Vector(text string) []float32 {
	v := make([]float32, VectorDims)
	for _, t := range Terms(text) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(t)) // a hash.Hash never fails to write
		v[h.Sum32()%VectorDims]++
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / math.Sqrt(n))
		}
	}
	return v
}
