//! What libtensor ships, checked on the libraries cmake/stage.sh makes from the static
//! library cargo built for this test run (the same script `make` and the CMake build use):
//! - libtensor.a has no global symbol but the public tensor_* / storage_* API, and links into
//!   one C program beside a second Rust static library (tests/second_staticlib/);
//! - libtensor.so exports only the API, every symbol with the version node TENSOR_0, under the
//!   SONAME libtensor.so.MAJOR;
//! - cmake/static-libs.txt is the list `rustc --print native-static-libs` gives (less -lgcc_s);
//! - the version macros of include/tensor.h, tensor_version_string() and the SONAME all agree
//!   with Cargo.toml.
//!
//! Needs binutils (ld, objcopy, ar, readelf), a C compiler and rustc, as the C tests do.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// target/<profile>/deps, where cargo builds every artifact of this run (the test binary and
/// the library's libtensor.a). Only `cargo build` also copies libtensor.a up to
/// target/<profile>/, so a bare `cargo test` on a fresh clone leaves it here alone; the copy
/// up there can also be older than this run's.
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().to_path_buf()
}

/// target/<profile>, for this test's scratch directories.
fn profile_dir() -> PathBuf {
    deps_dir().parent().unwrap().to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{cmd:?} failed ({}):\n{text}", o.status);
    text
}

/// Stages the libraries into a directory of its own (tests run in parallel).
fn stage(name: &str) -> PathBuf {
    let out = profile_dir().join("packaging_test").join(name);
    let _ = std::fs::remove_dir_all(&out);
    run(Command::new("sh")
        .arg(manifest_dir().join("cmake/stage.sh"))
        .arg(deps_dir().join("libtensor.a"))
        .arg(&out)
        .arg(env!("CARGO_PKG_VERSION")));
    out
}

/// (binding, name) of every defined global or weak symbol readelf lists for `file`;
/// `dynamic` reads the dynamic symbol table (names keep their @@VERSION).
fn defined_globals(file: &Path, dynamic: bool) -> Vec<(String, String)> {
    let text = run(Command::new("readelf")
        .arg(if dynamic { "--dyn-syms" } else { "-s" })
        .arg("-W")
        .arg(file));
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // Num: Value Size Type Bind Vis Ndx Name
            (f.len() >= 8 && (f[4] == "GLOBAL" || f[4] == "WEAK") && f[6] != "UND")
                .then(|| (f[4].to_string(), f[7].to_string()))
        })
        .collect()
}

