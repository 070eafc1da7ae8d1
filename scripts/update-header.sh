#!/usr/bin/env bash
# Regenerates include/celerity.h from the Rust sources with cbindgen.
set -euo pipefail
cd "$(dirname "$0")/.."
CELERITY_UPDATE_HEADER=1 cargo test --quiet --test header committed_header_is_up_to_date
echo "include/celerity.h regenerated"
