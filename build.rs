//! Gives the shared library its SONAME and symbol versions and, with the `header` feature,
//! generates the C header from src/ffi/ with cbindgen.
//!
//! The header is committed (`include/tensor.h`), so a consumer's build never compiles
//! cbindgen: generation is opt-in. `cargo build --features header` writes it to
//! `$OUT_DIR/tensor.h` only (an ordinary build never writes into the source tree: read-only
//! checkouts, Nix, Bazel) and warns when the committed one differs; `make header` (that is
//! `TENSOR_UPDATE_HEADER=1 cargo build --features header`) refreshes the committed one, and
//! `make check-header` (run by CI) fails while it is stale. The header's sections are the
//! `pub mod`s of src/ffi/mod.rs, each titled by its first `//!` line, read with the tests'
//! model of the header (tests/support/header_model.rs), which also writes the banners.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=build.rs");
    // By its absolute path, as the link argument below names it: two checkouts built into one
    // CARGO_TARGET_DIR share this script's output (cargo keys it by the path inside the
    // workspace), and a reused output naming a checkout since deleted must run again.
    println!(
        "cargo:rerun-if-changed={}",
        crate_dir.join("cmake/tensor.map").display()
    );

    // `cfg(tensor_asan)`: this build is instrumented by AddressSanitizer (nightly
    // `-Zsanitizer=address`, .ci/prove.sh asan), so src/sanitizer.rs links ASan's interface
    // directly (a test executable's static ASan runtime need not export it to dlsym).
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let rustflags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if rustflags.split('\x1f').any(|f| {
        f.trim_start_matches("-Z")
            .strip_prefix("sanitizer=")
            .is_some_and(|list| list.split(',').any(|s| s == "address"))
    }) {
        println!("cargo:rustc-cfg=tensor_asan");
    }

    // `cfg(tensor_tls_descriptor)`: the per-thread caches are reached through a TLS
    // descriptor written in `asm!` (src/allocator/thread.rs): x86_64 Linux with glibc, not
    // under Miri (which runs no `asm!`; cargo miri shows build scripts `CARGO_CFG_MIRI`).
    let cfg = |k: &str| std::env::var(format!("CARGO_CFG_{k}")).ok();
    if cfg("TARGET_ARCH").as_deref() == Some("x86_64")
        && cfg("TARGET_OS").as_deref() == Some("linux")
        && cfg("TARGET_ENV").as_deref() == Some("gnu")
        && cfg("MIRI").is_none()
    {
        println!("cargo:rustc-cfg=tensor_tls_descriptor");
    }

    // The C test driver (tests/c_api.rs) compiles for the same target.
    println!(
        "cargo:rustc-env=TENSOR_TARGET={}",
        std::env::var("TARGET").unwrap()
    );

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

    #[cfg(feature = "header")]
    header::generate(&crate_dir);
}

// The sources' sections and the header's banners, shared with the tests' model of the header.
#[cfg(feature = "header")]
#[path = "tests/support/header_model.rs"]
mod header_model;

#[cfg(feature = "header")]
mod header {
    use super::header_model as model;
    use std::path::Path;

