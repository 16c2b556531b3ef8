#!/bin/bash
# Round 1, then round 2 the other way round (experiments/results/equal4_plans/), then the one-box pairs (onebox_defaults/).
# Quiet-box timing: four equal 784x784 RBMs on 4 machines of 0.45 CPU: greedy, auto twice, the replica plan 1,2-4x3, one-per-rbm.
# (The runs here used a master built with `go build -o master ./cmd/master`.)
M="go run ./cmd/master"
C=experiments/equal4.yaml
O=${1:-/tmp/equal4_plans}
mkdir -p $O
$M run --config $C --set pretrain.mode=pipelined --set cluster.plan=auto --out $O/auto1 > $O/auto1.log 2>&1
$M run --config $C --set pretrain.mode=greedy --out $O/greedy > $O/greedy.log 2>&1
$M run --config $C --set pretrain.mode=pipelined --set cluster.plan=1,2-4x3 --out $O/rep > $O/rep.log 2>&1
$M run --config $C --set pretrain.mode=pipelined --set cluster.plan=one-per-rbm --out $O/one > $O/one.log 2>&1
$M run --config $C --set pretrain.mode=pipelined --set cluster.plan=auto --out $O/auto2 > $O/auto2.log 2>&1
# Round 2, the other way round; then the quickstart job's pre-training on one uncapped box, greedy and pipelined alternating, three pairs.
$M run --config $C --set pretrain.mode=pipelined --set cluster.plan=one-per-rbm --out $O/one-r2 > $O/one-r2.log 2>&1
$M run --config $C --set pretrain.mode=pipelined --set cluster.plan=auto --out $O/auto-r2 > $O/auto-r2.log 2>&1
$M run --config $C --set pretrain.mode=greedy --out $O/greedy-r2 > $O/greedy-r2.log 2>&1
mkdir -p $O/onebox
for r in 1 2 3; do
  for m in greedy pipelined; do
    $M run --config configs/quickstart.yaml --set finetune.epochs=0 --set pretrain.mode=$m --out $O/onebox/$m-$r > $O/onebox/$m-$r.log 2>&1
  done
done
