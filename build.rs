//! Gives the shared library its SONAME and symbol versions and, with the `header` feature,
//! generates the C header from src/ffi/ with cbindgen.
//!
//! The header is committed (`include/tensor.h`), so a consumer's build never compiles
//! cbindgen: generation is opt-in. `cargo build --features header` writes it to
//! `$OUT_DIR/tensor.h` only (an ordinary build never writes into the source tree: read-only
//! checkouts, Nix, Bazel) and warns when the committed one differs; `make header` (that is
//! `TENSOR_UPDATE_HEADER=1 cargo build --features header`) refreshes the committed one, and
//! `make check-header` (run by CI) fails while it is stale.

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cmake/tensor.map");

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

#[cfg(feature = "header")]
mod header {
    use std::path::Path;

    pub fn generate(crate_dir: &Path) {
        let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
        println!("cargo:rerun-if-changed=src/ffi");
        println!("cargo:rerun-if-changed=src/allocator/stats.rs");
        println!("cargo:rerun-if-changed=cbindgen.toml");
        println!("cargo:rerun-if-changed=include/tensor.h");
        println!("cargo:rerun-if-env-changed=TENSOR_UPDATE_HEADER");
        let version = std::env::var("CARGO_PKG_VERSION").unwrap();
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();

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
        config.header = Some(config.header.unwrap_or_default() + &table_of_contents());
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
            crate_dir,
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

    /// The sections of tensor.h, in order: the declarations of each src/ffi/ module form one
    /// (cbindgen emits the functions in module order). Each is opened by a banner, inserted
    /// before the doc comment of the module's first function; docs/c-api.md describes the same
    /// areas for users.
    const SECTIONS: &[(&str, &str)] = &[
        (
            "core",
            "Library: tensor reference counts, errors, dtypes, version",
        ),
        (
            "storage",
            "Storages: untyped bytes, their references, allocators",
        ),
        (
            "tensor",
            "Tensors: creating them and reading their metadata and elements",
        ),
        (
            "view",
            "Views: new metadata over the same storage, no data copied",
        ),
        (
            "copy",
            "Copies: operations that move element data, in-place writes",
        ),
        ("dlpack", "Interop: DLPack import and export"),
        (
            "files",
            "Files: mapped files, shared memory, .safetensors and .npy",
        ),
        (
            "memory",
            "Memory: statistics, the allocator's cache, snapshots",
        ),
    ];

    /// Section 0: what cbindgen emits before the functions.
    const TYPES: &str = "Types and constants: handles, status and dtype codes, structs";

    /// The table of contents appended to the header comment.
    fn table_of_contents() -> String {
        let mut toc = String::from(
        "\n\n/*\n * Contents (each part opens with a banner; docs/c-api.md is the guide by area):\n",
    );
        toc += &format!(" *   0. {TYPES}\n");
        for (i, (_, title)) in SECTIONS.iter().enumerate() {
            toc += &format!(" *   {}. {title}\n", i + 1);
        }
        toc += " */";
        toc
    }

    fn banner(number: usize, title: &str) -> String {
        let rule = "=".repeat(94);
        format!("/* {rule}\n * {number}. {title}\n * {rule} */\n\n")
    }

    /// The name of the first `pub extern "C" fn` of src/ffi/<module>.rs.
    fn first_function(crate_dir: &Path, module: &str) -> String {
        let path = crate_dir.join(format!("src/ffi/{module}.rs"));
        let src =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let key = "pub extern \"C\" fn ";
        let at = src
            .find(key)
            .unwrap_or_else(|| panic!("{} exports no function", path.display()))
            + key.len();
        src[at..]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap()
            .to_string()
    }

    /// Inserts the banner of "types and constants" before the first item after the version
    /// macros, and each section's banner before its first function's doc comment.
    fn with_banners(mut text: String, crate_dir: &Path) -> String {
        let version = text
            .find("#define TENSOR_VERSION_STRING")
            .expect("the version macros");
        let end_of_macros = version + text[version..].find("\n\n").expect("an item after them");
        let first_item = end_of_macros + text[end_of_macros..].len()
            - text[end_of_macros..].trim_start_matches('\n').len();
        text.insert_str(first_item, &banner(0, TYPES));
        for (i, (module, title)) in SECTIONS.iter().enumerate() {
            let name = first_function(crate_dir, module);
            // The declaration: `name(` on a line that is not inside a comment.
            let decl = text
                .match_indices(&format!("{name}("))
                .map(|(at, _)| at)
                .find(|&at| {
                    let line = &text[text[..at].rfind('\n').map_or(0, |n| n + 1)..at];
                    let before = text[..at].chars().next_back();
                    !line.trim_start().starts_with('*')
                        && !line.trim_start().starts_with("/*")
                        && matches!(before, Some(' ' | '*'))
                })
                .unwrap_or_else(|| panic!("tensor.h does not declare {name}"));
            let line = text[..decl].rfind('\n').unwrap() + 1;
            // Back over the doc comment ("/**" ... " */") right above the declaration.
            let start = if text[..line].ends_with(" */\n") {
                text[..line].rfind("/**").expect("the doc comment's start")
            } else {
                line
            };
            text.insert_str(start, &banner(i + 1, title));
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
