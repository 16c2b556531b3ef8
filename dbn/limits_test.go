package dbn

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/internal/heapprobe"
	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/pipeline"
)

// TestEstimateBoundsMeasuredRun runs whole experiments whose weights
// dominate and compares the estimate of the process (less its fixed
// overhead) with the heap measured: it must bound it from above within 2x
// (allowing heapprobe.Peak's 5% of garbage). Measured here (784-1500-500, 600
// examples): greedy with fine-tuning 1.48x, greedy alone 1.11x (writing
// weights.npz dominates both), in memory with checkpoints every 2 windows
// 1.48x (its bound on the checkpoints the store keeps is a worst case).
// Not in parallel: the heap is the process's.
func TestEstimateBoundsMeasuredRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for seconds")
	}
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"greedy", []string{"pretrain.mode=greedy"}},
		{"greedy without fine-tuning", []string{"pretrain.mode=greedy", "finetune.epochs=0"}},
		{"in memory", []string{"pretrain.mode=pipelined", "cluster.transport=memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadConfig(t, `
name: measure
data: {source: synthetic, train_limit: 600, test_limit: 100}
dbn: {layers: [784, 1500, 500]}
pretrain: {epochs: 2, batch_size: 100, k_batches: 2}
reliability: {checkpoint_every: 2, save_every: 0s}
finetune: {epochs: 1, batch_size: 100}
`, tc.sets...)
			est := estimateRun(cfg, nil)
			want := est.total() - memlimit.ProcessOverhead
			var err error
			got := heapprobe.Peak(func() { _, err = Run(context.Background(), cfg, Options{OutDir: t.TempDir()}) })
			if err != nil {
				t.Fatal(err)
			}
			r := float64(want) / float64(got)
			t.Logf("estimate %s, measured peak %s: %.2fx; the estimate: %s", memlimit.BytesText(want), memlimit.BytesText(got), r, est.master.String())
			if r < 0.95 || r > 2 {
				t.Errorf("estimate %d B is %.2fx the measured peak %d B; want 0.95x to 2x", want, r, got)
			}
		})
	}
}

// oneLine fails unless err is one line holding every want.
func oneLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil; want one holding %q", want)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("error %q: want one line", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q: want it to hold %q", msg, w)
		}
	}
}

// TestCheckRefuses checks the refusal of a DBN that cannot fit, in every
// schedule, against a fake limit.
func TestCheckRefuses(t *testing.T) {
	t.Parallel()
	lim := memlimit.Limit{Bytes: 16 << 30, From: memlimit.MemAvailable}
	const body = "data: {source: synthetic, train_limit: 256, test_limit: 10}\ndbn: {layers: [784, 100000000]}\n"
	for _, tc := range []struct {
		name string
		sets []string
		want []string
	}{
		{"greedy", []string{"pretrain.mode=greedy"}, []string{
			"dbn.layers = [784, 100000000]: RBM_1 (784x100000000) needs about 1.14 TiB, the master (greedy pre-training and fine-tuning in this process) about ",
			"TiB in all (the largest part: ", "; this machine has 16.0 GiB available (MemAvailable in /proc/meminfo)"}},
		{"in memory", []string{"pretrain.mode=pipelined", "cluster.transport=memory"}, []string{
			"dbn.layers = [784, 100000000]: RBM_1's slave (784x100000000) needs about ", "the master and its 1 slave in this process (cluster.transport: memory) about ",
			"; this machine has 16.0 GiB available"}},
		{"local slaves", []string{"pretrain.mode=pipelined"}, []string{
			"dbn.layers = [784, 100000000]: RBM_1's slave (784x100000000) needs about ", "the master and its 1 local slave process about "}},
		{"remote slaves", []string{"pretrain.mode=pipelined", "cluster.slaves=1", "cluster.nats_url=nats://h:4222"}, []string{
			"dbn.layers = [784, 100000000]: the master needs about ", "(the largest part: RBM_1's checkpoints"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, body, tc.sets...)
			err := estimateRun(cfg, nil).check(cfg, lim, true, hclog.NewNullLogger())
			oneLine(t, err, append([]string{"config " + cfg.File + ": "}, tc.want...)...)
		})
	}
	// A cgroup's limit is named by its file.
	cfg := loadConfig(t, body, "pretrain.mode=greedy")
	err := estimateRun(cfg, nil).check(cfg, memlimit.Limit{Bytes: 1 << 30, From: "/sys/fs/cgroup/x/memory.max"}, true, nil)
	oneLine(t, err, "; this process's cgroup allows 1.00 GiB (/sys/fs/cgroup/x/memory.max)")
}

func TestCheckPasses(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"greedy", "pipelined"} {
		cfg := loadConfig(t, "data: {source: synthetic}\ndbn: {layers: [784, 500, 500, 2000]}\n", "pretrain.mode="+mode)
		est := estimateRun(cfg, nil)
		if err := est.check(cfg, memlimit.Limit{Bytes: 1 << 30, From: memlimit.MemAvailable}, true, hclog.NewNullLogger()); err != nil {
			t.Errorf("%s: %v; want the default DBN on 2000 examples to fit 1 GiB", mode, err)
		}
		if err := est.check(cfg, memlimit.Limit{}, false, hclog.NewNullLogger()); err != nil {
			t.Errorf("%s, no limit known: %v; want nil", mode, err)
		}
	}
	// The whole check, on this machine.
	cfg := loadConfig(t, "data: {source: synthetic}\ndbn: {layers: [16, 8]}\n")
	if err := CheckLimits(cfg, nil); err != nil {
		t.Errorf("CheckLimits(a tiny DBN) = %v", err)
	}
}

// TestCheckMessages checks that a run that must send a message its
// transport cannot carry is refused.
func TestCheckMessages(t *testing.T) {
	t.Parallel()
	const data = "data: {source: synthetic, train_limit: 256, test_limit: 10}\n"
	for _, tc := range []struct {
		name, body string
		sets       []string
		want       []string // nil: no error
	}{
		{"weights over NATS", data + "dbn: {layers: [784, 90000]}\n", nil, []string{
			"dbn.layers = [784, 90000]: the trained weights of RBM_1 (784x90000) make a message of 270 MiB, more than the 256 MiB one may carry over NATS"}},
		{"checkpoint over NATS", data + "dbn: {layers: [784, 45000]}\n", nil, []string{
			"dbn.layers = [784, 45000]: a checkpoint of RBM_1 (784x45000) (W_1, biases and momentum) makes a message of 270 MiB, more than the 256 MiB one may carry over NATS; set reliability.checkpoint_every: 0"}},
		{"no checkpoints over NATS", data + "dbn: {layers: [784, 45000]}\n", []string{"reliability.checkpoint_every=0"}, nil},
		{"K = 200 over NATS", "data: {source: synthetic, train_limit: 60000}\ndbn: {layers: [784, 10]}\n", []string{"pretrain.k_batches=200", "pretrain.batch_size=256"}, nil},
		{"window over NATS", "data: {source: synthetic, train_limit: 60000}\ndbn: {layers: [1200, 10]}\n", []string{"pretrain.k_batches=1000", "pretrain.batch_size=256"}, []string{
			"pretrain.k_batches = 1000: a window of the epoch's 60000 rows (fewer than 1000 mini-batches of 256 rows) of L_0 (1200 values) makes a message of 275 MiB, more than the 256 MiB one may carry over NATS"}},
		{"window of the epoch over NATS", "data: {source: synthetic, train_limit: 100000}\ndbn: {layers: [784, 10]}\n", []string{"pretrain.k_batches=100000"}, []string{
			"pretrain.k_batches = 100000: a window of the epoch's 100000 rows (fewer than 100000 mini-batches of 256 rows) of L_0 (784 values) makes a message of 299 MiB, more than the 256 MiB one may carry over NATS"}},
		{"weights in memory", data + "dbn: {layers: [784, 1500000]}\n", []string{"cluster.transport=memory"}, []string{
			"dbn.layers = [784, 1500000]: the trained weights of RBM_1 (784x1500000) make a message of 4.39 GiB, more than the 4.00 GiB one may carry in the in-memory store"}},
		{"windows in memory", "data: {source: synthetic, train_limit: 60000}\ndbn: {layers: [784, 10]}\n", []string{"cluster.transport=memory", "pretrain.k_batches=1000"}, nil},
		{"greedy", data + "dbn: {layers: [784, 45000]}\n", []string{"pretrain.mode=greedy"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, tc.body, tc.sets...)
			err := checkMessages(cfg, nil)
			if tc.want == nil {
				if err != nil {
					t.Errorf("checkMessages() = %v; want nil", err)
				}
				return
			}
			oneLine(t, err, append([]string{"config " + cfg.File + ": "}, tc.want...)...)
		})
	}
}

func TestLayersText(t *testing.T) {
	t.Parallel()
	if got, want := layersText([]int{784, 100000000}), "[784, 100000000]"; got != want {
		t.Errorf("layersText = %q; want %q", got, want)
	}
}

// TestEstimateCountsLinkCredits checks that the estimate counts the
// credits the master grants each link: with K = 200 a window of data is
// 153 MiB, so the link into RBM_1 gets 1 credit of the 4 configured
// (protocol.LinkCredits), and RBM_1's slave holds 2 data windows (the
// credited one and the one being reassembled), not 5.
func TestEstimateCountsLinkCredits(t *testing.T) {
	cfg := loadConfig(t, `
name: long-windows
data: {source: synthetic, train_limit: 60000}
dbn: {layers: [784, 500, 500, 2000]}
pretrain: {k_batches: 200}
`)
	window := int64(4 * 200 * 256 * 784)
	for _, p := range estimateRun(cfg, nil).slaves[0].Parts {
		if strings.HasPrefix(p.What, "windows of 200 mini-batches of L_0") {
			if !strings.Contains(p.What, "1 credits") || p.Bytes < 2*window || p.Bytes > 2*(window+4*784) {
				t.Errorf("%s: %d B; want 1 credit, 2 windows of %d B", p.What, p.Bytes, window)
			}
			return
		}
	}
	t.Errorf("no input windows in RBM_1's estimate: %v", estimateRun(cfg, nil).slaves[0])
}

// TestEstimateCountsReplicas: once the plan gives RBM_3 four stage
// replicas, the estimate counts three more slave processes of RBM_3 and the
// master's share of the replicas: their checkpoints and their averages; a
// limit the plan without replicas fits refuses the plan with them.
func TestEstimateCountsReplicas(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, "data: {source: synthetic, train_limit: 60000}\ndbn: {layers: [784, 500, 500, 2000]}\n",
		"pretrain.mode=pipelined", "cluster.cpus_per_worker=0.45", "cluster.local_slaves=6", "cluster.max_replicas=4")
	one, four := estimateRun(cfg, nil), estimateRun(cfg, []int{1, 1, 4})
	params := int64(4 * (500*2000 + 500 + 2000))
	var averages int64
	for _, p := range four.master.Parts {
		if p.What == "the averages of RBM_3's 4 replicas" {
			averages = p.Bytes
		}
	}
	// 4 gathered, at least one kept, the one arriving twice, the encoding
	// out and the float64 sums.
	if averages < 10*params {
		t.Errorf("the master's averages of RBM_3's replicas: %d B; want at least %d (10 sets of parameters):\n%v", averages, 10*params, four.master)
	}
	slave3 := one.slaves[2].Total()
	if grew := four.total() - one.total(); grew < 3*slave3+averages {
		t.Errorf("the estimate grew by %d B with 4 replicas of RBM_3; want at least 3 more slaves of %d B and the averages, %d B", grew, slave3, averages)
	}
	lim := memlimit.Limit{Bytes: one.total() + (four.total()-one.total())/2, From: memlimit.MemAvailable}
	if err := one.check(cfg, lim, true, hclog.NewNullLogger()); err != nil {
		t.Errorf("without replicas: %v; want it to fit %d B", err, lim.Bytes)
	}
	oneLine(t, four.check(cfg, lim, true, nil), "config "+cfg.File+": dbn.layers = [784, 500, 500, 2000]: ", "the master and its 6 local slave processes about ")
}

// TestCheckSlaves: a pipelined run of more slaves than pipeline.MaxSlaves
// is refused before its data is loaded, in one line naming the key that
// decides their number and its value; one of MaxSlaves is not.
func TestCheckSlaves(t *testing.T) {
	t.Parallel()
	const body = "data: {source: synthetic, train_limit: 256, test_limit: 10}\ndbn: {layers: [16, 8, 8, 8]}\npretrain: {mode: pipelined}\n"
	layers := "[16" + strings.Repeat(", 8", 129) + "]" // 129 RBMs
	cpus := "[" + strings.TrimSuffix(strings.Repeat("0.5, ", 129), ", ") + "]"
	for _, tc := range []struct {
		name string
		sets []string
		want string // "": no error
	}{
		{"slaves by hand", []string{"cluster.slaves=200"}, "cluster.slaves = 200: 200 slaves, each with its own identity on the embedded NATS server, more than the 128 slaves one run may have"},
		{"slaves by hand, 128", []string{"cluster.slaves=128"}, ""},
		{"slaves by hand, their own server", []string{"cluster.slaves=200", "cluster.nats_url=nats://h:4222"}, ""},
		{"local slaves", []string{"cluster.local_slaves=200"}, "cluster.local_slaves = 200: 200 local slave processes, more than the 128 slaves one run may have"},
		{"local slaves, 128", []string{"cluster.local_slaves=128"}, ""},
		{"replicas", []string{"cluster.plan=1x198,2,3"}, `cluster.plan = "1x198,2,3": 200 local slaves (one per RBM of each stage group, on each of its replicas), more than the 128`},
		{"replicas of a group", []string{"cluster.plan=1-3x43"}, `cluster.plan = "1-3x43": 129 local slaves`},
		{"replicas, 128", []string{"cluster.plan=1-2x42,3x44"}, ""},
		{"machines", []string{"cluster.machine_cpus=" + cpus}, "cluster.machine_cpus = [129 machines]: 129 local slave processes"},
		{"RBMs", []string{"dbn.layers=" + layers}, "dbn.layers = " + layers + ": 129 RBMs, each with a local slave of its own"},
		{"RBMs, greedy", []string{"dbn.layers=" + layers, "pretrain.mode=greedy"}, ""},
		{"local slaves in memory", []string{"cluster.transport=memory", "dbn.layers=" + layers}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, body, tc.sets...)
			err := checkSlaves(cfg)
			if tc.want == "" {
				if err != nil {
					t.Errorf("checkSlaves() = %v; want nil", err)
				}
				return
			}
			oneLine(t, err, "config "+cfg.File+": "+tc.want)
			// Before the data, and before the plan allocates by the count.
			oneLine(t, CheckLimits(cfg, nil), tc.want)
			if cfg.Cluster.Slaves == 0 {
				_, err := layoutLocal(cfg, StageConfigs(cfg), 256, pipeline.Float32)
				oneLine(t, err, tc.want)
			}
		})
	}
}

// TestExplicitReplicas: an explicit plan's replicas are known before the
// data is loaded, and the estimate counts them then.
func TestExplicitReplicas(t *testing.T) {
	t.Parallel()
	const body = "data: {source: synthetic, train_limit: 256, test_limit: 10}\ndbn: {layers: [16, 8, 8, 8]}\npretrain: {mode: pipelined}\n"
	for plan, want := range map[string][]int{"1-2,3x4": {1, 1, 4}, "1x2,2-3x3": {2, 3, 3}, "auto": nil, "one-per-rbm": nil} {
		if got := explicitReplicas(loadConfig(t, body, "cluster.plan="+plan)); !slices.Equal(got, want) {
			t.Errorf("explicitReplicas(cluster.plan = %s) = %v; want %v", plan, got, want)
		}
	}
}

// TestCheckMessagesAtOnce: the checkpoints of 8 stage replicas of a
// 784x20000 RBM (126 MB each) are more than the master's endpoint holds of
// messages arriving at once (512 MiB): they would evict each other, and
// the run would lose and restart slaves without end. 4 replicas, or 8
// without checkpoints (their weights, half as long), fit.
func TestCheckMessagesAtOnce(t *testing.T) {
	t.Parallel()
	const body = "data: {source: synthetic, train_limit: 256, test_limit: 10}\ndbn: {layers: [784, 20000]}\npretrain: {mode: pipelined}\n"
	cfg := loadConfig(t, body, "cluster.plan=1x8")
	oneLine(t, checkMessages(cfg, []int{8}), "dbn.layers = [784, 20000]: the checkpoints the master may receive at once from its 8 slaves come to 958 MiB, more than the 512 MiB it holds of messages arriving over NATS", "; use fewer stage replicas")
	// Refused before the data, from the explicit plan (where this machine
	// has the memory the run needs: else for that).
	if lim, ok := memlimit.Here(); !ok || estimateRun(cfg, []int{8}).total() <= lim.Bytes {
		oneLine(t, CheckLimits(cfg, nil), "the checkpoints the master may receive at once from its 8 slaves")
	} else {
		oneLine(t, CheckLimits(cfg, nil), "dbn.layers = [784, 20000]: RBM_1's slave (784x20000) needs about ")
	}
	if err := checkMessages(cfg, []int{4}); err != nil {
		t.Errorf("4 replicas: %v; want nil", err)
	}
	if err := checkMessages(loadConfig(t, body, "reliability.checkpoint_every=0"), []int{8}); err != nil {
		t.Errorf("8 replicas without checkpoints: %v; want nil", err)
	}
	if err := checkMessages(loadConfig(t, body, "cluster.transport=memory"), []int{8}); err != nil {
		t.Errorf("in memory: %v; want nil", err)
	}
}

// TestCheckRunOneLine: a run that fits the memory but not its messages is
// refused without the estimate's warning before it: one line on stderr.
func TestCheckRunOneLine(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, "data: {source: synthetic, train_limit: 256, test_limit: 10}\ndbn: {layers: [784, 20000]}\npretrain: {mode: pipelined}\n", "cluster.plan=1x8")
	est := estimateRun(cfg, []int{8})
	// More than half of it: a run that passed would be warned about.
	lim := memlimit.Limit{Bytes: est.total() + est.total()/2, From: memlimit.MemAvailable}
	var logged strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Warn})
	oneLine(t, checkRun(cfg, est, []int{8}, lim, true, log), "the checkpoints the master may receive at once from its 8 slaves")
	if logged.Len() > 0 {
		t.Errorf("checkRun logged before its refusal:\n%s", logged.String())
	}
	// What does not fit the memory is refused for that, as before.
	lim.Bytes = est.total() / 2
	oneLine(t, checkRun(cfg, est, []int{8}, lim, true, log), "dbn.layers = [784, 20000]: RBM_1's slave (784x20000) needs about ")
}

// TestCheckPlannedSlaves: a plan made by cluster.plan = auto is held to
// pipeline.MaxSlaves once it is known: 3 RBMs in one group on 43 replicas
// are 129 slaves.
func TestCheckPlannedSlaves(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, "data: {source: synthetic, train_limit: 256, test_limit: 10}\ndbn: {layers: [16, 8, 8, 8]}\npretrain: {mode: pipelined}\n")
	lay := &layout{}
	for k := range 43 {
		lay.procs = append(lay.procs, proc{first: 1, last: 3, replica: k, replicas: 43})
	}
	oneLine(t, checkPlanned(cfg, lay, nil), `cluster.plan = "auto": the plan 1-3x43 has 129 slaves (one per RBM of each process), more than the 128 one run may have`)
}
