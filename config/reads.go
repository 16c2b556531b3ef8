package config

import (
	"fmt"
	"reflect"
)

// readWhen says, for each value a field's read tag takes, when a run reads
// the key the field holds (every key, for a section). A field without the
// tag is read by every run; one that gains a key states here, in the
// field's tag, which runs read it, and a sweep follows.
var readWhen = map[string]func(c *Config) bool{
	// pipelined: only pipelined runs, their slaves and links, read it.
	"pipelined": func(c *Config) bool { return c.Pretrain.Mode == Pipelined },
	// nats: only pipelined runs whose stages talk over NATS.
	"nats": func(c *Config) bool { return c.Pretrain.Mode == Pipelined && c.Cluster.Transport == NATS },
	// colocate: only those whose local slaves share the CPUs a cap leaves.
	"colocate": func(c *Config) bool {
		return c.Pretrain.Mode == Pipelined && c.Cluster.Transport == NATS &&
			c.Cluster.Slaves == 0 && c.Cluster.CPUsPerWorker > 0
	},
	// finetune: only runs that fine-tune.
	"finetune": func(c *Config) bool { return c.Finetune.Epochs > 0 },
	// workers: only runs that fine-tune on more than one worker.
	"workers": func(c *Config) bool { return c.Finetune.Epochs > 0 && c.Finetune.Workers > 1 },
}

// Unread returns the keys, or whole sections, that a run of c does not
// read, in the order of Config's fields: those whose field's read tag
// names a condition c does not meet. A sweep runs one combination for all
// the values of keys its runs do not read.
func (c *Config) Unread() []string {
	var keys []string
	walkReads(func(key, when string) {
		if !readWhen[when](c) {
			keys = append(keys, key)
		}
	})
	return keys
}

// walkReads calls f with every key or section of Config whose field has a
// read tag, and that tag, not descending into a tagged section. It panics
// on a tag readWhen does not know: a programming error TestReads catches.
func walkReads(f func(key, when string)) {
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			field := t.Field(i)
			name := field.Tag.Get("mapstructure")
			if name == "" || name == "-" {
				continue
			}
			key := prefix + name
			if when, ok := field.Tag.Lookup("read"); ok {
				if readWhen[when] == nil {
					panic(fmt.Sprintf("config: %s: unknown read tag %q", key, when))
				}
				f(key, when)
				continue
			}
			if field.Type.Kind() == reflect.Struct {
				walk(key+".", field.Type)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
}
