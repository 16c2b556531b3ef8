// Command speedup draws the README's figure, docs/speedup.png, from
// committed sweep results:
//
//	go run ./experiments/speedup -out docs/speedup.png experiments/results/machines experiments/results/machines8
//
// Each argument is a sweep's folder (its sweep.csv) that varies
// cluster.local_slaves against a greedy run on one machine.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pipedbn/pipedbn/experiments"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

func main() {
	out := flag.String("out", "docs/speedup.png", "the PNG `FILE` to write")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: speedup [-out FILE] SWEEP_DIR...")
		os.Exit(2)
	}
	png, err := experiments.SpeedupFigure(flag.Args())
	if err == nil {
		err = atomicfile.WriteFile(*out, png)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "speedup:", err)
		os.Exit(1)
	}
}