    pub fn generate(crate_dir: &Path) {
        let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
        println!("cargo:rerun-if-changed=src/ffi");
        println!("cargo:rerun-if-changed=src/allocator/stats.rs");
        println!("cargo:rerun-if-changed=tests/support/header_model.rs");
        println!("cargo:rerun-if-changed=cbindgen.toml");
        println!("cargo:rerun-if-changed=include/tensor.h");
        println!("cargo:rerun-if-env-changed=TENSOR_UPDATE_HEADER");
        let version = std::env::var("CARGO_PKG_VERSION").unwrap();
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
        let (types, sections) = sections(crate_dir);

        let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
            .expect("cbindgen.toml is valid");
        // The version macros come from Cargo.toml, the one source of truth for the version;
        // the banner of the types and constants follows them (cbindgen emits those next).
        let version_macros = format!(
        "\n\n/** libtensor version of this header (Cargo.toml); tensor_version_string() is the\n \
         * loaded library's. */\n\
         #define TENSOR_VERSION_MAJOR {major}\n\
         #define TENSOR_VERSION_MINOR {}\n\
         #define TENSOR_VERSION_PATCH {}\n\
         #define TENSOR_VERSION_STRING \"{version}\"\n\n\n{}",
        std::env::var("CARGO_PKG_VERSION_MINOR").unwrap(),
        std::env::var("CARGO_PKG_VERSION_PATCH").unwrap(),
        model::banner(&types).trim_end(),
    );
        config.after_includes = Some(config.after_includes.unwrap_or_default() + &version_macros);
        // Only src/ffi/ is the C API: the core's public Rust items stay out of the header.
        // cbindgen follows the `mod` declarations of src/ffi/mod.rs, so that one file brings in
        // every submodule (listing them too would declare each function twice).
        config.header =
            Some(config.header.unwrap_or_default() + &table_of_contents(&types, &sections));
        let bindings = cbindgen::Builder::new()
            .with_config(config)
            .with_src(crate_dir.join("src/ffi/mod.rs"))
            // The memory statistics struct is the core's own (`tensor_memory_stats_t`,
            // renamed in cbindgen.toml): one struct for the core and the C API.
            .with_src(crate_dir.join("src/allocator/stats.rs"))
            .generate()
            .expect("cbindgen could not generate tensor.h");
        let mut text = Vec::new();
        bindings.write(&mut text);
        let text = with_banners(
            String::from_utf8(text).expect("cbindgen writes UTF-8"),
            &sections,
        );
        let generated = out_dir.join("tensor.h");
        write_if_changed(&generated, &text);
        println!(
            "cargo:rustc-env=TENSOR_GENERATED_HEADER={}",
            generated.display()
        );

        let committed = crate_dir.join("include/tensor.h");
        if std::env::var("TENSOR_UPDATE_HEADER").is_ok_and(|v| v == "1") {
            write_if_changed(&committed, &text);
        } else if std::fs::read(&committed).ok().as_deref() != Some(text.as_bytes()) {
            println!(
                "cargo:warning=include/tensor.h differs from the header generated from src/ffi/: \
             run `make header` and commit it"
            );
        }
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The title of the types and constants (src/ffi/mod.rs's), and (title, first function)
    /// of each section: the `pub mod`s of src/ffi/mod.rs in order (header_model.rs).
    fn sections(crate_dir: &Path) -> (String, Vec<(String, String)>) {
        let ffi = crate_dir.join("src/ffi");
        let mod_rs = read(&ffi.join("mod.rs"));
        let title = |path: &Path, src: &str| {
            model::module_title(src)
                .unwrap_or_else(|| panic!("{}: no `//!` title line", path.display()))
                .to_string()
        };
        let types = title(&ffi.join("mod.rs"), &mod_rs);
        let sections = model::api_modules(&mod_rs)
            .into_iter()
            .map(|module| {
                let path = ffi.join(format!("{module}.rs"));
                let src = read(&path);
                let first = model::first_exported_fn(&src)
                    .unwrap_or_else(|| panic!("{} exports no function", path.display()));
                (title(&path, &src), first.to_string())
            })
            .collect();
        (types, sections)
    }

    /// The table of contents appended to the header comment.
    fn table_of_contents(types: &str, sections: &[(String, String)]) -> String {
        let mut toc = String::from(
            "\n\n/*\n * Contents (each part opens with a banner of its title; docs/c-api.md has a \
             section of each):\n",
        );
        toc += &format!(" *   {types}\n");
        for (title, _) in sections {
            toc += &format!(" *   {title}\n");
        }
        toc += " */";
        toc
    }

    /// Inserts each section's banner before its first function (its doc comment).
    fn with_banners(mut text: String, sections: &[(String, String)]) -> String {
        let header = model::parse_header(&text);
        let mut at: Vec<(usize, &str)> = sections
            .iter()
            .map(|(title, first)| {
                let f = header
                    .function(first)
                    .unwrap_or_else(|| panic!("tensor.h does not declare {first}"));
                (f.start, title.as_str())
            })
            .collect();
        // From the end, so that the offsets before each insertion still hold.
        at.sort_by_key(|&(start, _)| std::cmp::Reverse(start));
        for (start, title) in at {
            text.insert_str(start, &model::banner(title));
        }
        text
    }

    /// Writes `text` to `path` unless it already holds exactly that (no needless rebuilds).
    fn write_if_changed(path: &Path, text: &str) {
        if std::fs::read(path).ok().as_deref() != Some(text.as_bytes()) {
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}
