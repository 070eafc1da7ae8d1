#!/usr/bin/env bash
# Does a thread polling on its own cache line slow the host's other threads (SMT siblings under
# a hypervisor, pause-loop exits, clock reads that leave the vDSO)? The question behind lanes
# polling 1 ms slowing independent host:4 tasks on GPU hosts (docs/benchmarks.md, "lanes that
# poll, at most one per spare core"). Build here (static, so the GPU machine needs nothing):
#   gcc -O2 -pthread -static -o gpu_carry/probe/poll_probe benches/probe/poll_probe.c
#   cp benches/probe/run.sh gpu_carry/probe/
# then on the device: bash gpu_carry/probe/run.sh (carry gpu_carry/probe).
set -uo pipefail
p=$(cd "$(dirname "$0")" && pwd)/poll_probe
echo "virt: $(systemd-detect-virt 2>/dev/null) hypervisor flag: $(grep -c hypervisor /proc/cpuinfo) clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node|MHz|L3' | tr -s ' '
steal() { awk '/^cpu /{print $9}' /proc/stat; }
s0=$(steal)
# A fixed pointer chase on the main thread beside 0-15 idle pollers of each kind.
for k in pause pure pauseclock pauseclock64; do for n in 0 4 8 15; do $p compute $n $k; done; done
# A hand-off's round trip to a worker waiting by each kind, beside 0, 8 and 14 pausing pollers.
for w in pause pauseclock pauseclock64 futex; do for n in 0 8 14; do $p pingpong $n pause $w; done; done
for n in 8 14; do $p pingpong $n pauseclock pause; $p pingpong $n pure pause; done
echo "steal ticks during the probe: $(( $(steal) - s0 ))"
