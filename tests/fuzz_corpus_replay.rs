//! Replays the saved cargo-fuzz corpus (`fuzz/corpus/<target>/`) through the fuzz targets' logic
//! on the stable toolchain, so every `cargo test` re-checks the inputs the fuzzer found (issue
//! 18). The logic is the fuzz crate's own `src/lib.rs`, included here.

#[allow(dead_code, unused_imports)]
#[path = "../fuzz/src/lib.rs"]
mod fuzz_logic;

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no saved corpus in {}", dir.display());
    inputs
}

fn replay(target: &str, run: fn(&[u8])) {
    for (path, bytes) in corpus(target) {
        let outcome = std::panic::catch_unwind(|| run(&bytes));
        assert!(outcome.is_ok(), "{target}: input {} fails", path.display());
    }
}

#[test]
fn region_algebra_corpus() {
    replay("region_algebra", fuzz_logic::region_algebra);
}

#[test]
fn range_mapper_corpus() {
    replay("range_mapper", fuzz_logic::range_mapper);
}

/// All C API inputs run on this one thread: it becomes the runtime's thread.
#[test]
fn c_api_corpus() {
    replay("c_api", fuzz_logic::c_api);
}
