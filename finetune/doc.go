// Package finetune turns a pre-trained Deep Belief Network into a classifier
// and trains it with back-propagation.
//
// The DBN's RBMs are unrolled into a feed-forward network: hidden layer i
// takes RBM_i's weights W_i (visible x hidden) and hidden biases b_i, with
// sigmoid units, so its activation is sigmoid(a_{i-1} W_i + b_i) exactly as in
// pre-training; a softmax output layer on top gives class probabilities.
// Train then fine-tunes every layer with mini-batch SGD (momentum, weight
// decay, cross-entropy loss, optional dropout of hidden units and of
// inputs, max-norm and label smoothing), keeping the weights of the best
// validation epoch. Random builds
// the same network with random weights, the no-pre-training baseline.
// TrainParallel is Train spread over W replicas (data-parallel local SGD:
// each trains on its shard of every epoch and the replicas' flat parameter
// vectors are averaged every S local steps), the core that data-parallel
// fine-tuning across workers runs on.
//
// All matrices are row-major float32 and every product goes through
// blas.Gemm. A Network's layers are plain slices, so that, like the
// pre-trained W_i and b_i, they can be written out as ft_W1, ft_b1, …,
// ft_Wout, ft_bout and NumPy alone reproduces the network's predictions:
// sigmoid(x @ W + b) for each hidden layer, then argmax(h @ Wout + bout).
package finetune
