package config

import (
	"fmt"
	"os"

	"github.com/pipedbn/pipedbn/data"
)

// userKeys are the data keys of one's own data set, each with the sources
// that read it.
var userKeys = []struct {
	key     string
	sources []Source
	get     func(d Data) any
	set     func(d Data) bool
}{
	{"data.path", []Source{NPZ}, func(d Data) any { return d.Path }, func(d Data) bool { return d.Path != "" }},
	{"data.train", []Source{NPY, CSV}, func(d Data) any { return d.Train }, func(d Data) bool { return d.Train != "" }},
	{"data.test", []Source{NPY, CSV}, func(d Data) any { return d.Test }, func(d Data) bool { return d.Test != "" }},
	{"data.train_labels", []Source{NPY}, func(d Data) any { return d.TrainLabels }, func(d Data) bool { return d.TrainLabels != "" }},
	{"data.test_labels", []Source{NPY}, func(d Data) any { return d.TestLabels }, func(d Data) bool { return d.TestLabels != "" }},
	{"data.header", []Source{CSV}, func(d Data) any { return d.Header }, func(d Data) bool { return d.Header }},
	{"data.label_column", []Source{CSV}, func(d Data) any { return d.LabelColumn }, func(d Data) bool { return d.LabelColumn != "" }},
}

// validateUser checks the keys of a data set of one's own: the files its
// source needs exist (and hold as many examples as the limits ask: read
// from the headers of NumPy files, counted in CSV files; a bad file is
// reported when it is loaded), labels where fine-tuning needs them, and no key that the source
// does not read.
func (c *Config) validateUser() Problems {
	var ps Problems
	d := c.Data
	bad := func(key string, val any, reason string, args ...any) {
		ps = append(ps, Problem{Key: key, Value: val, Reason: fmt.Sprintf(reason, args...)})
	}
	for _, k := range userKeys {
		reads := false
		for _, s := range k.sources {
			reads = reads || s == d.Source
		}
		if k.set(d) && !reads {
			names := ""
			for i, s := range k.sources {
				if i > 0 {
					names += " or "
				}
				names += s.String()
			}
			bad(k.key, k.get(d), "is read only with data.source %s (data.source is %s)", names, d.Source)
		}
	}
	// file reports whether path, the value of key, is a readable file.
	file := func(key, path string) bool {
		if path == "" {
			bad(key, path, "must name a file: data.source %s reads it", d.Source)
			return false
		}
		st, err := os.Stat(path)
		switch {
		case err != nil:
			bad(key, path, "not readable: %v", errText(err))
		case st.IsDir():
			bad(key, path, "is a directory, want a file")
		default:
			return true
		}
		return false
	}
	limits := func(what string, train, test int) {
		if d.TrainLimit > train {
			bad("data.train_limit", d.TrainLimit, "must be at most %d, the examples of %s (0 keeps all)", train, what)
		}
		if d.TestLimit > test {
			bad("data.test_limit", d.TestLimit, "must be at most %d, the test examples of %s (0 keeps all)", test, what)
		}
	}
	finetune := c.Finetune.Epochs > 0
	const preOnly = "fine-tuning needs labels (finetune.epochs: 0 pre-trains only)"
	switch d.Source {
	case NPZ:
		if file("data.path", d.Path) {
			if train, test, labels, err := data.NPZSizes(d.Path); err == nil {
				limits(d.Path, train, test)
				if finetune && !labels {
					bad("finetune.epochs", c.Finetune.Epochs, "%s: %s has no %s", preOnly, d.Path, data.NPZTrainY)
				}
			}
		}
	case NPY:
		okTrain, okTest := file("data.train", d.Train), file("data.test", d.Test)
		for _, l := range []struct{ key, path string }{{"data.train_labels", d.TrainLabels}, {"data.test_labels", d.TestLabels}} {
			if l.path != "" {
				file(l.key, l.path)
			}
		}
		if (d.TrainLabels == "") != (d.TestLabels == "") {
			key, val := "data.test_labels", d.TestLabels
			if d.TrainLabels == "" {
				key, val = "data.train_labels", d.TrainLabels
			}
			bad(key, val, "must be given with data.train_labels and data.test_labels both, or neither")
		} else if finetune && d.TrainLabels == "" {
			bad("finetune.epochs", c.Finetune.Epochs, "%s: set data.train_labels and data.test_labels", preOnly)
		}
		if okTrain && okTest {
			train, err1 := data.NPYRows(d.Train)
			test, err2 := data.NPYRows(d.Test)
			if err1 == nil && err2 == nil {
				limits(d.Train+" and "+d.Test, train, test)
			}
		}
	case CSV:
		okTrain, okTest := file("data.train", d.Train), file("data.test", d.Test)
		// Rows are counted up to the limit, no further than loading reads.
		for _, l := range []struct {
			key, path, what string
			ok              bool
			limit           int
		}{{"data.train_limit", d.Train, "examples", okTrain, d.TrainLimit}, {"data.test_limit", d.Test, "test examples", okTest, d.TestLimit}} {
			if !l.ok || l.limit <= 0 {
				continue
			}
			if n, err := data.CSVRows(l.path, d.Header, l.limit); err == nil && n < l.limit {
				bad(l.key, l.limit, "must be at most %d, the %s of csv file %s (0 keeps all)", n, l.what, l.path)
			}
		}
		if finetune && d.LabelColumn == "" {
			bad("finetune.epochs", c.Finetune.Epochs, "%s: set data.label_column", preOnly)
		}
	}
	return ps
}
