# in_cap CPUS CMD...: runs CMD in a cgroup of CPUS CPUs (cgroup v1 or v2), as
# root; sourced by capspeed.sh and capspeed-steps.sh.
in_cap() { # run "${@:2}" in a cgroup of $1 CPU
  q=$(python3 -c "print(int($1*100000))")
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    g=/sys/fs/cgroup/capspeed; mkdir -p $g; echo "$q 100000" > $g/cpu.max
  else
    g=/sys/fs/cgroup/cpu/capspeed; mkdir -p $g; echo 100000 > $g/cpu.cfs_period_us; echo $q > $g/cpu.cfs_quota_us
  fi
  sh -c "echo \$\$ > $g/cgroup.procs; exec ${*:2}"
}
