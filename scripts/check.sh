#!/usr/bin/env bash
# Quick pre-commit check: formatting, lints (all features) and the library's unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --quiet --all-targets --all-features -- -D warnings
cargo test --quiet --all-features --lib
cargo test --quiet --test header
