#!/usr/bin/env python3
"""Lists a runtime trace's (trace_file) slices of at least MIN_US microseconds in time order,
with their track, start (ms from the first slice) and duration: the long copies, allocations and
waits of a transfer-bound run (gpu_bench late-read). Usage: trace_slices.py TRACE.json [MIN_US]"""
import json
import sys

min_us = float(sys.argv[2]) if len(sys.argv) > 2 else 500.0
with open(sys.argv[1]) as f:
    data = json.load(f)
events = data["traceEvents"] if isinstance(data, dict) else data
names = {}
for e in events:
    if e.get("ph") == "M" and e.get("name") == "thread_name":
        names[(e.get("pid"), e.get("tid"))] = e.get("args", {}).get("name", "")
slices = sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"])
if not slices:
    sys.exit("no slices")
t0 = slices[0]["ts"]
print(f"{'start ms':>10} {'dur ms':>9}  track / name")
for e in slices:
    if e.get("dur", 0) >= min_us:
        track = names.get((e.get("pid"), e.get("tid")), str(e.get("tid")))
        print(f"{(e['ts'] - t0) / 1e3:10.2f} {e['dur'] / 1e3:9.2f}  {track} / {e.get('name', '')} {e.get('cat', '')}")
