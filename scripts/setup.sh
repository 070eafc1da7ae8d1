#!/usr/bin/env bash
# Installs what building and testing celerity needs, with apt-get, only when it is missing.
# Idempotent: a second run installs nothing. Needs root or sudo when something is missing.
set -euo pipefail

# package -> a file that proves it is installed
declare -A wanted=(
    [cmake]=/usr/bin/cmake
    [pkg-config]=/usr/bin/pkg-config
    [make]=/usr/bin/make
    [g++]=/usr/bin/g++
    [libopenmpi-dev]=/usr/bin/mpicc
    [openmpi-bin]=/usr/bin/mpirun
    [libclang-dev]=/usr/lib/llvm-14/lib/libclang.so
    [graphviz]=/usr/bin/dot
)

missing=()
for package in "${!wanted[@]}"; do
    if [[ ! -e "${wanted[$package]}" ]] && ! dpkg -s "$package" >/dev/null 2>&1; then
        missing+=("$package")
    fi
done
# libclang: any LLVM version will do for rsmpi's bindgen.
if [[ " ${missing[*]} " == *" libclang-dev "* ]] && compgen -G "/usr/lib/llvm-*/lib/libclang*.so*" >/dev/null; then
    missing=("${missing[@]/libclang-dev}")
fi
missing=($(printf '%s\n' "${missing[@]}" | sed '/^$/d' | sort))

if ((${#missing[@]} == 0)); then
    echo "setup: everything needed is installed"
else
    echo "setup: installing ${missing[*]}"
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Rust toolchain comes with the machine (rustup); make sure the linters are there.
if command -v rustup >/dev/null; then
    for component in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$component" || rustup component add "$component"
    done
fi
