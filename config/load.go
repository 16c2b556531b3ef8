package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix prefixes the environment variables that override config keys:
// PIPEDBN_CLUSTER_NATS_URL overrides cluster.nats_url.
const EnvPrefix = "PIPEDBN"

// envKey turns a key into the rest of its variable's name, as viper does.
var envKey = strings.NewReplacer(".", "_")

// EnvVar returns the environment variable that overrides key:
// PIPEDBN_CLUSTER_NATS_URL for cluster.nats_url.
func EnvVar(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(envKey.Replace(key))
}

// Load reads the YAML file at path over the defaults, applies PIPEDBN_*
// environment variables and then the key=value overrides in sets (values are
// YAML: 0.01, [784, 500], greedy), and validates the result. Every error
// names the file. Bad values are reported all at once, as Problems, each
// naming its key, its value and, unless the file set it, where it came
// from: an environment variable, a --set override or the default. An
// unknown key, a value of the wrong type (1.7 for an integer), a PIPEDBN_*
// variable that names no key and a --set that is not key=value are
// problems among the others.
func Load(path string, sets []string) (*Config, error) {
	v := viper.New()
	defaults := Defaults()
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	if err := v.ReadInConfig(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("config %s: %v", path, pe.Err)
		}
		return nil, fmt.Errorf("config %s: not valid YAML: %s", path, oneLine(err.Error()))
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(envKey)
	v.AutomaticEnv()
	o := &origins{inFile: v.InConfig, env: os.LookupEnv}

	var ps Problems
	for _, s := range sets {
		key, raw, ok := strings.Cut(s, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok || key == "" {
			ps = append(ps, Problem{Reason: fmt.Sprintf("--set %q: want key=value", s)})
			continue
		}
		var val any
		if err := yaml.Unmarshal([]byte(raw), &val); err != nil {
			ps = append(ps, Problem{Key: key, Value: raw, Source: "--set " + key, Reason: "not valid YAML: " + oneLine(err.Error())})
			continue
		}
		if val == nil {
			val = ""
		}
		if !knownKey(key) {
			ps = append(ps, Problem{Key: key, Value: val, Source: "--set " + key, Reason: unknownKeyReason(key)})
			continue
		}
		v.Set(key, val)
		o.set(key, val)
	}
	ps = append(ps, unknownEnv(os.Environ())...)
	// Values of the wrong type are problems, replaced by a stand-in so
	// that decoding and Validate go on to report every other problem.
	ps = append(ps, checkValues(v, defaults)...)
	c, more := decode(v, defaults)
	ps = append(ps, more...)
	if c != nil {
		c.File = path
		if c.Name == "" {
			c.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		var found Problems
		if err := c.Validate(); err != nil && !errors.As(err, &found) {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		reported := slices.Clone(ps)
		for _, p := range found {
			if !slices.ContainsFunc(reported, func(q Problem) bool { return aboutStandIn(p, q) }) {
				ps = append(ps, p)
			}
		}
	}
	if len(ps) == 0 {
		return c, nil
	}
	for i := range ps {
		if ps[i].Source == "" && ps[i].Key != "" {
			ps[i].Source = o.of(ps[i].Key)
		}
	}
	return nil, fmt.Errorf("config %s: %w", path, ps)
}

// aboutStandIn reports whether Validate's problem p judges the stand-in
// that replaced the value of the already reported problem q: a value of the
// same key, the whole list when q is one of its items (its length or items
// are partly made up), an item of a list q replaced whole, or another key
// whose reason quotes q's key (k_batches times batch_size). Such a problem
// would be made up, not found in what the user wrote.
func aboutStandIn(p, q Problem) bool {
	if q.Key == "" {
		return false
	}
	pb, qb := baseKey(p.Key), baseKey(q.Key)
	switch {
	case p.Key == q.Key:
		return true
	case pb == qb && (p.Key == pb || q.Key == qb):
		return true
	}
	return mentionsKey(p.Reason, qb)
}

// mentionsKey reports whether text names key as a whole word
// (pretrain.batch_size, not pretrain.batch_size_max).
func mentionsKey(text, key string) bool {
	word := func(b byte) bool {
		return b == '_' || b == '.' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], key)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(key)
		if (j == 0 || !word(text[j-1])) && (end == len(text) || !word(text[end])) {
			return true
		}
		i = j + 1
	}
}

// Default returns the configuration of a file that names nothing, before
// validation (it names no data, say): every key at its default.
func Default() *Config {
	v := viper.New()
	defaults := Defaults()
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	c, _ := decode(v, defaults)
	return c
}

// decode decodes v into a Config. Unknown keys are problems, and so is
// what else mapstructure refuses (checkValues leaves little); a key it
// refuses gets its default and decoding is tried once more. c is nil when
// that fails too.
func decode(v *viper.Viper, defaults map[string]any) (c *Config, ps Problems) {
	for try := 0; ; try++ {
		c = &Config{}
		err := v.UnmarshalExact(c)
		if err == nil {
			return c, ps
		}
		unknown, other := decodeProblems(err, func(k string) any { return valueAt(v, k) })
		if try > 0 {
			if len(other) == 0 {
				return c, ps
			}
			for _, p := range other {
				if !slices.ContainsFunc(ps, func(q Problem) bool { return q.Key == p.Key && q.Reason == p.Reason }) {
					ps = append(ps, p)
				}
			}
			return nil, ps
		}
		ps = append(ps, unknown...)
		ps = append(ps, other...)
		if len(other) == 0 {
			// ErrorUnused reports unknown keys once every field is decoded.
			return c, ps
		}
		for _, p := range other {
			k := baseKey(p.Key)
			if _, ok := defaults[k]; !ok {
				return nil, ps
			}
			v.Set(k, defaults[k])
		}
	}
}

// origins says where the value of a key came from.
type origins struct {
	// sets are the keys of --set overrides, in order, each with the keys
	// its value sets: itself, or for a section every key its map names.
	sets []override
	// inFile reports whether the config file sets a key.
	inFile func(key string) bool
	// env looks up an environment variable.
	env func(name string) (string, bool)
}

type override struct {
	key  string
	sets []string
}

// set records the override --set key=val.
func (o *origins) set(key string, val any) {
	var leaves []string
	var walk func(k string, v any)
	walk = func(k string, v any) {
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 {
			leaves = append(leaves, k)
			return
		}
		for sub, sv := range m {
			walk(k+"."+strings.ToLower(sub), sv)
		}
	}
	walk(key, val)
	o.sets = append(o.sets, override{key, leaves})
}

// of returns where the value of key (dbn.layers[1] is dbn.layers's) came
// from: "--set K", "env PIPEDBN_K", "" for the config file, or "default".
// Later overrides win, as in viper: --set, then the environment, then the
// file.
func (o *origins) of(key string) string {
	key = baseKey(key)
	for i := len(o.sets) - 1; i >= 0; i-- {
		for _, k := range o.sets[i].sets {
			if k == key || strings.HasPrefix(key, k+".") {
				return "--set " + o.sets[i].key
			}
		}
	}
	if _, leaf := Defaults()[key]; leaf {
		if _, ok := o.env(EnvVar(key)); ok {
			return "env " + EnvVar(key)
		}
	}
	if o.inFile(key) {
		return ""
	}
	if knownKey(key) {
		return "default"
	}
	return ""
}

// baseKey drops the index of a list item and what follows it:
// dbn.layers[1] is an item of dbn.layers, sweep.vary[0].key of sweep.vary.
func baseKey(key string) string {
	if i := strings.IndexByte(key, '['); i >= 0 {
		return key[:i]
	}
	return key
}

// Keys lists every config key, sorted.
func Keys() []string {
	var ks []string
	for k := range Defaults() {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// knownKey reports whether key is a config key or a section holding some
// (pretrain.learning_rate, say).
func knownKey(key string) bool {
	for k := range Defaults() {
		if k == key || strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

var (
	invalidKeys = regexp.MustCompile(`(?s)^'([^']*)' has invalid keys: (.*)$`)
	keyReason   = regexp.MustCompile(`(?s)^'([^']+)' (.*)$`)
)

// decodeProblems turns mapstructure's multi-line report into problems:
// the unknown keys it names, and every other error.
func decodeProblems(err error, get func(string) any) (unknown, other Problems) {
	// One error per line, each starting with its quoted key; a key may
	// hold a line break, which continues the line.
	var entries []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "* ")
		if len(entries) == 0 || strings.HasPrefix(l, "'") {
			entries = append(entries, l)
		} else {
			entries[len(entries)-1] += "\n" + l
		}
	}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch m := invalidKeys.FindStringSubmatch(e); {
		case strings.HasPrefix(e, "decoding failed") || strings.HasSuffix(e, "error(s) decoding:"):
		case m != nil:
			for _, k := range strings.Split(m[2], ", ") {
				if m[1] != "" {
					k = m[1] + "." + k
				}
				unknown = append(unknown, Problem{Key: k, Value: get(k), Reason: unknownKeyReason(k)})
			}
		default:
			if m := keyReason.FindStringSubmatch(e); m != nil {
				other = append(other, Problem{Key: m[1], Value: get(m[1]), Reason: m[2]})
			} else {
				other = append(other, Problem{Reason: e})
			}
		}
	}
	return unknown, other
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
