//! Links libtensor_aoti.so against libtensor.so **dynamically** without a build-order
//! dependency on the real library: compiles a stub `libtensor.so` (SONAME `libtensor.so.0`,
//! libtensor's version script, an empty function for every libtensor symbol declared in
//! src/sys.rs) into OUT_DIR and links against it, like an import library. At run time the
//! real `libtensor.so.0` is found through the rpath (`$ORIGIN`) or LD_LIBRARY_PATH, and every
//! reference is versioned `tensor_*@TENSOR_0`.
//!
//! The shim is exported under libtensor_aoti's private prefix only: every `aoti_*` function
//! defined in src/ (found by `shim_names`) gets an alias `ltai_*` (`--defsym`), and an
//! assembly file of `.hidden aoti_*` lines makes the `aoti_*` names themselves hidden
//! (rustc's own version script lists every `#[no_mangle]` function as global; a hidden
//! reference in one object hides the symbol whatever a version script says). The loader
//! renames a model's `aoti_*` imports to `ltai_*` before `dlopen` (src/model.rs), so only
//! our models bind to our shim, and our models to nothing else's (libtorch's).
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
    println!("cargo:rerun-if-changed=src");
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

    // The shim's names: hidden as `aoti_*`, exported as `ltai_*`.
    let shim = shim_names(&dir.join("src"));
    assert!(
        shim.iter().any(|n| n == "aoti_torch_check"),
        "aoti_torch_check (src/check.cpp) not found by shim_names"
    );
    let hidden = out.join("shim_hidden.s");
    let asm: String = shim.iter().map(|n| format!(".hidden {n}\n")).collect();
    std::fs::write(&hidden, asm).unwrap();
    for n in &shim {
        let private = format!("ltai_{}", n.strip_prefix("aoti_").unwrap());
        println!("cargo:rustc-cdylib-link-arg=-Wl,--defsym={private}={n}");
    }

    // Nothing in Rust calls aoti_torch_check: link the whole archive so that it is exported
    // (and the hidden list applies).
    cc::Build::new()
        .cpp(true)
        .cargo_metadata(false)
        .file(dir.join("src/check.cpp"))
        .file(&hidden)
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

/// The `aoti_*` functions src/ defines: in Rust code (comments and string, byte-string and
/// char literals removed) a name after `fn `, the first item of a line (a macro's entry:
/// `aoti_torch_dtype_uint8 = 0;`, `aoti_torch_item_int8: i8 = ...`) or the first argument
/// of a macro (`accessor!(aoti_torch_get_dim, ...)`); in src/check.cpp a name before `(`.
/// A name that is not a function fails the link (`--defsym` of an undefined symbol); a
/// function missed here is caught by tests/host.rs (every hidden `aoti_*` has its alias).
fn shim_names(src: &std::path::Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut names = Vec::new();
    for f in files {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "rs" && ext != "cpp" {
            continue;
        }
        let code = strip(&std::fs::read_to_string(&f).unwrap(), ext == "rs");
        let b = code.as_bytes();
        let mut i = 0;
        while let Some(at) = code[i..].find("aoti_").map(|k| k + i) {
            let start_ok = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
            let mut end = at;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            i = end;
            if !start_ok {
                continue;
            }
            let name = &code[at..end];
            let before = code[..at].trim_end();
            let after = code[end..].trim_start();
            let line_start = code[..at].rfind('\n').map_or(0, |k| k + 1);
            let defined = if ext == "rs" {
                before.ends_with(" fn")
                    || (code[line_start..at].trim().is_empty()
                        && (after.starts_with(':') || after.starts_with('=')))
                    || before.ends_with("!(")
            } else {
                after.starts_with('(') && !before.ends_with("return")
            };
            if defined && name.len() > 5 {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// `text` with comments and string / char literals replaced by spaces (Rust when `rust`,
/// else C++).
fn strip(text: &str, rust: bool) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |k: usize| k > 0 && (c[k - 1].is_alphanumeric() || c[k - 1] == '_');
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 || !rust {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if rust && (c[i] == 'r' || c[i] == 'b' || c[i] == 'c') && !ident(i) && {
            let mut k = i + 1;
            if c[i] != 'r' && c.get(k) == Some(&'r') {
                k += 1;
            }
            while c.get(k) == Some(&'#') {
                k += 1;
            }
            c.get(k) == Some(&'"') && (c[i] == 'r' || c.get(i + 1) == Some(&'r'))
        } {
            // A raw string: r"...", r#"..."#, br"...", cr"...".
            let mut k = i + 1;
            if c[k] == 'r' {
                k += 1;
            }
            let mut hashes = 0;
            while c[k] == '#' {
                hashes += 1;
                k += 1;
            }
            k += 1;
            loop {
                if k >= c.len() {
                    break;
                }
                if c[k] == '"' && (0..hashes).all(|h| c.get(k + 1 + h) == Some(&'#')) {
                    k += 1 + hashes;
                    break;
                }
                k += 1;
            }
            i = k;
            out.push(' ');
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c[i] == '\''
            && (!rust || c.get(i + 2) == Some(&'\'') || c.get(i + 1) == Some(&'\\'))
        {
            // A char literal ('x', '\n', '\''); a Rust lifetime ('a) is kept.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}
