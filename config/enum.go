package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/viper"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

// Mode is how the RBMs are pre-trained (pretrain.mode).
type Mode int

const (
	// Greedy trains RBM_1 to the end, then RBM_2 on its hidden
	// activations, and so on: the paper's Algorithm 1.
	Greedy Mode = iota
	// Pipelined trains all RBMs at once, RBM_i on the middle results that
	// RBM_{i-1} streams every K mini-batches: the paper's Algorithm 2.
	Pipelined
)

var modeNames = []string{Greedy: "greedy", Pipelined: "pipelined"}

// String returns the YAML spelling: greedy or pipelined.
func (m Mode) String() string { return enumString(m, modeNames, "Mode") }

// MarshalText returns the YAML spelling, so that JSON (result.json, the
// config as sweeps and resumed runs record it) spells a mode as YAML does.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads the YAML spelling.
func (m *Mode) UnmarshalText(b []byte) error { return enumParse(m, b, modeNames, "mode") }

// Transport is how the stages of a pipelined run talk (cluster.transport).
type Transport int

const (
	// NATS runs the stages in slave processes that talk over a NATS
	// server: cluster.nats_url, or one embedded in the master.
	NATS Transport = iota
	// Memory runs every stage inside the master, talking over channels.
	Memory
)

var transportNames = []string{NATS: "nats", Memory: "memory"}

// String returns the YAML spelling: nats or memory.
func (t Transport) String() string { return enumString(t, transportNames, "Transport") }

// MarshalText returns the YAML spelling.
func (t Transport) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads the YAML spelling.
func (t *Transport) UnmarshalText(b []byte) error {
	return enumParse(t, b, transportNames, "transport")
}

// LCopy is when RBM_i+1's L_i-copy, its visible layer, takes the hidden
// biases B_i that a window of RBM_i's middle results carries
// (pretrain.l_copy).
type LCopy int

const (
	// EveryWindow is the paper's rule: the L_i-copy's biases are B_i of
	// every window; RBM_i+1's own updates to them last until the next.
	EveryWindow LCopy = iota
	// FirstWindow takes B_i of the first window only: RBM_i+1 then learns
	// its visible biases on, as greedy's RBM_i+1 does.
	FirstWindow
)

var lcopyNames = []string{EveryWindow: "every_window", FirstWindow: "first_window"}

// String returns the YAML spelling: every_window or first_window.
func (l LCopy) String() string { return enumString(l, lcopyNames, "LCopy") }

// MarshalText returns the YAML spelling.
func (l LCopy) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads the YAML spelling.
func (l *LCopy) UnmarshalText(b []byte) error { return enumParse(l, b, lcopyNames, "l_copy") }

// Replicate is which stage groups cluster.plan = auto may give stage
// replicas (cluster.replicate).
type Replicate int

const (
	// ReplicateTop replicates the top RBM alone, in a group of its own,
	// so that no replicated RBM's middle results feed another RBM.
	ReplicateTop Replicate = iota
	// ReplicateAny lets any group have replicas: the fastest plans, the
	// default.
	ReplicateAny
)

var replicateNames = []string{ReplicateTop: "top", ReplicateAny: "any"}

// String returns the YAML spelling: top or any.
func (r Replicate) String() string { return enumString(r, replicateNames, "Replicate") }

