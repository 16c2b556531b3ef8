package dbn

import (
	"math"

	"github.com/pipedbn/pipedbn/data"
)

// standardize scales every feature of train and test to zero mean and unit
// variance over train, as gaussian visible units with unit variance expect.
// Constant features are only centred. It returns the mean and scale it
// applied: x' = (x - mean) * scale, computed in float32 with the float32
// mean and scale that weights.npz holds, so that NumPy (and master predict)
// reproduce it bit for bit.
func standardize(train, test *data.Set) (mean32, scale32 []float32) {
	mean := make([]float64, train.Dim)
	sq := make([]float64, train.Dim)
	for i := 0; i < train.N; i++ {
		for j, x := range train.Row(i) {
			mean[j] += float64(x)
			sq[j] += float64(x) * float64(x)
		}
	}
	scale := make([]float64, train.Dim)
	for j := range mean {
		mean[j] /= float64(train.N)
		sd := math.Sqrt(math.Max(sq[j]/float64(train.N)-mean[j]*mean[j], 0))
		scale[j] = 1
		if sd > 1e-6 {
			scale[j] = 1 / sd
		}
	}
	for j := range mean {
		mean32 = append(mean32, float32(mean[j]))
		scale32 = append(scale32, float32(scale[j]))
	}
	for _, s := range []*data.Set{train, test} {
		for i := 0; i < s.N; i++ {
			row := s.Row(i)
			for j := range row {
				row[j] = (row[j] - mean32[j]) * scale32[j]
			}
		}
	}
	return mean32, scale32
}
