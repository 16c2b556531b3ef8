package dbn

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"

	"github.com/sbinet/npyio/npz"

	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// The arrays of weights.npz are named here and nowhere else
// (docs/results-schema.md): W<i> and b<i>, the weights (visible x hidden) and
// hidden bias of RBM_i, and a<i>, its visible bias; after fine-tuning
// ft_W<i> and ft_b<i> of hidden layer i and ft_Wout and ft_bout of the
// softmax layer; with gaussian visible units input_mean and input_scale,
// the standardisation x' = (x - input_mean) * input_scale.
const (
	finetunePrefix = "ft_"
	outputLayer    = "out"
	visibleBias    = "a"
	inputMean      = "input_mean"
	inputScale     = "input_scale"
)

// layerArrays are one layer's weights, prefix+"W"+id (rows x cols), and
// bias, prefix+"b"+id (cols).
func layerArrays(prefix, id string, rows, cols int, w, b []float32) []array {
	return []array{
		{Name: prefix + "W" + id, Rows: rows, Cols: cols, Data: w},
		{Name: prefix + "b" + id, Rows: cols, Data: b},
	}
}

// rbmArrays are RBM_i's arrays: W<i>, b<i> and a<i>, all an RBM_i needs
// to be trained on or sampled from again.
func rbmArrays(i, visible, hidden int, w, a, b []float32) []array {
	id := strconv.Itoa(i)
	return append(layerArrays("", id, visible, hidden, w, b), array{Name: visibleBias + id, Rows: visible, Data: a})
}

// finetuneArrays are the fine-tuned network's arrays: ft_W<i> and ft_b<i>
// of every hidden layer, then ft_Wout and ft_bout.
func finetuneArrays(net *finetune.Network) []array {
	var out []array
	for i, l := range net.Hidden {
		out = append(out, layerArrays(finetunePrefix, strconv.Itoa(i+1), l.In, l.Out, l.W, l.B)...)
	}
	return append(out, layerArrays(finetunePrefix, outputLayer, net.Out.In, net.Out.Out, net.Out.W, net.Out.B)...)
}

// inputArrays are the standardisation of gaussian visible units.
func inputArrays(mean, scale []float32) []array {
	return []array{{Name: inputMean, Rows: len(mean), Data: mean}, {Name: inputScale, Rows: len(scale), Data: scale}}
}

// array is one named float32 array of weights.npz, row-major.
type array struct {
	Name       string
	Rows, Cols int // Cols 0: a vector of Rows values
	Data       []float32
}

// writeWeights writes the arrays to path as a NumPy .npz archive, float32,
// 2-D arrays with their shapes, atomically.
func writeWeights(path string, arrays []array) error {
	var buf bytes.Buffer
	w := npz.NewWriter(&buf)
	for _, a := range arrays {
		var v any = a.Data
		if a.Cols > 0 {
			if len(a.Data) != a.Rows*a.Cols {
				panic(fmt.Sprintf("dbn: array %s holds %d values, not %dx%d", a.Name, len(a.Data), a.Rows, a.Cols))
			}
			v = matrix(a.Data, a.Rows, a.Cols)
		}
		if err := w.Write(a.Name, v); err != nil {
			return fmt.Errorf("write %s: array %s: %w", path, a.Name, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, buf.Bytes())
}

// matrix returns data as a []([cols]float32) made at run time: npyio writes
// a slice of fixed-size arrays as a 2-D float32 array with its shape, where a
// [][]float32 is not written at all.
func matrix(data []float32, rows, cols int) any {
	v := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(cols, reflect.TypeFor[float32]())), rows, rows)
	for r := 0; r < rows; r++ {
		reflect.Copy(v.Index(r).Slice(0, cols), reflect.ValueOf(data[r*cols:(r+1)*cols]))
	}
	return v.Interface()
}
