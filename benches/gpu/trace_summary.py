#!/usr/bin/env python3
"""Per-hop summary of a runtime trace (trace_file). First, for each track kind and slice
category: the number of slices, their mean duration and the mean spacing of their starts. Then,
for each phase of the run (a run of at least MIN_PHASE kernels without a gap of a millisecond
between kernel starts, e.g. the 10,000 kernels of the task floor): the kernels' mean spacing and,
per thread track, its work per kernel and the share of the phase it was busy. The thread that is
busy nearly all the phase paces it. Usage: trace_summary.py TRACE.json"""
import json
import sys
from collections import defaultdict

MIN_PHASE = 2000
GAP_US = 1000.0


def track_kind(tid):
    named = {1: "executor", 2: "scheduler", 3: "alloc", 4: "comm", 5: "cdag stage", 6: "executor busy"}
    if tid in named:
        return named[tid]
    if 10 <= tid < 100:
        return f"D{tid - 10} submission"
    return "device lane" if tid >= 1000 else "host lane"


with open(sys.argv[1]) as f:
    data = json.load(f)
events = data["traceEvents"] if isinstance(data, dict) else data
slices = [e for e in events if e.get("ph") == "X"]
groups = defaultdict(list)
lanes = set()
for e in slices:
    tid = e.get("tid", 0)
    if tid >= 1000:
        lanes.add(tid)
    groups[(track_kind(tid), e.get("cat", ""))].append((e["ts"], e.get("dur", 0)))
print(f"device lanes used: {len(lanes)}")
print(f"{'track':<14} {'category':<14} {'count':>7} {'mean dur us':>12} {'start spacing us':>17}")
for (track, cat), group in sorted(groups.items()):
    group.sort()
    spacing = (group[-1][0] - group[0][0]) / max(1, len(group) - 1)
    mean = sum(d for _, d in group) / len(group)
    print(f"{track:<14} {cat:<14} {len(group):>7} {mean:>12.2f} {spacing:>17.2f}")

kernels = sorted(e["ts"] for e in slices if e.get("cat") == "kernel")
phases, first = [], 0
for i in range(1, len(kernels) + 1):
    if i == len(kernels) or kernels[i] - kernels[i - 1] > GAP_US:
        if i - first >= MIN_PHASE:
            phases.append((first, i))
        first = i
for a, z in phases:
    t0, t1, count = kernels[a], kernels[z - 1], z - a
    print(f"\nphase of {count} kernels: {(t1 - t0) / (count - 1):.2f} us between kernel starts")
    busy = defaultdict(float)
    for e in slices:
        tid = e.get("tid", 0)
        if tid >= 100 or e.get("ph") != "X":
            continue  # lanes show instructions in flight, not a thread's work
        start, end = max(e["ts"], t0), min(e["ts"] + e.get("dur", 0), t1)
        if end > start:
            busy[(track_kind(tid), e.get("cat", ""))] += end - start
    for (track, cat), spent in sorted(busy.items()):
        print(f"  {track:<14} {cat:<12} {spent / count:8.2f} us per kernel, busy {spent / (t1 - t0):6.1%}")