// MarshalText returns the YAML spelling.
func (r Replicate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads the YAML spelling.
func (r *Replicate) UnmarshalText(b []byte) error {
	return enumParse(r, b, replicateNames, "replicate")
}

// Source is where the examples come from (data.source).
type Source int

const (
	// FashionMNIST is the Fashion-MNIST IDX files in data.dir.
	FashionMNIST Source = iota
	// IDX is any pair of MNIST-style IDX training and test sets in data.dir.
	IDX
	// Synthetic is a generated set (see Data.SyntheticSizes).
	Synthetic
	// NPZ, NPY and CSV are a data set of one's own (see userdata.go).
	NPZ
	NPY
	CSV
)

var sourceNames = []string{FashionMNIST: "fashion-mnist", IDX: "idx", Synthetic: "synthetic", NPZ: "npz", NPY: "npy", CSV: "csv"}

// String returns the YAML spelling: fashion-mnist, idx, synthetic, npz,
// npy or csv.
func (s Source) String() string { return enumString(s, sourceNames, "Source") }

// MarshalText returns the YAML spelling.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the YAML spelling.
func (s *Source) UnmarshalText(b []byte) error { return enumParse(s, b, sourceNames, "source") }

func enumString[E ~int](e E, names []string, typ string) string {
	if e >= 0 && int(e) < len(names) {
		return names[e]
	}
	return fmt.Sprintf("%s(%d)", typ, int(e))
}

func enumParse[E ~int](dst *E, text []byte, names []string, what string) error {
	i := slices.Index(names, string(text))
	if i < 0 {
		return fmt.Errorf("config: unknown %s %q (want %s)", what, text, strings.Join(names, " or "))
	}
	*dst = E(i)
	return nil
}

// enum is a key whose value names a value of a typed enum.
type enum struct {
	key string
	// values lists every value the key takes, each spelled by its String.
	values []fmt.Stringer
	// fallback stands in for a value that names none, so that decoding
	// and Validate go on to report every other problem. It must make no
	// other key matter: a bad data.source is synthetic, not fashion-mnist,
	// whose data.dir would then be checked.
	fallback fmt.Stringer
	// get is the key's value in a decoded Config.
	get func(c *Config) fmt.Stringer
}

// enums are the keys of typed enums.
var enums = []enum{
	{"data.source", []fmt.Stringer{FashionMNIST, IDX, Synthetic, NPZ, NPY, CSV}, Synthetic,
		func(c *Config) fmt.Stringer { return c.Data.Source }},
	{"data.scale", []fmt.Stringer{data.ScaleNone, data.ScaleUnit, data.ScaleStandardize}, data.ScaleNone,
		func(c *Config) fmt.Stringer { return c.Data.Scale }},
	{"dbn.visible", []fmt.Stringer{rbm.Bernoulli, rbm.Gaussian}, rbm.Bernoulli,
		func(c *Config) fmt.Stringer { return c.DBN.Visible }},
	{"pretrain.mode", []fmt.Stringer{Greedy, Pipelined}, Pipelined,
		func(c *Config) fmt.Stringer { return c.Pretrain.Mode }},
	{"pretrain.middle", []fmt.Stringer{rbm.Probabilities, rbm.Samples}, rbm.Probabilities,
		func(c *Config) fmt.Stringer { return c.Pretrain.Middle }},
	{"pretrain.middle_precision", []fmt.Stringer{pipeline.Float32, pipeline.Float16, pipeline.Uint8}, pipeline.Float32,
		func(c *Config) fmt.Stringer { return c.Pretrain.MiddlePrecision }},
	{"pretrain.l_copy", []fmt.Stringer{EveryWindow, FirstWindow}, EveryWindow,
		func(c *Config) fmt.Stringer { return c.Pretrain.LCopy }},
	{"pretrain.settle.schedule", []fmt.Stringer{pipeline.SettleAfter, pipeline.SettleInEpochs}, pipeline.SettleInEpochs,
		func(c *Config) fmt.Stringer { return c.Pretrain.Settle.Schedule }},
	{"cluster.transport", []fmt.Stringer{NATS, Memory}, NATS,
		func(c *Config) fmt.Stringer { return c.Cluster.Transport }},
	{"cluster.replicate", []fmt.Stringer{ReplicateTop, ReplicateAny}, ReplicateTop,
		func(c *Config) fmt.Stringer { return c.Cluster.Replicate }},
}

// names lists the spellings of the enum's values: "greedy, pipelined".
func (e enum) names() string {
	s := make([]string, len(e.values))
	for i, v := range e.values {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// check reports a Problem unless c's value of the key is one of its values.
func (e enum) check(c *Config) *Problem {
	if v := e.get(c); !slices.Contains(e.values, v) {
		return &Problem{Key: e.key, Value: v.String(), Reason: "must be one of " + e.names()}
	}
	return nil
}

// decodeEnums replaces the value of every enum key in v by the typed value
// it spells, which UnmarshalExact then assigns as it is, and returns a
// Problem for each value that spells none. A key whose section is not a
// map has no value here; checkValues reports that section.
func decodeEnums(v *viper.Viper) Problems {
	var ps Problems
	for _, e := range enums {
		raw := v.Get(e.key)
		if raw == nil {
			continue
		}
		var text string
		switch x := raw.(type) {
		case string:
			text = x
		case fmt.Stringer: // a default
			text = x.String()
		case bool, int, int64, uint64, float64:
			text = fmt.Sprint(x)
		}
		i := slices.IndexFunc(e.values, func(s fmt.Stringer) bool { return s.String() == text })
		if i < 0 {
			shown := raw
			if _, ok := raw.(string); !ok && strings.ContainsAny(fmt.Sprint(raw), "\n\r") {
				shown = strconv.Quote(fmt.Sprint(raw)) // one line
			}
			ps = append(ps, Problem{Key: e.key, Value: shown, Reason: "must be one of " + e.names()})
			v.Set(e.key, e.fallback)
			continue
		}
		v.Set(e.key, e.values[i])
	}
	return ps
}
