//! The AOTI end-to-end tests. Compiles the test models once (tests/make_models.py, with the
//! torch of `TENSOR_AOTI_PYTHON`, default the CI venv /root/.cache/libtensor-ci-venv), stages
//! the shipped libtensor.so.0 (cmake/stage.sh, from the target/<profile>/libtensor.a that a
//! root `cargo build` made) beside libtensor_aoti.so, builds the C host (tests/host.c) and
//! runs it: every model against eager PyTorch, refused inputs, statistics back to zero.
//! Then the shim and kernel tests against libtorch (tests/ops_*.py), the header against
//! the exports, and the host's NEEDED entries (no libtorch).
//!
//! `TENSOR_VALGRIND=1` runs the host under valgrind (zero errors, zero leaks).
//! The compiled models are cached by torch version and script contents (`compiled_models`);
//! `TENSOR_AOTI_MODELS=DIR` uses models compiled earlier into DIR (the zoo in DIR/zoo). Without a Python that
//! imports torch the test prints a notice and passes, unless `TENSOR_AOTI_REQUIRE=1` (CI).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
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

fn python() -> Option<PathBuf> {
    let p = std::env::var_os("TENSOR_AOTI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root/.cache/libtensor-ci-venv/bin/python"));
    let ok = Command::new(&p)
        .args(["-c", "import torch"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

/// target/<profile>/ of this test binary.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// libtensor.so.0 (staged: versioned, as shipped), libtensor_aoti.so(.0) in one directory.
fn lib_dir() -> PathBuf {
    let prof = profile_dir();
    let dir = prof.join("aoti-lib");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let archive = prof.join("libtensor.a");
    assert!(
        archive.exists(),
        "{} is missing: run `cargo build` at the repository root first (.ci/aoti.sh does)",
        archive.display()
    );
    run(Command::new("sh")
        .arg(root().join("cmake/stage.sh"))
        .arg(&archive)
        .arg(&dir)
        .arg(libtensor_version()));
    let aoti = [
        prof.join("libtensor_aoti.so"),
        prof.join("deps/libtensor_aoti.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .expect("libtensor_aoti.so was not built");
    std::fs::copy(aoti, dir.join("libtensor_aoti.so")).unwrap();
    std::os::unix::fs::symlink("libtensor_aoti.so", dir.join("libtensor_aoti.so.0")).unwrap();
    dir
}

fn compile_c(src: &Path, out: &Path, lib: &Path, cpp: bool) {
    let mut b = cc::Build::new();
    b.cargo_metadata(false)
        .cpp(cpp)
        .opt_level(1)
        .debug(true)
        .target(env!("TENSOR_AOTI_TARGET"))
        .host(env!("TENSOR_AOTI_TARGET"));
    let mut cmd = b.get_compiler().to_command();
    cmd.arg(if cpp { "-std=c++17" } else { "-std=c99" })
        .args([
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-D_POSIX_C_SOURCE=200809L",
        ])
        .arg("-I")
        .arg(root().join("include"))
        .arg(src)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ltensor_aoti", "-ltensor", "-lm", "-lpthread"]);
    run(&mut cmd);
}

/// The C host, under valgrind with `TENSOR_VALGRIND=1` (zero errors, zero leaks; libgomp's
/// worker threads suppressed: tests/valgrind.supp).
fn host_cmd(host: &Path) -> Command {
    if std::env::var("TENSOR_VALGRIND").is_ok_and(|v| v == "1") {
        let supp = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/valgrind.supp");
        let mut c = Command::new("valgrind");
        c.args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect,possible",
            "--quiet",
            // Shorter superblocks: Inductor's fully unrolled kernels (a Llama's, an LSTM's
            // transposes) otherwise exhaust VEX's temporary storage for one translation.
            "--vex-guest-max-insns=20",
        ])
        .arg(format!("--suppressions={}", supp.display()))
        .arg(host);
        c
    } else {
        Command::new(host)
    }
}

#[test]
fn aoti_models_kernels_and_exports() {
    let Some(py) = python() else {
        assert!(
            std::env::var("TENSOR_AOTI_REQUIRE").as_deref() != Ok("1"),
            "TENSOR_AOTI_REQUIRE=1 but no Python with torch"
        );
        println!("NOTICE: AOTI tests skipped: no Python with torch (set TENSOR_AOTI_PYTHON)");
        return;
    };
    let lib = lib_dir();
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));

    // libtensor_aoti links the shipped libtensor dynamically, with versioned references;
    // libtensor exports no aoti_* symbol.
    let dynamic = run(Command::new("readelf")
        .arg("-dW")
        .arg(lib.join("libtensor_aoti.so")));
    assert!(dynamic.contains("[libtensor.so.0]"), "{dynamic}");
    assert!(dynamic.contains("[libsleef.so.3]"), "{dynamic}");
    let syms = run(Command::new("readelf")
        .arg("--dyn-syms")
        .arg("-W")
        .arg(lib.join("libtensor_aoti.so")));
    assert!(
        syms.contains("tensor_retain@TENSOR_0"),
        "libtensor references are not versioned"
    );
    assert!(!syms
        .lines()
        .any(|l| l.contains(" UND tensor_") && !l.contains("@TENSOR_0")));
    // The shim is exported under the private prefix only: no aoti_* name, and every aoti_*
    // function the library defines (hidden, in its symbol table) has its ltai_* alias.
    let exported: Vec<&str> = syms
        .lines()
        .filter(|l| !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().nth(7))
        .map(|n| n.split('@').next().unwrap())
        .collect();
    assert!(
        !exported.iter().any(|n| n.starts_with("aoti_")),
        "libtensor_aoti exports aoti_* names: {:?}",
        exported
            .iter()
            .filter(|n| n.starts_with("aoti_"))
            .collect::<Vec<_>>()
    );
    let all = run(Command::new("readelf")
        .arg("-sW")
        .arg(lib.join("libtensor_aoti.so")));
    let defined: Vec<&str> = all
        .lines()
        .filter(|l| l.contains(" FUNC ") && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().nth(7))
        // (not the compiler's split-off parts of a function: `aoti_torch_check.cold`)
        .filter(|n| n.starts_with("aoti_") && !n.contains('.'))
        .collect();
    assert!(defined.len() > 100, "{} aoti_* functions", defined.len());
    for n in &defined {
        let alias = format!("ltai_{}", &n[5..]);
        assert!(
            exported.contains(&alias.as_str()),
            "{n} has no exported alias {alias} (build.rs shim_names missed it)"
        );
    }
    let core = run(Command::new("readelf")
        .arg("--dyn-syms")
        .arg("-W")
        .arg(lib.join("libtensor.so.0")));
    assert!(
        !core.contains(" aoti_"),
        "libtensor.so exports aoti_* symbols"
    );

    // include/tensor_aoti.h (hand-written) declares exactly the exported tensor_aoti_* API.
    let header = std::fs::read_to_string(root().join("include/tensor_aoti.h")).unwrap();
    // Declarations: `name(` outside comments.
    let code: String = header
        .lines()
        .filter(|l| {
            !l.trim_start().starts_with('*')
                && !l.trim_start().starts_with("/*")
                && !l.trim_start().starts_with("//")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut declared: Vec<String> = code
        .match_indices("tensor_aoti_")
        .map(|(i, _)| {
            code[i..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap()
        })
        .filter(|w| code.contains(&format!("{w}(")))
        .map(str::to_string)
        .collect();
    declared.sort();
    declared.dedup();
    let mut exported: Vec<String> = syms
        .lines()
        .filter(|l| !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter_map(|n| n.split('@').next())
        .filter(|n| n.starts_with("tensor_aoti_"))
        .map(str::to_string)
        .collect();
    exported.sort();
    exported.dedup();
    assert_eq!(
        declared, exported,
        "include/tensor_aoti.h and libtensor_aoti.so's exports differ"
    );

    let ops = shim_tests(py.clone(), lib.clone());

    // The models, and the zoo in models/zoo: compiled once, in one process, or reused.
    let models = match std::env::var_os("TENSOR_AOTI_MODELS") {
        Some(d) => std::path::absolute(PathBuf::from(d)).unwrap(),
        None => compiled_models(&py),
    };
    let zoo = models.join("zoo");

    let host = lib.join("host");
    compile_c(&here.join("tests/host.c"), &host, &lib, false);
    let needed = run(Command::new("readelf").arg("-d").arg(&host));
    assert!(
        !needed.contains("libtorch") && !needed.contains("libc10"),
        "{needed}"
    );
    // Every model, with a private TMPDIR the loads must leave empty (and the names an older
    // loader used pre-created there by the host); then with a TMPDIR that does not exist.
    let tmp = profile_dir().join("aoti-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let out = run(host_cmd(&host)
        .arg(&models)
        .env("TENSOR_AOTI_QUIET", "1")
        .env("TMPDIR", &tmp)
        .env("TENSOR_AOTI_TEST_TMPDIR", &tmp));
    print!("{out}");
    assert!(out.contains(" 0 failed"), "{out}");
    // (Not under valgrind, which needs a TMPDIR of its own.)
    let out = run(Command::new(&host)
        .arg(&models)
        .arg("pointwise")
        .arg("mmap_self")
        .env("TENSOR_AOTI_QUIET", "1")
        .env("TMPDIR", tmp.join("does-not-exist")));
    assert!(out.contains(" 0 failed"), "{out}");

    // Packages refused before their code runs: ops this build lacks, a freezing=True kernel,
    // libtorch's proxy executor, link_libtorch=True.
    let out = run(host_cmd(&host)
        .arg("--refuse")
        .arg(&models)
        .env("TENSOR_AOTI_QUIET", "1"));
    print!("{out}");
    assert!(out.contains(" 0 failed"), "{out}");

    // The zoo: real architectures (tests/zoo.py) against eager PyTorch, and docs/aoti.md's
    // coverage table current with what they call.
    let t = std::time::Instant::now();
    let out = run(host_cmd(&host).arg(&zoo).env("TENSOR_AOTI_QUIET", "1"));
    print!("{out}");
    assert!(out.contains(" 0 failed"), "{out}");
    println!("ran the zoo in {:.0} s", t.elapsed().as_secs_f64());
    print!(
        "{}",
        run(Command::new(&py)
            .arg(here.join("tests/coverage.py"))
            .arg(&lib)
            .arg(&models)
            .arg(&zoo)
            .arg("--check")
            .arg(root().join("docs/aoti.md")))
    );

    // Broken and hostile packages (tests/make_hostile.py), refused with a status naming the
    // entry; those that load check their inputs or refuse every run.
    let hostile = profile_dir().join("aoti-hostile");
    let _ = std::fs::remove_dir_all(&hostile);
    print!(
        "{}",
        run(Command::new(&py)
            .arg(here.join("tests/make_hostile.py"))
            .arg(&models)
            .arg(&hostile))
    );
    let out = run(host_cmd(&host)
        .arg("--hostile")
        .arg(&hostile)
        .env("TENSOR_AOTI_QUIET", "1"));
    print!("{out}");
    assert!(out.contains(" 0 failed"), "{out}");
    for (case, checked) in [
        ("unchecked_no_cpp", "unchecked"),
        ("unchecked_bad_checks", "unchecked"),
        ("checked_deflated_cpp", "checked"),
    ] {
        let out = run(host_cmd(&host)
            .arg("--bare")
            .arg(hostile.join(format!("{case}.pt2")))
            .arg(checked)
            .env("AOTI_RUNTIME_CHECK_INPUTS", "0")
            .env("TENSOR_AOTI_QUIET", "1"));
        assert!(out.contains(" 0 failed"), "{case}: {out}");
    }
    // The note for a package compiled without vectorization (and for one whose inputs
    // cannot be checked); none with TENSOR_AOTI_QUIET=1.
    let novec = hostile.join("novec.pt2");
    let out = run(host_cmd(&host)
        .arg("--load")
        .arg(&novec)
        .env_remove("TENSOR_AOTI_QUIET"));
    assert!(
        out.contains("cpu_isa=INVALID_VEC_ISA checks_inputs=1")
            && out.contains("compiled without vectorization"),
        "{out}"
    );
    let out = run(host_cmd(&host)
        .arg("--load")
        .arg(hostile.join("unchecked_no_cpp.pt2"))
        .env_remove("TENSOR_AOTI_QUIET"));
    assert!(
        out.contains("checks_inputs=0") && out.contains("no input checks"),
        "{out}"
    );
    let out = run(host_cmd(&host)
        .arg("--load")
        .arg(&novec)
        .env("TENSOR_AOTI_QUIET", "1"));
    assert!(!out.contains("libtensor_aoti:"), "{out}");

    // A bare model .so: without its wrapper source it checks nothing and runs nothing
    // (whatever AOTI_RUNTIME_CHECK_INPUTS says); with it beside, the package's checks.
    let so = lib.join("pointwise.so");
    run(Command::new(&py).arg("-c").arg(
        "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nn = [x for x in z.namelist() if x.endswith('.wrapper.so')][0]\nopen(sys.argv[2], 'wb').write(z.read(n))",
    ).arg(models.join("pointwise.pt2")).arg(&so));
    let out = run(host_cmd(&host)
        .arg("--bare")
        .arg(&so)
        .arg("unchecked")
        .env("AOTI_RUNTIME_CHECK_INPUTS", "0")
        .env("TENSOR_AOTI_QUIET", "1"));
    print!("{out}");
    assert!(out.contains(" 0 failed"), "{out}");
    run(Command::new(&py).arg("-c").arg(
        "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nn = [x for x in z.namelist() if x.endswith('.wrapper.cpp')][0]\nopen(sys.argv[2], 'wb').write(z.read(n))",
    ).arg(models.join("pointwise.pt2")).arg(lib.join("pointwise.cpp")));
    let out = run(host_cmd(&host)
        .arg("--bare")
        .arg(&so)
        .arg("checked")
        .env("AOTI_RUNTIME_CHECK_INPUTS", "0")
        .env("TENSOR_AOTI_QUIET", "1"));
    print!("{out}");
    assert!(out.contains(" 0 failed"), "{out}");

    // The C++ wrapper.
    let cpp = lib.join("wrapper");
    compile_c(&here.join("tests/wrapper.cpp"), &cpp, &lib, true);
    print!(
        "{}",
        run(Command::new(&cpp)
            .arg(models.join("mlp.pt2"))
            .arg(models.join("mlp.in0.npy"))
            .arg(models.join("mlp.out0.npy")))
    );

    // libtorch and libtensor_aoti in one process (tests/coexist.cpp, built against the
    // wheel's headers and libraries): one of our packages through libtensor_aoti and one
    // compiled for libtorch through AOTIModelPackageLoader, in either order.
    let torch_dir = PathBuf::from(
        run(Command::new(&py)
            .arg("-c")
            .arg("import os, torch; print(os.path.dirname(torch.__file__))"))
        .trim(),
    );
    let coexist = lib.join("coexist");
    let mut cxx = cc::Build::new()
        .cargo_metadata(false)
        .cpp(true)
        .target(env!("TENSOR_AOTI_TARGET"))
        .host(env!("TENSOR_AOTI_TARGET"))
        .opt_level(1)
        .get_compiler()
        .to_command();
    cxx.args(["-std=c++20", "-w", "-I"])
        .arg(root().join("include"))
        .arg("-I")
        .arg(torch_dir.join("include"))
        .arg("-I")
        .arg(torch_dir.join("include/torch/csrc/api/include"))
        .arg(here.join("tests/coexist.cpp"))
        .arg("-o")
        .arg(&coexist)
        .arg("-L")
        .arg(&lib)
        .args(["-ltensor_aoti", "-ltensor", "-L"])
        .arg(torch_dir.join("lib"))
        // libtorch.so itself loaded: the libtorch package needs it by name.
        .args([
            "-Wl,--no-as-needed",
            "-ltorch",
            "-ltorch_cpu",
            "-lc10",
            "-Wl,--as-needed",
        ])
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", torch_dir.join("lib").display()));
    run(&mut cxx);
    for order in ["ours-first", "torch-first"] {
        let m = |f: &str| models.join(f);
        let out = run(Command::new(&coexist)
            .arg(m("mlp.pt2"))
            .arg(m("mlp.in0.npy"))
            .arg(m("mlp.out0.npy"))
            .arg(m("refuse_libtorch.pt2"))
            .arg(m("refuse_libtorch.in0.npy"))
            .arg(m("refuse_libtorch.out0.npy"))
            .arg(order)
            .env("TENSOR_AOTI_QUIET", "1"));
        print!("{out}");
        assert!(out.contains(" 0 failed"), "{out}");
    }

    // The example (examples_c/aoti_run.c) on the classifier examples_c/aoti_model.py defines.
    let example = lib.join("aoti_run");
    compile_c(&root().join("examples_c/aoti_run.c"), &example, &lib, false);
    print!(
        "{}",
        run(Command::new(&example).arg(models.join("example.pt2")))
    );

    // The shim and kernel tests, run beside everything above.
    match ops.join() {
        Ok(out) => print!("{out}"),
        Err(e) => std::panic::resume_unwind(e),
    }
}

/// The shim and the kernels against libtorch: each tests/ops_*.py, in order, on a thread of
/// its own (a core of its own: the valgrind runs of the host take the other), its outputs
/// returned (a failure panics the thread, with the script's output).
fn shim_tests(py: PathBuf, lib: PathBuf) -> std::thread::JoinHandle<String> {
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    std::thread::spawn(move || {
        let mut scripts: Vec<PathBuf> = std::fs::read_dir(&tests)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("ops_") && n.ends_with(".py")
            })
            .collect();
        scripts.sort();
        let mut out = String::new();
        for script in scripts {
            out += &run(Command::new(&py)
                .arg(&script)
                .arg(&lib)
                .env("TENSOR_AOTI_QUIET", "1"));
        }
        out
    })
}

/// The test models and the zoo, compiled by `tests/make_models.py --cache` into a directory
/// keyed by what determines them (the torch version and the bytes of the scripts that build
/// and compile them: compiling is most of the aoti test's time; a complete directory only).
/// The cache is `TENSOR_AOTI_CACHE` or `~/.cache/libtensor-aoti-models`.
fn compiled_models(py: &Path) -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let base = std::env::var_os("TENSOR_AOTI_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".cache/libtensor-aoti-models")
        });
    let out = run(Command::new(py)
        .arg(here.join("tests/make_models.py"))
        .arg("--cache")
        .arg(&base));
    print!("{out}");
    let dir = out
        .lines()
        .find_map(|l| l.strip_prefix("models: "))
        .expect("make_models.py --cache names its directory");
    PathBuf::from(dir)
}

/// libtensor's version, from the repository's Cargo.toml (the one source of truth).
fn libtensor_version() -> String {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    manifest
        .lines()
        .find_map(|l| {
            let v = l.strip_prefix("version = \"")?;
            Some(v.trim_end_matches('"').to_string())
        })
        .expect("a version in Cargo.toml")
}
