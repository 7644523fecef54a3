//! Links libtensor_aoti.so against libtensor.so **dynamically** without a build-order
//! dependency on the real library: compiles a stub `libtensor.so` (SONAME `libtensor.so.0`,
//! libtensor's version script, an empty function for every libtensor symbol declared in
//! src/sys.rs) into OUT_DIR and links against it, like an import library. At run time the
//! real `libtensor.so.0` is found through the rpath (`$ORIGIN`) or LD_LIBRARY_PATH, and every
//! reference is versioned `tensor_*@TENSOR_0`.
//!
//! It also compiles src/check.cpp (`aoti_torch_check`, which must throw a C++ exception into
//! the model's code) and links `-lsleef` (the `Sleef_*` vector-math functions a model's
//! kernels call; Debian's libsleef-dev).

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=build.rs");
    // The tests compile C programs for the same target.
    println!(
        "cargo:rustc-env=TENSOR_AOTI_TARGET={}",
        std::env::var("TARGET").unwrap()
    );
    println!("cargo:rerun-if-changed=src/sys.rs");
    println!("cargo:rerun-if-changed=src/check.cpp");
    println!("cargo:rerun-if-changed=../cmake/tensor.map");

    // Every `fn tensor_*(` / `fn storage_*(` declared in src/sys.rs.
    let sys = std::fs::read_to_string(dir.join("src/sys.rs")).unwrap();
    let mut names: Vec<&str> = sys
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .filter_map(|l| l.split('(').next())
        .filter(|n| n.starts_with("tensor_") || n.starts_with("storage_"))
        .collect();
    names.sort();
    names.dedup();
    assert!(
        !names.is_empty(),
        "no libtensor functions found in src/sys.rs"
    );
    let stub_c = out.join("tensor_stub.c");
    let body: String = names
        .iter()
        .map(|n| format!("void {n}(void) {{}}\n"))
        .collect();
    std::fs::write(&stub_c, body).unwrap();

    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let stub_so = out.join("libtensor.so");
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-Wl,-soname,libtensor.so.0"])
        .arg(format!(
            "-Wl,--version-script={}",
            dir.join("../cmake/tensor.map").display()
        ))
        .arg(&stub_c)
        .arg("-o")
        .arg(&stub_so)
        .status()
        .expect("cannot run the C compiler for the libtensor stub");
    assert!(status.success(), "compiling the libtensor stub failed");

    // Nothing in Rust calls aoti_torch_check: link the whole archive so that it is exported.
    cc::Build::new()
        .cpp(true)
        .cargo_metadata(false)
        .file(dir.join("src/check.cpp"))
        .flag("-std=c++17")
        .compile("tensor_aoti_check");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static:+whole-archive=tensor_aoti_check");
    println!("cargo:rustc-link-lib=dylib=stdc++");

    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=dylib=tensor");
    // `-as-needed`: no Rust code calls libsleef, but the models dlopened beside us do.
    println!("cargo:rustc-cdylib-link-arg=-Wl,--no-as-needed,-lsleef,--as-needed");
    // The real libtensor.so.0 next to libtensor_aoti.so (an install's lib/), then the loader's
    // search path.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtensor_aoti.so.0");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        dir.join("tensor_aoti.map").display()
    );
    println!("cargo:rerun-if-changed=tensor_aoti.map");
}
