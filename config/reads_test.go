package config

import (
	"slices"
	"strings"
	"testing"
)

// TestUnread checks the keys each kind of run leaves unread, as the read
// tags of Config's fields give them.
func TestUnread(t *testing.T) {
	t.Parallel()
	pipelined := []string{"pretrain.k_batches", "pretrain.middle_precision", "pretrain.l_copy", "pretrain.settle",
		"cluster.credits", "cluster.transport", "cluster.plan", "cluster.local_slaves", "cluster.machine_cpus",
		"cluster.sync_every", "cluster.max_replicas", "cluster.replicate", "cluster.replica_tolerance", "reliability"}
	nats := []string{"cluster.nats_url", "cluster.slaves", "cluster.join_timeout"}
	workers := []string{"finetune.sync_every", "finetune.lr_rule", "finetune.warmup_epochs", "finetune.block_momentum"}
	var finetune []string
	for _, k := range Keys() {
		if strings.HasPrefix(k, "finetune.") && k != "finetune.epochs" {
			finetune = append(finetune, k)
		}
	}
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want [][]string
	}{
		{"greedy", func(c *Config) { c.Pretrain.Mode = Greedy }, [][]string{pipelined, nats, {"cluster.colocate"}}},
		{"memory", func(c *Config) { c.Cluster.Transport = Memory }, [][]string{nats, {"cluster.colocate"}}},
		{"remote slaves", func(c *Config) { c.Cluster.Slaves = 4 }, [][]string{{"cluster.colocate"}}},
		{"no CPU cap", func(c *Config) { c.Cluster.CPUsPerWorker = 0 }, [][]string{{"cluster.colocate"}}},
		{"capped local slaves", func(c *Config) {}, nil},
		{"one fine-tuning worker", func(c *Config) { c.Finetune.Workers = 1 }, [][]string{workers}},
		{"no fine-tuning", func(c *Config) { c.Finetune.Epochs = 0 }, [][]string{finetune}},
	} {
		c := &Config{Pretrain: Pretrain{Mode: Pipelined}, Cluster: Cluster{Transport: NATS, CPUsPerWorker: 1}, Finetune: Finetune{Epochs: 10, Workers: 4}}
		tc.set(c)
		got, want := c.Unread(), slices.Concat(tc.want...)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Unread() = %v; want %v", tc.name, got, want)
		}
	}
}

// TestReads checks that every read tag names a condition and every key it
// marks is a key or a section of them.
func TestReads(t *testing.T) {
	t.Parallel()
	keys := Keys()
	walkReads(func(key, when string) {
		if !slices.ContainsFunc(keys, func(k string) bool { return k == key || strings.HasPrefix(k, key+".") }) {
			t.Errorf("read tag %q on %s, which is no key", when, key)
		}
	})
}
