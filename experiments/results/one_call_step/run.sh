#!/bin/bash
# A CD step in one call out of Go, end to end: the master of BEFORE and of
# AFTER side by side, alternating, on a quiet box. From the repository root:
#   bash experiments/results/one_call_step/run.sh /tmp/one_call_step
#   PART2=1 bash experiments/results/one_call_step/run.sh /tmp/one_call_step
#   ROUNDS="3 4" NO_GREEDY=1 bash experiments/results/one_call_step/run.sh /tmp/one_call_step
# Writes each run's result.json under OUT/<run>/ and the masters' logs beside.
set -e
BEFORE=${BEFORE:-9f0f443}
AFTER=${AFTER:-HEAD}
O=${1:-/tmp/one_call_step}
mkdir -p $O
tmp=$(mktemp -d)
trap 'git worktree remove --force $tmp/before; git worktree remove --force $tmp/after; rm -rf $tmp' EXIT
for side in before after; do
  rev=BEFORE; [ $side = after ] && rev=AFTER
  git worktree add -q --detach $tmp/$side ${!rev}
  (cd $tmp/$side && go build -o $O/master-$side ./cmd/master)
done
echo "part $([ "${PART2:-0}" = 1 ] && echo 2 || echo 1): before $(git rev-parse --short $BEFORE), after $(git rev-parse --short $AFTER); load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/info.txt
run() { # run NAME SIDE ARGS...
  $O/master-$2 run "${@:3}" --http "" --out $O/$1-$2 > $O/$1-$2.log 2>&1
}
if [ "${PART2:-0}" != 1 ]; then
for round in ${ROUNDS:-1 2}; do
  for side in before after; do
    [ $((round % 2)) = 0 ] && side=$([ $side = before ] && echo after || echo before)
    run equal4-one-r$round $side --config experiments/equal4.yaml --set pretrain.mode=pipelined --set cluster.plan=one-per-rbm
    run quickstart8-r$round $side --config configs/quickstart.yaml --set finetune.epochs=0 --set cluster.cpus_per_worker=0.225 --set cluster.local_slaves=8
  done
done
[ -n "$NO_GREEDY" ] || for side in before after; do
  run equal4-greedy $side --config experiments/equal4.yaml --set pretrain.mode=greedy
done
fi
# Second part, PART2=1 (run after the first, the same box): the auto plan on equal4 twice, and the
# quickstart's pre-training on one uncapped box, greedy and pipelined alternating, two pairs,
# with AFTER's master only.
if [ "${PART2:-0}" = 1 ]; then
  for round in 1 2; do
    run equal4-auto-r$round after --config experiments/equal4.yaml --set pretrain.mode=pipelined --set cluster.plan=auto
  done
  for round in 1 2; do
    for m in greedy pipelined; do
      run onebox-$m-r$round after --config configs/quickstart.yaml --set finetune.epochs=0 --set pretrain.mode=$m
    done
  done
fi
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/info.txt
