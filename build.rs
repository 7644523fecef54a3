//! Generates include/tensor.h from the Rust source with cbindgen (committed; CI checks that
//! it is fresh) and gives the shared library its SONAME.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");

    // The C test driver (tests/c_api.rs) compiles for the same target.
    println!(
        "cargo:rustc-env=TENSOR_TARGET={}",
        std::env::var("TARGET").unwrap()
    );

    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtensor.so.0");
    }

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is valid");
    // Only src/ffi/ is the C API: the core's public Rust items stay out of the header.
    // cbindgen follows the `mod` declarations of src/ffi/mod.rs, so that one file brings in
    // every submodule (listing them too would declare each function twice).
    let builder = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/ffi/mod.rs"));
    let bindings = builder
        .generate()
        .expect("cbindgen could not generate include/tensor.h");
    // write_to_file only rewrites the file when its content changes.
    bindings.write_to_file(crate_dir.join("include/tensor.h"));
}
