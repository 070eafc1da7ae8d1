#!/usr/bin/env python3
"""Counts the locked (atomic read-modify-write) instructions a run executed, per function.

Each `lock`-prefixed instruction (an `Arc` clone or drop, `Arc::get_mut`'s compare-exchange) is
cheap on some CPUs and costs tens of cycles on others (the device hosts' Xeons), which
instruction counts do not show. Profile with instruction-level positions, then count:

    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --callgrind-out-file=cg.out \\
        BINARY ARGS...
    scripts/locked-ops.py BINARY cg.out [TOP]

BINARY must be the profiled executable (its `objdump -d` gives the instruction addresses; a
position-independent executable's addresses in the profile are those of the file). Prints the
total and the TOP (default 15) functions with the most executed locked instructions.
"""
import re
import subprocess
import sys


def locked_instructions(binary):
    """Address -> function of every lock-prefixed instruction in `binary`."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", binary],
                         capture_output=True, text=True, check=True).stdout
    locks, function = {}, None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            function = m.group(2)
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s+lock ", line)
        if m:
            locks[int(m.group(1), 16)] = function
    return locks


def executions(profile):
    """Address -> executions, from a callgrind profile with `--dump-instr=yes
    --compress-pos=no` (cost lines `0xADDR LINE Ir`)."""
    counts = {}
    with open(profile) as f:
        for line in f:
            m = re.match(r"^(0x[0-9a-f]+)\s+\S+\s+(\d+)", line)
            if m:
                address = int(m.group(1), 16)
                counts[address] = counts.get(address, 0) + int(m.group(2))
    return counts


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, profile = sys.argv[1], sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    locks = locked_instructions(binary)
    per_function = {}
    for address, count in executions(profile).items():
        function = locks.get(address)
        if function is not None:
            per_function[function] = per_function.get(function, 0) + count
    print(f"locked instructions executed: {sum(per_function.values())}")
    for function, count in sorted(per_function.items(), key=lambda x: -x[1])[:top]:
        print(f"{count:>10}  {function[:160]}")


if __name__ == "__main__":
    main()
