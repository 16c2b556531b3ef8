package dbn

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pipedbn/pipedbn/finetune"
)

// PrintSummary writes a short table of a finished run.
func PrintSummary(w io.Writer, r *Result) {
	if r.PretrainedFrom != "" {
		fmt.Fprintf(w, "\n%s: the RBMs of %v read from %s, not pre-trained (%s)\n", r.Name, r.Layers, r.PretrainedFrom, r.BLAS)
	} else {
		fmt.Fprintf(w, "\n%s: %s pre-training of %v in %.1f s (%s)\n", r.Name, r.Mode, r.Layers, r.PretrainSeconds, r.BLAS)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RBM\tsize\tworker\tbatches\trecon first\trecon last\trecon final input\tbusy s\twait s\t")
	for _, b := range r.RBMs {
		first, last := 0.0, 0.0
		if n := len(b.ReconError); n > 0 {
			first, last = b.ReconError[0], b.ReconError[n-1]
		}
		fmt.Fprintf(tw, "%d\t%dx%d\t%s\t%d\t%.5f\t%.5f\t%.5f\t%.1f\t%.1f\t\n", b.Index, b.Visible, b.Hidden, b.Worker, b.Batches, first, last, b.FinalReconError, b.BusySeconds, b.WaitSeconds)
	}
	tw.Flush()
	printFixedCosts(w, r)
	if f := r.Finetune; f != nil {
		fmt.Fprintf(w, "\nfine-tuning (%s init): %d epochs in %.1f s, train accuracy %.4f, validation %.4f, test accuracy %.4f\n",
			f.Init, len(f.History), f.Seconds, f.TrainAccuracy, f.ValidationAccuracy, f.TestAccuracy)
		if p := f.Plan; p != nil {
			fmt.Fprintf(w, "fine-tuning plan: %d worker(s), %d examples per mini-batch, %s CPUs each, %d BLAS thread(s) each\n",
				p.Workers, p.BatchPerWorker, cpusText(p.CPUs), p.Threads)
		}
		if len(f.Confusion) > 0 {
			fmt.Fprintln(w, "test confusion matrix (rows: true class, columns: predicted):")
			n := 0
			for _, row := range f.Confusion {
				for _, c := range row {
					n += c
				}
			}
			finetune.FormatConfusion(w, finetune.Evaluation{Accuracy: f.TestAccuracy, Confusion: f.Confusion, PerClass: f.PerClass, N: n}, f.Classes)
		}
	}
	if r.EndToEndSeconds > 0 {
		fmt.Fprintf(w, "\nend to end (pre-training + fine-tuning): %.1f s\n", r.EndToEndSeconds)
	}
}

// printFixedCosts writes a pipelined run's phases of pre-training and its
// overhead_seconds: its time beyond W windows of its bottleneck. A greedy
// run has neither, and a resumed one no overhead.
func printFixedCosts(w io.Writer, r *Result) {
	if len(r.PretrainPhases) == 0 {
		return
	}
	var ps []string
	for _, p := range r.PretrainPhases {
		ps = append(ps, fmt.Sprintf("%s %.2f", p.Name, p.Seconds))
	}
	fmt.Fprintf(w, "pre-training phases (s): %s\n", strings.Join(ps, ", "))
	if o, ok := r.Overhead(); ok {
		fmt.Fprintf(w, "overhead: %.2f s of %.2f s beyond W = %d windows of the bottleneck's %.4f s\n",
			o, r.PretrainSeconds, r.Windows, r.BottleneckWindowSeconds)
	} else if r.Resumed {
		fmt.Fprintln(w, "overhead: – (a resumed run's busy seconds count from its first start)")
	}
}

// cpusText is a CPU cap for people: "uncapped" for 0.
func cpusText(cpus float64) string {
	if cpus <= 0 {
		return "uncapped"
	}
	return strconv.FormatFloat(cpus, 'g', 4, 64)
}
