package dbn

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/sbinet/npyio/npz"

	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// Array is one named float32 array of weights.npz, row-major.
type Array struct {
	Name       string
	Rows, Cols int // Cols 0: a vector of Rows values
	Data       []float32
}

// writeWeights writes the arrays to path as a NumPy .npz archive, float32,
// 2-D arrays with their shapes, atomically.
func writeWeights(path string, arrays []Array) error {
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
