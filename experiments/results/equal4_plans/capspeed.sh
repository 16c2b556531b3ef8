#!/bin/bash
# The planner's calibration (uncapped, as the master makes it) and a 784x784
# CD-1 step of 256 rows on one thread: the step uncapped, then under a 0.45
# CPU quota (CPUS="0.45 0.225" for several) against what the model predicts
# of it from that calibration.
# As root, with cgroup v1 (the cpu controller) or v2.
set -e
go build -o /tmp/capspeed ./experiments/capspeed
. "$(dirname "$0")/in_cap.sh"
for cpus in ${CPUS:-0.45}; do
  for round in 1 2 3; do
    out=$(/tmp/capspeed -seconds 1 -cpus 1); echo "$out"
    speed=$(echo "$out" | sed -n 's/^calibration \([0-9.]*\) GFLOP.*/\1/p')
    in_cap $cpus /tmp/capspeed -seconds 3 -cpus $cpus -speed $speed
  done
done
