package config

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// kind is what a key's value must be, checked before decoding: mapstructure
// would truncate 1.7 to the integer 1, read true as 1, and report a bad
// list item as <nil>.
type kind int

const (
	kindOther    kind = iota // left to decoding
	kindString               // any scalar, as mapstructure converts it
	kindInt                  // an integer: no fraction, within int
	kindUint                 // an integer >= 0
	kindFloat                // a number (Validate checks it is finite)
	kindBool                 // true or false
	kindDuration             // a string like 60s, or 0
	kindInts                 // a list of integers
	kindFloats               // a list of numbers
	kindEnum                 // a typed enum: see decodeEnums
	kindMaps                 // a list of maps (sweep.vary), decoded into structs
)

// keyKinds maps every config key to its kind, read from the type of its
// Config field.
func keyKinds() map[string]kind {
	kinds := map[string]kind{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("mapstructure")
			if tag == "" || tag == "-" {
				continue
			}
			key := tag
			if prefix != "" {
				key = prefix + "." + tag
			}
			ft := f.Type
			switch {
			case slices.ContainsFunc(enums, func(e enum) bool { return e.key == key }):
				kinds[key] = kindEnum
			case ft == reflect.TypeFor[time.Duration]():
				kinds[key] = kindDuration
			case ft.Kind() == reflect.Struct:
				walk(key, ft)
			case ft.Kind() == reflect.String:
				kinds[key] = kindString
			case ft.Kind() == reflect.Int:
				kinds[key] = kindInt
			case ft.Kind() == reflect.Uint64:
				kinds[key] = kindUint
			case ft.Kind() == reflect.Float64:
				kinds[key] = kindFloat
			case ft.Kind() == reflect.Bool:
				kinds[key] = kindBool
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Int:
				kinds[key] = kindInts
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Float64:
				kinds[key] = kindFloats
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				kinds[key] = kindMaps
			default:
				kinds[key] = kindOther
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	return kinds
}

// sections lists the keys that hold other keys (pretrain,
// pretrain.learning_rate), outermost first.
func sections() []string {
	var ss []string
	for _, k := range Keys() {
		for i, r := range k {
			if r == '.' && !slices.Contains(ss, k[:i]) {
				ss = append(ss, k[:i])
			}
		}
	}
	slices.SortStableFunc(ss, func(a, b string) int { return strings.Count(a, ".") - strings.Count(b, ".") })
	return ss
}

// checkValues checks that every key of v holds a value of its kind and
// returns a Problem for each that does not, naming the value as found (a
// list item by its index). It replaces a bad value by a stand-in, so that
// decoding and Validate go on to report every other problem: the default,
// or 1 for a bad item of a list of integers (its length matters to other
// keys). Good values are replaced by their decoded form (an environment
// variable's "32" by 32), so that decoding takes them as they are.
func checkValues(v *viper.Viper, defaults map[string]any) Problems {
	keys := Keys()
	ps := checkSections(v, defaults, keys)
	kinds := keyKinds()
	for _, k := range keys {
		ps = append(ps, checkValue(v, k, kinds[k], defaults[k])...)
	}
	return append(ps, decodeEnums(v)...)
}

// checkSections returns a Problem for each section of v given a scalar or
// a list, which hides every key below it, and sets those keys to the
// values viper still finds for them, or their defaults. A section below a
// bad one is not reported again.
func checkSections(v *viper.Viper, defaults map[string]any, keys []string) Problems {
	var ps Problems
	var bad []string
	for _, s := range sections() {
		if slices.ContainsFunc(bad, func(b string) bool { return strings.HasPrefix(s, b+".") }) {
			continue
		}
		val := v.Get(s)
		if _, ok := val.(map[string]any); ok || val == nil {
			continue
		}
		if env, ok := os.LookupEnv(EnvVar(s)); ok && val == any(env) {
			continue // viper reads it for Get only; unknownEnv reports it
		}
		ps = append(ps, Problem{Key: s, Value: val, Reason: "must be a map of the keys " + s + ".*"})
		bad = append(bad, s)
		for _, k := range keys {
			if strings.HasPrefix(k, s+".") {
				cur := v.Get(k)
				if cur == nil {
					cur = defaults[k]
				}
				v.Set(k, cur)
			}
		}
	}
	return ps
}

// checkValue checks the value of key k, of kind kd: it sets a good value
// to its decoded form, and a missing or bad one to def, the key's default,
// returning the problems found (one for the value, or one per bad item of
// a list).
func checkValue(v *viper.Viper, k string, kd kind, def any) Problems {
	val := v.Get(k)
	if val == nil {
		v.Set(k, def)
		return nil
	}
	if kd == kindMaps {
		return checkMaps(v, k, val, def)
	}
	decoded, items, reason := decodeValue(k, kd, val)
	if reason != "" {
		v.Set(k, def)
		return Problems{{Key: k, Value: val, Reason: reason}}
	}
	if decoded != nil {
		v.Set(k, decoded)
	}
	return items
}

// decodeValue converts val, the value of key k, to kind kd. It returns the
// decoded value (nil: keep val as it is) and the problems of a list's bad
// items, each replaced by 1 in the list; or, if val is no value of the
// kind at all, the reason.
func decodeValue(k string, kd kind, val any) (decoded any, items Problems, reason string) {
	switch kd {
	case kindInt:
		if n, ok := toInt(val); ok {
			return n, nil, ""
		}
		return nil, nil, "must be an integer"
	case kindUint:
		if n, ok := toUint(val); ok {
			return n, nil, ""
		}
		return nil, nil, "must be an integer >= 0"
	case kindFloat:
		if f, ok := toFloat(val); ok {
			return f, nil, ""
		}
		return nil, nil, "must be a number"
	case kindBool:
		if b, ok := toBool(val); ok {
			return b, nil, ""
		}
		return nil, nil, "must be true or false"
	case kindString:
		if rk := reflect.ValueOf(val).Kind(); rk == reflect.Map || rk == reflect.Slice {
			return nil, nil, "must be a string"
		}
	case kindDuration:
		if d, ok := toDuration(val); ok {
			return d, nil, ""
		}
		return nil, nil, "must be a duration, like 60s"
	case kindInts:
		if ns, bad, ok := listOf(k, val, toInt, 1, "an integer"); ok {
			return ns, bad, ""
		}
		return nil, nil, "must be a list of integers"
	case kindFloats:
		if fs, bad, ok := listOf(k, val, toFloat, 1, "a number"); ok {
			return fs, bad, ""
		}
		return nil, nil, "must be a list of numbers"
	}
	return nil, nil, ""
}

// checkMaps checks val, the value of key k, a list of maps: a value that
// is no list is set to def; so is a list with an item that is no map, one
// problem per such item. A list of another type than []any is left to
// decoding.
func checkMaps(v *viper.Viper, k string, val, def any) Problems {
	items, ok := val.([]any)
	if !ok {
		if reflect.ValueOf(val).Kind() != reflect.Slice {
			v.Set(k, def)
			return Problems{{Key: k, Value: val, Reason: "must be a list of maps"}}
		}
		return nil
	}
	var ps Problems
	for i, it := range items {
		if _, ok := it.(map[string]any); !ok {
			ps = append(ps, Problem{Key: fmt.Sprintf("%s[%d]", k, i), Value: it, Reason: "must be a map"})
			v.Set(k, def)
		}
	}
	return ps
}

// listOf returns the list val holds, each item converted by to, with a
// problem for each item it refuses (key[i], which gets stand-in), and false
// when val is no list at all.
func listOf[T any](key string, val any, to func(any) (T, bool), standIn T, what string) ([]T, Problems, bool) {
	items, ok := toList(val)
	if !ok {
		return nil, nil, false
	}
	var ps Problems
	out := make([]T, len(items))
	for i, it := range items {
		x, ok := to(it)
		if !ok {
			ps = append(ps, Problem{Key: fmt.Sprintf("%s[%d]", key, i), Value: it, Reason: "must be " + what})
			x = standIn
		}
		out[i] = x
	}
	return out, ps, true
}

// toInt returns the integer val holds: an integer, a float without a
// fraction (2.0) or a string spelling either (an environment variable's).
func toInt(val any) (int, bool) {
	rv := reflect.ValueOf(val)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := rv.Int(); n >= math.MinInt && n <= math.MaxInt {
			return int(n), true
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n := rv.Uint(); n <= math.MaxInt {
			return int(n), true
		}
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		// -float64(math.MinInt) is 2^63, the first float above MaxInt64.
		if f == math.Trunc(f) && f >= math.MinInt && f < -float64(math.MinInt) {
			return int(f), true
		}
	case reflect.String:
		s := strings.TrimSpace(rv.String())
		if n, err := strconv.ParseInt(s, 0, 0); err == nil {
			return int(n), true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return toInt(f)
		}
	}
	return 0, false
}

// toUint is toInt for integers >= 0 up to MaxUint64.
func toUint(val any) (uint64, bool) {
	rv := reflect.ValueOf(val)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := rv.Int(); n >= 0 {
			return uint64(n), true
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint(), true
	case reflect.Float32, reflect.Float64:
		if f := rv.Float(); f == math.Trunc(f) && f >= 0 && f < math.MaxUint64 {
			return uint64(f), true
		}
	case reflect.String:
		s := strings.TrimSpace(rv.String())
		if n, err := strconv.ParseUint(s, 0, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return toUint(f)
		}
	}
	return 0, false
}

// toFloat returns the number val holds or spells. NaN and infinities are
// numbers: Validate refuses them, naming the key's range.
func toFloat(val any) (float64, bool) {
	rv := reflect.ValueOf(val)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.String:
		if f, err := strconv.ParseFloat(strings.TrimSpace(rv.String()), 64); err == nil {
			return f, true
		}
	}
	return 0, false
}

func toBool(val any) (bool, bool) {
	switch x := val.(type) {
	case bool:
		return x, true
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			return b, true
		}
	}
	return false, false
}

