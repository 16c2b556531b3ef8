package blas

// rngLanes is the number of interleaved xoshiro128+ streams in an RNG: one
// AVX-512 register of uint32, two AVX2 registers.
const rngLanes = 16

// RNG is a fast seeded pseudo-random generator built for the sampling
// kernels: 16 interleaved xoshiro128+ streams, stepped together so the
// C kernels can vectorise them. Each step yields 16 uniform float32 values,
// one per stream. The zero value is not usable; make one with NewRNG.
//
// xoshiro128+ is not cryptographic; its upper bits, the only ones used, are
// of good statistical quality (Blackman & Vigna), which is what sampling
// Bernoulli hidden units needs.
type RNG struct {
	// s[k*rngLanes+l] is word k of stream l: each word is contiguous across
	// the lanes, so a step is four vector loads and stores.
	s [4 * rngLanes]uint32
}

// NewRNG returns an RNG seeded with seed.
func NewRNG(seed uint64) *RNG {
	g := new(RNG)
	g.Seed(seed)
	return g
}

// Seed resets g to the state determined by seed; the streams are filled from
// a SplitMix64 sequence, the seeding xoshiro's authors recommend.
func (g *RNG) Seed(seed uint64) {
	x := seed
	for i := 0; i < len(g.s); i += 2 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		g.s[i] = uint32(z)
		g.s[i+1] = uint32(z >> 32)
	}
	for l := 0; l < rngLanes; l++ {
		if g.s[l]|g.s[rngLanes+l]|g.s[2*rngLanes+l]|g.s[3*rngLanes+l] == 0 {
			g.s[l] = 1 // an all-zero xoshiro state is a fixed point
		}
	}
}

// Uniform fills dst with uniform values in [0, 1), multiples of 2^-24. It
// steps the streams ceil(len(dst)/16) times; value i comes from stream i%16.
func (g *RNG) Uniform(dst []float32) {
	if len(dst) == 0 {
		return
	}
	uniform(&g.s, dst)
}

// uniform16 is the Go twin of the C kernel of the same name: one step of all
// lanes, one uniform float32 per lane.
func uniform16(s *[4 * rngLanes]uint32, u *[rngLanes]float32) {
	for l := 0; l < rngLanes; l++ {
		s0, s1, s2, s3 := s[l], s[rngLanes+l], s[2*rngLanes+l], s[3*rngLanes+l]
		res := s0 + s3
		t := s1 << 9
		s2 ^= s0
		s3 ^= s1
		s1 ^= s2
		s0 ^= s3
		s2 ^= t
		s3 = s3<<11 | s3>>21
		s[l], s[rngLanes+l], s[2*rngLanes+l], s[3*rngLanes+l] = s0, s1, s2, s3
		u[l] = float32(int32(res>>8)) * (1.0 / (1 << 24))
	}
}

// RNGStateLen is the number of words in an RNG's state.
const RNGStateLen = 4 * rngLanes

// State returns g's state, from which SetState resumes the same sequence:
// what a checkpoint keeps.
func (g *RNG) State() [RNGStateLen]uint32 { return g.s }

// SetState restores a state returned by State. It reports false, and leaves
// g as it was, for a state no seeded generator can reach (an all-zero
// stream is a fixed point of xoshiro).
func (g *RNG) SetState(s [RNGStateLen]uint32) bool {
	for l := 0; l < rngLanes; l++ {
		if s[l]|s[rngLanes+l]|s[2*rngLanes+l]|s[3*rngLanes+l] == 0 {
			return false
		}
	}
	g.s = s
	return true
}
