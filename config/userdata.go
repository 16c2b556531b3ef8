package config

import (
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

// userData checks the keys of a data set of one's own: the files its
// source needs exist (and hold as many examples as the limits ask: read
// from the headers of NumPy files, counted in CSV files; a bad file is
// reported when it is loaded), labels where fine-tuning needs them, and no
// key that the source does not read.
func (v *validation) userData() {
	v.unreadUserKeys()
	switch v.c.Data.Source {
	case NPZ:
		v.npzData()
	case NPY:
		v.npyData()
	case CSV:
		v.csvData()
	}
}

// preOnly is why fine-tuning needs labels.
const preOnly = "fine-tuning needs labels (finetune.epochs: 0 pre-trains only)"

// unreadUserKeys records each key of userKeys that is set but that
// data.source does not read.
func (v *validation) unreadUserKeys() {
	d := v.c.Data
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
			v.bad(k.key, k.get(d), "is read only with data.source %s (data.source is %s)", names, d.Source)
		}
	}
}

// userFile reports whether path, the value of key, is a readable file, and
// records a problem if not.
func (v *validation) userFile(key, path string) bool {
	if path == "" {
		v.bad(key, path, "must name a file: data.source %s reads it", v.c.Data.Source)
		return false
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		v.bad(key, path, "not readable: %v", errText(err))
	case st.IsDir():
		v.bad(key, path, "is a directory, want a file")
	default:
		return true
	}
	return false
}

// userLimits records the data limits that exceed train and test, the
// examples of the files what names.
func (v *validation) userLimits(what string, train, test int) {
	d := v.c.Data
	if d.TrainLimit > train {
		v.bad("data.train_limit", d.TrainLimit, "must be at most %d, the examples of %s (0 keeps all)", train, what)
	}
	if d.TestLimit > test {
		v.bad("data.test_limit", d.TestLimit, "must be at most %d, the test examples of %s (0 keeps all)", test, what)
	}
}

// npzData checks data.source = npz: the archive, its sizes against the
// limits, its labels if fine-tuning needs them.
func (v *validation) npzData() {
	d := v.c.Data
	if !v.userFile("data.path", d.Path) {
		return
	}
	if train, test, labels, err := data.NPZSizes(d.Path); err == nil {
		v.userLimits(d.Path, train, test)
		if v.c.Finetune.Epochs > 0 && !labels {
			v.bad("finetune.epochs", v.c.Finetune.Epochs, "%s: %s has no %s", preOnly, d.Path, data.NPZTrainY)
		}
	}
}

// npyData checks data.source = npy: the files, labels both or neither
// (and given if fine-tuning needs them), the rows against the limits.
func (v *validation) npyData() {
	d := v.c.Data
	okTrain, okTest := v.userFile("data.train", d.Train), v.userFile("data.test", d.Test)
	for _, l := range []struct{ key, path string }{{"data.train_labels", d.TrainLabels}, {"data.test_labels", d.TestLabels}} {
		if l.path != "" {
			v.userFile(l.key, l.path)
		}
	}
	if (d.TrainLabels == "") != (d.TestLabels == "") {
		key, val := "data.test_labels", d.TestLabels
		if d.TrainLabels == "" {
			key, val = "data.train_labels", d.TrainLabels
		}
		v.bad(key, val, "must be given with data.train_labels and data.test_labels both, or neither")
	} else if v.c.Finetune.Epochs > 0 && d.TrainLabels == "" {
		v.bad("finetune.epochs", v.c.Finetune.Epochs, "%s: set data.train_labels and data.test_labels", preOnly)
	}
	if okTrain && okTest {
		train, err1 := data.NPYRows(d.Train)
		test, err2 := data.NPYRows(d.Test)
		if err1 == nil && err2 == nil {
			v.userLimits(d.Train+" and "+d.Test, train, test)
		}
	}
}

// csvData checks data.source = csv: the files, their rows against the
// limits, and a label column if fine-tuning needs one.
func (v *validation) csvData() {
	d := v.c.Data
	okTrain, okTest := v.userFile("data.train", d.Train), v.userFile("data.test", d.Test)
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
			v.bad(l.key, l.limit, "must be at most %d, the %s of csv file %s (0 keeps all)", n, l.what, l.path)
		}
	}
	if v.c.Finetune.Epochs > 0 && d.LabelColumn == "" {
		v.bad("finetune.epochs", v.c.Finetune.Epochs, "%s: set data.label_column", preOnly)
	}
}