// toDuration returns the duration val holds or spells. A bare number other
// than 0 is refused: mapstructure would read 60 as 60ns.
func toDuration(val any) (time.Duration, bool) {
	switch x := val.(type) {
	case time.Duration:
		return x, true
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(x))
		return d, err == nil
	}
	if f, ok := toFloat(val); ok && f == 0 {
		return 0, true
	}
	return 0, false
}

// toList returns the items of a list: a YAML list, or a string as an
// environment variable sets one: a YAML flow list ([784, 500]) or items
// separated by commas (784,500, as viper splits it).
func toList(val any) ([]any, bool) {
	switch x := val.(type) {
	case []any:
		return x, true
	case string:
		s := strings.TrimSpace(x)
		if strings.HasPrefix(s, "[") {
			var items []any
			if err := yaml.Unmarshal([]byte(s), &items); err != nil {
				return nil, false
			}
			return items, true
		}
		if s == "" {
			return []any{}, true
		}
		var items []any
		for _, it := range strings.Split(s, ",") {
			items = append(items, it)
		}
		return items, true
	}
	rv := reflect.ValueOf(val)
	if rv.Kind() != reflect.Slice {
		return nil, false
	}
	items := make([]any, rv.Len())
	for i := range items {
		items[i] = rv.Index(i).Interface()
	}
	return items, true
}

