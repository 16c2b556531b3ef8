// Command localsgd measures the test accuracy of data-parallel fine-tuning
// (finetune.TrainParallel: W replicas, averaged every S local steps) on
// Fashion-MNIST, over a grid of W, S, learning-rate rule and seed, all in
// one process: a study of quality, not of time.
//
//	go run ./experiments/localsgd -run /tmp/pre -out experiments/results/finetune_local_sgd
//
// -run names the output folder of a `master run` whose pre-trained RBMs
// start every network (their W_i and b_i unrolled, a fresh softmax layer
// per seed); without it every network starts from random weights. W = 1
// runs once per seed, as it is Train whatever S. Each run appends a row to
// OUT/runs.csv as it ends; OUT/summary.md then holds the test accuracy's
// mean and spread per (W, S, rule).
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/finetune"
)

// options are the command's flags.
type options struct {
	dataDir, runDir, out string
	trainN, testN        int
	cfg                  finetune.Config
	workers, syncs       []int
	linearSyncs, seeds   []int
	sqrtSyncs            []int
	overlapSyncs         []int
	warmup, threads      int
	block                float64
}

// setting is one cell of the grid: W, S and the rule.
type setting struct {
	p finetune.Parallel
}

func (s setting) syncName() string {
	if s.p.Workers == 1 {
		return "-"
	}
	if s.p.SyncEvery == 0 {
		return "epoch"
	}
	return strconv.Itoa(s.p.SyncEvery)
}

func (s setting) ruleName() string {
	if beta := s.p.BlockMomentum; beta != 0 {
		plain := s
		plain.p.BlockMomentum = 0
		return fmt.Sprintf("%v, block momentum %v", plain.ruleName(), beta)
	}
	if s.p.Overlap {
		return fmt.Sprintf("%v, warm-up %d, overlap", s.p.LR, s.p.WarmupEpochs)
	}
	if s.p.LR == finetune.LRLinear || s.p.LR == finetune.LRSqrt {
		return fmt.Sprintf("%v, warm-up %d", s.p.LR, s.p.WarmupEpochs)
	}
	return "constant"
}

func main() {
	o, err := parseFlags()
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localsgd:", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	o := options{cfg: finetune.DefaultConfig()}
	flag.StringVar(&o.dataDir, "data", "/usr/share/datasets/fashion-mnist", "Fashion-MNIST's `DIR`")
	flag.StringVar(&o.runDir, "run", "", "a `master run` output `DIR` whose pre-trained RBMs start the networks (empty: random weights)")
	flag.StringVar(&o.out, "out", "", "the `DIR` for runs.csv and summary.md")
	flag.IntVar(&o.trainN, "train", 12000, "the first `N` training examples (20% of Fashion-MNIST's 60000)")
	flag.IntVar(&o.testN, "test", 0, "the first `N` test examples (0: all)")
	flag.IntVar(&o.cfg.Epochs, "epochs", 5, "fine-tuning epochs")
	flag.IntVar(&o.cfg.BatchSize, "batch", 32, "each replica's mini-batch size b")
	flag.Float64Var(&o.cfg.LearningRate, "lr", 0.1, "Config's learning rate")
	flag.Float64Var(&o.cfg.LearningRateFinal, "lr-final", 0, "the last epoch's rate, reached linearly (0: a constant rate)")
	flag.Float64Var(&o.cfg.Momentum, "momentum", 0.9, "momentum")
	flag.IntVar(&o.warmup, "warmup", 1, "the linear rule's warm-up in `epochs`")
	flag.IntVar(&o.threads, "threads", 0, "BLAS threads (0: leave as is)")
	flag.Float64Var(&o.block, "block-momentum", 0, "finetune.Parallel.BlockMomentum, beta, for every setting with W > 1 but overlap's")
	lists := map[string]*[]int{}
	for _, l := range []struct {
		name, def, usage string
		dst              *[]int
	}{
		{"workers", "1,4,8", "the `W` values", &o.workers},
		{"sync", "1,4,16,64,0", "the `S` values run with the constant rule (0: once per epoch)", &o.syncs},
		{"linear", "1", "the `S` values run with the linear rule and its warm-up too", &o.linearSyncs},
		{"sqrt", "", "the `S` values run with the sqrt rule and its warm-up too", &o.sqrtSyncs},
		{"overlap", "", "the `S` values run with the linear rule, its warm-up and overlap (finetune.Parallel.Overlap) too", &o.overlapSyncs},
		{"seeds", "1,2,3", "the `seeds`", &o.seeds},
	} {
		flag.String(l.name, l.def, l.usage)
		lists[l.name] = l.dst
	}
	flag.Parse()
	if o.out == "" || flag.NArg() > 0 {
		return o, errors.New("usage: localsgd -out DIR [-run DIR] [flags]")
	}
	var errs []error
	for name, dst := range lists {
		v, err := intList(flag.Lookup(name).Value.String())
		if err != nil {
			errs = append(errs, fmt.Errorf("-%s: %w", name, err))
		}
		*dst = v
	}
	o.cfg.Threads = o.threads
	return o, errors.Join(errs...)
}

