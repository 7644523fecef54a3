//! Generates `sys.rs`'s bindings of libtensor's C API from include/tensor.h (the one
//! description: read by tests/support/header_model.rs, as the core's build and tests read it)
//! into OUT_DIR/tensor_sys.rs, and links libtensor_aoti.so against libtensor.so
//! **dynamically** without a build-order dependency on the real library: compiles a stub
//! `libtensor.so` (SONAME `libtensor.so.0`, libtensor's version script, an empty function for
//! every function of the header) into OUT_DIR and links against it, like an import library.
//! At run time the real `libtensor.so.0` is found through the rpath (`$ORIGIN`) or
//! LD_LIBRARY_PATH, and every reference is versioned `tensor_*@TENSOR_0`.
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

#[path = "../tests/support/header_model.rs"]
mod header_model;

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
    println!("cargo:rerun-if-changed=../include/tensor.h");
    println!("cargo:rerun-if-changed=../tests/support/header_model.rs");
    println!("cargo:rerun-if-changed=src/check.cpp");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=../cmake/tensor.map");

    let header = std::fs::read_to_string(dir.join("../include/tensor.h")).unwrap();
    let (sys, names) = bindings(&header);
    assert!(!names.is_empty(), "no functions found in include/tensor.h");
    std::fs::write(out.join("tensor_sys.rs"), sys).unwrap();
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

// ---- aoti/src/sys.rs: libtensor's C API, generated from include/tensor.h ----------------

/// A C type (as the header writes it, without a declarator name) as a Rust type.
fn rust_type(c: &str) -> String {
    let c = c.replace('*', " * ");
    let words: Vec<&str> = c.split_whitespace().collect();
    // Leading qualifiers and the base type, then `*` levels each optionally `const`.
    let mut i = 0;
    let mut base_const = false;
    let mut base = Vec::new();
    while i < words.len() && words[i] != "*" {
        match words[i] {
            "const" => base_const = true,
            "struct" => {}
            w => base.push(w),
        }
        i += 1;
    }
    let base = base.join(" ");
    let mut ty = match base.as_str() {
        "void" if i == words.len() => return "()".into(),
        "void" => "c_void".to_string(),
        "char" => "c_char".to_string(),
        "int" => "c_int".to_string(),
        "unsigned int" => "c_uint".to_string(),
        "bool" => "bool".to_string(),
        "float" => "f32".to_string(),
        "double" => "f64".to_string(),
        "size_t" => "usize".to_string(),
        "int8_t" => "i8".to_string(),
        "int16_t" => "i16".to_string(),
        "int32_t" => "i32".to_string(),
        "int64_t" => "i64".to_string(),
        "uint8_t" => "u8".to_string(),
        "uint16_t" => "u16".to_string(),
        "uint32_t" => "u32".to_string(),
        "uint64_t" => "u64".to_string(),
        name if !name.is_empty() && name.chars().all(|ch| ch.is_alphanumeric() || ch == '_') => {
            name.to_string()
        }
        other => panic!("include/tensor.h: C type '{c}' (base '{other}') has no Rust mapping"),
    };
    let mut pointee_const = base_const;
    while i < words.len() {
        assert_eq!(
            words[i], "*",
            "include/tensor.h: cannot read the C type '{c}'"
        );
        i += 1;
        let this_const = i < words.len() && words[i] == "const";
        if this_const {
            i += 1;
        }
        ty = format!("*{} {ty}", if pointee_const { "const" } else { "mut" });
        pointee_const = this_const;
    }
    ty
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum",
    "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
    "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while",
];

/// `type name` (a parameter or field) as `name: RustType`.
fn rust_binding(decl: &str) -> String {
    let decl = decl.trim();
    // A function-pointer declarator: `ret (*name)(params)`.
    if let Some(open) = decl.find("(*") {
        let close = open
            + decl[open..]
                .find(')')
                .expect("a function pointer declarator");
        let name = decl[open + 2..close].trim();
        let ret = &decl[..open];
        let params = decl[close + 1..]
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')');
        return format!("{}: {}", ident(name), fn_pointer(ret, params));
    }
    let split = decl
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .expect("a declaration with a name");
    format!(
        "{}: {}",
        ident(&decl[split + 1..]),
        rust_type(&decl[..=split])
    )
}

fn ident(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn params(list: &str) -> String {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return String::new();
    }
    list.split(',')
        .map(rust_binding)
        .collect::<Vec<_>>()
        .join(", ")
}

fn returns(c: &str) -> String {
    match rust_type(c).as_str() {
        "()" => String::new(),
        r => format!(" -> {r}"),
    }
}

/// `Option<unsafe extern "C" fn(params) -> ret>` (a C function pointer may be NULL).
fn fn_pointer(ret: &str, list: &str) -> String {
    format!(
        "Option<unsafe extern \"C\" fn({}){}>",
        params(list),
        returns(ret)
    )
}

