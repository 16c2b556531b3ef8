// Command steprows measures what a CD step costs beyond its rows
// (rbm.MeasureStepCost, plan.StepRowsFrom) as the master's calibration
// does, full mini-batches of 256 rows against sub-batches of 32, on one
// BLAS thread, for 100 ms, 0.5 s and 2 s, three rounds: whether a longer
// measurement changes the figure (experiments/results/one_call_step/).
//
//	go run ./experiments/steprows
package main

import (
	"fmt"
	"time"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/pipeline/plan"
	"github.com/pipedbn/pipedbn/rbm"
)

func main() {
	blas.SetThreads(1)
	for round := 0; round < 3; round++ {
		for _, d := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second} {
			for _, sh := range [][2]int{{500, 2000}, {500, 500}} {
				c := rbm.MeasureStepCost(sh[0], sh[1], 256, 32, 1, d)
				fmt.Printf("%v %dx%d: wall full %.1f sub %.2f -> %.1f rows; cpu full %.1f sub %.2f -> %.1f rows\n", d, sh[0], sh[1],
					c.Full.Seconds()*1e3, c.Sub.Seconds()*1e3, plan.StepRowsFrom(c.Full, c.Sub, 256, 32),
					c.FullCPU.Seconds()*1e3, c.SubCPU.Seconds()*1e3, plan.StepRowsFrom(c.FullCPU, c.SubCPU, 256, 32))
			}
		}
	}
}
