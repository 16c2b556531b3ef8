package data

import (
	"fmt"
	"math/rand/v2"
)

// Synthetic draws parameters: each example is its class prototype with every
// pixel flipped with probability syntheticFlip, then pulled in from {0,1} by
// up to syntheticJitter, so the sets are binary-ish, noisy and learnable.
const (
	syntheticFlip   = 0.1
	syntheticJitter = 0.25
)

// Synthetic returns n examples of dim features in [0,1] with labels in
// [0, classes): a seeded mixture of binary-ish class prototypes. Each class
// has a random 0/1 prototype; an example copies its class's prototype,
// flips each pixel with probability 0.1 and pulls it towards the middle by
// a uniform amount up to 0.25. The same seed gives the same set. Classes are
// far apart (prototypes differ in about half their pixels) and examples
// close to their prototype, so an RBM's reconstruction error falls within an
// epoch and a classifier beats chance easily. It panics if n < 0, dim < 1 or
// classes is outside [1, 256].
//
// Synthetic(seed, n, dim, classes) is the train set of
// SyntheticPair(seed, n, m, dim, classes) for any m.
func Synthetic(seed uint64, n, dim, classes int) *Set {
	train, _ := SyntheticPair(seed, n, 0, dim, classes)
	return train
}

// SyntheticPair returns a train set of nTrain and a test set of nTest
// examples drawn from the same prototypes (see Synthetic), from independent
// random streams of seed: the train set does not depend on nTest.
func SyntheticPair(seed uint64, nTrain, nTest, dim, classes int) (train, test *Set) {
	if nTrain < 0 || nTest < 0 || dim < 1 || classes < 1 || classes > 256 {
		panic(fmt.Sprintf("data: SyntheticPair(nTrain=%d, nTest=%d, dim=%d, classes=%d): want n >= 0, dim >= 1, 1 <= classes <= 256", nTrain, nTest, dim, classes))
	}
	// One stream per purpose, so that each set depends only on the seed and
	// its own size.
	const (
		streamPrototypes = iota + 1
		streamTrain
		streamTest
	)
	rng := rand.New(rand.NewPCG(seed, streamPrototypes))
	protos := make([]bool, classes*dim)
	for i := range protos {
		protos[i] = rng.IntN(2) == 1
	}
	name := fmt.Sprintf("synthetic(seed=%d)", seed)
	train = drawSynthetic(rand.New(rand.NewPCG(seed, streamTrain)), protos, nTrain, dim, classes, name+" train")
	test = drawSynthetic(rand.New(rand.NewPCG(seed, streamTest)), protos, nTest, dim, classes, name+" test")
	return train, test
}

func drawSynthetic(rng *rand.Rand, protos []bool, n, dim, classes int, name string) *Set {
	s := &Set{
		X:       make([]float32, n*dim),
		Labels:  make([]uint8, n),
		N:       n,
		Dim:     dim,
		Classes: classes,
		Name:    name,
	}
	for i := range n {
		c := rng.IntN(classes)
		s.Labels[i] = uint8(c)
		proto, row := protos[c*dim:(c+1)*dim], s.Row(i)
		for j, on := range proto {
			if rng.Float64() < syntheticFlip {
				on = !on
			}
			jitter := float32(rng.Float64() * syntheticJitter)
			if on {
				row[j] = 1 - jitter
			} else {
				row[j] = jitter
			}
		}
	}
	return s
}
