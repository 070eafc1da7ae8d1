#!/usr/bin/env bash
# Runs PROGRAM on 2 MPI ranks with 2 emulated devices each and checks that every node's log starts
# with the startup line (version, node and node count, devices, communicator, cores: unbound, the two
# ranks share them) and the program passes. Usage: startup_line.sh MPIEXEC PROGRAM [ARGS...]
set -euo pipefail
mpiexec=$1; shift
out=$(timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -n 2 -x CELERITY_DEVICES=host:2 \
      -x CELERITY_LOG_LEVEL=INFO "$@" 2>&1)
echo "$out"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$(dirname "$0")/../Cargo.toml" | head -n1)
for node in 0 1; do
    pattern="^\[N$node\] .* INFO celerity $version \(Rust runtime\), node $node of 2; devices: 2 emulated host device\(s\) \(host memory, direct peer copies\); communicator: MPI \(.+\); cores: [0-9]+ of [0-9]+, shared by 2 processes$"
    if ! grep -Eq "$pattern" <<<"$out"; then
        echo "no startup line for node $node matching: $pattern" >&2
        exit 1
    fi
done
grep -q 'check: OK' <<<"$out" || { echo "the program's check did not pass" >&2; exit 1; }
echo "startup lines: OK"
