package pgstore

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
)

// halfArray is a halfvec[] parameter: the vectors of a chunk write, converted to half precision
// and encoded in PostgreSQL's binary array format by halfArrayCodec in one pass. Through
// pgvector-go's codecs, pgx encoded the array by reflection, element by element, and converted
// each float with a general-purpose routine: about 8% of the host's CPU in an ingest of one
// document a call (pprof of the ingest; the target is host CPU per MB at most SQLite's,
// BENCHMARKS.md).
type halfArray [][]float32

// registerHalfArray makes the connection's halfvec[] type encode a halfArray with
// halfArrayCodec; other values go to pgvector-go's codec, as before. It runs after
// pgvector-go's RegisterTypes.
func registerHalfArray(tm *pgtype.Map) {
	elem, ok := tm.TypeForName("halfvec")
	arr, ok2 := tm.TypeForName("_halfvec")
	if !ok || !ok2 {
		return
	}
	tm.RegisterType(&pgtype.Type{Name: arr.Name, OID: arr.OID, Codec: halfArrayCodec{Codec: arr.Codec, elem: elem.OID}})
}

// halfArrayCodec is pgvector-go's halfvec[] codec with a binary encoding of halfArray.
type halfArrayCodec struct {
	pgtype.Codec
	elem uint32 // the halfvec type's OID
}

func (c halfArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(halfArray); ok && format == pgtype.BinaryFormatCode {
		return encodeHalfArray{c.elem}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

type encodeHalfArray struct{ elem uint32 }

// Encode writes a one-dimension array without NULLs (array_recv's format) whose elements are in
// halfvec_recv's format: the dimension and a zero as int16, then each value's IEEE half bits.
func (e encodeHalfArray) Encode(value any, buf []byte) ([]byte, error) {
	a := value.(halfArray)
	size := 20
	for _, v := range a {
		size += 4 + 4 + 2*len(v)
	}
	buf = slices.Grow(buf, size)
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULLs
	buf = binary.BigEndian.AppendUint32(buf, e.elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(a)))
	buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	for _, v := range a {
		buf = binary.BigEndian.AppendUint32(buf, uint32(4+2*len(v)))
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(v)))
		buf = binary.BigEndian.AppendUint16(buf, 0)
		n := len(buf)
		buf = buf[:n+2*len(v)]
		out := buf[n:]
		for i, f := range v {
			binary.BigEndian.PutUint16(out[2*i:], halfBits(f))
		}
	}
	return buf, nil
}

// halfBits is f in IEEE half precision, rounded to nearest even, as pgvector-go's conversion
// (x448/float16) gives it (TestHalfBits): values past the half range are infinite, NaN is a quiet
// NaN, and small values become subnormal halves. It is F. Giesen's float_to_half_fast3_rtne.
func halfBits(f float32) uint16 {
	const (
		f32Infinity = 255 << 23
		f16Max      = (127 + 16) << 23                   // the first float32 whose half is infinite
		denormMagic = ((127 - 15) + (23 - 10) + 1) << 23 // 0.5: adding it aligns a subnormal's bits
		minNormal   = 113 << 23                          // 2^-14, the smallest normal half
	)
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	u &^= 0x80000000
	switch {
	case u >= f16Max:
		if u > f32Infinity {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case u < minNormal:
		// The float32 sum rounds to nearest even at the half's last subnormal bit.
		s := math.Float32frombits(u) + math.Float32frombits(denormMagic)
		return sign | uint16(math.Float32bits(s)-denormMagic)
	default:
		odd := (u >> 13) & 1
		u = u - (127-15)<<23 + 0xfff + odd // rebias the exponent and round to nearest even
		return sign | uint16(u>>13)
	}
}