/// The functions include/tensor.h declares (`<type> tensor_x(` / `storage_x(` lines).
fn header_functions() -> Vec<String> {
    let header = std::fs::read_to_string(manifest_dir().join("include/tensor.h")).unwrap();
    let mut names: Vec<String> = header
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#') && !l.starts_with("typedef"))
        .filter_map(|l| {
            let open = l.find('(')?;
            let name = l[..open].rsplit([' ', '*']).next()?;
            (name.starts_with("tensor_") || name.starts_with("storage_")).then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// cmake/static-libs.txt: the native libraries a consumer links libtensor.a with, the one list
/// every build reads (tensor.pc's Libs.private, the CMake targets, Meson, Conan, cmake/sizes.sh).
fn static_libs() -> Vec<String> {
    let text = std::fs::read_to_string(manifest_dir().join("cmake/static-libs.txt")).unwrap();
    assert_eq!(text.lines().count(), 1, "cmake/static-libs.txt is one line");
    text.split_whitespace().map(str::to_string).collect()
}

/// cmake/static-libs.txt is what rustc says the static library needs (`--print
/// native-static-libs`, for a staticlib of this run's libtensor rlib: the same crate graph),
/// less the unwinder -lgcc_s, which the C driver adds itself (and `cc -static` would not find)
/// and cmake/stage.sh names for the shared library.
#[test]
fn static_libs_txt_is_what_rustc_prints_less_the_unwinder() {
    let dir = profile_dir().join("packaging_test").join("native_libs");
    std::fs::create_dir_all(&dir).unwrap();
    let probe = dir.join("probe.rs");
    std::fs::write(&probe, "extern crate tensor;\n").unwrap();
    let out = run(
        Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args([
                "--edition",
                "2021",
                "--crate-type",
                "staticlib",
                "--crate-name",
                "probe",
            ])
            .args(["--print", "native-static-libs", "--extern"])
            .arg(format!(
                "tensor={}",
                deps_dir().join("libtensor.rlib").display()
            ))
            .arg("-L")
            .arg(format!("dependency={}", deps_dir().display()))
            .arg(&probe)
            .arg("-o")
            .arg(dir.join("libprobe.a")),
    );
    let printed: Vec<String> = out
        .lines()
        .find_map(|l| l.split("native-static-libs:").nth(1))
        .unwrap_or_else(|| panic!("rustc printed no native-static-libs:\n{out}"))
        .split_whitespace()
        .filter(|l| *l != "-lgcc_s")
        .map(str::to_string)
        .collect();
    assert_eq!(
        static_libs(),
        printed,
        "cmake/static-libs.txt is not rustc's native-static-libs less -lgcc_s"
    );
}

#[test]
fn static_archive_exports_only_the_api_and_links_beside_another_rust_staticlib() {
    let stage = stage("static");
    let archive = stage.join("libtensor.a");
    let mut exported: Vec<String> = defined_globals(&archive, false)
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    exported.sort();
    let api = header_functions();
    assert!(
        api.len() > 50,
        "only {} functions found in tensor.h",
        api.len()
    );
    assert_eq!(
        exported, api,
        "libtensor.a's global symbols are not exactly the functions of tensor.h"
    );

    // A second Rust static library, with its own copy of the standard library.
    let second_dir = manifest_dir().join("tests/second_staticlib");
    let second = stage.join("libsecond.a");
    run(
        Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["--edition", "2021", "--crate-type", "staticlib"])
            .args(["-C", "panic=unwind", "-C", "opt-level=1"])
            .arg(second_dir.join("second.rs"))
            .arg("-o")
            .arg(&second),
    );
    let exe = stage.join("two_rust_staticlibs");
    run(
        Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I"])
            .arg(manifest_dir().join("include"))
            .arg(second_dir.join("main.c"))
            .arg(&archive)
            .arg(&second)
            .args(static_libs())
            .arg("-o")
            .arg(&exe),
    );
    let out = run(&mut Command::new(&exe));
    assert!(
        out.contains("second_sum(10) = 55"),
        "unexpected output: {out}"
    );
}

#[test]
fn shared_library_is_versioned_and_exports_only_the_api() {
    let stage = stage("shared");
    let lib = stage.join(format!("libtensor.so.{}", env!("CARGO_PKG_VERSION")));
    let mut exported: Vec<String> = Vec::new();
    for (_, name) in defined_globals(&lib, true) {
        if name == "TENSOR_0" {
            continue; // the version node's own symbol
        }
        let base = name.strip_suffix("@@TENSOR_0").unwrap_or_else(|| {
            panic!("{name} is exported without the version TENSOR_0");
        });
        exported.push(base.to_string());
    }
    exported.sort();
    assert_eq!(
        exported,
        header_functions(),
        "libtensor.so's exports are not exactly the functions of tensor.h"
    );
    let dynamic = run(Command::new("readelf").arg("-d").arg(&lib));
    let soname = format!("[libtensor.so.{}]", env!("CARGO_PKG_VERSION_MAJOR"));
    assert!(
        dynamic
            .lines()
            .any(|l| l.contains("(SONAME)") && l.contains(&soname)),
        "SONAME is not {soname}:\n{dynamic}"
    );
    // Stripped, with its debug info beside it.
    let sections = run(Command::new("readelf").arg("-SW").arg(&lib));
    assert!(!sections.contains(".debug_info"), "the .so is not stripped");
    assert!(sections.contains(".gnu_debuglink"), "no .gnu_debuglink");
    let debug = run(Command::new("readelf")
        .arg("-SW")
        .arg(stage.join(format!("libtensor.so.{}.debug", env!("CARGO_PKG_VERSION")))));
    assert!(
        debug.contains(".debug_info"),
        "the .debug file has no debug info"
    );
}

#[test]
fn versions_agree_with_cargo_toml() {
    let header = std::fs::read_to_string(manifest_dir().join("include/tensor.h")).unwrap();
    let define = |name: &str| -> String {
        let prefix = format!("#define {name} ");
        header
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("tensor.h does not define {name}"))
            .trim()
            .to_string()
    };
    assert_eq!(
        define("TENSOR_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MAJOR")
    );
    assert_eq!(
        define("TENSOR_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_MINOR")
    );
    assert_eq!(
        define("TENSOR_VERSION_PATCH"),
        env!("CARGO_PKG_VERSION_PATCH")
    );
    assert_eq!(
        define("TENSOR_VERSION_STRING"),
        format!("\"{}\"", env!("CARGO_PKG_VERSION"))
    );
    // SAFETY: tensor_version_string returns a static NUL-terminated string.
    let lib = unsafe { CStr::from_ptr(tensor::ffi::core::tensor_version_string()) };
    assert_eq!(lib.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    // The Makefile and CMakeLists.txt read the version from Cargo.toml, not a copy of it.
    for file in ["Makefile", "CMakeLists.txt"] {
        let text = std::fs::read_to_string(manifest_dir().join(file)).unwrap();
        assert!(
            text.contains("Cargo.toml") && !text.contains(env!("CARGO_PKG_VERSION")),
            "{file} must take the version from Cargo.toml, not spell it"
        );
    }
}
