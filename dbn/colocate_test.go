package dbn

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// With cluster.colocate the local slaves share one CPU group (one machine);
// without it each has its own.
func TestLocalSlavesColocate(t *testing.T) {
	for _, colocate := range []bool{true, false} {
		t.Run(strconv.FormatBool(colocate), func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, "data: {source: synthetic}\ncluster: {cpus_per_worker: 0.5}\n", "cluster.colocate="+strconv.FormatBool(colocate))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			// Stand-in slaves: they ignore their flags and live a moment.
			opt := Options{Logger: hclog.NewNullLogger(), SlaveCommand: []string{"/bin/sh", "-c", "sleep 1", "sh"}}
			lay := &layout{procs: procsOf([2]int{1, 1}, [2]int{2, 2}, [2]int{3, 3}), threads: 1}
			ls, err := startLocalSlaves(ctx, cfg, opt, "nats://127.0.0.1:1", t.TempDir(), lay, cancel)
			if err != nil {
				t.Fatal(err)
			}
			defer ls.stop()
			if len(ls.groups) == 0 {
				t.Skip("no CPU groups here (cgroups need root and a cpu controller)")
			}
			want := 3
			if colocate {
				want = 1
			}
			if len(ls.groups) != want {
				t.Fatalf("%d CPU groups; want %d", len(ls.groups), want)
			}
			var members []string
			for _, g := range ls.groups {
				b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
				if err != nil {
					t.Fatal(err)
				}
				members = append(members, strings.Fields(string(b))...)
			}
			for _, c := range ls.cmds {
				if pid := strconv.Itoa(c.Process.Pid); !slices.Contains(members, pid) {
					t.Errorf("slave pid %s is in no group (members %v)", pid, members)
				}
			}
			if colocate {
				b, _ := os.ReadFile(filepath.Join(ls.groups[0].dir, "cpu.max"))
				if q, _ := os.ReadFile(filepath.Join(ls.groups[0].dir, "cpu.cfs_quota_us")); len(q) > 0 {
					b = q
				}
				if !strings.HasPrefix(strings.TrimSpace(string(b)), "50000") {
					t.Errorf("shared group quota %q; want 50000 µs per 100000 (0.5 CPU for all)", b)
				}
			}
		})
	}
}
