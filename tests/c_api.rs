//! Builds every C (`c_tests/*.c`, C99) and C++ (`c_tests/*.cpp`, C++17) test program
//! against the committed `include/tensor.h` (CI's `make check-header` keeps it equal to what
//! cbindgen generates from src/ffi/) with the flags of `c_tests/build-flags.txt` (`-Wall -Wextra
//! -pedantic -Werror`; CMakeLists.txt reads the same file), links it to the real
//! `libtensor.so` that cargo built for this test run, and runs it. Each program prints
//! "<name>: N passed, N failed" and exits non-zero on any failure.
//!
//! `TENSOR_VALGRIND=1` runs each program under
//! `valgrind --error-exitcode=1 --leak-check=full` (zero errors, zero leaks required), with
//! `TENSOR_TEST_UNDER_VALGRIND=1` in the program's environment (for fewer rounds).
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
//!
//! A source may carry directive lines for programs that need more than libtensor:
//! `// c_api-cflags: ARGS` (extra compiler arguments, e.g. `-fno-exceptions`),
//! `// c_api-pkg: NAME...` (pkg-config packages: their --cflags (as system include dirs)
//! and --libs are added; when pkg-config cannot find one, the program is skipped with a
//! printed notice), `// c_api-libs: ARGS` (extra link arguments, in place of the
//! packages' full --libs), `// c_api-suppressions: FILE` (a valgrind suppressions file,
//! relative to the source, for the one-time allocations of that package's own code).
//!
//! The programs in `examples_c/` are built and run the same way (they exit non-zero when
//! a check fails).
//!
//! The programs build and run side by side, one per core (`TENSOR_C_JOBS=N`: N at a time).
//!
//! `TENSOR_C_ONLY=a,b` runs only the programs with those file stems; `TENSOR_C_REQUIRE_PKGS=1`
//! turns a missing pkg-config package into a failure instead of a skip (CI, after it
//! installed them).

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cdylib cargo built alongside this test binary (target/<profile>/deps), copied into
/// its own directory with the SONAME link (`libtensor.so.0`) the programs will ask for.
/// Made once per test run (the tests run in parallel and share it).
fn library_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(make_library_dir).clone()
}

fn make_library_dir() -> PathBuf {
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

/// The flags `c_tests/build-flags.txt` gives under `key` (`c`, `cxx`, `all`, `werror`).
fn build_flags(key: &str) -> Vec<String> {
    let path = manifest_dir().join("c_tests/build-flags.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let tag = format!("{key}:");
    let flags: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&tag))
        .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    assert!(!flags.is_empty(), "{} has no `{tag}` line", path.display());
    flags
}

