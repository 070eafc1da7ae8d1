#!/usr/bin/env bash
# On the GPU machine (16 cores): the granularity stencil under `mpirun -n 2` with Open MPI's
# default binding (each of two ranks on one core), with `--bind-to none` (both ranks on all
# cores) and with `--map-by slot:PE=8` (eight cores of its own per rank), alternating, after each
# variant's Cpus_allowed_list, startup line and warnings, from what scripts/gpu-stage.sh staged
# in DIR (and bin/heat, examples/heat.c built against DIR's library, for the startup line).
#   bash scripts/gpu-mpi-binding.sh DIR   (REPS, default 3)
set -uo pipefail
dir=$(cd "${1:?usage: scripts/gpu-mpi-binding.sh DIR}" && pwd)
export CELERITY_LOG_LEVEL=warn
echo "cores $(nproc); $(uptime); commit $(cat "$dir/COMMIT"); $(mpirun --version | head -1)"
m() { timeout 120 mpirun --allow-run-as-root --oversubscribe -n 2 "$@"; }
declare -A variant=([default]="" [none]="--bind-to none" [pe8]="--map-by slot:PE=8")
order="default none pe8"
for v in $order; do
  # shellcheck disable=SC2086 # the variant's arguments are words
  echo "$v: $(m ${variant[$v]} grep Cpus_allowed_list /proc/self/status | tr '\n' ' ')"
  # The startup line and any warning, from a C program (the Rust benches install no logger).
  # shellcheck disable=SC2086
  [ -x "$dir/bin/heat" ] && m ${variant[$v]} -x CELERITY_LOG_LEVEL=info -x CELERITY_DEVICES=host:1 \
    -x LD_LIBRARY_PATH="$dir" "$dir/bin/heat" 64 5 2>&1 | grep -E 'cores:|WARN' | sed "s/^/  $v: /"
done
g() { grep -E 'METG|never|^\| (1000|100|50|20|5|1) µs' | tr '\n' ' '; echo; }
for rep in $(seq "${REPS:-3}"); do
  for v in $order; do
    # shellcheck disable=SC2086
    echo "$v rep $rep: $(m ${variant[$v]} "$dir/bin/granularity" 2>&1 | g)"
  done
done
