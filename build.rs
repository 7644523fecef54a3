//! Generates the C header from src/ffi/ with cbindgen and gives the shared library its SONAME
//! and symbol versions.
//!
//! The header is written to `$OUT_DIR/tensor.h` only: an ordinary build never writes into the
//! source tree (read-only checkouts, Nix, Bazel). The committed `include/tensor.h` is refreshed
//! on request, with `make header` (that is `TENSOR_UPDATE_HEADER=1 cargo build`). When the
//! committed header differs from the fresh one the build prints a warning, the C tests
//! (tests/c_api.rs) fail with the same command, and CI fails.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=include/tensor.h");
    println!("cargo:rerun-if-changed=cmake/tensor.map");
    println!("cargo:rerun-if-env-changed=TENSOR_UPDATE_HEADER");

    // The C test driver (tests/c_api.rs) compiles for the same target.
    println!(
        "cargo:rustc-env=TENSOR_TARGET={}",
        std::env::var("TARGET").unwrap()
    );

    let version = std::env::var("CARGO_PKG_VERSION").unwrap();
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        // SONAME: the major version (0.x releases keep libtensor.so.0; see README, "ABI").
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtensor.so.{major}");
        // Every exported symbol gets the version node TENSOR_0 (cmake/tensor.map).
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
            crate_dir.join("cmake/tensor.map").display()
        );
    }

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is valid");
    // The version macros come from Cargo.toml, the one source of truth for the version.
    let version_macros = format!(
        "\n\n/** libtensor version of this header (Cargo.toml); tensor_version_string() is the\n \
         * loaded library's. */\n\
         #define TENSOR_VERSION_MAJOR {major}\n\
         #define TENSOR_VERSION_MINOR {}\n\
         #define TENSOR_VERSION_PATCH {}\n\
         #define TENSOR_VERSION_STRING \"{version}\"\n",
        std::env::var("CARGO_PKG_VERSION_MINOR").unwrap(),
        std::env::var("CARGO_PKG_VERSION_PATCH").unwrap(),
    );
    config.after_includes = Some(config.after_includes.unwrap_or_default() + &version_macros);
    // Only src/ffi/ is the C API: the core's public Rust items stay out of the header.
    // cbindgen follows the `mod` declarations of src/ffi/mod.rs, so that one file brings in
    // every submodule (listing them too would declare each function twice).
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen could not generate tensor.h");
    let generated = out_dir.join("tensor.h");
    // write_to_file only rewrites the file when its content changes.
    bindings.write_to_file(&generated);
    println!(
        "cargo:rustc-env=TENSOR_GENERATED_HEADER={}",
        generated.display()
    );

    let committed = crate_dir.join("include/tensor.h");
    if std::env::var("TENSOR_UPDATE_HEADER").is_ok_and(|v| v == "1") {
        bindings.write_to_file(&committed);
    } else if std::fs::read(&committed).ok() != std::fs::read(&generated).ok() {
        println!(
            "cargo:warning=include/tensor.h differs from the header generated from src/ffi/: \
             run `make header` (TENSOR_UPDATE_HEADER=1 cargo build) and commit it"
        );
    }
}
