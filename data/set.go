// Package data loads the training and test sets pipedbn pre-trains on: IDX
// files (Fashion-MNIST from Debian's dataset-fashion-mnist package, or any
// IDX pair), a user's NumPy (.npz in Keras's layout, .npy) and CSV files,
// and small seeded synthetic sets for fast tests; and it fits the scaling
// (Scaler) that a run applies to them and to what it later predicts.
//
// Loading is strict: a bad file gives one error line naming the file and
// what was expected against what was found, and a hostile header cannot make
// it allocate much more than the file holds. Trainers batch a Set with Permutation
// (the RNG is theirs) and Gather into a destination they own, so an epoch
// allocates nothing; Limit and Split take views without copying.
package data

// Set is a labelled data set held as one row-major float32 matrix.
type Set struct {
	// X holds N rows of Dim features each, row-major.
	X []float32
	// Labels holds one class index per row, in [0, Classes); nil for an
	// unlabelled set (NumPy or CSV data without labels: pre-training only).
	Labels []uint8
	// N is the number of examples, Dim the features per example.
	N, Dim int
	// Classes is the number of label classes (10 for Fashion-MNIST).
	Classes int
	// Name says where the set came from, for logs and errors.
	Name string
}

// Row returns example i's features (a view into X).
func (s *Set) Row(i int) []float32 { return s.X[i*s.Dim : (i+1)*s.Dim] }
