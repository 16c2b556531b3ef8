package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
)

// SweepRun is one run of a sweep: one combination of the swept values, one
// repeat.
type SweepRun struct {
	// Index is the run's place in the sweep, 1-based.
	Index int
	// Name is the run's folder under the sweep's folder, made of its
	// key=value pairs and its repeat: layers=784-500-500_mode=greedy_r1.
	Name string
	// Values holds the run's value of each swept key (SweepPlan.Keys) as
	// YAML flow ([784, 500], 0.45, greedy), or "" where the run ignores the
	// key (a greedy run ignores cluster.colocate, say).
	Values []string
	// Repeat counts from 1 to sweep.repeats.
	Repeat int
	// Sets are the --set key=value overrides that make the run from the
	// sweep's config file: one per swept key the run does not ignore.
	Sets []string
	// Config is the run's configuration: the sweep's file with Sets applied.
	Config *config.Config
}

// SweepPlan is a sweep expanded into its runs.
type SweepPlan struct {
	// File is the sweep's config file, Name the sweep's name.
	File, Name string
	// Dir holds the runs' folders, sweep.csv, report.md and the plots.
	Dir string
	// Keys are the swept keys, in the order of sweep.vary.
	Keys []string
	// Repeats of every combination.
	Repeats int
	// Runs in the order they run: all combinations for repeat 1 (the first
	// key varying slowest), then for repeat 2, and so on, so that a sweep
	// stopped early has whole repeats.
	Runs []SweepRun
	// Merged counts the combinations that are the same run as an earlier one
	// because the run ignores the only keys they differ in (greedy x
	// cluster.colocate: one greedy run, not two).
	Merged int
}

// sweepForbidden are keys a sweep sets itself.
var sweepForbidden = map[string]string{
	"name":       "every run of a sweep keeps the sweep's name; its folder tells it apart",
	"output":     "a sweep gives every run its own folder; set output.dir (or --out) for the whole sweep",
	"output.dir": "a sweep gives every run its own folder; set output.dir (or --out) for the whole sweep",
}

// PlanSweep expands the sweep section of cfg (loaded from cfg.File) into its
// runs, writing under dir. It loads and validates the config of every
// combination, and checks that its run fits this machine (dbn.CheckLimits),
// so that bad sweep input stops the sweep before any run starts, with one
// line naming the file, the key and the value.
func PlanSweep(cfg *config.Config, dir string) (*SweepPlan, error) {
	plan := &SweepPlan{File: cfg.File, Name: cfg.Name, Dir: dir, Repeats: cfg.Sweep.Repeats}
	if plan.Repeats < 1 {
		plan.Repeats = 1
	}
	axes := cfg.Sweep.Vary
	if err := plan.setKeys(axes); err != nil {
		return nil, err
	}
	short := shortKeys(plan.Keys)
	var combos []sweepCombo
	seen := map[string]bool{}  // applicable sets already planned
	names := map[string]bool{} // folder names taken
	// Every combination, the first axis varying slowest.
	idx := make([]int, len(axes))
	for {
		sets, err := plan.comboSets(axes, idx)
		if err != nil {
			return nil, err
		}
		cb, id, err := plan.combo(sets, short)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			plan.Merged++
		} else {
			seen[id] = true
			if err := plan.check(&cb, len(sets)); err != nil {
				return nil, err
			}
			cb.name = uniqueName(names, cb.name, id)
			combos = append(combos, cb)
		}
		if !nextCombo(idx, axes) {
			break
		}
	}
	for r := 1; r <= plan.Repeats; r++ {
		for _, cb := range combos {
			name := fmt.Sprintf("r%d", r)
			if cb.name != "" {
				name = cb.name + "_" + name
			}
			plan.Runs = append(plan.Runs, SweepRun{
				Index: len(plan.Runs) + 1, Name: name, Values: cb.values, Repeat: r, Sets: cb.sets, Config: cb.cfg,
			})
		}
	}
	return plan, nil
}

// setKeys sets plan.Keys to the keys of axes, lower case: none that a sweep
// sets itself, none varied twice (or inside another), each with values.
func (plan *SweepPlan) setKeys(axes []config.Axis) error {
	file := plan.File
	for i, a := range axes {
		key := strings.ToLower(strings.TrimSpace(a.Key))
		if why, ok := sweepForbidden[key]; ok {
			return fmt.Errorf("config %s: sweep.vary[%d].key = %q: %s", file, i, a.Key, why)
		}
		for j, prev := range plan.Keys {
			if key == prev || strings.HasPrefix(key, prev+".") || strings.HasPrefix(prev, key+".") {
				return fmt.Errorf("config %s: sweep.vary[%d].key = %q: already varied by sweep.vary[%d] (%s)", file, i, a.Key, j, prev)
			}
		}
		if len(a.Values) == 0 {
			return fmt.Errorf("config %s: sweep.vary[%d].values: must list at least one value of %s", file, i, key)
		}
		plan.Keys = append(plan.Keys, key)
	}
	return nil
}

// sweepCombo is one combination of the swept values, as it runs.
type sweepCombo struct {
	values []string // rendered, "" where ignored
	sets   []string
	name   string // folder name without the repeat
	cfg    *config.Config
}

