#!/bin/bash
# A CD-1 step of the quickstart DBN's shapes at a stage replica's sub-batch
# (256 rows over r = 1..8 replicas), uncapped and under a 0.225 CPU quota,
# against the model's prediction from the uncapped calibration.
# As root, with cgroup v1 (the cpu controller) or v2.
set -e
go build -o /tmp/capspeed ./experiments/capspeed
in_cap() { # run "${@:2}" in a cgroup of $1 CPU
  q=$(python3 -c "print(int($1*100000))")
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    g=/sys/fs/cgroup/capspeed; mkdir -p $g; echo "$q 100000" > $g/cpu.max
  else
    g=/sys/fs/cgroup/cpu/capspeed; mkdir -p $g; echo 100000 > $g/cpu.cfs_period_us; echo $q > $g/cpu.cfs_quota_us
  fi
  sh -c "echo \$\$ > $g/cgroup.procs; exec ${*:2}"
}
for shape in "784 500" "500 500" "500 2000"; do
  set -- $shape
  for rows in 256 128 64 43 32; do
    out=$(/tmp/capspeed -seconds 1 -cpus 1 -visible $1 -hidden $2 -batch $rows); echo "$out"
    speed=$(echo "$out" | sed -n 's/^calibration \([0-9.]*\) GFLOP.*/\1/p')
    in_cap 0.225 /tmp/capspeed -seconds 2 -cpus 0.225 -speed $speed -visible $1 -hidden $2 -batch $rows
  done
done
