package experiments

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// SweepCSVColumns are the columns of sweep.csv after the swept keys (which
// come first, after index and run, one column each, named by the key).
var SweepCSVColumns = []string{
	"repeat", "setting", "status", "mode", "layers", "hidden_layers", "cpus_per_worker", "colocate",
	"pretrain_seconds", "busy_seconds", "wait_seconds", "bytes_out", "final_recon_error",
	"finetune_epochs", "finetune_seconds", "train_accuracy", "validation_accuracy", "test_accuracy",
	"finetune_cpus", "end_to_end_seconds", "overhead_seconds", "wall_seconds", "reused", "error",
}

// WriteSweepOutputs writes sweep.csv and the report (report.md and its
// plots) of a sweep into plan.Dir.
func WriteSweepOutputs(plan *SweepPlan, rows []SweepRow, regenerate string) error {
	b, err := SweepCSV(plan, rows)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(plan.Dir, "sweep.csv"), b); err != nil {
		return err
	}
	_, err = WriteReport(plan, rows, regenerate)
	return err
}

// SweepCSV renders the rows of a sweep as CSV: one row per run with its
// swept values, its setting (see Setting) and its scalar results; results
// are empty for runs that did not finish. busy_seconds, wait_seconds and
// bytes_out are totals over the RBMs, final_recon_error their mean;
// finetune_cpus (finetune.plan.cpus) and end_to_end_seconds are empty
// where result.json lacks them (written before they were), and
// overhead_seconds where the run has none (greedy, resumed, written
// before it).
func SweepCSV(plan *SweepPlan, rows []SweepRow) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := append(append([]string{"index", "run"}, plan.Keys...), SweepCSVColumns...)
	w.Write(header)
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range rows {
		c := r.Config
		rec := []string{strconv.Itoa(r.Index), r.Name}
		rec = append(rec, r.Values...)
		rec = append(rec, strconv.Itoa(r.Repeat), SettingOf(c).String(), r.Status.String(), c.Pretrain.Mode.String(),
			layersText(c.DBN.Layers), strconv.Itoa(len(c.DBN.Layers)-1), f(c.Cluster.CPUsPerWorker), strconv.FormatBool(c.Cluster.Colocate))
		if res := r.Result; res != nil && r.Status == RunDone {
			var busy, wait, recon float64
			var out int64
			for _, b := range res.RBMs {
				busy += b.BusySeconds
				wait += b.WaitSeconds
				out += b.BytesOut
				recon += b.FinalReconError
			}
			if n := len(res.RBMs); n > 0 {
				recon /= float64(n)
			}
			rec = append(rec, f(res.PretrainSeconds), f(busy), f(wait), strconv.FormatInt(out, 10), f(recon))
			if ft := res.Finetune; ft != nil {
				rec = append(rec, strconv.Itoa(len(ft.History)), f(ft.Seconds), f(ft.TrainAccuracy), f(ft.ValidationAccuracy), f(ft.TestAccuracy))
			} else {
				rec = append(rec, "0", "", "", "", "")
			}
			cpus, e2e, overhead := "", "", ""
			if ft := res.Finetune; ft != nil && ft.Plan != nil {
				cpus = f(ft.Plan.CPUs)
			}
			if res.EndToEndSeconds > 0 {
				e2e = f(res.EndToEndSeconds)
			}
			if o, ok := res.Overhead(); ok {
				overhead = f(o)
			}
			rec = append(rec, cpus, e2e, overhead)
		} else {
			rec = append(rec, make([]string, 13)...)
		}
		wall := ""
		if r.WallSeconds > 0 {
			wall = f(r.WallSeconds)
		}
		rec = append(rec, wall, strconv.FormatBool(r.Reused), r.Err)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("sweep.csv: row %d has %d fields for %d columns", r.Index, len(rec), len(header))
		}
		w.Write(rec)
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// layersText writes layer sizes as YAML flow: [784, 500, 500].
func layersText(ls []int) string {
	parts := make([]string, len(ls))
	for i, n := range ls {
		parts[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
