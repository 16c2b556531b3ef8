package dbn

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/pipedbn/pipedbn/finetune"
)

// PrintSummary writes a short table of a finished run.
func PrintSummary(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n%s: %s pre-training of %v in %.1f s (%s)\n", r.Name, r.Mode, r.Layers, r.PretrainSeconds, r.BLAS)
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
	if f := r.Finetune; f != nil {
		fmt.Fprintf(w, "\nfine-tuning (%s init): %d epochs in %.1f s, train accuracy %.4f, validation %.4f, test accuracy %.4f\n",
			f.Init, len(f.History), f.Seconds, f.TrainAccuracy, f.ValidationAccuracy, f.TestAccuracy)
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
