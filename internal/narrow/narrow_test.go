package narrow

import (
	"math"
	"math/rand/v2"
	"testing"
)

// float16Ref is Float16 by search: the finite binary16 values ordered by
// their bits are ordered by value, so the nearest is found among the two
// around x, ties to the even one; beyond the largest, halfway to the next
// power of two rounds to infinity, as IEEE 754 rounds.
func float16Ref(x float32) uint16 {
	if math.IsNaN(float64(x)) {
		panic("float16Ref: NaN")
	}
	var sign uint16
	if math.Signbit(float64(x)) {
		sign, x = 0x8000, -x
	}
	v := float64(x)
	if v >= 65520 {
		return sign | 0x7c00
	}
	lo := uint16(0)
	for step := uint16(0x4000); step > 0; step >>= 1 {
		if c := lo + step; c <= 0x7bff && float64(FromFloat16(c)) <= v {
			lo = c
		}
	}
	if lo == 0x7bff {
		return sign | lo
	}
	dl, dh := v-float64(FromFloat16(lo)), float64(FromFloat16(lo+1))-v
	if dh < dl || (dh == dl && lo&1 == 1) {
		return sign | (lo + 1)
	}
	return sign | lo
}

// TestFloat16RoundTrip checks every binary16 value: its float32 is exact
// (normal, subnormal, zeros, infinities), and comes back to the same bits,
// NaN payloads included.
func TestFloat16RoundTrip(t *testing.T) {
	t.Parallel()
	for h := range 1 << 16 {
		x := FromFloat16(uint16(h))
		if got := Float16(x); got != uint16(h) {
			t.Fatalf("Float16(FromFloat16(%#04x) = %g) = %#04x; want %#04x", h, x, got, h)
		}
		exp, mant := h>>10&0x1f, h&0x3ff
		if exp == 0x1f {
			continue
		}
		want := math.Ldexp(float64(mant|0x400), exp-25)
		if exp == 0 {
			want = math.Ldexp(float64(mant), -24)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(x) != want || math.Signbit(float64(x)) != (h&0x8000 != 0) {
			t.Fatalf("FromFloat16(%#04x) = %g; want %g", h, x, want)
		}
	}
}

// TestFloat16Rounds checks Float16 against the search on random float32
// values of every magnitude, and on the values just around each halfway
// point between two binary16 values, where ties go to the even one.
func TestFloat16Rounds(t *testing.T) {
	t.Parallel()
	check := func(x float32) {
		t.Helper()
		if got, want := Float16(x), float16Ref(x); got != want {
			t.Fatalf("Float16(%g, bits %#08x) = %#04x; want %#04x", x, math.Float32bits(x), got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		x := math.Float32frombits(rng.Uint32())
		if !math.IsNaN(float64(x)) {
			check(x)
		}
		check(rng.Float32())
	}
	for h := uint16(0); h < 0x7bff; h++ {
		mid := float32((float64(FromFloat16(h)) + float64(FromFloat16(h+1))) / 2) // exact in float32
		check(mid)
		check(math.Nextafter32(mid, 0))
		check(math.Nextafter32(mid, 1e9))
		check(-mid)
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, 1e30, float32(math.Inf(1)), float32(math.Inf(-1)),
		0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1p-26, math.SmallestNonzeroFloat32} {
		check(x)
	}
}

func TestFloat16NaN(t *testing.T) {
	t.Parallel()
	for _, bits := range []uint32{0x7fc00000, 0x7f800001, 0xffc00001, 0x7fffffff, 0x7fa00000} {
		x := math.Float32frombits(bits)
		h := Float16(x)
		if back := FromFloat16(h); !math.IsNaN(float64(back)) || math.Signbit(float64(back)) != math.Signbit(float64(x)) {
			t.Errorf("FromFloat16(Float16(NaN %#08x) = %#04x) = %g; want a NaN of the same sign", bits, h, back)
		}
	}
}

func TestUint8(t *testing.T) {
	t.Parallel()
	for q := range 256 {
		x := FromUint8(uint8(q))
		if want := float32(q) / 255; x != want {
			t.Fatalf("FromUint8(%d) = %g; want %g", q, x, want)
		}
		if got := Uint8(x); got != uint8(q) {
			t.Fatalf("Uint8(FromUint8(%d)) = %d", q, got)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		x := rng.Float32()
		q := Uint8(x)
		if d := math.Abs(float64(x)*255 - float64(q)); d > 0.5+1e-4 {
			t.Fatalf("Uint8(%g) = %d: %g steps away; want the nearest", x, q, d)
		}
	}
	for x, want := range map[float32]uint8{-1: 0, 0: 0, 2: 255, 1: 255, float32(math.NaN()): 0, float32(math.Inf(1)): 255, 0.5 / 255: 1, 0.49 / 255: 0} {
		if got := Uint8(x); got != want {
			t.Errorf("Uint8(%g) = %d; want %d", x, got, want)
		}
	}
}

func TestBit(t *testing.T) {
	t.Parallel()
	for x, want := range map[float32]byte{0: 0, 1: 1, 0.5: 1, 0.49: 0, float32(math.NaN()): 0, -3: 0, 7: 1} {
		if got := Bit(x); got != want {
			t.Errorf("Bit(%g) = %d; want %d", x, got, want)
		}
	}
}

// TestRound checks that rounding in place gives what a trip through the
// narrow format gives.
func TestRound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 1000)
	for i := range x {
		x[i] = rng.Float32()
	}
	for h := range 0x7c00 { // around every binary16 value, and halfway
		v := FromFloat16(uint16(h))
		x = append(x, v, -v, math.Nextafter32(v, 0), math.Nextafter32(v, 1e9))
		if h < 0x7bff {
			x = append(x, float32((float64(v)+float64(FromFloat16(uint16(h+1))))/2))
		}
	}
	x = append(x, 65519.99, 65520, 1e30, float32(math.Inf(-1)), float32(math.NaN()), -0x1p-30)
	h, q := append([]float32(nil), x...), append([]float32(nil), x...)
	RoundFloat16(h)
	RoundUint8(q)
	for i, v := range x {
		if want := FromFloat16(Float16(v)); math.Float32bits(h[i]) != math.Float32bits(want) {
			t.Fatalf("RoundFloat16: value %d = %g; want %g", i, h[i], want)
		}
		if want := FromUint8(Uint8(v)); q[i] != want {
			t.Fatalf("RoundUint8: value %d = %g; want %g", i, q[i], want)
		}
	}
}

// TestBulk checks the array forms against the value forms, on every
// binary16 value and around it, and on every 8-bit fraction and between.
func TestBulk(t *testing.T) {
	t.Parallel()
	var x []float32
	for h := range 1 << 16 {
		v := FromFloat16(uint16(h))
		x = append(x, v, math.Nextafter32(v, 0), math.Nextafter32(v, float32(math.Inf(1))))
	}
	x = append(x, float32(math.NaN()), 65520, -1e-30, 1e30)
	b16 := make([]byte, 2*len(x))
	PutFloat16s(b16, x)
	back := make([]float32, len(x))
	Float16s(back, b16)
	for i, v := range x {
		h := uint16(b16[2*i]) | uint16(b16[2*i+1])<<8
		if want := Float16(v); h != want {
			t.Fatalf("PutFloat16s: value %d, %g: %#04x; want %#04x", i, v, h, want)
		}
		if want := FromFloat16(h); math.Float32bits(back[i]) != math.Float32bits(want) {
			t.Fatalf("Float16s: %#04x: %g; want %g", h, back[i], want)
		}
	}
	x = x[:0]
	for q := range 256 {
		v := FromUint8(uint8(q))
		x = append(x, v, v+0.5/255, v-0.5/255, math.Nextafter32(v+0.5/255, 0))
	}
	x = append(x, float32(math.NaN()), -3, 7)
	b8 := make([]byte, len(x))
	PutUint8s(b8, x)
	back = make([]float32, len(x))
	Uint8s(back, b8)
	for i, v := range x {
		if want := Uint8(v); b8[i] != want {
			t.Fatalf("PutUint8s: value %d, %g: %d; want %d", i, v, b8[i], want)
		}
		if back[i] != FromUint8(b8[i]) {
			t.Fatalf("Uint8s: %d: %g; want %g", b8[i], back[i], FromUint8(b8[i]))
		}
	}
}

var sink float32

func BenchmarkRoundFloat16(b *testing.B) { benchRound(b, RoundFloat16) }
func BenchmarkRoundUint8(b *testing.B)   { benchRound(b, RoundUint8) }

func benchRound(b *testing.B, round func([]float32)) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 256*784)
	for i := range x {
		x[i] = rng.Float32()
	}
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		round(x)
	}
	sink = x[0]
}
