#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, then builds and runs consumer programs against that
# prefix the ways users do: CMake projects with find_package(Celerity CONFIG REQUIRED) that enable
# only C, only C++, or both with MPI of their own, each linking the shared and the static library;
# and pkg-config, shared and --static.
# Usage: run.sh BUILD_DIR WORK_DIR CMAKE C_COMPILER CXX_COMPILER PKG_CONFIG
set -euo pipefail
build_dir=$1 work=$2 cmake=$3 cc=$4 cxx=$5 pkg_config=$6
here=$(cd "$(dirname "$0")" && pwd)
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"

"$cmake" --install "$build_dir" --prefix "$prefix" >/dev/null
for f in lib/libcelerity.so lib/libcelerity.a include/celerity.h lib/cmake/Celerity/CelerityConfig.cmake \
         lib/cmake/Celerity/CelerityConfigVersion.cmake lib/pkgconfig/celerity.pc \
         lib/pkgconfig/celerity-shared-library.pc; do
    [[ -f "$prefix/$f" ]] || { echo "missing from the installed tree: $f" >&2; exit 1; }
done
# The installed libraries carry no debug info (split off for the shared library).
if command -v readelf >/dev/null; then
    if readelf -S "$prefix/lib/libcelerity.so" | grep -q '\.debug_info'; then
        echo "the installed libcelerity.so still has debug info" >&2; exit 1
    fi
    readelf -S "$prefix/lib/libcelerity.so" | grep -q '\.gnu_debuglink' \
        || { echo "the installed libcelerity.so has no .gnu_debuglink" >&2; exit 1; }
fi
echo "installed sizes: $(du -h "$prefix/lib/libcelerity.so" "$prefix/lib/libcelerity.a" | awk '{printf "%s %s  ", $2, $1}')"

# Fails unless `binary` resolves libcelerity.so from the installed prefix.
expect_installed_shared() {
    local resolved
    resolved=$(ldd "$1")
    if [[ "$resolved" != *"$prefix/lib/libcelerity.so"* ]]; then
        echo "$1 does not resolve libcelerity.so from the installed prefix:" >&2
        echo "$resolved" >&2
        exit 1
    fi
}
# Fails if `binary` needs libcelerity.so at all (it was meant to be linked statically).
expect_static() {
    if readelf -d "$1" | grep -q 'libcelerity'; then
        echo "$1 was meant to link libcelerity statically but needs the shared library:" >&2
        readelf -d "$1" | grep NEEDED >&2
        exit 1
    fi
}

# project name, then pairs of (binary, shared|static)
cmake_consumer() {
    local project=$1; shift
    echo "== find_package(Celerity CONFIG REQUIRED) in the $project project"
    "$cmake" -S "$here/$project" -B "$work/$project" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >"$work/$project.log" 2>&1 \
        || { cat "$work/$project.log" >&2; exit 1; }
    "$cmake" --build "$work/$project" >>"$work/$project.log" 2>&1 || { cat "$work/$project.log" >&2; exit 1; }
    while (($# > 0)); do
        local binary="$work/$project/$1" kind=$2; shift 2
        if [[ $kind == shared ]]; then expect_installed_shared "$binary"; else expect_static "$binary"; fi
        "$binary"
    done
}
cmake_consumer c consumer_shared shared consumer_static static
cmake_consumer cxx consumer_cxx_shared shared consumer_cxx_static static
cmake_consumer mixed consumer_mixed shared consumer_mixed_cxx_static static
cmake_consumer celerity07 consumer_celerity07 shared

[[ -n "$pkg_config" ]] || { echo "pkg-config not found" >&2; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
echo "== pkg-config --cflags --libs celerity"
flags=$("$pkg_config" --cflags --libs celerity)
echo "flags: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror "$here/c/main.c" $flags -o "$work/consumer_pkgconfig"
LD_LIBRARY_PATH="$prefix/lib" expect_installed_shared "$work/consumer_pkgconfig"
LD_LIBRARY_PATH="$prefix/lib" "$work/consumer_pkgconfig"

echo "== pkg-config --static --cflags --libs celerity"
flags=$("$pkg_config" --static --cflags --libs celerity)
echo "flags: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror "$here/c/main.c" $flags -o "$work/consumer_pkgconfig_static"
expect_static "$work/consumer_pkgconfig_static"
"$work/consumer_pkgconfig_static"
echo "consumer projects: OK"
