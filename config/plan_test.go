package config

import (
	"reflect"
	"slices"
	"testing"
)

func TestStageGroups(t *testing.T) {
	t.Parallel()
	good := map[string][]StageGroup{
		PlanAuto:           nil,
		PlanOnePerRBM:      nil,
		"1-2,3":            {{1, 2, 1}, {3, 3, 1}},
		"1,2,3":            {{1, 1, 1}, {2, 2, 1}, {3, 3, 1}},
		" 1 - 3 ":          {{1, 3, 1}},
		"1-2,3x2":          {{1, 2, 1}, {3, 3, 2}},
		"1-3 x 4":          {{1, 3, 4}},
		"1x2147483647,2-3": {{1, 1, 2147483647}, {2, 3, 1}},
	}
	for plan, want := range good {
		got, err := Cluster{Plan: plan}.StageGroups(3)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("StageGroups(%q) = %v, %v; want %v, nil", plan, got, err, want)
		}
	}
	const want = `must be auto, one-per-rbm, or stage groups covering RBMs 1 to 3 in order, each with xR for R replicas, like "1-2,3x2": `
	bad := map[string]string{
		"greedy": `"greedy" is no RBM or range of RBMs`,
		"1-2":    "RBMs 3 to 3 are in no group",
		"2-3":    `group "2-3" starts at RBM 2, want 1`,
		"1,1-3":  `group "1-3" starts at RBM 1, want 2`,
		"1-4":    `group "1-4" ends at RBM 4`,
		"1-2,":   `"" is no RBM or range of RBMs`,
		"1-3x0":  `group "1-3x0": "0" is no number of replicas in [1, 2147483647]`,
		"1-3x":   `group "1-3x": "" is no number of replicas in [1, 2147483647]`,
		// Counts that would overflow a sum of processes or slaves.
		"1x9223372036854775807,2-3":  `group "1x9223372036854775807": "9223372036854775807" is no number of replicas in [1, 2147483647]`,
		"1x2147483648,2-3":           `group "1x2147483648": "2147483648" is no number of replicas in [1, 2147483647]`,
		"1x99999999999999999999,2-3": `group "1x99999999999999999999": "99999999999999999999" is no number of replicas in [1, 2147483647]`,
		// strconv takes signs; a plan does not.
		"+1x2,2,3": `group "+1x2": RBMs and replicas are plain numbers, without a sign`,
		"1x+4,2-3": `group "1x+4": RBMs and replicas are plain numbers, without a sign`,
		"1-+2,3":   `group "1-+2": RBMs and replicas are plain numbers, without a sign`,
		"1,2x-1,3": `group "2x-1": RBMs and replicas are plain numbers, without a sign`,
		"1x2 2,3":  `group "1x2 2": "2 2" is no number of replicas in [1, 2147483647]`,
	}
	for plan, reason := range bad {
		if _, err := (Cluster{Plan: plan}).StageGroups(3); err == nil || err.Error() != want+reason {
			t.Errorf("StageGroups(%q) = %v; want %s%s", plan, err, want, reason)
		}
	}
}

