#!/bin/bash
# From the repository root; the runs used a master built with go build -o master ./cmd/master.
M="go run ./cmd/master"
O=${1:-/tmp/quickstart}; mkdir -p $O
$M run --config configs/quickstart.yaml --set finetune.epochs=0 --set cluster.cpus_per_worker=0.45 --set cluster.local_slaves=4 --out $O/p4 > $O/p4.log 2>&1
$M run --config configs/quickstart.yaml --set finetune.epochs=0 --set cluster.cpus_per_worker=0.45 --set pretrain.mode=greedy --out $O/g4 > $O/g4.log 2>&1
$M run --config configs/quickstart.yaml --set finetune.epochs=0 --set cluster.cpus_per_worker=0.225 --set pretrain.mode=greedy --out $O/g8 > $O/g8.log 2>&1
$M run --config configs/quickstart.yaml --set finetune.epochs=0 --set cluster.cpus_per_worker=0.225 --set cluster.local_slaves=8 --out $O/p8 > $O/p8.log 2>&1
