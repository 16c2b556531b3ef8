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
// without it each has its own, of its machine's CPUs (cluster.machine_cpus
// where they differ).
func TestLocalSlavesColocate(t *testing.T) {
	for _, c := range []struct {
		name string
		set  string
		cpus []float64 // each process's, as the layout plans them
		want []string  // each group's quota in µs per 100 ms
	}{
		{"colocate", "cluster.colocate=true", []float64{0, 0, 0}, []string{"50000"}},
		{"apart", "cluster.colocate=false", []float64{0.5, 0.5, 0.5}, []string{"50000", "50000", "50000"}},
		{"unequal", "cluster.machine_cpus=[0.5, 0.25, 0.5]", []float64{0.5, 0.25, 0.5}, []string{"50000", "25000", "50000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, "data: {source: synthetic}\ncluster: {cpus_per_worker: 0.5}\n", c.set)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			// Stand-in slaves: they ignore their flags and live a moment.
			opt := Options{Logger: hclog.NewNullLogger(), SlaveCommand: []string{"/bin/sh", "-c", "sleep 1", "sh"}}
			lay := &layout{procs: procsOf([2]int{1, 1}, [2]int{2, 2}, [2]int{3, 3}), threads: 1}
			for p := range lay.procs {
				lay.procs[p].cpus = c.cpus[p]
			}
			ls, err := startLocalSlaves(ctx, cfg, opt, "nats://127.0.0.1:1", t.TempDir(), lay, cancel)
			if err != nil {
				t.Fatal(err)
			}
			defer ls.stop()
			if len(ls.groups) == 0 {
				t.Skip("no CPU groups here (cgroups need root and a cpu controller)")
			}
			if len(ls.groups) != len(c.want) {
				t.Fatalf("%d CPU groups; want %d", len(ls.groups), len(c.want))
			}
			var members []string
			for k, g := range ls.groups {
				b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
				if err != nil {
					t.Fatal(err)
				}
				members = append(members, strings.Fields(string(b))...)
				quota, _ := os.ReadFile(filepath.Join(g.dir, "cpu.max"))
				if q, _ := os.ReadFile(filepath.Join(g.dir, "cpu.cfs_quota_us")); len(q) > 0 {
					quota = q
				}
				if !strings.HasPrefix(strings.TrimSpace(string(quota)), c.want[k]) {
					t.Errorf("group %d's quota %q; want %s µs per 100000", k, quota, c.want[k])
				}
			}
			for _, cmd := range ls.cmds {
				if pid := strconv.Itoa(cmd.Process.Pid); !slices.Contains(members, pid) {
					t.Errorf("slave pid %s is in no group (members %v)", pid, members)
				}
			}
		})
	}
}