/// The Rust type of a `#define TENSOR_<NAME> <integer>`: by the family its name belongs to.
/// Every define must belong to one (a new family is a decision for this table).
fn define_type(name: &str) -> Option<&'static str> {
    const DTYPES: &[&str] = &[
        "UINT8",
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "FLOAT16",
        "FLOAT32",
        "FLOAT64",
        "COMPLEX64",
        "COMPLEX128",
        "BOOL",
        "BFLOAT16",
        "UINT16",
        "UINT32",
        "UINT64",
        "FLOAT8_E5M2",
        "FLOAT8_E4M3FN",
        "FLOAT8_E5M2FNUZ",
        "FLOAT8_E4M3FNUZ",
        "FLOAT8_E8M0FNU",
        "FLOAT4_E2M1FN_X2",
    ];
    let n = name.strip_prefix("TENSOR_")?;
    Some(match n {
        "OK" => "tensor_status_t",
        _ if n.starts_with("ERR_") => "tensor_status_t",
        _ if DTYPES.contains(&n) => "tensor_dtype_t",
        "CONTIGUOUS_FORMAT" | "PRESERVE_FORMAT" | "CHANNELS_LAST" | "CHANNELS_LAST_3D" => {
            "tensor_memory_format_t"
        }
        "MAP_READ_ONLY" | "MAP_SHARED" | "MAP_PRIVATE" => "tensor_map_mode_t",
        "MAP_TO_END" => "u64",
        _ if n.starts_with("STORAGE_") => "tensor_storage_kind_t",
        _ if n.starts_with("YUV_") => "i32",
        "VERSION_MAJOR" | "VERSION_MINOR" | "VERSION_PATCH" | "ABI_VERSION" => "u32",
        "VERSION_STRING" => "&str",
        "MAX_DIMS" => "i64",
        _ => return None,
    })
}

/// The bindings: every define, typedef, struct and function of include/tensor.h.
fn bindings(header: &str) -> (String, Vec<String>) {
    let h = header_model::parse_header(header);
    let mut out = String::from(
        "// Generated by aoti/build.rs from include/tensor.h (tests/support/header_model.rs reads\n\
         // it). Do not edit: the header is the one description of libtensor's C API.\n\n",
    );
    for (name, value) in &h.defines {
        if name == "LIBTENSOR_TENSOR_H" {
            continue;
        }
        let ty = define_type(name).unwrap_or_else(|| {
            panic!("include/tensor.h: #define {name} belongs to no family of aoti/build.rs's define_type")
        });
        let value = match value.as_str() {
            "UINT64_MAX" => "u64::MAX".to_string(),
            v => v.to_string(),
        };
        out += &format!("pub const {name}: {ty} = {value};\n");
    }
    out.push('\n');
    for t in &h.typedefs {
        let body = t
            .strip_prefix("typedef ")
            .unwrap()
            .trim_end_matches(';')
            .trim();
        if let Some(rest) = body.strip_prefix("struct ") {
            // An opaque handle: `typedef struct X X`.
            let name = rest.split_whitespace().next().unwrap();
            out += &format!("#[repr(C)]\npub struct {name} {{\n    _private: [u8; 0],\n}}\n\n");
        } else if let Some(open) = body.find("(*") {
            let close = open + body[open..].find(')').unwrap();
            let name = body[open + 2..close].trim();
            let list = body[close + 1..]
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')');
            out += &format!("pub type {name} = {};\n", fn_pointer(&body[..open], list));
        } else {
            let split = body.rfind(' ').unwrap();
            out += &format!(
                "pub type {} = {};\n",
                &body[split + 1..],
                rust_type(&body[..split])
            );
        }
    }
    out.push('\n');
    for s in &h.structs {
        out += &format!(
            "#[repr(C)]\n#[derive(Clone, Copy)]\npub struct {} {{\n",
            s.name
        );
        for f in &s.fields {
            out += &format!("    pub {},\n", rust_binding(f));
        }
        out += "}\n\n";
    }
    // Structs the header only forward-declares (DLPack's): opaque here.
    let mut opaque: Vec<String> = Vec::new();
    let mut fns = String::from("extern \"C\" {\n");
    let mut names = Vec::new();
    for f in &h.functions {
        for p in f.params.iter().chain(std::iter::once(&f.returns)) {
            for w in p.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if w.starts_with("DL") && !opaque.iter().any(|o| o == w) {
                    opaque.push(w.to_string());
                }
            }
        }
        let list: Vec<String> = f.params.iter().map(|p| rust_binding(p)).collect();
        fns += &format!(
            "    pub fn {}({}){};\n",
            f.name,
            list.join(", "),
            returns(&f.returns)
        );
        names.push(f.name.clone());
    }
    fns += "}\n";
    for o in opaque {
        out += &format!("#[repr(C)]\npub struct {o} {{\n    _private: [u8; 0],\n}}\n\n");
    }
    out += &fns;
    (out, names)
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