// comboSets is the combination idx of axes (value idx[i] of axis i) as
// key=value settings, one per axis.
func (plan *SweepPlan) comboSets(axes []config.Axis, idx []int) ([]string, error) {
	var sets []string
	for i, a := range axes {
		v, err := flowYAML(a.Values[idx[i]])
		if err != nil {
			return nil, fmt.Errorf("config %s: sweep.vary[%d].values[%d] of %s: %v", plan.File, i, idx[i], plan.Keys[i], err)
		}
		sets = append(sets, plan.Keys[i]+"="+v)
	}
	return sets, nil
}

// combo loads the config of the settings sets, one per swept key, and
// returns the combination's run: only the settings the run reads, its
// folder name from them (short: the keys' short names, before
// uniqueName), and its identity, equal for combinations that differ only
// in keys the run ignores.
func (plan *SweepPlan) combo(sets []string, short []string) (sweepCombo, string, error) {
	file := plan.File
	c, err := config.Load(file, sets)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "config "+file+": ")
		return sweepCombo{}, "", fmt.Errorf("config %s: sweep run %s: %s", file, strings.Join(sets, " "), msg)
	}
	ignored := c.Unread()
	cb := sweepCombo{cfg: c, values: make([]string, len(sets))}
	var parts []string
	for i, key := range plan.Keys {
		if ignoredBy(ignored, key) {
			continue
		}
		_, v, _ := strings.Cut(sets[i], "=")
		cb.values[i] = v
		cb.sets = append(cb.sets, sets[i])
		parts = append(parts, short[i]+"="+slug(v))
	}
	cb.name = strings.Join(parts, "_")
	return cb, strings.Join(cb.sets, "\x00"), nil
}

// check makes cb's config the one its run's process will load, from the
// settings it reads alone, if it ignores some of the all it was given, and
// checks that the run fits this machine (dbn.CheckLimits): a run that
// cannot stops the sweep before any run starts.
func (plan *SweepPlan) check(cb *sweepCombo, all int) error {
	file := plan.File
	var err error
	if len(cb.sets) < all {
		if cb.cfg, err = config.Load(file, cb.sets); err != nil {
			return fmt.Errorf("config %s: sweep run %s: %s", file, strings.Join(cb.sets, " "),
				strings.TrimPrefix(err.Error(), "config "+file+": "))
		}
	}
	if err := dbn.CheckLimits(cb.cfg, nil); err != nil {
		return fmt.Errorf("config %s: sweep run %s: %s", file, strings.Join(cb.sets, " "),
			strings.TrimPrefix(err.Error(), "config "+file+": "))
	}
	return nil
}

// nextCombo advances idx to the next combination of axes, the last axis
// varying fastest, and reports whether there is one.
func nextCombo(idx []int, axes []config.Axis) bool {
	for k := len(axes) - 1; k >= 0; k-- {
		idx[k]++
		if idx[k] < len(axes[k].Values) {
			return true
		}
		idx[k] = 0
	}
	return false
}

// ignoredBy reports whether key is one of ignored or inside one of them.
func ignoredBy(ignored []string, key string) bool {
	for _, k := range ignored {
		if key == k || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return false
}

// shortKeys names each key by its last segment (dbn.layers: layers) unless
// two keys share it, in which case both keep their full name.
func shortKeys(keys []string) []string {
	last := func(k string) string { return k[strings.LastIndex(k, ".")+1:] }
	count := map[string]int{}
	for _, k := range keys {
		count[last(k)]++
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k
		if count[last(k)] == 1 {
			out[i] = last(k)
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._+-]+`)

// slug makes a value part of a folder name: [784, 500] becomes 784-500.
func slug(v string) string {
	v = strings.NewReplacer("[", "", "]", "", "{", "", "}", "", `"`, "", "'", "", " ", "").Replace(v)
	v = strings.NewReplacer(",", "-", ":", "-").Replace(v)
	v = unsafeName.ReplaceAllString(v, "_")
	if v == "" {
		v = "_"
	}
	return v
}

// maxName bounds a run's folder name (without its repeat suffix).
const maxName = 100

// uniqueName returns name, shortened with a hash of id if long, and made
// distinct from the names already taken.
func uniqueName(taken map[string]bool, name, id string) string {
	sum := sha256.Sum256([]byte(id))
	if len(name) > maxName {
		name = name[:maxName-9] + "-" + hex.EncodeToString(sum[:4])
	}
	base := name
	for n := 2; taken[name]; n++ {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	taken[name] = true
	return name
}

// flowYAML renders a config value as YAML flow, the form --set reads back
// to the same value: 784, 0.45, true, greedy, [784, 500], {initial: 0.1}.
// A string that would read back as something else ("true", "1") is quoted.
func flowYAML(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return `""`, nil
	case string:
		var back any
		if err := yaml.Unmarshal([]byte(x), &back); err == nil {
			if s, ok := back.(string); ok && s == x && !strings.ContainsAny(x, "\n#") {
				return x, nil
			}
		}
		b, _ := json.Marshal(x)
		return string(b), nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float32:
		return flowYAML(float64(x))
	case float64:
		switch {
		case math.IsNaN(x):
			return ".nan", nil
		case math.IsInf(x, 1):
			return ".inf", nil
		case math.IsInf(x, -1):
			return "-.inf", nil
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := flowYAML(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case []int:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = strconv.Itoa(e)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			s, err := flowYAML(x[k])
			if err != nil {
				return "", err
			}
			parts[i] = k + ": " + s
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = e
		}
		return flowYAML(m)
	}
	return "", fmt.Errorf("cannot use a value of type %T", v)
}

// runDir is the folder of run r.
func (p *SweepPlan) runDir(r *SweepRun) string { return filepath.Join(p.Dir, r.Name) }
