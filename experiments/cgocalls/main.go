// Command cgocalls measures what a Go process spends beside its calls out
// of Go: the CPU time of all its threads against the wall clock while one
// goroutine calls C in a loop. With -spin-us it calls a C function that
// spins for that long; otherwise it takes CD-1 steps of -rows rows of a
// visible x hidden RBM (rbm.Trainer.Step, one BLAS thread). Where the
// process's CPU time runs ahead of the wall clock, another thread (the Go
// runtime's scheduler) works while the call lasts; under a CPU quota that
// time is taken from the calls (experiments/results/cgo_calls/).
//
//	GOMAXPROCS=1 go run ./experiments/cgocalls -spin-us 200
//	GOMAXPROCS=1 go run ./experiments/cgocalls -visible 784 -hidden 500 -rows 43
package main

/*
#include <time.h>
static void spin(long ns) {
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		if ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) >= ns) return;
	}
}
*/
import "C"

import (
	"flag"
	"fmt"
	"log"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/rbm"
)

func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

func main() {
	spinUS := flag.Int("spin-us", 0, "call a C function that spins this many µs; 0: take CD-1 steps")
	visible := flag.Int("visible", 784, "the step's visible units")
	hidden := flag.Int("hidden", 500, "the step's hidden units")
	batch := flag.Int("batch", 256, "the trainer's mini-batch")
	rows := flag.Int("rows", 256, "the rows of each step (a stage replica's sub-batch)")
	seconds := flag.Float64("seconds", 2, "how long to measure")
	flag.Parse()
	call, what := func() { C.spin(C.long(*spinUS * 1000)) }, fmt.Sprintf("calls of %d µs", *spinUS)
	if *spinUS <= 0 {
		blas.SetThreads(1)
		t := rbm.NewTrainer(rbm.New(*visible, *hidden, rbm.Bernoulli, 1), *batch, 1, 2)
		v := make([]float32, *batch**visible)
		for i := range v {
			v[i] = float32(i%7) / 7
		}
		p := rbm.Params{LearningRate: 0.01, Momentum: 0.5}
		call = func() {
			if _, err := t.Step(v, *rows, p, nil, rbm.Probabilities); err != nil {
				log.Fatal(err)
			}
		}
		what = fmt.Sprintf("%dx%d steps of %d rows", *visible, *hidden, *rows)
	}
	call() // warm
	d := time.Duration(*seconds * float64(time.Second))
	start, cpu := time.Now(), processCPU()
	n := 0
	for time.Since(start) < d {
		call()
		n++
	}
	wall, used := time.Since(start), processCPU()-cpu
	fmt.Printf("%s: %d in %.1f s, wall %.3f ms each, process CPU %.3f ms each, CPU/wall %.3f\n",
		what, n, wall.Seconds(), wall.Seconds()*1e3/float64(n), used.Seconds()*1e3/float64(n), used.Seconds()/wall.Seconds())
}
