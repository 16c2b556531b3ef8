package dbn

import (
	"context"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/internal/heapprobe"
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
			est := estimateRun(cfg)
			want := est.total() - processOverhead
			var err error
			got := heapprobe.Peak(func() { _, err = Run(context.Background(), cfg, Options{OutDir: t.TempDir()}) })
			if err != nil {
				t.Fatal(err)
			}
			r := float64(want) / float64(got)
			t.Logf("estimate %s, measured peak %s: %.2fx; the estimate: %s", bytesText(want), bytesText(got), r, est.master.String())
			if r < 0.95 || r > 2 {
				t.Errorf("estimate %d B is %.2fx the measured peak %d B; want 0.95x to 2x", want, r, got)
			}
		})
	}
}

func TestReadMemoryLimit(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	meminfo := "MemTotal:       24683620 kB\nMemFree:        1000 kB\nMemAvailable:   24177048 kB\n"
	avail := int64(24177048) * 1024
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  memoryLimit
		ok    bool
	}{
		{"no cgroup", map[string]string{"proc/meminfo": meminfo},
			memoryLimit{avail, memAvailable}, true},
		{"v2 limit below MemAvailable", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/user.slice/run-1.scope\n",
			"sys/fs/cgroup/user.slice/run-1.scope/memory.max": "4294967296\n",
		}, memoryLimit{4 * gib, "/sys/fs/cgroup/user.slice/run-1.scope/memory.max"}, true},
		{"v2 max, a parent limits", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/user.slice/run-1.scope\n",
			"sys/fs/cgroup/user.slice/run-1.scope/memory.max": "max\n",
			"sys/fs/cgroup/user.slice/memory.max":             "2147483648\n",
		}, memoryLimit{2 * gib, "/sys/fs/cgroup/user.slice/memory.max"}, true},
		{"v2 the smallest of the chain", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "3221225472\n",
			"sys/fs/cgroup/a/memory.max":   "1073741824\n",
		}, memoryLimit{gib, "/sys/fs/cgroup/a/memory.max"}, true},
		{"v2 in a container: the path is not there, the root is", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/docker/0123abc\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, memoryLimit{gib, "/sys/fs/cgroup/memory.max"}, true},
		{"v2 a path above the root", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/../../x\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, memoryLimit{gib, "/sys/fs/cgroup/memory.max"}, true},
		{"v2 limit above MemAvailable", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "107374182400\n",
		}, memoryLimit{avail, memAvailable}, true},
		{"v1 unlimited (hybrid, like this machine)", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "5:devices:/\n4:memory:/process_api/39a8\n3:cpuset:/\n0::/\n",
			"sys/fs/cgroup/memory/process_api/39a8/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  "9223372036854771712\n",
		}, memoryLimit{avail, memAvailable}, true},
		{"v1 limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "7:cpu,cpuacct:/\n4:memory:/job\n",
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "536870912\n",
		}, memoryLimit{gib / 2, "/sys/fs/cgroup/memory/job/memory.limit_in_bytes"}, true},
		{"cgroup only", map[string]string{
			"proc/self/cgroup": "0::/x\n", "sys/fs/cgroup/x/memory.max": "1073741824",
		}, memoryLimit{gib, "/sys/fs/cgroup/x/memory.max"}, true},
		{"garbage", map[string]string{
			"proc/meminfo": "MemAvailable: lots\n", "proc/self/cgroup": "nonsense\n0::/x\n",
			"sys/fs/cgroup/x/memory.max": "-5\n",
		}, memoryLimit{}, false},
		{"nothing", map[string]string{}, memoryLimit{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			got, ok := readMemoryLimit(fsys)
			if got != tc.want || ok != tc.ok {
				t.Errorf("readMemoryLimit() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestReadMemoryLimitHere reads this machine's limit: a linux machine has
// a MemAvailable.
func TestReadMemoryLimitHere(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	lim, ok := readMemoryLimit(os.DirFS("/"))
	if !ok || lim.bytes <= 0 {
		t.Fatalf("readMemoryLimit(/) = %+v, %v; want a limit", lim, ok)
	}
	t.Logf("%s", lim.text())
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
	lim := memoryLimit{bytes: 16 << 30, from: memAvailable}
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
			err := estimateRun(cfg).check(cfg, lim, true, hclog.NewNullLogger())
			oneLine(t, err, append([]string{"config " + cfg.File + ": "}, tc.want...)...)
		})
	}
	// A cgroup's limit is named by its file.
	cfg := loadConfig(t, body, "pretrain.mode=greedy")
	err := estimateRun(cfg).check(cfg, memoryLimit{bytes: 1 << 30, from: "/sys/fs/cgroup/x/memory.max"}, true, nil)
	oneLine(t, err, "; this process's cgroup allows 1.00 GiB (/sys/fs/cgroup/x/memory.max)")
}

func TestCheckPasses(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"greedy", "pipelined"} {
		cfg := loadConfig(t, "data: {source: synthetic}\ndbn: {layers: [784, 500, 500, 2000]}\n", "pretrain.mode="+mode)
		est := estimateRun(cfg)
		if err := est.check(cfg, memoryLimit{bytes: 1 << 30, from: memAvailable}, true, hclog.NewNullLogger()); err != nil {
			t.Errorf("%s: %v; want the default DBN on 2000 examples to fit 1 GiB", mode, err)
		}
		if err := est.check(cfg, memoryLimit{}, false, hclog.NewNullLogger()); err != nil {
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
			"pretrain.k_batches = 1000: a window of 1000 mini-batches of 256 rows of L_0 (1200 values) makes a message of 275 MiB, more than the 256 MiB one may carry over NATS"}},
		{"weights in memory", data + "dbn: {layers: [784, 1500000]}\n", []string{"cluster.transport=memory"}, []string{
			"dbn.layers = [784, 1500000]: the trained weights of RBM_1 (784x1500000) make a message of 4.39 GiB, more than the 4.00 GiB one may carry in the in-memory store"}},
		{"windows in memory", "data: {source: synthetic, train_limit: 60000}\ndbn: {layers: [784, 10]}\n", []string{"cluster.transport=memory", "pretrain.k_batches=1000"}, nil},
		{"greedy", data + "dbn: {layers: [784, 45000]}\n", []string{"pretrain.mode=greedy"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, tc.body, tc.sets...)
			err := checkMessages(cfg)
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

func TestBytesText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {1536, "1.50 KiB"}, {10 << 20, "10.0 MiB"},
		{128 << 20, "128 MiB"}, {22 << 30, "22.0 GiB"}, {940800000000, "876 GiB"},
		{5 << 40, "5.00 TiB"}, {math.MaxInt64, "8.00 EiB"},
	} {
		if got := bytesText(tc.b); got != tc.want {
			t.Errorf("bytesText(%d) = %q; want %q", tc.b, got, tc.want)
		}
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
	for _, p := range estimateRun(cfg).slaves[0].Parts {
		if strings.HasPrefix(p.What, "windows of 200 mini-batches of L_0") {
			if !strings.Contains(p.What, "1 credits") || p.Bytes < 2*window || p.Bytes > 2*(window+4*784) {
				t.Errorf("%s: %d B; want 1 credit, 2 windows of %d B", p.What, p.Bytes, window)
			}
			return
		}
	}
	t.Errorf("no input windows in RBM_1's estimate: %v", estimateRun(cfg).slaves[0])
}
