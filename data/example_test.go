package data_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/pipedbn/pipedbn/data"
)

func ExampleSynthetic() {
	train, test := data.SyntheticPair(1, 1000, 200, 784, 10)
	fmt.Println(train.Name, train.N, train.Dim, train.Classes)
	fmt.Println(test.Name, test.N)
	// Output:
	// synthetic(seed=1) train 1000 784 10
	// synthetic(seed=1) test 200
}

func ExampleFashionMNIST() {
	// Debian: apt-get install dataset-fashion-mnist.
	train, test, err := data.FashionMNIST(data.FashionMNISTDir, 1000, 500)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(train.N, test.N, train.Dim, train.Classes)
}

func ExampleLoadIDX() {
	dir, err := os.MkdirTemp("", "idx")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// Write a small set as gzip-compressed IDX files and read it back.
	if err := data.WriteIDXFiles(dir, data.Synthetic(1, 100, 28*28, 10), "images.gz", "labels.gz", true); err != nil {
		panic(err)
	}
	s, err := data.LoadIDX(filepath.Join(dir, "images.gz"), filepath.Join(dir, "labels.gz"), 10)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.N, s.Dim, s.Classes)

	// A bad file gives one line naming the file and the problem.
	if err := os.WriteFile(filepath.Join(dir, "bad"), []byte("<html>"), 0o644); err != nil {
		panic(err)
	}
	_, err = data.LoadIDX(filepath.Join(dir, "bad"), filepath.Join(dir, "labels.gz"), 0)
	fmt.Println(err != nil)
	// Output:
	// 10 784 10
	// true
}

// A training epoch: shuffle, then gather mini-batches of rows and labels.
func ExamplePermutation() {
	train, val := data.Synthetic(1, 1000, 16, 4).Split(900)
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 256
	order := make([]int, train.N)
	x := make([]float32, batch*train.Dim)
	labels := make([]uint8, batch)
	data.Permutation(rng, train.N, order)
	batches := 0
	for lo := 0; lo < train.N; lo += batch {
		idx := order[lo:min(lo+batch, train.N)]
		train.Gather(x, idx)
		train.GatherLabels(labels, idx)
		batches++
	}
	fmt.Println(batches, "batches,", val.N, "validation examples")
	// Output:
	// 4 batches, 100 validation examples
}
