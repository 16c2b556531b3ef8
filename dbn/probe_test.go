package dbn

import (
	"context"
	"testing"
)

// TestProbe: with pretrain.probe.rows, every RBM of a greedy run and of a
// pipelined one (in memory and over NATS with slave processes) gets
// snapshots over the run, measured on the probe set: ordered in time and
// mini-batches, the last one the final RBM (its error final_recon_error's,
// measured on the same rows, its middle results drifting nowhere), the
// greedy RBMs one after the other and the pipelined ones at once.
func TestProbe(t *testing.T) {
	t.Parallel()
	for _, run := range []struct {
		name string
		sets []string
	}{
		{"greedy", []string{"pretrain.mode=greedy"}},
		{"memory", []string{"cluster.transport=memory"}},
		{"nats", []string{"cluster.plan=one-per-rbm"}},
	} {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, `
name: probe
data: {source: synthetic, train_limit: 240, test_limit: 20}
dbn: {layers: [16, 8, 6, 4]}
pretrain: {epochs: 3, batch_size: 20, k_batches: 2, probe: {rows: 500}}
cluster: {credits: 2}
reliability: {checkpoint_every: 2}
finetune: {epochs: 0}
`, run.sets...)
			res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), SlaveCommand: []string{slaveBin}})
			if err != nil {
				t.Fatal(err)
			}
			if res.ProbeRows != 240 {
				t.Errorf("probe_rows = %d; want 240, the training set's rows", res.ProbeRows)
			}
			planned := Stages(cfg, 240)
			for i, b := range res.RBMs {
				pts := b.Probe
				if len(pts) < 3 {
					t.Fatalf("RBM %d: %d probe points; want several", b.Index, len(pts))
				}
				for k := 1; k < len(pts); k++ {
					if pts[k].Seconds < pts[k-1].Seconds || pts[k].Batches <= pts[k-1].Batches {
						t.Errorf("RBM %d: point %d %+v after %+v; want later, with more mini-batches", b.Index, k, pts[k], pts[k-1])
					}
				}
				last := pts[len(pts)-1]
				if want := planned[i].Batches(240); last.Batches != want || last.Batches != b.Batches {
					t.Errorf("RBM %d: the last point is at %d mini-batches; want the %d it trained (%d planned)", b.Index, last.Batches, b.Batches, want)
				}
				if last.ReconError != b.FinalReconError {
					t.Errorf("RBM %d: the last point's error %g; want final_recon_error %g", b.Index, last.ReconError, b.FinalReconError)
				}
				if pts[0].ReconError <= last.ReconError {
					t.Errorf("RBM %d: error %g at the first point, %g at the end; want it to fall", b.Index, pts[0].ReconError, last.ReconError)
				}
				top := i == len(res.RBMs)-1
				for k, p := range pts {
					if (p.Drift == nil) != top {
						t.Fatalf("RBM %d point %d: drift %v; want one for every RBM but the top", b.Index, k, p.Drift)
					}
				}
				if !top && (*last.Drift != 0 || *pts[0].Drift <= 0) {
					t.Errorf("RBM %d: drift %g at the first point, %g at the end; want > 0, then 0", b.Index, *pts[0].Drift, *last.Drift)
				}
			}
			// Greedy trains RBM_2 after RBM_1; pipelined, at the same time.
			end1, first2 := res.RBMs[0].Probe[len(res.RBMs[0].Probe)-1].Seconds, res.RBMs[1].Probe[0].Seconds
			if greedy := run.name == "greedy"; greedy != (first2 >= end1) {
				t.Errorf("%s: RBM_2's first snapshot at %.3f s, RBM_1 done at %.3f s", run.name, first2, end1)
			}
		})
	}
}
