#!/bin/sh
# Each upper RBM of the 6-RBM DBN's pipelined runs trained again greedily
# on its own run's input (regreedy.txt). $1: the sweep's --out folder.
G=${1:-/tmp/depth_grid}
L='784-256-256-256-256-256-256'
for ep in 30 2; do for K in 1 200; do for s in 1 2 3; do
  d=$G/layers=${L}_epochs=${ep}_k_batches=${K}_seed=${s}_mode=pipelined_r1
  for k in 4 5 6; do
    printf 'epochs %s K %s seed %s ' $ep $K $s
    go run ./experiments/regreedy -run $d -config experiments/depth_grid.yaml \
      -set "dbn.layers=[784, 256, 256, 256, 256, 256, 256]" -set pretrain.epochs=$ep \
      -set seed=$s -set pretrain.mode=greedy -rbm $k
  done
done; done; done