/// The values of `// c_api-KEY:` directive lines of a source.
fn directive(src: &Path, key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(src).unwrap_or_default();
    let tag = format!("// c_api-{key}:");
    text.lines()
        .filter_map(|l| l.trim().strip_prefix(&tag))
        .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

fn pkg_config(args: &[&str]) -> Option<Vec<String>> {
    let o = Command::new("pkg-config").args(args).output().ok()?;
    o.status.success().then(|| {
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    })
}

/// The extra (compile, link) arguments a source's directives ask for, or `Err(notice)`
/// when a pkg-config package is missing.
fn extra_args(src: &Path) -> Result<(Vec<String>, Vec<String>), String> {
    let mut cflags = directive(src, "cflags");
    let mut libs = Vec::new();
    for pkg in directive(src, "pkg") {
        let Some(cf) = pkg_config(&["--cflags", &pkg]) else {
            return Err(format!(
                "NOTICE: {} skipped: pkg-config cannot find {pkg} (install its -dev package)",
                src.display()
            ));
        };
        // Their headers are not ours to warn about.
        cflags.extend(cf.into_iter().map(|f| match f.strip_prefix("-I") {
            Some(dir) => format!("-isystem{dir}"),
            None => f,
        }));
        libs.extend(pkg_config(&["--libs", &pkg]).unwrap_or_default());
    }
    let explicit = directive(src, "libs");
    if !explicit.is_empty() {
        libs = explicit;
    }
    Ok((cflags, libs))
}

fn build(src: &Path, lib: &Path, out: &Path) -> Result<(), String> {
    let (cflags, libs) = extra_args(src).map_err(|e| format!("internal: {e}"))?;
    let cpp = src.extension().is_some_and(|e| e == "cpp");
    let mut cmd = compiler(cpp).to_command();
    cmd.args(build_flags(if cpp { "cxx" } else { "c" }))
        .args(build_flags("all"))
        .args(build_flags("werror"))
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg("-I")
        .arg(manifest_dir().join("c_tests"))
        .args(&cflags)
        .arg(src)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ltensor")
        .args(&libs)
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

fn run(exe: &Path, src: &Path) -> Result<String, String> {
    let valgrind = std::env::var("TENSOR_VALGRIND").is_ok_and(|v| v == "1");
    assert!(
        !(valgrind && sanitizers().is_some()),
        "TENSOR_VALGRIND and TENSOR_SANITIZE exclude each other"
    );
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        for supp in directive(src, "suppressions") {
            c.arg(format!(
                "--suppressions={}",
                src.parent().unwrap().join(supp).display()
            ));
        }
        c.args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect,possible",
            "--quiet",
        ])
        .arg(exe)
        // Lets a program scale its rounds down (valgrind runs one thread at a time).
        .env("TENSOR_TEST_UNDER_VALGRIND", "1");
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

/// How many programs build and run at once: `TENSOR_C_JOBS`, else the available cores (the
/// programs are separate processes with private temporary names).
fn jobs() -> usize {
    std::env::var("TENSOR_C_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Builds and runs every C / C++ program of `dir`, `jobs()` at a time, each one's output
/// printed whole when it ends; programs whose pkg-config packages are missing are skipped
/// with a notice.
fn build_and_run_all(dir: &str, bin_name: &str) {
    let lib = library_dir();
    let bin = lib.parent().unwrap().join(bin_name);
    std::fs::create_dir_all(&bin).unwrap();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(manifest_dir().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c" || e == "cpp"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty(), "no C programs found in {dir}");
    if let Ok(only) = std::env::var("TENSOR_C_ONLY") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        sources.retain(|p| only.contains(&p.file_stem().unwrap().to_str().unwrap()));
    }
    let require = std::env::var("TENSOR_C_REQUIRE_PKGS").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut todo = Vec::new();
    for src in &sources {
        if let Some(why) = directive(src, "skip")
            .first()
            .map(|_| directive(src, "skip").join(" "))
        {
            println!("NOTICE: {} skipped: {why}", src.display());
            continue;
        }
        if let Err(notice) = extra_args(src) {
            if require {
                failures.push(notice);
            } else {
                println!("{notice}");
            }
            continue;
        }
        todo.push(src);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs().min(todo.len()) {
            s.spawn(|| {
                while let Some(src) =
                    todo.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let exe = bin.join(src.file_stem().unwrap());
                    match build(src, &lib, &exe).and_then(|_| run(&exe, src)) {
                        Ok(out) => print!("{out}"),
                        Err(e) => failed.lock().unwrap().push(e),
                    }
                }
            });
        }
    });
    failures.extend(failed.into_inner().unwrap());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn c_and_cpp_programs_pass() {
    build_and_run_all("c_tests", "bin");
}

#[test]
fn examples_run() {
    build_and_run_all("examples_c", "examples");
}

/// tensor.hpp's dtype is a scoped enum: an int (such as an OpenCV depth) passed where a
/// dtype is expected must not compile, while the same call with tensor::kFloat32 does.
#[test]
fn cpp_refuses_an_int_as_dtype() {
    let dir = library_dir().parent().unwrap().join("compile_fail");
    std::fs::create_dir_all(&dir).unwrap();
    let compile = |name: &str, dtype: &str| {
        let src = dir.join(format!("{name}.cpp"));
        std::fs::write(
            &src,
            format!(
                "#include \"tensor.hpp\"\nint main() {{\n  static float buf[4];\n  int depth = 5;  // CV_32F\n  (void)depth;\n  tensor::Tensor t = tensor::Tensor::from_blob(buf, {{2, 2}}, {dtype});\n  return t.dim() == 2 ? 0 : 1;\n}}\n"
            ),
        )
        .unwrap();
        let mut cmd = compiler(true).to_command();
        cmd.args(["-std=c++17", "-fsyntax-only", "-I"])
            .arg(manifest_dir().join("include"))
            .arg(&src);
        cmd.output().unwrap()
    };
    let good = compile("dtype_ok", "tensor::kFloat32");
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    for bad in ["depth", "5", "TENSOR_FLOAT32"] {
        let o = compile("dtype_int", bad);
        assert!(!o.status.success(), "from_blob(..., {bad}) compiled");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("Dtype"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Compiles (`-c`, no link) a C++ program whose `main` declares `prelude` then runs
/// `body`, with the programs' flags but the standard (`-Wall -Wextra -pedantic -Werror`) and
/// `extra` arguments; returns whether it compiled and the compiler's messages. `-c`, not
/// `-fsyntax-only`: GCC checks warn_unused_result only when it generates code.
fn compile_cpp(
    name: &str,
    std: &str,
    includes: &str,
    prelude: &str,
    body: &str,
    extra: &[String],
) -> (bool, String) {
    let dir = library_dir().parent().unwrap().join("compile_fail");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}_{std}.cpp"));
    std::fs::write(
        &src,
        format!("{includes}\nint main() {{\n{prelude}\n{body}\n  return 0;\n}}\n"),
    )
    .unwrap();
    let mut cmd = compiler(true).to_command();
    cmd.arg(format!("-std={std}"))
        .args(build_flags("all"))
        .args(build_flags("werror"))
        .arg("-c")
        .args(extra)
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg(&src)
        .arg("-o")
        .arg(src.with_extension("o"));
    let o = cmd.output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// tensor.hpp's handle give-away is `into_raw()`, [[nodiscard]] (discarding it leaks), and
/// the old name `release()` (which reads like tensor_release but releases nothing) is
/// deprecated and [[nodiscard]] too, for Tensor and Storage, in every standard the header
/// supports (C++11's and C++14's spellings are compiler attributes).
#[test]
fn cpp_handle_giveaway_is_nodiscard_and_release_is_deprecated() {
    let compile = |name: &str, std: &str, body: &str| {
        compile_cpp(
            name,
            std,
            "#include \"tensor.hpp\"",
            "  tensor::Tensor t = tensor::Tensor::zeros({2});\n  tensor::Storage s = t.storage();",
            body,
            &[],
        )
    };
    for std in ["c++11", "c++14", "c++17"] {
        let (ok, err) = compile(
            "into_raw_ok",
            std,
            "  tensor_t* p = t.into_raw();\n  tensor_release(p);\n  storage_t* q = s.into_raw();\n  storage_release(q);",
        );
        assert!(
            ok,
            "{std}: into_raw() kept in a variable must compile:\n{err}"
        );
        for (what, body) in [
            ("discarded Tensor::into_raw", "  t.into_raw();"),
            ("discarded Storage::into_raw", "  s.into_raw();"),
            ("discarded Tensor::release", "  t.release();"),
        ] {
            let (ok, err) = compile("discarded", std, body);
            assert!(!ok, "{std}: {what} compiled without a warning");
            assert!(
                err.contains("ignoring return value"),
                "{std}: {what}:\n{err}"
            );
        }
        for (what, body) in [
            ("Tensor::release", "  tensor_release(t.release());"),
            ("Storage::release", "  storage_release(s.release());"),
        ] {
            let (ok, err) = compile("deprecated", std, body);
            assert!(!ok, "{std}: {what} compiled without a warning");
            assert!(
                err.contains("deprecated") && err.contains("use into_raw()"),
                "{std}: {what}:\n{err}"
            );
        }
    }
}

/// tensor.hpp's memory formats, map modes and devices are scoped enums (tensor::MemoryFormat,
/// tensor::MapMode, tensor::Device): the integer and tensor_device_t overloads that let
/// `t.contiguous(2)` or `t.clone(7)` through are deprecated (a warning, an error under
/// -Werror), while the enum spellings compile cleanly.
#[test]
fn cpp_integer_formats_modes_and_devices_are_deprecated() {
    let compile = |name: &str, body: &str| {
        compile_cpp(
            name,
            "c++17",
            "#include \"tensor.hpp\"",
            "  static float buf[4];\n  tensor::Tensor t = tensor::Tensor::zeros({1, 2, 2, 1});",
            body,
            &[],
        )
    };
    let (ok, err) = compile(
        "enums_ok",
        "  (void)t.contiguous(tensor::MemoryFormat::ChannelsLast);\n  (void)t.clone(tensor::MemoryFormat::Contiguous);\n  (void)t.empty_like(tensor::MemoryFormat::Preserve);\n  (void)t.is_contiguous(tensor::MemoryFormat::ChannelsLast);\n  (void)(t.suggest_memory_format() == tensor::MemoryFormat::Contiguous);\n  (void)(t.device() == tensor::Device(tensor::DeviceType::CPU));\n  (void)tensor::Tensor::from_blob(buf, {4}, tensor::kFloat32, {}, {}, tensor::Device(tensor::DeviceType::CUDA, 0));\n  if (t.dim() == 9) {\n    (void)tensor::Tensor::load_npy(\"x.npy\", tensor::MapMode::Shared);\n    (void)tensor::Storage::from_file(\"x\", 0, 8, tensor::MapMode::Private);\n    (void)tensor::Storage::from_fd(0, 0, 8, tensor::MapMode::ReadOnly);\n  }",
    );
    assert!(ok, "the enum spellings must compile:\n{err}");
    for body in [
        "  (void)t.contiguous(2);",
        "  (void)t.clone(7);",
        "  (void)t.empty_like(TENSOR_CHANNELS_LAST);",
        "  (void)t.is_contiguous(TENSOR_CHANNELS_LAST);",
        "  (void)tensor::Tensor::load_npy(\"x.npy\", 1);",
        "  (void)tensor::Storage::from_file(\"x\", 0, 8, TENSOR_MAP_SHARED);",
        "  (void)tensor::Storage::from_fd(0, 0, 8, 2);",
        "  (void)tensor::Tensor::from_blob(buf, {4}, tensor::kFloat32, {}, {}, tensor_device_t{2, 0});",
        "  (void)tensor::Tensor::from_blob_bytes(buf, {4}, {}, tensor::kFloat32, {}, tensor_device_t{2, 0});",
    ] {
        let (ok, err) = compile("integer", body);
        assert!(!ok, "compiled without a warning: {body}");
        assert!(
            err.contains("deprecated") && err.contains("pass a tensor::"),
            "{body}:\n{err}"
        );
    }
}

/// A ReadOnlyMat (to_mat(t, tensor::read_only)) is the source of OpenCV calls, never their
/// destination: an in-place call on it, or a copy into a (writable) cv::Mat, does not
/// compile, while reading it does. (A `const cv::Mat` would not do: OpenCV's OutputArray
/// converts from a const Mat, which the first case checks.)
#[test]
fn cpp_read_only_mat_is_not_a_destination() {
    let Some(cflags) = pkg_config(&["--cflags", "opencv4"]) else {
        assert!(
            !std::env::var("TENSOR_C_REQUIRE_PKGS").is_ok_and(|v| v == "1"),
            "pkg-config cannot find opencv4"
        );
        println!("NOTICE: cpp_read_only_mat_is_not_a_destination skipped: no opencv4");
        return;
    };
    // OpenCV's headers are not ours to warn about.
    let cflags: Vec<String> = cflags
        .into_iter()
        .map(|f| match f.strip_prefix("-I") {
            Some(dir) => format!("-isystem{dir}"),
            None => f,
        })
        .collect();
    let compile = |name: &str, body: &str| {
        compile_cpp(
            name,
            "c++17",
            "#include <opencv2/imgproc.hpp>\n#include \"tensor_opencv.hpp\"",
            "  tensor::Tensor t = tensor::Tensor::zeros({8, 8}, tensor::kUInt8);\n  const cv::Mat cm = tensor::to_mat(t);\n  tensor::ReadOnlyMat ro = tensor::to_mat(t, tensor::read_only);\n  cv::Mat out;",
            body,
            &cflags,
        )
    };
    let (ok, err) = compile(
        "ro_source_ok",
        "  cv::GaussianBlur(ro, out, cv::Size(3, 3), 0);\n  cv::GaussianBlur(cm, cm, cv::Size(3, 3), 0);  // compiles: const is no guard\n  (void)cv::mean(ro);\n  (void)ro.mat().at<uchar>(1, 1);\n  cv::Mat w = ro.clone();",
    );
    assert!(ok, "reading a ReadOnlyMat must compile:\n{err}");
    for body in [
        "  cv::GaussianBlur(ro, ro, cv::Size(3, 3), 0);",
        "  cv::add(ro, ro, ro);",
        "  cv::Mat m = ro;",
        "  cv::Mat m;\n  m = ro;",
        "  ro.mat().at<uchar>(1, 1) = 3;",
    ] {
        let (ok, err) = compile("ro_destination", body);
        assert!(!ok, "compiled: {body}");
        assert!(
            err.contains("ReadOnlyMat") || err.contains("read-only") || err.contains("const value"),
            "{body}:\n{err}"
        );
    }
}
