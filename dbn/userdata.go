package dbn

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/rbm"
)

// ScaleFile is where a run with data.scale other than none keeps the
// scaling it fitted on the training set, for master predict and transform
// (and NumPy) to apply to new data: a NumPy .npz of two float32 vectors,
// scaleOffset and scaleFactor, x' = (x - offset) * factor.
const ScaleFile = "scale.npz"

// The arrays of ScaleFile.
const (
	scaleOffset = "offset"
	scaleFactor = "factor"
)

// loadUserData loads a data set of one's own: data.source npz, npy or csv.
func loadUserData(cfg *config.Config) (train, test *data.Set, err error) {
	d := cfg.Data
	switch d.Source {
	case config.NPZ:
		return data.LoadNPZ(d.Path, d.TrainLimit, d.TestLimit)
	case config.NPY:
		return data.LoadNPY(d.Train, d.Test, d.TrainLabels, d.TestLabels, d.TrainLimit, d.TestLimit)
	case config.CSV:
		return data.LoadCSV(d.Train, d.Test, data.CSVOptions{Header: d.Header, LabelColumn: d.LabelColumn}, d.TrainLimit, d.TestLimit)
	}
	return nil, nil, fmt.Errorf("config %s: data.source = %q: not a data set of one's own", cfg.File, d.Source)
}

// userDataSizes returns the examples of a data set of one's own, from the
// NumPy headers (0 where unknown: CSV, or a file that loading will report).
func userDataSizes(d config.Data) (train, test int) {
	switch d.Source {
	case config.NPZ:
		train, test, _, _ = data.NPZSizes(d.Path)
	case config.NPY:
		train, _ = data.NPYRows(d.Train)
		test, _ = data.NPYRows(d.Test)
	}
	if d.TrainLimit > 0 {
		train = min(train, d.TrainLimit)
	}
	if d.TestLimit > 0 {
		test = min(test, d.TestLimit)
	}
	return train, test
}

// scaleData fits data.scale on train and applies it to train and test. It
// then refuses training features outside [0, 1] for Bernoulli visible units
// (raw pixels 0..255 want data.scale: unit), naming the keys.
func scaleData(cfg *config.Config, train, test *data.Set) (*data.Scaler, error) {
	sc := data.FitScaler(cfg.Data.Scale, train)
	sc.Apply(train.X)
	sc.Apply(test.X)
	if cfg.DBN.Visible == rbm.Bernoulli {
		if lo, hi := data.Range(train.X); lo < 0 || hi > 1 {
			after := ""
			if sc != nil {
				after = " after scaling"
			}
			return nil, fmt.Errorf("config %s: data.scale = %q: the training features (%s) lie in [%g, %g]%s, but dbn.visible = bernoulli needs them in [0, 1]: set data.scale: unit (or dbn.visible: gaussian)",
				cfg.File, cfg.Data.Scale, train.Name, lo, hi, after)
		}
	}
	return sc, nil
}

// writeScaler writes sc to dir's ScaleFile; nil writes nothing.
func writeScaler(dir string, sc *data.Scaler) error {
	if sc == nil {
		return nil
	}
	d := len(sc.Offset)
	return writeWeights(filepath.Join(dir, ScaleFile), []array{
		{Name: scaleOffset, Rows: d, Data: sc.Offset},
		{Name: scaleFactor, Rows: d, Data: sc.Factor},
	})
}

// scaleName is data.scale for result.json, "" for none.
func scaleName(sc *data.Scaler, cfg *config.Config) string {
	if sc == nil {
		return ""
	}
	return cfg.Data.Scale.String()
}

// readScaler reads dir's ScaleFile: nil when there is none (a run with
// data.scale none, or from before it existed).
func readScaler(dir string) (*data.Scaler, error) {
	path := filepath.Join(dir, ScaleFile)
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil, nil
	}
	arrays, err := data.ReadNPZFloats(path)
	if err != nil {
		return nil, err
	}
	off, fac := arrays[scaleOffset], arrays[scaleFactor]
	if len(off.Shape) != 1 || len(fac.Shape) != 1 || off.Shape[0] != fac.Shape[0] || off.Shape[0] == 0 {
		return nil, fmt.Errorf("%s: want float32 vectors %s and %s of the same length, one value per feature", path, scaleOffset, scaleFactor)
	}
	return &data.Scaler{Offset: off.Values, Factor: fac.Values}, nil
}
