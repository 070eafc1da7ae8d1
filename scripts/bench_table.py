#!/usr/bin/env python3
"""Writes the figures table of scripts/bench.sh into docs/benchmarks.md (between its markers)."""
import datetime, json, os, pathlib, platform, re, subprocess, sys

criterion_dir, doc, side_by_side = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
rows = []
for estimates in sorted(criterion_dir.glob("**/bench-sh/estimates.json")):
    bench_dir = estimates.parent.parent
    meta = bench_dir / "bench-sh" / "benchmark.json"
    name = json.load(open(meta))["full_id"] if meta.exists() else str(bench_dir.relative_to(criterion_dir))
    data = json.load(open(estimates))
    mean = data["mean"]["point_estimate"]
    lo, hi = data["mean"]["confidence_interval"]["lower_bound"], data["mean"]["confidence_interval"]["upper_bound"]
    rows.append((name, mean, lo, hi))

def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"

# The side-by-side run's summary.json: per pair key and benchmark name, the Celerity / ours ratio
# of every round. Our criterion ids are "<group>/<benchmark>"; the groups of the pair keys are
# those of ../shared/tools/celerity-anchor/bench-side-by-side.sh.
def group_of(key):
    if key == "tdag":
        return "task graph"
    if key == "handling":
        return "task handling"
    kind, n = re.match(r"^([a-z]+?)(\d+t?)$", key).groups()
    if kind == "cdag":
        return f"command graph/{n} nodes"
    if kind == "idag":
        return f"instruction graph/{n} devices"
    if n.endswith("t"):
        return f"scheduler thread/{n[:-1]} nodes/throttled submission at 10 us per task"
    return f"scheduler thread/{n} nodes/immediate submission"

# Two ratios per cell, each averaged over the rounds: of the means (what summary.md shows) and of
# the medians. On a loaded machine Catch2's means carry the outliers of samples that lost the CPU,
# so the ratio of medians is the steadier of the two.
ratios = {}
summary = os.path.join(os.path.dirname(side_by_side), "summary.json") if side_by_side else ""
if summary and os.path.exists(summary):
    for row in json.load(open(summary)):
        if row["ratios"]:
            mean = sum(row["ratios"]) / len(row["ratios"])
            medians = [c / o for c, o in zip(row["cpp_median"], row["ours_median"]) if o]
            median = f"{sum(medians) / len(medians):.2f}×" if medians else ""
            ratios[f"{group_of(row['key'])}/{row['bench']}"] = (f"{mean:.2f}×", median)

commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
load = open("/proc/loadavg").read().split()[0]
lines = [
    "<!-- bench-table:begin (written by scripts/bench.sh; edit outside the markers) -->",
    f"Machine: {os.cpu_count()} × {cpu}, load {load} at the end; date {datetime.date.today()}; "
    f"commit {commit}{' (with uncommitted changes)' if dirty else ''}; "
    f"criterion mean with its 95 % interval.",
    "",
    "| benchmark | mean | 95 % interval |" + (" Celerity / ours (means) | (medians) |" if ratios else ""),
    "|---|---|---|" + ("---|---|" if ratios else ""),
]
# natural order: "4 nodes" before "16 nodes"
rows.sort(key=lambda r: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", r[0])])
for name, mean, lo, hi in rows:
    by_means, by_medians = ratios.get(name, ("", ""))
    lines.append(f"| {name} | {fmt(mean)} | {fmt(lo)} – {fmt(hi)} |" + (f" {by_means} | {by_medians} |" if ratios else ""))
if side_by_side and os.path.exists(side_by_side):
    lines += ["", "Side by side with C++ Celerity (same sitting, alternating):", "", open(side_by_side).read().strip()]
lines.append("<!-- bench-table:end -->")
table = "\n".join(lines)

text = doc.read_text()
pattern = re.compile(r"<!-- bench-table:begin.*?<!-- bench-table:end -->", re.S)
if pattern.search(text):
    text = pattern.sub(lambda _: table, text)
else:
    text = text.replace("# Benchmarks\n", "# Benchmarks\n\n## Latest figures (`scripts/bench.sh`)\n\n" + table + "\n", 1)
doc.write_text(text)
print(f"wrote {len(rows)} figures to {doc}")
