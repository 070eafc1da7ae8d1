#!/usr/bin/env bash
# On the GPU machine (16 cores): the granularity stencil under `mpirun -n 2` with Open MPI's
# default binding (each of two ranks on one core) against `--bind-to none`, alternating, with each
# rank's Cpus_allowed_list and startup line, from what scripts/gpu-stage.sh staged in DIR.
#   bash scripts/gpu-mpi-binding.sh DIR   (REPS, default 3)
set -uo pipefail
dir=$(cd "${1:?usage: scripts/gpu-mpi-binding.sh DIR}" && pwd)
export CELERITY_LOG_LEVEL=warn
echo "cores $(nproc); $(uptime); commit $(cat "$dir/COMMIT"); $(mpirun --version | head -1)"
m() { timeout 120 mpirun --allow-run-as-root --oversubscribe -n 2 "$@"; }
echo "default: $(m grep Cpus_allowed_list /proc/self/status | tr '\n' ' ')"
echo "none:    $(m --bind-to none grep Cpus_allowed_list /proc/self/status | tr '\n' ' ')"
g() { grep -E 'METG|never|^\| (1000|100|20|5|1) µs' | tr '\n' ' '; echo; }
for rep in $(seq "${REPS:-3}"); do
  echo "default rep $rep: $(m "$dir/bin/granularity" 2>&1 | g)"
  echo "none    rep $rep: $(m --bind-to none "$dir/bin/granularity" 2>&1 | g)"
done
