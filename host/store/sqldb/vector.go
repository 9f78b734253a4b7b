package sqldb

import (
	"encoding/binary"
	"math"
)

// The embedding column holds a vector in one of two layouts, told apart by the length:
//
//   - dense: the float32s, little-endian, 4 bytes each (always an even length);
//   - sparse: the byte 'S', the dimension as a little-endian uint16, then for each non-zero
//     element its index (uint16) and value (float32), 3 + 6n bytes (always an odd length).
//
// The local embedder hashes a chunk's features into 1536 dimensions and leaves about 60% of them
// zero, so its vectors take about 3.7 KB sparse instead of 6 KB: one SQLite page instead of a
// page and an overflow page, which was the largest part of what an ingest wrote. A model's dense
// vectors stay dense (sparse would be longer). Both layouts decode to the same []float32.
const sparseTag = 'S'

// EncodeVector returns v in the shorter of the two layouts.
func EncodeVector(v []float32) []byte {
	nz := 0
	for _, x := range v {
		if x != 0 {
			nz++
		}
	}
	if len(v) > math.MaxUint16 || 3+6*nz >= 4*len(v) {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	b := make([]byte, 3, 3+6*nz)
	b[0] = sparseTag
	binary.LittleEndian.PutUint16(b[1:], uint16(len(v)))
	for i, x := range v {
		if x != 0 {
			b = binary.LittleEndian.AppendUint16(b, uint16(i))
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

// DecodeVector reads either layout of EncodeVector. Malformed bytes (a truncated value, an index
// past the dimension) decode to what can be read, never a panic.
func DecodeVector(b []byte) []float32 {
	if len(b)%2 == 1 && len(b) >= 3 && b[0] == sparseTag {
		v := make([]float32, binary.LittleEndian.Uint16(b[1:]))
		for p := b[3:]; len(p) >= 6; p = p[6:] {
			if i := int(binary.LittleEndian.Uint16(p)); i < len(v) {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[2:]))
			}
		}
		return v
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