// valueAt returns the value of key in v, where key may name a list item
// or a key below one: dbn.layers[1], sweep.vary[0].key. It is nil where
// there is no such value.
func valueAt(v *viper.Viper, key string) any {
	base := baseKey(key)
	val := v.Get(base)
	rest := key[len(base):]
	for rest != "" && val != nil {
		switch rest[0] {
		case '[':
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				return nil
			}
			i, err := strconv.Atoi(rest[1:j])
			rv := reflect.ValueOf(val)
			if err != nil || rv.Kind() != reflect.Slice || i < 0 || i >= rv.Len() {
				return nil
			}
			val, rest = rv.Index(i).Interface(), rest[j+1:]
		case '.':
			name := rest[1:]
			if j := strings.IndexAny(name, ".["); j >= 0 {
				name = name[:j]
			}
			m, ok := val.(map[string]any)
			if !ok {
				return nil
			}
			val, rest = m[name], rest[1+len(name):]
		default:
			return nil
		}
	}
	return val
}

// otherEnv lists the PIPEDBN_* environment variables that are no config
// key's but are read elsewhere. Load refuses any other PIPEDBN_* variable
// that names no key, so that a misspelt one is not silently ignored: a new
// variable of this kind must be added here.
func otherEnv() []string {
	return []string{
		"PIPEDBN_NATS_CREDENTIALS", // a NATS credentials file (natsnet.CredentialsEnv)
		"PIPEDBN_SLAVE_NAME",       // the slave's --name
		"PIPEDBN_SLAVE_CPUPROFILE", // the slave's --cpuprofile
		// docker-compose.yml and the Makefile
		"PIPEDBN_BUILD_DIR", "PIPEDBN_CONFIG", "PIPEDBN_DATA", "PIPEDBN_GID", "PIPEDBN_NATS_PUBLISH",
		"PIPEDBN_RUNS", "PIPEDBN_SECRETS", "PIPEDBN_SLAVE_CPUS", "PIPEDBN_SLAVE_THREADS", "PIPEDBN_TAG",
		"PIPEDBN_UID",
		// deploy/stack.yml
		"PIPEDBN_SLAVES", "PIPEDBN_SLAVES_PER_NODE", "PIPEDBN_SLAVE_WINDOW_DELAY",
		// tests
		"PIPEDBN_CHAOS_RUNS", "PIPEDBN_FAKE_RUN", "PIPEDBN_FAULT_RUNS", "PIPEDBN_FAULT_SEED",
		"PIPEDBN_FAULT_TRACE", "PIPEDBN_PROTOCOL_BUGS", "PIPEDBN_TEST_LOGS",
		"PIPEDBN_SCREENSHOT", // TestChromiumShowsRun (monitor/) writes its screenshot there
	}
}

