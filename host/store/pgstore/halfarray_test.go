package pgstore

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
	"github.com/x448/float16"
)

// TestHalfBits: halfBits converts as pgvector-go's codec did (x448/float16), over every float32
// near the half range's edges and rounding points and a few million random ones.
func TestHalfBits(t *testing.T) {
	check := func(f float32) {
		want := float16.Fromfloat32(f).Bits()
		if got := halfBits(f); got != want && !(math.IsNaN(float64(f)) && got&0x7c00 == 0x7c00 && got&0x3ff != 0) {
			t.Fatalf("halfBits(%g, bits %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for _, f := range []float32{0, 1, -1, 0.5, 65504, 65519.99, 65520, -65520, 1e-8, 5.96e-8, 2.98e-8, 2.99e-8, 6.1e-5, 6.103515625e-05,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32} {
		check(f)
		check(-f)
	}
	// Every float32 whose exponent is within the half's range and one step around it, with the
	// low mantissa bits that decide the rounding (ties, and either side of them).
	for exp := uint32(100); exp <= 145; exp++ {
		for hi := uint32(0); hi < 1<<10; hi++ {
			for _, lo := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} {
				u := exp<<23 | hi<<13 | lo
				check(math.Float32frombits(u))
				check(math.Float32frombits(u | 0x80000000))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2_000_000 {
		check(math.Float32frombits(r.Uint32()))
	}
}

// halfvecMap is a type map with pgvector-go's halfvec types (at made-up OIDs), and the vectors of
// a ten-chunk document both as pgvector-go's values and as a halfArray.
func halfvecMap() (*pgtype.Map, []pgvector.HalfVector, halfArray) {
	r := rand.New(rand.NewPCG(1, 2))
	vs, h := make([]pgvector.HalfVector, 10), make(halfArray, 10)
	for i := range h {
		h[i] = make([]float32, vectorDims)
		for j := range h[i] {
			h[i][j] = float32(r.NormFloat64() / 40)
		}
		h[i][i] = 1e-6 // a subnormal half
		vs[i] = pgvector.NewHalfVector(h[i])
	}
	m := pgtype.NewMap()
	elem := &pgtype.Type{Name: "halfvec", OID: 90000, Codec: &pgxvec.HalfVectorCodec{}}
	m.RegisterType(elem)
	m.RegisterType(&pgtype.Type{Name: "_halfvec", OID: 90001, Codec: &pgtype.ArrayCodec{ElementType: elem}})
	return m, vs, h
}

// TestHalfArray: a halfArray is encoded byte for byte as pgvector-go's codec encodes the same
// vectors, and the codec still encodes pgvector-go's values.
func TestHalfArray(t *testing.T) {
	m, vs, h := halfvecMap()
	want, err := m.Encode(90001, pgtype.BinaryFormatCode, vs, nil)
	if err != nil {
		t.Fatal(err)
	}
	registerHalfArray(m)
	got, err := m.Encode(90001, pgtype.BinaryFormatCode, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("halfArray encoded in %d bytes unlike pgvector-go's %d", len(got), len(want))
	}
	if again, err := m.Encode(90001, pgtype.BinaryFormatCode, vs, nil); err != nil || !bytes.Equal(again, want) {
		t.Errorf("pgvector-go's values after registerHalfArray: %v, equal %v", err, bytes.Equal(again, want))
	}
}

// BenchmarkHalfArray encodes the vectors of a ten-chunk document, the halfvec[] of one write;
// BenchmarkHalfArrayPgvector the same through pgvector-go's codecs, what it replaces.
func BenchmarkHalfArray(b *testing.B) {
	m, _, h := halfvecMap()
	registerHalfArray(m)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = m.Encode(90001, pgtype.BinaryFormatCode, h, buf[:0])
	}
}

func BenchmarkHalfArrayPgvector(b *testing.B) {
	m, vs, _ := halfvecMap()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = m.Encode(90001, pgtype.BinaryFormatCode, vs, buf[:0])
	}
}
