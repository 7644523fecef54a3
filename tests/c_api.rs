//! Builds every C (`c_tests/*.c`, C99) and C++ (`c_tests/*.cpp`, C++17) test program
//! against `include/tensor.h` with `-Wall -Wextra -pedantic -Werror`, links it to the real
//! `libtensor.so` that cargo built for this test run, and runs it. Each program prints
//! "<name>: N passed, N failed" and exits non-zero on any failure.
//!
//! `TENSOR_VALGRIND=1` runs each program under
//! `valgrind --error-exitcode=1 --leak-check=full` (zero errors, zero leaks required).
//!
//! `TENSOR_SANITIZE=address,undefined` (any `-fsanitize=` list) compiles each program with
//! those sanitizers (`-fno-sanitize-recover=all`: the first report fails the program; the
//! AddressSanitizer's leak checker is on), against whichever libtensor.so this build made,
//! e.g. one built with `RUSTFLAGS=-Zsanitizer=address` (see .ci/prove.sh). `TENSOR_CC` /
//! `TENSOR_CXX` override the compilers.
//!
//! `TENSOR_TEST_LIB=path/to/libtensor.so` links the programs to that library instead, e.g.
//! the release build (`cargo build --release`), whose integer arithmetic wraps where the
//! debug build's panics: both must answer the same documented statuses.

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cdylib cargo built alongside this test binary (target/<profile>/deps), copied into
/// its own directory with the SONAME link (`libtensor.so.0`) the programs will ask for.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let chosen = std::env::var_os("TENSOR_TEST_LIB").map(PathBuf::from);
    let built = match &chosen {
        Some(p) => {
            assert!(p.exists(), "TENSOR_TEST_LIB={} does not exist", p.display());
            p.clone()
        }
        None => [
            deps.join("libtensor.so"),
            deps.parent().unwrap().join("libtensor.so"),
        ]
        .into_iter()
        .find(|p| p.exists())
        .expect("libtensor.so was not built next to the test binary"),
    };
    println!("C tests linked to {}", built.display());
    // A directory of its own per library, so that two runs do not overwrite each other.
    let sub = if chosen.is_some() {
        "lib-chosen"
    } else {
        "lib"
    };
    let dir = deps.parent().unwrap().join("c_tests").join(sub);
    std::fs::create_dir_all(&dir).unwrap();
    let dst = dir.join("libtensor.so");
    std::fs::copy(&built, &dst).unwrap();
    let soname = dir.join("libtensor.so.0");
    let _ = std::fs::remove_file(&soname);
    std::os::unix::fs::symlink("libtensor.so", &soname).unwrap();
    dir
}

fn sanitizers() -> Option<String> {
    std::env::var("TENSOR_SANITIZE")
        .ok()
        .filter(|s| !s.is_empty())
}

fn compiler(cpp: bool) -> cc::Tool {
    let mut b = cc::Build::new();
    if let Ok(c) = std::env::var(if cpp { "TENSOR_CXX" } else { "TENSOR_CC" }) {
        b.compiler(c);
    }
    b.cargo_metadata(false)
        .cpp(cpp)
        .opt_level(1)
        .debug(true)
        .target(env!("TENSOR_TARGET"))
        .host(env!("TENSOR_TARGET"))
        .get_compiler()
}

fn build(src: &Path, lib: &Path, out: &Path) -> Result<(), String> {
    let cpp = src.extension().is_some_and(|e| e == "cpp");
    let mut cmd = compiler(cpp).to_command();
    cmd.arg(if cpp { "-std=c++17" } else { "-std=c99" })
        .args([
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-D_POSIX_C_SOURCE=200809L",
        ])
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg("-I")
        .arg(manifest_dir().join("c_tests"))
        .arg(src)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ltensor")
        .arg("-lpthread");
    if let Some(s) = sanitizers() {
        cmd.arg(format!("-fsanitize={s}"))
            .args(["-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]);
    }
    let o = cmd
        .output()
        .map_err(|e| format!("cannot run the compiler: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "compiling {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

fn run(exe: &Path) -> Result<String, String> {
    let valgrind = std::env::var("TENSOR_VALGRIND").is_ok_and(|v| v == "1");
    assert!(
        !(valgrind && sanitizers().is_some()),
        "TENSOR_VALGRIND and TENSOR_SANITIZE exclude each other"
    );
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect,possible",
            "--quiet",
        ])
        .arg(exe);
        c
    } else {
        let mut c = Command::new(exe);
        if sanitizers().is_some() {
            // The tests ask for absurd sizes on purpose: the library must see NULL, not an
            // abort. Leaks are errors.
            c.env(
                "ASAN_OPTIONS",
                std::env::var("ASAN_OPTIONS").unwrap_or_else(|_| {
                    "allocator_may_return_null=1:detect_leaks=1:abort_on_error=0".into()
                }),
            )
            .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
        }
        c
    };
    let o = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if o.status.success() {
        Ok(text)
    } else {
        Err(format!("{} failed ({}):\n{text}", exe.display(), o.status))
    }
}

#[test]
fn c_and_cpp_programs_pass() {
    let lib = library_dir();
    let bin = lib.parent().unwrap().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(manifest_dir().join("c_tests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c" || e == "cpp"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty(), "no C tests found");
    let mut failures = Vec::new();
    for src in &sources {
        let exe = bin.join(src.file_stem().unwrap());
        match build(src, &lib, &exe).and_then(|_| run(&exe)) {
            Ok(out) => print!("{out}"),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
