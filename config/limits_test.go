package config

import "testing"

// TestSizeCaps checks the caps on sizes that would overflow: a BLAS size
// (32 bits in OpenBLAS), and the counts that multiply with them.
func TestSizeCaps(t *testing.T) {
	t.Parallel()
	got := loadProblems(t, "dbn: {layers: [784, 3000000000, 2147483647]}\n"+
		"pretrain: {batch_size: 3000000000, epochs: 2147483648}\nfinetune: {batch_size: 2147483648}\n")
	checkProblems(t, got,
		"dbn.layers[1] = 3000000000: must be at most 2147483647: BLAS takes 32-bit sizes",
		"pretrain.batch_size = 3000000000: must be at most 2147483647: BLAS takes 32-bit sizes",
		"pretrain.epochs = 2147483648: must be at most 2147483647: epochs x mini-batches per epoch are counted in 64 bits",
		"finetune.batch_size = 2147483648: must be at most 2147483647: BLAS takes 32-bit sizes",
	)
	got = loadProblems(t, "data: {source: synthetic, train_limit: 4000000000, test_limit: 2147483647}\n",
		"pretrain.k_batches=100000000", "pretrain.batch_size=256")
	checkProblems(t, got,
		"data.train_limit = 4000000000: must be at most 2147483647: examples are counted in 32 bits",
		"pretrain.k_batches = 100000000 (from --set pretrain.k_batches): times pretrain.batch_size = 256 gives 25600000000 rows per window: must be at most 2147483647 (a window's values, rows x layer width, are counted in 64 bits)",
	)
	got = loadProblems(t, "pretrain: {k_batches: 9223372036854775807}\n")
	checkProblems(t, got,
		"pretrain.k_batches = 9223372036854775807: must be at most 2147483647: a window's values, rows x layer width, are counted in 64 bits",
	)
}
