package sqldb

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

// vectorFromBytes reads fuzz bytes as float32s, every fourth of them kept and the rest zero, so
// the fuzzer reaches both layouts.
func vectorFromBytes(b []byte, keepEvery int) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		if keepEvery > 0 && i%keepEvery == 0 {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return v
}

func FuzzVectorRoundTrip(f *testing.F) {
	f.Add([]byte{}, 1)
	f.Add(make([]byte, 4*1536), 3)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 2)
	f.Fuzz(func(t *testing.T, b []byte, keepEvery int) {
		v := vectorFromBytes(b, keepEvery%8)
		enc := EncodeVector(v)
		if len(enc) > 4*len(v) {
			t.Fatalf("encoded %d floats in %d bytes, more than dense", len(v), len(enc))
		}
		got := DecodeVector(enc)
		// Compare bits, so NaN payloads must survive too; a negative zero may come back positive.
		if len(got) != len(v) {
			t.Fatalf("decoded %d floats, want %d", len(got), len(v))
		}
		for i := range v {
			if math.Float32bits(got[i]) != math.Float32bits(v[i]) && !(v[i] == 0 && got[i] == 0) {
				t.Fatalf("element %d: %v, want %v", i, got[i], v[i])
			}
		}
	})
}

func TestVectorLayouts(t *testing.T) {
	sparse := make([]float32, 1536)
	sparse[3], sparse[1535] = 0.5, -0.25
	enc := EncodeVector(sparse)
	if len(enc) != 3+2*6 || enc[0] != sparseTag {
		t.Fatalf("sparse vector: %d bytes, tag %q", len(enc), enc[0])
	}
	if !slices.Equal(DecodeVector(enc), sparse) {
		t.Fatal("sparse vector changed in the round trip")
	}
	dense := []float32{1, 2, 3}
	if enc := EncodeVector(dense); len(enc) != 12 || !slices.Equal(DecodeVector(enc), dense) {
		t.Fatalf("dense vector: %d bytes", len(enc))
	}
	// Vectors stored before the sparse layout existed are dense and still read.
	old := make([]byte, 8)
	binary.LittleEndian.PutUint32(old, math.Float32bits(1.5))
	if got := DecodeVector(old); !slices.Equal(got, []float32{1.5, 0}) {
		t.Fatalf("dense bytes read as %v", got)
	}
	// Malformed sparse bytes: an index past the dimension and a truncated entry are skipped.
	bad := []byte{sparseTag, 2, 0, 9, 0, 0, 0, 0x80, 0x3f, 1, 0}
	if got := DecodeVector(bad); !slices.Equal(got, []float32{0, 0}) {
		t.Fatalf("malformed sparse bytes read as %v", got)
	}
}
