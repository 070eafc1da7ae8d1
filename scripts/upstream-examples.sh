#!/usr/bin/env bash
# Acceptance check of the C++ frontend (docs/porting.md): C++ Celerity's own example programs at
# tag v0.7.0, unmodified (sources and CMakeLists.txt), configured and built against this package
# installed into a temporary prefix, then run on host:1, host:4 and under mpirun -n 2.
#
#   scripts/upstream-examples.sh CELERITY_REPO [BUILD_DIR]
#
# CELERITY_REPO: a clone (or bare mirror) of github:celerity/celerity-runtime that has the tag
# v0.7.0; the examples are extracted from it with `git archive` into a scratch directory, never
# into this repository. BUILD_DIR: this project's CMake build tree (default build/), already
# built. Prints one line per example and configuration and exits non-zero if any failed.
# ctest runs it as `upstream_examples` with the repository given at configure time
# (-DCELERITY_UPSTREAM_REPO=<path>); without one the test is skipped (exit 77): CI has neither
# network access nor a copy of the upstream repository.
set -uo pipefail
if [[ -z "${1:-}" ]]; then
    echo "upstream-examples: skipped: no C++ Celerity repository given (usage: scripts/upstream-examples.sh CELERITY_REPO [BUILD_DIR])"
    exit 77
fi
repo=$1
build=$(cd "${2:-build}" && pwd) || exit 2
tag=${CELERITY_UPSTREAM_TAG:-v0.7.0}
cmake=${CMAKE:-cmake}
mpirun=${MPIRUN:-mpirun}
work=$(mktemp -d "${TMPDIR:-/tmp}/celerity-upstream.XXXXXX")
trap 'rm -rf "$work"' EXIT

git -C "$repo" rev-parse --verify -q "$tag^{commit}" >/dev/null \
    || { echo "upstream-examples: $repo has no tag $tag" >&2; exit 2; }
prefix="$work/prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null || { echo "upstream-examples: cmake --install failed" >&2; exit 1; }
mkdir -p "$work/src"
git -C "$repo" archive "$tag" examples | tar -x -C "$work/src" || { echo "upstream-examples: git archive failed" >&2; exit 1; }

# Inputs the examples need: a small RGB image for convolution and reduction (binary PPM, which
# their stb_image reads).
python3 - "$work/image.ppm" <<'EOF'
import sys
w, h = 96, 64
pixels = bytes((x * 255 // w, y * 255 // h, (x ^ y) & 255)[c] for y in range(h) for x in range(w) for c in range(3))
open(sys.argv[1], "wb").write(b"P6\n%d %d\n255\n" % (w, h) + pixels)
EOF

failures=0
result() { printf '%-22s %-6s %s\n' "$1" "$2" "$3"; }

# Debug builds as an upstream developer's (assertions and our accessor boundary checks on,
# matmul at its debug size of 128x128), optimised so the runs stay short.
build_example() {
    local name=$1 dir="$work/src/examples/$1" out="$work/build/$1"
    if ! "$cmake" -S "$dir" -B "$out" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug \
            -DCMAKE_CXX_FLAGS_DEBUG="-O2 -g" >"$work/$name.configure.log" 2>&1; then
        result "$name" configure "FAILED ($(grep -m1 -E 'Error|error' "$work/$name.configure.log"))"
        cat "$work/$name.configure.log" >&2
        return 1
    fi
    if ! "$cmake" --build "$out" >"$work/$name.build.log" 2>&1; then
        result "$name" build "FAILED"
        grep -E 'error' "$work/$name.build.log" | head -20 >&2
        return 1
    fi
    result "$name" build "ok (unchanged sources, $(grep -c 'warning:' "$work/$name.build.log") warning lines)"
}

# run NAME CONFIG DIR COMMAND...: CONFIG is host1, host4 or mpi2.
run() {
    local name=$1 config=$2 dir=$3; shift 3
    local log="$work/${name// /_}.$config.log" rc
    case $config in
        host1) (cd "$dir" && CELERITY_DEVICES=host:1 timeout 300 "$@") >"$log" 2>&1 ;;
        host4) (cd "$dir" && CELERITY_DEVICES=host:4 timeout 300 "$@") >"$log" 2>&1 ;;
        mpi2) (cd "$dir" && timeout 300 "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -n 2 -x CELERITY_DEVICES=host:2 "$@") >"$log" 2>&1 ;;
    esac
    rc=$?
    # The runtime's own warnings and errors (boundary violations, uninitialised reads, ...):
    # an upstream example must run without any.
    local complaints
    complaints=$(grep -c -E '^\[N[0-9]+\] [^ ]+ +(WARN|ERROR)' "$log")
    if ((rc == 0 && complaints > 0)); then
        result "$name" "$config" "FAILED (exit 0, but $complaints runtime warning/error line(s))"
        grep -E '^\[N[0-9]+\] [^ ]+ +(WARN|ERROR)' "$log" | head -5 >&2
        failures=$((failures + 1))
        return 1
    elif ((rc == 0)); then
        result "$name" "$config" "pass$(grep -m1 -o -E 'Verification passed|Hello World!|Files are equal|Minimum|[Mm]ax(imum)?[^,]*' "$log" | head -1 | sed 's/^/ (/; s/$/)/')"
    else
        result "$name" "$config" "FAILED (exit $rc)"
        tail -20 "$log" >&2
        failures=$((failures + 1))
    fi
    return $rc
}

for name in hello_world matmul syncing wave_sim convolution reduction distr_io; do
    if [[ $name == distr_io ]] && ! pkg-config --exists hdf5-openmpi 2>/dev/null; then
        result "$name" build "skipped (no parallel HDF5: libhdf5-openmpi-dev)"
        continue
    fi
    build_example "$name" || { failures=$((failures + 1)); continue; }
    bin="$work/build/$name/$name"
    for config in host1 host4 mpi2; do
        d="$work/run.$name.$config"
        mkdir -p "$d"
        case $name in
            convolution | reduction) run "$name" "$config" "$d" "$bin" "$work/image.ppm" ;;
            distr_io)
                # generate, transpose twice, compare with the original (equal) and with the
                # single transpose (not equal: the compare must see a difference).
                run "$name --generate" "$config" "$d" "$bin" --generate in.h5 \
                    && run "$name --transpose" "$config" "$d" "$bin" --transpose in.h5 t.h5 \
                    && run "$name --transpose" "$config" "$d" "$bin" --transpose t.h5 tt.h5 \
                    && run "$name --compare" "$config" "$d" "$bin" --compare in.h5 tt.h5 \
                    && if (cd "$d" && CELERITY_DEVICES=host:1 timeout 300 "$bin" --compare in.h5 t.h5) >"$work/$name.neq.log" 2>&1; then
                        result "$name" "$config" "FAILED (--compare of a matrix and its transpose said equal)"
                        failures=$((failures + 1))
                    fi
                ;;
            *) run "$name" "$config" "$d" "$bin" ;;
        esac
    done
done
if ((failures > 0)); then
    echo "upstream-examples: $failures failure(s)"
    exit 1
fi
echo "upstream-examples: all passed"
