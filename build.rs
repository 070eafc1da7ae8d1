//! Gives the shared library a SONAME, so programs linked against it record `libcelerity.so`
//! (found through their rpath or the loader's search path) instead of the absolute path of the
//! file they were linked with.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcelerity.so");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
