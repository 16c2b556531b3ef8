#!/bin/bash
# What a process spends beside its calls out of Go, before and after a CD
# step became one call (blas.CDStep). From the repository root, as root
# (the capped part needs cgroup v1 or v2):
#   bash experiments/results/cgo_calls/run.sh > experiments/results/cgo_calls/out.txt
# BEFORE and AFTER are commits; experiments/cgocalls is copied into both.
set -e
BEFORE=${BEFORE:-9f0f443}
AFTER=${AFTER:-HEAD}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'git worktree remove --force $tmp/before; git worktree remove --force $tmp/after; rm -rf $tmp' EXIT
for side in before after; do
  rev=BEFORE; [ $side = after ] && rev=AFTER
  git worktree add -q --detach $tmp/$side ${!rev}
  rm -rf $tmp/$side/experiments/cgocalls; cp -r experiments/cgocalls $tmp/$side/experiments/
  (cd $tmp/$side && go build -o $tmp/cgocalls-$side ./experiments/cgocalls)
done
. experiments/results/equal4_plans/in_cap.sh
echo "# before $(git rev-parse --short $BEFORE), after $(git rev-parse --short $AFTER); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## C calls that spin, GOMAXPROCS=1"
for us in 20 50 200 1000 5000; do GOMAXPROCS=1 $tmp/cgocalls-after -spin-us $us; done
echo "## CD-1 steps, GOMAXPROCS=1 (as a slave of less than 2 CPUs runs), uncapped, two rounds"
for shape in "784 500" "500 500" "500 2000" "784 784"; do
  set -- $shape
  for rows in 256 43; do
    for round in 1 2; do
      for side in before after; do
        echo -n "$side: "; GOMAXPROCS=1 $tmp/cgocalls-$side -visible $1 -hidden $2 -rows $rows -seconds 2
      done
    done
  done
done
echo "## the same under a 0.225 CPU quota: the wall time per step is what a capped slave sees"
for shape in "784 500" "500 2000"; do
  set -- $shape
  for rows in 256 43; do
    for round in 1 2; do
      for side in before after; do
        echo -n "$side: "; GOMAXPROCS=1 in_cap 0.225 $tmp/cgocalls-$side -visible $1 -hidden $2 -rows $rows -seconds 3
      done
    done
  done
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
