#!/usr/bin/env bash
# Checks every prerequisite of building and testing celerity by the very file or command the build
# uses, installs what is missing with apt-get, and prints one line per prerequisite: where it was
# found, or that it was installed. Idempotent: a second run installs nothing.
#
#   scripts/setup.sh            check and install (needs root or sudo only when something is missing)
#   scripts/setup.sh --check    check only; exit 1 naming what is missing
#
# Without root, sudo or apt-get, a missing prerequisite stops the script with its name and how to
# install it by hand (README, "Prerequisites").
set -uo pipefail

mode=install
case "${1:-}" in
    --check) mode=check ;;
    "") ;;
    *) echo "usage: scripts/setup.sh [--check]" >&2; exit 2 ;;
esac

# The oldest Rust toolchain the crate builds with (Cargo.toml rust-version).
rust_min=1.85

say() { printf 'setup: %-22s %s\n' "$1" "$2"; }

# ---- how each prerequisite is found: the file or command the build itself looks up -----------

# bindgen (through mpi-sys, clang-sys with run-time loading) loads libclang.so, libclang-<N>.so or
# libclang.so.<N> from LIBCLANG_PATH, `llvm-config --libdir`, or the system library directories;
# libclang-cpp.so is a different library and does not count. It also needs clang's own headers
# (stddef.h in clang's resource directory) to parse mpi.h.
find_libclang() {
    local dirs=() d f
    if [[ -n "${LIBCLANG_PATH:-}" ]]; then
        if [[ -f "$LIBCLANG_PATH" ]]; then dirs+=("$(dirname "$LIBCLANG_PATH")"); else dirs+=("$LIBCLANG_PATH"); fi
    fi
    if command -v "${LLVM_CONFIG_PATH:-llvm-config}" >/dev/null 2>&1; then
        dirs+=("$("${LLVM_CONFIG_PATH:-llvm-config}" --libdir 2>/dev/null)")
    fi
    shopt -s nullglob
    dirs+=(/usr/local/llvm*/lib* /usr/local/lib*/*/* /usr/local/lib*/* /usr/local/lib* /usr/lib*/*/* /usr/lib*/* /usr/lib*)
    for d in "${dirs[@]}"; do
        [[ -d "$d" ]] || continue
        for f in "$d"/libclang.so "$d"/libclang-*.so "$d"/libclang.so.* "$d"/libclang-*.so.*; do
            [[ "$(basename "$f")" == libclang-cpp* ]] && continue
            if [[ -e "$f" ]]; then shopt -u nullglob; echo "$f"; return 0; fi
        done
    done
    shopt -u nullglob
    return 1
}

find_clang_headers() {
    local f
    for f in /usr/lib/llvm-*/lib/clang/*/include/stddef.h /usr/lib/clang/*/include/stddef.h \
             /usr/local/lib/clang/*/include/stddef.h; do
        if [[ -e "$f" ]]; then dirname "$f"; return 0; fi
    done
    if [[ -n "${LIBCLANG_PATH:-}" ]]; then
        for f in "$LIBCLANG_PATH"/clang/*/include/stddef.h; do
            if [[ -e "$f" ]]; then dirname "$f"; return 0; fi
        done
    fi
    return 1
}

find_command() { command -v "$1" 2>/dev/null; }

# The distr_io example needs parallel HDF5: examples/CMakeLists.txt looks for the OpenMPI
# flavour's hdf5.h (H5Pset_fapl_mpio) and its libhdf5.so next to it.
find_hdf5_openmpi() {
    local f=/usr/include/hdf5/openmpi/hdf5.h
    [[ -e "$f" ]] && grep -q "define H5_HAVE_PARALLEL 1" /usr/include/hdf5/openmpi/H5pubconf.h 2>/dev/null || return 1
    echo "$f"
}

# mpicc must work, not only exist: build-probe-mpi asks it for the flags (`mpicc -show`).
find_mpicc() {
    local cc
    cc=$(command -v mpicc 2>/dev/null) || return 1
    "$cc" -show >/dev/null 2>&1 || return 1
    echo "$cc"
}

