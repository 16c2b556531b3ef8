package dbn

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/config"
)

// The summary of a pipelined run shows its phases, its overhead beyond
// its bottleneck's windows and how fine-tuning was laid out; a resumed
// run's shows no overhead, a greedy run's neither.
func TestSummaryFixedCosts(t *testing.T) {
	phases := []Phase{{"calibration", 0.01}, {"start", 0.5}, {"fill", 0.3}, {"steady", 9}, {"drain", 0.2}, {"collect", 0.04}}
	pipelined := &Result{Name: "p", Mode: config.Pipelined, PretrainSeconds: 10.05, PretrainPhases: phases,
		Windows: 200, BottleneckWindowSeconds: 0.045, OverheadSeconds: 1.05,
		Finetune: &FinetuneResult{Plan: &FinetunePlan{Workers: 1, BatchPerWorker: 128, CPUs: 0.45, Threads: 1}}}
	resumed := *pipelined
	resumed.Resumed, resumed.OverheadSeconds, resumed.Finetune = true, 0, &FinetuneResult{Plan: &FinetunePlan{Workers: 1, BatchPerWorker: 64, Threads: 2}}
	greedy := &Result{Name: "g", Mode: config.Greedy, PretrainSeconds: 20}
	for _, c := range []struct {
		r         *Result
		want, not []string
	}{
		{pipelined, []string{"pre-training phases (s): calibration 0.01, start 0.50, fill 0.30, steady 9.00, drain 0.20, collect 0.04\n",
			"overhead: 1.05 s of 10.05 s beyond W = 200 windows of the bottleneck's 0.0450 s\n",
			"fine-tuning plan: 1 worker(s), 128 examples per mini-batch, 0.45 CPUs each, 1 BLAS thread(s) each\n"}, nil},
		{&resumed, []string{"fill 0.30", "overhead: – (a resumed run's", "64 examples per mini-batch, uncapped CPUs each, 2 BLAS"}, []string{"beyond W"}},
		{greedy, nil, []string{"phases", "overhead", "fine-tuning plan"}},
	} {
		var b bytes.Buffer
		PrintSummary(&b, c.r)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("summary of %s (resumed %v):\n%s\nwant %q", c.r.Name, c.r.Resumed, b.String(), w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(b.String(), n) {
				t.Errorf("summary of %s (resumed %v):\n%s\nwant no %q", c.r.Name, c.r.Resumed, b.String(), n)
			}
		}
	}
}