// unknownEnv returns a Problem for each PIPEDBN_* variable of environ
// (NAME=value entries) that names no key and is not one of otherEnv. It
// does not show the value, which may be a secret.
func unknownEnv(environ []string) Problems {
	vars := map[string]bool{}
	var candidates []string
	for _, k := range Keys() {
		vars[EnvVar(k)] = true
		candidates = append(candidates, EnvVar(k))
	}
	candidates = append(candidates, otherEnv()...)
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToUpper(name), EnvPrefix+"_") && !vars[name] && !slices.Contains(otherEnv(), name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var ps Problems
	for _, name := range names {
		upper := strings.ToUpper(name)
		reason := "names no config key" + suggest(upper, candidates, "_"+strings.TrimPrefix(upper, EnvPrefix+"_"))
		for _, s := range sections() {
			if EnvVar(s) == upper {
				i := slices.IndexFunc(Keys(), func(k string) bool { return strings.HasPrefix(k, s+".") })
				reason = fmt.Sprintf("names the section %s, not a key (like %s)", s, EnvVar(Keys()[i]))
			}
		}
		ps = append(ps, Problem{Source: "env " + name, Reason: reason})
	}
	return ps
}

// knownNames lists the keys and the sections that hold them.
func knownNames() []string { return append(Keys(), sections()...) }

// unknownKeyReason says that key is unknown, suggesting a known name.
func unknownKeyReason(key string) string {
	tail := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		tail = key[i+1:]
	}
	return "unknown key" + suggest(key, knownNames(), "."+tail)
}

// suggest returns " (did you mean A or B?)" naming the candidates nearest
// to name (at most 2 edits), or else those ending in tail (epochs for
// pretrain.epochs, _NATS_URL for PIPEDBN_CLUSTER_NATS_URL), or "".
func suggest(name string, candidates []string, tail string) string {
	if len(name) > 100 {
		return "" // not a typo
	}
	var best []string
	bestD := 2
	for _, c := range candidates {
		switch d := editDistance(name, c); {
		case d >= len(name) || d > bestD:
		case d < bestD:
			best, bestD = []string{c}, d
		default:
			best = append(best, c)
		}
	}
	if best == nil && len(tail) > 1 {
		for _, c := range candidates {
			if strings.HasSuffix(c, tail) {
				best = append(best, c)
			}
		}
	}
	if len(best) == 0 || len(best) > 3 {
		return ""
	}
	slices.Sort(best)
	return " (did you mean " + strings.Join(best, " or ") + "?)"
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
