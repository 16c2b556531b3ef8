package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
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
// names the file and, where there is one, the key and value at fault.
func Load(path string, sets []string) (*Config, error) {
	v := viper.New()
	for k, val := range Defaults() {
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
	for _, s := range sets {
		key, raw, ok := strings.Cut(s, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok || key == "" {
			return nil, fmt.Errorf("config %s: --set %q: want key=value", path, s)
		}
		if !knownKey(key) {
			return nil, fmt.Errorf("config %s: --set %s: unknown key (known: %s)", path, noBreaks(key), strings.Join(Keys(), ", "))
		}
		var val any
		if err := yaml.Unmarshal([]byte(raw), &val); err != nil {
			return nil, fmt.Errorf("config %s: --set %s=%s: value is not valid YAML: %s", path, key, noBreaks(raw), oneLine(err.Error()))
		}
		if val == nil {
			val = ""
		}
		v.Set(key, val)
	}
	// Enum values that spell nothing are reported with every other
	// problem, not as a decoding error that would hide the rest.
	ps := decodeEnums(v)
	c := &Config{}
	if err := v.UnmarshalExact(c); err != nil {
		msg := decodeMessage(err, v.Get)
		if len(ps) > 0 {
			msg = ps.Error() + "; " + msg
		}
		return nil, fmt.Errorf("config %s: %s", path, msg)
	}
	c.File = path
	if c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	var more Problems
	if err := c.Validate(); err != nil && !errors.As(err, &more) {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if ps = append(ps, more...); len(ps) > 0 {
		return nil, fmt.Errorf("config %s: %w", path, ps)
	}
	return c, nil
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
	invalidKeys = regexp.MustCompile(`'([^']*)' has invalid keys: ([^\n]*)`)
	keyReason   = regexp.MustCompile(`^'([^']+)' (.*)$`)
)

// decodeMessage turns mapstructure's multi-line report into one line that
// names the offending keys.
func decodeMessage(err error, get func(string) any) string {
	msg := err.Error()
	if m := invalidKeys.FindAllStringSubmatch(msg, -1); m != nil {
		var keys []string
		for _, g := range m {
			for _, k := range strings.Split(g[2], ", ") {
				if g[1] != "" {
					k = g[1] + "." + k
				}
				keys = append(keys, noBreaks(k))
			}
		}
		return "unknown key " + strings.Join(keys, ", ")
	}
	var lines []string
	for _, l := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "*"))
		if l == "" || strings.HasPrefix(l, "decoding failed") || strings.HasSuffix(l, "error(s) decoding:") {
			continue
		}
		if m := keyReason.FindStringSubmatch(l); m != nil {
			// A map or list value may hold strings with line breaks.
			l = fmt.Sprintf("%s = %s: %s", m[1], noBreaks(fmt.Sprint(format(get(m[1])))), m[2])
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "; ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// noBreaks quotes s if it holds a line break, so that an error stays one line.
func noBreaks(s string) string {
	if strings.ContainsAny(s, "\n\r") {
		return strconv.Quote(s)
	}
	return s
}
