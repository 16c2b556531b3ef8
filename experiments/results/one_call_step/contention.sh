#!/bin/bash
# From the repository root, as root (cgroup v1), after go build -o /tmp/cgocalls ./experiments/cgocalls:
#   for n in 1 6 8 1 8; do bash experiments/results/one_call_step/contention.sh $n -visible 500 -hidden 2000 -rows 43 -seconds 4; done
# contention.sh N ARGS: N capped (0.225 CPU each, own cgroup) processes taking 500x2000 CD-1 steps of 43 rows
# (a replica of RBM_3 in the plan 1x2 · 2-3x6) at once; prints each one's line.
n=$1; shift
pids=()
for i in $(seq 1 $n); do
  g=/sys/fs/cgroup/cpu/contend$i; mkdir -p $g; echo 100000 > $g/cpu.cfs_period_us; echo 22500 > $g/cpu.cfs_quota_us
  sh -c "echo \$\$ > $g/cgroup.procs; exec env GOMAXPROCS=1 /tmp/cgocalls $*" > /tmp/contend-$i.txt &
  pids+=($!)
done
wait "${pids[@]}"
for i in $(seq 1 $n); do rmdir /sys/fs/cgroup/cpu/contend$i; done
cat /tmp/contend-*.txt | head -$n; rm -f /tmp/contend-*.txt