# CMakeLists.txt says cmake_minimum_required(VERSION 3.20).
find_cmake() {
    local cmake version
    cmake=$(command -v cmake 2>/dev/null) || return 1
    version=$("$cmake" --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
    [[ -n "$version" ]] && printf '%s\n%s\n' 3.20 "$version" | sort -V -C || return 1
    echo "$cmake $version"
}

# Debian package that provides each prerequisite, the lookup, and what to tell a user without root.
prereqs=(c-compiler c++-compiler make cmake pkg-config mpicc mpirun libclang clang-headers dot mmdebstrap valgrind hdf5-openmpi)
declare -A package=(
    [c-compiler]=gcc [c++-compiler]=g++ [make]=make [cmake]=cmake [pkg-config]=pkg-config
    [mpicc]=libopenmpi-dev [mpirun]=openmpi-bin [libclang]=libclang-dev [clang-headers]=libclang-dev
    [dot]=graphviz [mmdebstrap]=mmdebstrap [valgrind]=valgrind [hdf5-openmpi]=libhdf5-openmpi-dev
)
declare -A lookup=(
    [c-compiler]="find_command cc" [c++-compiler]="find_command c++" [make]="find_command make"
    [cmake]="find_cmake" [pkg-config]="find_command pkg-config" [mpicc]="find_mpicc"
    [mpirun]="find_command mpirun" [libclang]="find_libclang" [clang-headers]="find_clang_headers"
    [dot]="find_command dot" [mmdebstrap]="find_command mmdebstrap" [valgrind]="find_command valgrind"
    [hdf5-openmpi]="find_hdf5_openmpi"
)
declare -A by_hand=(
    [c-compiler]="a C compiler as cc (gcc or clang)"
    [c++-compiler]="a C++17 compiler as c++ (g++ or clang++)"
    [make]="GNU make"
    [cmake]="CMake >= 3.20 (pip install --user cmake, or a cluster module)"
    [pkg-config]="pkg-config (or pkgconf)"
    [mpicc]="an MPI implementation with mpicc on PATH (module load openmpi; or pass -DCELERITY_ENABLE_MPI=OFF to CMake)"
    [mpirun]="MPI's launcher mpirun on PATH (comes with the MPI implementation)"
    [libclang]="libclang for bindgen: set LIBCLANG_PATH to the directory holding libclang.so (module load llvm; or pip install --user libclang and point LIBCLANG_PATH at its native/ folder)"
    [clang-headers]="clang's resource headers (stddef.h) next to libclang (they come with the LLVM/clang install)"
    [dot]="Graphviz dot (only the graph-rendering tests need it)"
    [mmdebstrap]="mmdebstrap (only scripts/fresh-machine-check.sh needs it, and it runs as root)"
    [valgrind]="valgrind (only the memcheck-labelled ctest tests need it)"
    [hdf5-openmpi]="parallel HDF5 built against the same MPI (only the distr_io example needs it; module load hdf5/parallel)"
)

check_all() {
    missing=()
    declare -gA found=()
    local name where
    for name in "${prereqs[@]}"; do
        if where=$(${lookup[$name]}); then found[$name]=$where; else missing+=("$name"); fi
    done
}

check_all
installed=()
if ((${#missing[@]} > 0)) && [[ $mode == install ]]; then
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo=none; fi
    fi
    if [[ $sudo != none ]] && command -v apt-get >/dev/null; then
        packages=$(for name in "${missing[@]}"; do echo "${package[$name]}"; done | sort -u | tr '\n' ' ')
        echo "setup: installing with apt-get: $packages"
        export DEBIAN_FRONTEND=noninteractive
        # shellcheck disable=SC2086
        if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends $packages >/dev/null; }; then
            echo "setup: apt-get failed to install: $packages" >&2
        fi
        installed=("${missing[@]}")
        check_all
    fi
fi

for name in "${prereqs[@]}"; do
    if [[ -n "${found[$name]:-}" ]]; then
        if [[ " ${installed[*]} " == *" $name "* ]]; then
            say "$name" "installed (${package[$name]}): ${found[$name]}"
        else
            say "$name" "found: ${found[$name]}"
        fi
    fi
done

# ---- the Rust toolchain: never from apt (Debian's rustc is too old); rustup comes with the machine
rust_ok=1
if rustc_version=$(rustc --version 2>/dev/null); then
    v=$(echo "$rustc_version" | awk '{print $2}')
    if printf '%s\n%s\n' "$rust_min" "$v" | sort -V -C; then
        say rustc "found: $(command -v rustc) ($v)"
    else
        say rustc "too old: $v < $rust_min (rustup update stable)"; rust_ok=0
    fi
else
    say rustc "missing: install Rust >= $rust_min with rustup (https://rustup.rs), no root needed"; rust_ok=0
fi
for component in rustfmt clippy; do
    tool=${component/clippy/cargo-clippy}
    if command -v "$tool" >/dev/null && "$tool" --version >/dev/null 2>&1; then
        say "$component" "found: $(command -v "$tool")"
    elif [[ $mode == install ]] && command -v rustup >/dev/null && rustup component add "$component" >/dev/null 2>&1; then
        say "$component" "installed (rustup component add $component)"
    else
        say "$component" "missing: rustup component add $component"; rust_ok=0
    fi
done

if ((${#missing[@]} > 0)) || ((rust_ok == 0)); then
    for name in "${missing[@]}"; do
        say "$name" "MISSING: install ${package[$name]} (apt) or, without root, ${by_hand[$name]}"
    done
    echo "setup: prerequisites missing; see README.md, section Prerequisites" >&2
    exit 1
fi
echo "setup: all prerequisites present"
