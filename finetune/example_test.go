package finetune_test

import (
	"context"
	"fmt"
	"os"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
)

// Fine-tune a small network on a synthetic task and report its test
// accuracy. With a pre-trained DBN, FromPretrained(layers, classes, seed)
// replaces Random.
func ExampleTrain() {
	train, test := data.SyntheticPair(1, 1000, 300, 64, 4)
	valid, train := train.Split(200)
	net := finetune.Random([]int{64, 32}, 4, 1)
	cfg := finetune.Config{Epochs: 5, BatchSize: 32, LearningRate: 0.1, Momentum: 0.9, Seed: 1}
	stats, err := finetune.Train(context.Background(), net, train, valid, cfg, finetune.Hooks{})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := net.Evaluate(test)
	fmt.Printf("%d epochs, test accuracy above 95%%: %v\n", len(stats), e.Accuracy > 0.95)
	// Output: 5 epochs, test accuracy above 95%: true
}

func ExampleFormatConfusion() {
	e := finetune.Evaluation{
		Accuracy:  0.85,
		Confusion: [][]int{{45, 5}, {10, 40}},
		PerClass:  []float64{0.9, 0.8},
		N:         100,
	}
	if err := finetune.FormatConfusion(os.Stdout, e, finetune.FashionMNISTClasses[:2]); err != nil {
		fmt.Println(err)
	}
	// Output:
	// true \ predicted  0  1   recall
	// 0 T-shirt/top    45  5   90.00%
	// 1 Trouser        10 40   80.00%
	// accuracy 85.00% (85 / 100)
}
