// Command regreedy trains one RBM of a finished run again, greedily, on
// its input as that run's own RBMs below it give it, and prints both
// RBMs' final reconstruction errors on that input: whether an upper RBM
// of a pipelined run ends above greedy's because it learnt worse, or
// because the RBMs below it give it a harder input.
//
//	go run ./experiments/regreedy -run DIR -config FILE -rbm 6 [-set key=value ...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

type sets []string

func (s *sets) String() string     { return strings.Join(*s, ",") }
func (s *sets) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	runDir := flag.String("run", "", "the run's output folder (weights.npz)")
	file := flag.String("config", "", "the run's config")
	k := flag.Int("rbm", 0, "the RBM to train again (2 or more)")
	seed := flag.Uint64("seed", 1, "the shuffle seed of the greedy retraining")
	var set sets
	flag.Var(&set, "set", "key=value over the config")
	flag.Parse()
	if err := run(*runDir, *file, set, *k, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "regreedy:", err)
		os.Exit(1)
	}
}

func run(runDir, file string, set []string, k int, seed uint64) error {
	cfg, err := config.Load(file, set)
	if err != nil {
		return err
	}
	train, _, err := dbn.LoadData(cfg)
	if err != nil {
		return err
	}
	m, err := dbn.LoadModel(runDir)
	if err != nil {
		return err
	}
	if k < 2 || k > len(m.Pretrained) {
		return fmt.Errorf("-rbm %d: want 2 to %d", k, len(m.Pretrained))
	}
	x, n := train.X, train.N
	for i := 0; i < k-1; i++ {
		x = transform(m.Pretrained[i].W, m.Pretrained[i].B, x, n)
	}
	stage := dbn.StageConfigs(cfg)[k-1]
	stages, err := pipeline.Greedy(context.Background(), x, n, []pipeline.StageConfig{stage}, []uint64{seed}, pipeline.Hooks{})
	if err != nil {
		return err
	}
	own, err := runRBM(m, k)
	if err != nil {
		return err
	}
	rows := min(n, 10000) // as final_recon_error counts them
	fmt.Printf("rbm %d: the run's %.6f, greedy again on the run's input %.6f\n", k,
		dbn.ReconError(own, x, rows), dbn.ReconError(stages[0].RBM(), x, rows))
	return nil
}

// transform returns the hidden probabilities of n rows of x through W
// (in x out, row-major) and b.
func transform(w, b, x []float32, n int) []float32 {
	in, out := len(x)/n, len(b)
	r := &rbm.RBM{Visible: in, Hidden: out, W: w, B: b, A: make([]float32, in)}
	next := make([]float32, n*out)
	r.HiddenProbs(next, x, n)
	return next
}

// runRBM is RBM_k of the run whose model is m, with its visible biases
// a<k> from its weights.npz.
func runRBM(m *dbn.Model, k int) (*rbm.RBM, error) {
	path := filepath.Join(m.Dir, dbn.WeightsFile)
	arrays, err := data.ReadNPZFloats(path)
	if err != nil {
		return nil, err
	}
	a, ok := arrays[fmt.Sprintf("a%d", k)]
	if !ok {
		return nil, fmt.Errorf("%s holds no a%d", path, k)
	}
	l := m.Pretrained[k-1]
	return &rbm.RBM{Visible: l.In, Hidden: l.Out, W: l.W, B: l.B, A: a.Values}, nil
}
