#!/usr/bin/env python3
"""Per-hop summary of a runtime trace (trace_file): for each track kind and slice category, the
number of slices, their mean duration and the mean spacing of their starts, plus the number of
device lanes used. Usage: trace_summary.py TRACE.json"""
import json
import sys
from collections import defaultdict

with open(sys.argv[1]) as f:
    data = json.load(f)
events = data["traceEvents"] if isinstance(data, dict) else data
groups = defaultdict(list)
lanes = set()
for e in events:
    if e.get("ph") != "X":
        continue
    tid = e.get("tid", 0)
    track = {1: "executor", 2: "scheduler", 3: "alloc", 4: "comm"}.get(tid, "device lane" if tid >= 1000 else "host lane")
    if tid >= 1000:
        lanes.add(tid)
    groups[(track, e.get("cat", ""))].append((e["ts"], e.get("dur", 0)))
print(f"device lanes used: {len(lanes)}")
print(f"{'track':<12} {'category':<22} {'count':>7} {'mean dur us':>12} {'start spacing us':>17}")
for (track, cat), slices in sorted(groups.items()):
    slices.sort()
    spacing = (slices[-1][0] - slices[0][0]) / max(1, len(slices) - 1)
    mean = sum(d for _, d in slices) / len(slices)
    print(f"{track:<12} {cat:<22} {len(slices):>7} {mean:>12.2f} {spacing:>17.2f}")
