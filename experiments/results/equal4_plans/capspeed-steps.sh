#!/bin/bash
# A CD-1 step of the quickstart DBN's shapes at a stage replica's sub-batch
# (256 rows over r = 1..8 replicas), uncapped and under a 0.225 CPU quota,
# against the model's prediction from the uncapped calibration.
# As root, with cgroup v1 (the cpu controller) or v2.
set -e
go build -o /tmp/capspeed ./experiments/capspeed
. "$(dirname "$0")/in_cap.sh"
for shape in "784 500" "500 500" "500 2000"; do
  set -- $shape
  for rows in 256 128 64 43 32; do
    out=$(/tmp/capspeed -seconds 1 -cpus 1 -visible $1 -hidden $2 -batch $rows); echo "$out"
    speed=$(echo "$out" | sed -n 's/^calibration \([0-9.]*\) GFLOP.*/\1/p')
    in_cap 0.225 /tmp/capspeed -seconds 2 -cpus 0.225 -speed $speed -visible $1 -hidden $2 -batch $rows
  done
done
