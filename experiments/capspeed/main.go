// Command capspeed measures, on one BLAS thread, the planner's calibration
// (rbm.MeasureRate on the reference shape, as plan.SpeedFromRate reads it)
// and the seconds a CD-1 step of another shape takes, and prints the step's
// time the planner's model predicts from the calibration next to the one
// measured. Run inside a cgroup with a CPU quota, given the calibration of
// a run outside it (-speed), it shows what the quota does to a step that
// the model scales by the quota (experiments/results/equal4_plans/capspeed.sh).
//
//	go run ./experiments/capspeed -visible 784 -hidden 784 -batch 256 -cpus 0.45 -seconds 3
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/pipeline/plan"
	"github.com/pipedbn/pipedbn/rbm"
)

func main() {
	visible := flag.Int("visible", 784, "the step's visible units")
	hidden := flag.Int("hidden", 784, "the step's hidden units")
	batch := flag.Int("batch", 256, "the step's rows")
	cpus := flag.Float64("cpus", 1, "the CPUs the planner is told the machine has (the quota it runs under)")
	seconds := flag.Float64("seconds", 0.3, "how long each measurement runs")
	speed := flag.Float64("speed", 0, "the calibration's GFLOP/s, from an earlier run; 0 measures it")
	flag.Parse()
	blas.SetThreads(1)
	d := time.Duration(*seconds * float64(time.Second))
	if *speed == 0 {
		rate := rbm.MeasureRate(plan.RefVisible, plan.RefHidden, plan.RefBatch, 1, d)
		*speed = plan.SpeedFromRate(plan.RefVisible, plan.RefHidden, 1, rate)
	}
	work := (float64(*batch) + plan.StepRows) * plan.SampleWork(*visible, *hidden, 1)
	predicted := work / (*speed * 1e9 * min(*cpus, 1))
	measured := float64(*batch) / rbm.MeasureRate(*visible, *hidden, *batch, 1, d)
	fmt.Printf("calibration %.1f GFLOP/s; a %dx%d step of %d rows on %.2f CPU: predicted %.1f ms, measured %.1f ms (%.3fx)\n",
		*speed, *visible, *hidden, *batch, *cpus, predicted*1000, measured*1000, measured/predicted)
}
