// Package experiments is `master sweep`: it expands a config's sweep
// section into a grid of runs, runs each as its own `master run` process
// (package dbn does the run) in a folder of its own, reuses runs already
// done, and writes sweep.csv and a report (report.md and PNG plots) that
// set the runs beside the paper's Table 3 and Fig. 6. Its cluster simulator
// (sim.go) predicts pipelined pre-training times beyond what one box can
// emulate. The folder also holds the sweep configs and their measured
// results.
package experiments
