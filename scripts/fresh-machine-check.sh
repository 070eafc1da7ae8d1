#!/usr/bin/env bash
# Proves that scripts/setup.sh installs everything the build needs, as a fresh machine sees it:
# builds a minimal Debian root (mmdebstrap, variant minbase: no compiler, no CMake, no MPI, no
# libclang) from this machine's own apt mirror, runs scripts/setup.sh inside it, and then runs the
# build's own lookups there: the Rust library build with every feature (bindgen loading libclang
# through mpi-sys, mpicc for the MPI flags, the C compiler and linker), a CMake configure
# (compilers, MPI, Threads, cargo), pkg-config, and a C program linked against the library.
#
# A system dependency added to the build without adding it to setup.sh fails here.
# Needs root (chroot, mounts); the Rust toolchain of this machine (rustup in $HOME) is mounted
# into the root, as the machine image provides it. Prints a log path on failure.
#
#   scripts/fresh-machine-check.sh           # about 3-6 minutes, mostly downloads and the build
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

if [[ $(id -u) -ne 0 ]]; then
    echo "fresh-machine check: skipped, it needs root (chroot and mounts); CI runs it as root"
    exit 0
fi

# The suite and mirror this machine's apt uses (deb822 sources or the classic sources.list).
. /etc/os-release
suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
mirror=""
for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    mirror=$(awk -v suite="$suite" '
        /^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) s = 1 }
        /^$/ { if (s && uri != "") { print uri; done = 1; exit } uri = ""; s = 0 }
        END { if (!done && s && uri != "") print uri }' "$f")
    [[ -n $mirror ]] && break
done
if [[ -z $mirror && -f /etc/apt/sources.list ]]; then
    mirror=$(awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list)
fi
[[ -n $mirror ]] || { echo "fresh-machine check: no apt mirror for $suite in /etc/apt" >&2; exit 1; }

work=$(mktemp -d /tmp/celerity-fresh.XXXXXX)
log="$work/log"
root="$work/root"
trap 'status=$?; if ((status != 0)); then echo "fresh-machine check FAILED; log: $log" >&2; tail -n 40 "$log" >&2; else rm -rf "$work"; fi' EXIT
echo "fresh-machine check: $suite minbase from $mirror in $root"

# mmdebstrap itself is a prerequisite of this check (scripts/setup.sh installs it).
command -v mmdebstrap >/dev/null || { echo "mmdebstrap missing: run scripts/setup.sh" >&2; exit 1; }
mmdebstrap --variant=minbase --quiet "$suite" "$root" "deb $mirror $suite main" >>"$log" 2>&1

# The project as a fresh clone has it: the files git tracks (and new ones not ignored).
mkdir -p "$root/src/celerity"
git ls-files -z --cached --others --exclude-standard | \
    xargs -0 tar -cf - --ignore-failed-read 2>/dev/null | tar -xf - -C "$root/src/celerity"
cp /etc/resolv.conf "$root/etc/resolv.conf"

rust_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
mkdir -p "$root$rust_home" "$root$rustup_home"

inside=$(cat <<EOF
set -euo pipefail
export PATH="$rust_home/bin:/usr/sbin:/usr/bin:/sbin:/bin" CARGO_HOME="$rust_home" RUSTUP_HOME="$rustup_home"
export HOME=/root CARGO_TERM_COLOR=never
cd /src/celerity
echo "== before setup: what a fresh root lacks"
scripts/setup.sh --check || true
echo "== scripts/setup.sh"
scripts/setup.sh
echo "== scripts/setup.sh --check (second run installs nothing)"
scripts/setup.sh --check
echo "== cargo build --lib --features mpi,cuda (bindgen + libclang, mpicc, cc, linker)"
CARGO_TARGET_DIR=/tmp/target cargo build --offline --locked --lib --features mpi,cuda
echo "== cmake configure (compilers, MPI, Threads, cargo)"
cmake -S . -B /tmp/cmake -DCELERITY_BUILD_TESTS=OFF >/dev/null
echo "== pkg-config, mpicc, a C program linked against the library"
pkg-config --version >/dev/null
mpicc -show >/dev/null
cc -std=c11 -Wall -Werror -Iinclude c_tests/consumer/c/main.c -L/tmp/target/debug -lcelerity -o /tmp/consumer
LD_LIBRARY_PATH=/tmp/target/debug /tmp/consumer
echo "fresh root: OK"
EOF
)

# A private mount namespace: the mounts vanish with the process, whatever happens.
unshare --mount --propagation private bash -c '
    set -e
    root=$1 rust_home=$2 rustup_home=$3 inside=$4
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --bind "$rust_home" "$root$rust_home"
    mount --bind "$rustup_home" "$root$rustup_home"
    chroot "$root" /bin/bash -c "$inside"
' _ "$root" "$rust_home" "$rustup_home" "$inside" >>"$log" 2>&1

grep -E '^setup: ' "$log" | sed -n '/installing/,$p' | sed 's/^/  /'
echo "fresh-machine check: OK (setup installed every prerequisite in a minbase root; the build's lookups succeeded)"
