package main

import (
	"fmt"
	"math"
	"strings"
)

// summary is the markdown table of results per setting, in the grid's
// order: the test accuracy's mean, standard deviation (n-1) and range over
// the seeds, the mean loss of the last epoch and how many runs diverged.
func summary(o options, results []result) string {
	var b strings.Builder
	init := "784-500-500-2000 from random weights"
	if o.runDir != "" {
		init = "the DBN pre-trained in " + o.runDir
	}
	fmt.Fprintf(&b, "Fashion-MNIST, first %d training examples, %s test examples; %s;\n", o.trainN, testCount(o.testN), init)
	rate := fmt.Sprint(o.cfg.LearningRate)
	if o.cfg.LearningRateFinal > 0 {
		rate = fmt.Sprintf("%g falling to %g", o.cfg.LearningRate, o.cfg.LearningRateFinal)
	}
	fmt.Fprintf(&b, "%d epochs, b = %d per replica, Config rate %s, momentum %g; seeds %v.\n\n", o.cfg.Epochs, o.cfg.BatchSize, rate, o.cfg.Momentum, o.seeds)
	b.WriteString("| W | S | rule | runs | test accuracy mean | sd | min | max | last-epoch loss | diverged |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range o.grid() {
		var accs, losses []float64
		diverged := 0
		for _, r := range results {
			if r.s != s {
				continue
			}
			accs = append(accs, r.testAcc)
			losses = append(losses, r.trainLoss)
			if r.diverged {
				diverged++
			}
		}
		if len(accs) == 0 {
			continue
		}
		m, sd := meanSD(accs)
		lm, _ := meanSD(losses)
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %.4f | %.4f | %.4f | %.4f | %.4f | %d |\n",
			s.p.Workers, s.syncName(), s.ruleName(), len(accs), m, sd, minOf(accs), maxOf(accs), lm, diverged)
	}
	return b.String()
}

func testCount(n int) string {
	if n == 0 {
		return "all 10000"
	}
	return fmt.Sprint(n)
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