// cluster.plan and cluster.local_slaves are checked against the cluster
// they lay out: groups and a count of local slaves need local slaves.
func TestPlanProblems(t *testing.T) {
	t.Parallel()
	const dbn = "dbn: {layers: [20, 10, 8, 6]}\n"
	checkProblems(t, loadProblems(t, dbn+"cluster: {plan: '1-2', local_slaves: -1}\n"),
		`cluster.local_slaves = -1: must be >= 0 (0: as cluster.plan decides)`,
		`cluster.plan = "1-2": must be auto, one-per-rbm, or stage groups covering RBMs 1 to 3 in order, each with xR for R replicas, like "1-2,3x2": RBMs 3 to 3 are in no group`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {plan: '1-2,3', slaves: 3}\n"),
		`cluster.plan = "1-2,3": stage groups need the local slaves of cluster.transport = nats and cluster.slaves = 0 (slaves started by hand train one RBM each)`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {local_slaves: 2, transport: memory}\n"),
		`cluster.local_slaves = 2: only counts the local slaves of cluster.transport = nats and cluster.slaves = 0`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {plan: '1-2,3', local_slaves: 3}\n"),
		`cluster.local_slaves = 3: cluster.plan = "1-2,3" has 2 stage groups and replicas, one local slave each (0: as many)`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {plan: '1-2,3x2', local_slaves: 4}\n"),
		`cluster.local_slaves = 4: cluster.plan = "1-2,3x2" has 3 stage groups and replicas, one local slave each (0: as many)`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {sync_every: 0, replica_tolerance: -1, max_replicas: 0}\n"),
		`cluster.sync_every = 0: must be >= 1 (windows a stage replica trains between two averages)`,
		`cluster.replica_tolerance = -1: must be >= 0 (0: the fastest plan)`,
		`cluster.max_replicas = 0: must be >= 1 (1: no stage replicas)`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {sync_every: 2, max_replicas: 4}\n"),
		`cluster.sync_every = 2: must divide reliability.checkpoint_every = 5: a stage replica checkpoints after an average`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {sync_every: 2, plan: '1,2-3x2'}\n"),
		`cluster.sync_every = 2: must divide reliability.checkpoint_every = 5: a stage replica checkpoints after an average`)
	// Without replicas, any period will do.
	if _, err := Load(write(t, "p.yaml", dbn+"cluster: {sync_every: 2, plan: one-per-rbm}\ndata: {source: synthetic}\n"), nil); err != nil {
		t.Errorf("sync_every 2 with one-per-rbm: %v; want no problem", err)
	}
	checkProblems(t, loadProblems(t, dbn+"cluster: {plan: one-per-rbm, local_slaves: 2}\n"),
		`cluster.local_slaves = 2: cluster.plan = one-per-rbm needs one local slave per RBM, 3 (0: as many)`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {machine_cpus: [0.5, 0, x, -1]}\n"),
		`cluster.machine_cpus[1] = 0: must be a number of CPUs in (0, 4096]`,
		`cluster.machine_cpus[2] = "x": must be a number`,
		`cluster.machine_cpus[3] = -1: must be a number of CPUs in (0, 4096]`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {machine_cpus: 0.5}\n"),
		`cluster.machine_cpus = 0.5: must be a list of numbers`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {machine_cpus: [1, 1, 1], slaves: 3}\n"),
		`cluster.machine_cpus = [1 1 1]: only sizes the local slaves of cluster.transport = nats and cluster.slaves = 0`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {machine_cpus: [1, 1, 1], colocate: true, cpus_per_worker: 1}\n"),
		`cluster.machine_cpus = [1 1 1]: gives each local slave a machine of its own; cluster.colocate = true puts them all on one`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {machine_cpus: [1, 1, 1], local_slaves: 4}\n"),
		`cluster.local_slaves = 4: cluster.machine_cpus lists 3 machines, one local slave each (0: as many)`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {machine_cpus: [1, 1, 1], plan: '1-2,3x3'}\n"),
		`cluster.machine_cpus = [1 1 1]: lists 3 machines; cluster.plan = "1-2,3x3" has 4 stage groups and replicas, one machine each`)
	checkProblems(t, loadProblems(t, dbn+"cluster: {plan: one-per-rbm}\n", "cluster.machine_cpus=[1, 0.5]"),
		`cluster.machine_cpus = [1 0.5] (from --set cluster.machine_cpus): lists 2 machines; cluster.plan = one-per-rbm needs one per RBM, 3`)
	// More local slaves than RBMs: the auto plan may replicate.
	if _, err := Load(write(t, "p.yaml", dbn+"cluster: {local_slaves: 4}\ndata: {source: synthetic}\n"), nil); err != nil {
		t.Errorf("local_slaves 4 of 3 RBMs: %v; want no problem", err)
	}
}

// cluster.machine_cpus comes from the file, a --set or the environment
// (not in parallel: it sets a variable).
func TestMachineCPUs(t *testing.T) {
	const dbn = "dbn: {layers: [20, 10, 8, 6]}\n"
	for _, c := range []struct {
		body string
		sets []string
		env  string
	}{
		{body: "cluster: {machine_cpus: [0.5, 0.5, 0.5, 0.25]}\n"},
		{sets: []string{"cluster.machine_cpus=[0.5, 0.5, 0.5, 0.25]"}},
		{env: "0.5,0.5,0.5,0.25"},
	} {
		if c.env != "" {
			t.Setenv(EnvVar("cluster.machine_cpus"), c.env)
		}
		cfg, err := Load(write(t, "p.yaml", dbn+c.body+"data: {source: synthetic}\n"), c.sets)
		if err != nil {
			t.Errorf("machine_cpus from %+v: %v; want no problem", c, err)
		} else if want := []float64{0.5, 0.5, 0.5, 0.25}; !slices.Equal(cfg.Cluster.MachineCPUs, want) {
			t.Errorf("machine_cpus from %+v = %v; want %v", c, cfg.Cluster.MachineCPUs, want)
		}
	}
}
