package rbm_test

import (
	"fmt"

	"github.com/pipedbn/pipedbn/rbm"
)

// Train an RBM on the 4x4 bars-and-stripes images with the paper's recipe
// (CD-1, a linearly annealed learning rate, a commit per epoch), then turn
// the images into features for the next layer up.
func Example() {
	// The images: every pattern of lit rows, and of lit columns.
	var data []float32
	rows := 0
	for mask := 0; mask < 16; mask++ {
		for _, vertical := range []bool{false, true} {
			if vertical && (mask == 0 || mask == 15) {
				continue // all dark and all lit are already there
			}
			for y := 0; y < 4; y++ {
				for x := 0; x < 4; x++ {
					line := y
					if vertical {
						line = x
					}
					data = append(data, float32(mask>>line&1))
				}
			}
			rows++
		}
	}

	const visible, hidden, batch, epochs = 16, 16, 10, 300
	r := rbm.New(visible, hidden, rbm.Bernoulli, 1)
	t := rbm.NewTrainer(r, batch, 1, 2)
	var first, last float64
	for epoch := 0; epoch < epochs; epoch++ {
		p := rbm.Params{
			LearningRate: float32(rbm.Schedule(0.1, 0.02, epoch, epochs)),
			Momentum:     0.5,
			WeightDecay:  1e-4,
		}
		var sse float64
		for b := 0; b < rows; b += batch {
			n := min(batch, rows-b)
			s, err := t.Step(data[b*visible:], n, p, nil, rbm.Probabilities)
			if err != nil {
				fmt.Println(err) // the RBM is back at the last commit
				return
			}
			sse += s
		}
		t.Commit()
		if epoch == 0 {
			first = sse
		}
		last = sse
	}
	fmt.Println("reconstruction error more than halved:", last < first/2)

	features := make([]float32, rows*hidden)
	r.HiddenProbs(features, data, rows)
	fmt.Printf("features: %d x %d\n", rows, hidden)
	// Output:
	// reconstruction error more than halved: true
	// features: 30 x 16
}

// The paper's learning rate: 0.015 down to 0.002 over 20 epochs.
func ExampleSchedule() {
	for _, epoch := range []int{0, 1, 10, 19} {
		fmt.Printf("epoch %2d: %.5f\n", epoch, rbm.Schedule(0.015, 0.002, epoch, 20))
	}
	// Output:
	// epoch  0: 0.01500
	// epoch  1: 0.01432
	// epoch 10: 0.00816
	// epoch 19: 0.00200
}

func ExampleParseUnits() {
	u, err := rbm.ParseUnits("gaussian")
	fmt.Println(u, err)
	_, err = rbm.ParseUnits("binary")
	fmt.Println(err)
	// Output:
	// gaussian <nil>
	// rbm: unknown units "binary" (want bernoulli or gaussian)
}