func intList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// grid lists the settings: W = 1 once, every other W with each S under
// the constant rule, each of linearSyncs under the linear rule, each of
// sqrtSyncs under the sqrt rule and each of overlapSyncs under the linear
// rule with overlap.
func (o options) grid() []setting {
	var g []setting
	for _, w := range o.workers {
		if w == 1 {
			g = append(g, setting{finetune.Parallel{Workers: 1}})
			continue
		}
		for _, s := range o.syncs {
			g = append(g, setting{finetune.Parallel{Workers: w, SyncEvery: s, BlockMomentum: o.block}})
		}
		for _, s := range o.linearSyncs {
			g = append(g, setting{finetune.Parallel{Workers: w, SyncEvery: s, LR: finetune.LRLinear, WarmupEpochs: o.warmup, BlockMomentum: o.block}})
		}
		for _, s := range o.sqrtSyncs {
			g = append(g, setting{finetune.Parallel{Workers: w, SyncEvery: s, LR: finetune.LRSqrt, WarmupEpochs: o.warmup, BlockMomentum: o.block}})
		}
		for _, s := range o.overlapSyncs {
			g = append(g, setting{finetune.Parallel{Workers: w, SyncEvery: s, LR: finetune.LRLinear, WarmupEpochs: o.warmup, Overlap: true}})
		}
	}
	return g
}

// result is one run's outcome.
type result struct {
	s                  setting
	seed               int
	testAcc, trainLoss float64
	diverged           bool
}

func run(o options) error {
	train, test, err := data.FashionMNIST(o.dataDir, o.trainN, o.testN)
	if err != nil {
		return err
	}
	var layers []finetune.Layer
	if o.runDir != "" {
		m, err := dbn.LoadModel(o.runDir)
		if err != nil {
			return err
		}
		layers = m.Pretrained
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(o.out, "runs.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	w.Write([]string{"workers", "sync_every", "rule", "seed", "test_accuracy", "last_epoch_loss", "diverged"})
	var results []result
	for _, s := range o.grid() {
		for _, seed := range o.seeds {
			r, err := runOne(o, s, seed, train, test, layers)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "W=%d S=%s rule=%s seed=%d: test accuracy %.4f, loss %.4f, diverged %v\n",
				s.p.Workers, s.syncName(), s.ruleName(), seed, r.testAcc, r.trainLoss, r.diverged)
			w.Write([]string{strconv.Itoa(s.p.Workers), s.syncName(), s.ruleName(), strconv.Itoa(seed),
				fmt.Sprintf("%.4f", r.testAcc), fmt.Sprintf("%.4f", r.trainLoss), strconv.FormatBool(r.diverged)})
			w.Flush()
			results = append(results, r)
		}
	}
	if err := w.Error(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(summary(o, results)), 0o644)
}

// runOne fine-tunes one network of setting s from seed and measures it.
func runOne(o options, s setting, seed int, train, test *data.Set, layers []finetune.Layer) (result, error) {
	var net *finetune.Network
	if layers != nil {
		net = finetune.FromPretrained(layers, 10, uint64(seed))
	} else {
		net = finetune.Random([]int{784, 500, 500, 2000}, 10, uint64(seed))
	}
	cfg := o.cfg
	cfg.Seed = uint64(seed)
	stats, err := finetune.TrainParallel(context.Background(), net, train, nil, cfg, s.p, finetune.Hooks{})
	r := result{s: s, seed: seed, diverged: errors.Is(err, finetune.ErrDiverged)}
	if err != nil && !r.diverged {
		return r, err
	}
	if len(stats) > 0 {
		r.trainLoss = stats[len(stats)-1].Loss
	}
	r.testAcc = net.Evaluate(test).Accuracy
	return r, nil
}
