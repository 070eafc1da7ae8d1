#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, then builds and runs a consumer program against
# that prefix twice: with find_package(Celerity CONFIG REQUIRED) and with pkg-config.
# Usage: run.sh BUILD_DIR WORK_DIR CMAKE C_COMPILER PKG_CONFIG
set -euo pipefail
build_dir=$1 work=$2 cmake=$3 cc=$4 pkg_config=$5
here=$(cd "$(dirname "$0")" && pwd)
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"

"$cmake" --install "$build_dir" --prefix "$prefix" >/dev/null
for f in lib/libcelerity.so lib/libcelerity.a include/celerity.h lib/cmake/Celerity/CelerityConfig.cmake \
         lib/cmake/Celerity/CelerityConfigVersion.cmake lib/pkgconfig/celerity.pc; do
    [[ -f "$prefix/$f" ]] || { echo "missing from the installed tree: $f" >&2; exit 1; }
done

echo "== find_package(Celerity CONFIG REQUIRED)"
"$cmake" -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" >/dev/null
"$cmake" --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer_shared"
"$work/cmake-build/consumer_static"
# The shared consumer must load the installed library, not the one in the build tree.
if command -v ldd >/dev/null; then
    resolved=$(ldd "$work/cmake-build/consumer_shared")
    if [[ "$resolved" != *"$prefix/lib/libcelerity.so"* ]]; then
        echo "consumer_shared does not resolve libcelerity.so from the installed prefix:" >&2
        echo "$resolved" >&2
        exit 1
    fi
fi

echo "== pkg-config --cflags --libs celerity"
[[ -n "$pkg_config" ]] || { echo "pkg-config not found" >&2; exit 1; }
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" "$pkg_config" --cflags --libs celerity)
echo "flags: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror "$here/main.c" $flags -o "$work/consumer_pkgconfig"
LD_LIBRARY_PATH="$prefix/lib" "$work/consumer_pkgconfig"
echo "consumer project: OK"
