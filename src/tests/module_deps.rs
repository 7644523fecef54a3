//! The crate's module graph, read from the sources: which top-level module names which
//! (`crate::x` paths outside comments, string literals and `#[cfg(test)]` items), and the
//! rules it keeps. Diagnostics and caches sit above the foundation: no module names one
//! that names it back (directly or round a longer loop), the foundation names no feature
//! module, and the generic reference count names nothing but the sanitizer report.
//!
//! Inside `copy/` the files form four layers (ops, the write step, the engine, the leaf
//! kernels: `copy/mod.rs`), and [`copy_files_point_down`] checks them the same way: no
//! file names one that names it back, each names only files of its own layer or below, and
//! the kernels name no crate module but the element types (`dtype`, `float8`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The objects every tensor is made of, and their rules.
const FOUNDATION: &[&str] = &["refcount", "storage", "tensor_impl", "layout"];
/// What is built on the foundation: diagnostics, file formats, ops, the C boundary.
const FEATURES: &[&str] = &[
    "snapshot", "files", "dlpack", "copy", "format", "ffi", "view",
];
/// All `refcount` may name (`released_handle` asks the sanitizer to describe the block).
const REFCOUNT_MAY_NAME: &[&str] = &["sanitizer"];
/// The layers of `copy/`, top first: a file (by its path under `src/copy/`) is in the first
/// layer one of whose prefixes it starts with. `mod.rs` of `copy/` is the facade (no layer).
const COPY_LAYERS: &[(&str, &[&str])] = &[
    ("ops", &["ops.rs", "yuv.rs"]),
    ("write", &["write.rs"]),
    ("engine", &["engine/"]),
    ("kernels", &["kernels/"]),
];
/// The crate modules the leaf kernels may name: the element types and their rules.
const KERNELS_MAY_NAME: &[&str] = &["dtype", "float8"];

/// The source with comments, string and char literals blanked out (so that braces and
/// paths inside them are not read as code).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(b' ');
        } else if (rest.starts_with(b"r\"") || rest.starts_with(b"r#"))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // Raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while j < b.len() && b[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            if j < b.len() && b[j] == b'"' {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                i = (j + close.len()).min(b.len());
                out.extend_from_slice(b"\"\"");
            } else {
                out.push(b[i]);
                i += 1;
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.extend_from_slice(b"\"\"");
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{7f}'), else a lifetime or label.
            if i + 2 < b.len() && b[i + 1] != b'\\' && b[i + 2] == b'\'' {
                i += 3;
                out.extend_from_slice(b"' '");
            } else if i + 1 < b.len() && b[i + 1] == b'\\' {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
                out.extend_from_slice(b"' '");
            } else {
                out.push(b[i]);
                i += 1;
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `code` without its `#[cfg(test)]` items (a `mod tests { .. }`, a test-only fn or impl,
/// a `mod tests;` declaration).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let b = item.as_bytes();
        // The item ends at a `;` before any brace, or at the brace matching its first one.
        let mut end = item.len();
        let mut depth = 0usize;
        for (k, &c) in b.iter().enumerate() {
            match c {
                b';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The top-level modules `code` names through `crate::` paths (`crate::x::..`,
/// `crate::{x, y::..}`), among `modules`.
fn named_modules(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at;
        from = start + "crate::".len();
        // `$crate::` (macro bodies) and `foo_crate::` are not this crate's paths.
        if start > 0 && code[..start].ends_with(|c: char| is_ident(c) || c == '$') {
            continue;
        }
        let tail = code[from..].trim_start();
        let names: Vec<&str> = if let Some(group) = tail.strip_prefix('{') {
            // Top-level names of a use group: after `{` and after each `,` at depth 0.
            let mut names = Vec::new();
            let mut depth = 0;
            let mut expect = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => expect = true,
                    c if expect && is_ident(c) => {
                        let len = group[k..].find(|c: char| !is_ident(c)).unwrap_or(0);
                        names.push(&group[k..k + len]);
                        expect = false;
                    }
                    _ => {}
                }
            }
            names
        } else {
            let len = tail.find(|c: char| !is_ident(c)).unwrap_or(tail.len());
            vec![&tail[..len]]
        };
        for n in names {
            if modules.contains(n) {
                found.insert(n.to_string());
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules lib.rs declares (`pub mod x;`, `pub(crate) mod x;`).
fn declared_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let modules: BTreeSet<String> = code_only(&lib)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let decl = l
                .strip_prefix("pub(crate) mod ")
                .or(l.strip_prefix("pub mod "))?;
            Some(decl.strip_suffix(';')?.to_string())
        })
        .collect();
    assert!(
        modules.contains("refcount") && modules.contains("ffi"),
        "{modules:?}"
    );
    modules
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Top-level module -> the other top-level modules its non-test code names.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = src_dir();
    let modules = declared_modules();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        // Test-only files: a module's `tests.rs`, the ffi name test, src/tests/.
        let stem = f.file_stem().unwrap().to_string_lossy();
        if !modules.contains(&top) || stem == "tests" || stem.ends_with("_test") {
            continue;
        }
        let code = without_test_items(&code_only(&std::fs::read_to_string(&f).unwrap()));
        let names = named_modules(&code, &modules);
        graph
            .entry(top.clone())
            .or_default()
            .extend(names.into_iter().filter(|n| *n != top));
    }
    graph
}

/// The modules from which `to` is reached back, starting at `from` (a loop through both).
fn path_back(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    to: &str,
) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![from.to_string()]];
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        if last == to {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for next in graph.get(last).into_iter().flatten() {
            let mut p = path.clone();
            p.push(next.clone());
            stack.push(p);
        }
    }
    None
}

/// Prints the graph (`cargo test --lib module_graph -- --nocapture`) and checks the rules.
#[test]
fn module_graph_points_up() {
    let graph = module_graph();
    for (m, deps) in &graph {
        let deps: Vec<&str> = deps.iter().map(|s| s.as_str()).collect();
        println!("{m:12} -> {}", deps.join(", "));
    }
    let mut broken = Vec::new();
    for (m, deps) in &graph {
        for d in deps {
            if let Some(back) = path_back(&graph, d, m) {
                broken.push(format!("{m} -> {}", back.join(" -> ")));
            }
            if FOUNDATION.contains(&m.as_str()) && FEATURES.contains(&d.as_str()) {
                broken.push(format!("foundation module {m} names feature module {d}"));
            }
            if m == "refcount" && !REFCOUNT_MAY_NAME.contains(&d.as_str()) {
                broken.push(format!("refcount names {d}"));
            }
            // copy asks the storage, not a feature module, what it needs to know of one
            // (whether two mapped storages share pages, not `files`).
            if m == "copy" && FEATURES.contains(&d.as_str()) {
                broken.push(format!("copy names feature module {d}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "module rules broken:\n{}",
        broken.join("\n")
    );
}

/// The reader itself: comments, strings and test items are not code; groups are split.
/// The module map of lib.rs's doc names every module lib.rs declares (as `` `name` ``), and
/// nothing that is not one.
#[test]
fn lib_lists_every_module() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let start = lib.find("//! Module map").expect("lib.rs has a module map");
    let map: String = lib[start..]
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let declared = declared_modules();
    let missing: Vec<&String> = declared
        .iter()
        .filter(|m| !map.contains(&format!("`{m}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "modules missing from lib.rs's module map: {missing:?}"
    );
    // Each list item opens with a module's name: those must be declared.
    let listed: Vec<&str> = map
        .split("- `")
        .skip(1)
        .chain(map.split("; `").skip(1))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name))
        .collect();
    let unknown: Vec<&&str> = listed.iter().filter(|m| !declared.contains(**m)).collect();
    assert!(
        unknown.is_empty(),
        "lib.rs's module map names no such module: {unknown:?}"
    );
}

#[test]
fn module_graph_reader() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    let src = "use crate::{a::X, b};\n// crate::c\nlet s = \"crate::c {\";\n\
               let c = '{';\nfn f<'x>() { $crate::d; crate::c::y(); }\n\
               #[cfg(test)]\nmod tests { fn g() { crate::d::z() } }\n#[cfg(test)]\nuse crate::d;\n";
    let code = without_test_items(&code_only(src));
    let names: Vec<String> = named_modules(&code, &modules).into_iter().collect();
    assert_eq!(names, ["a", "b", "c"]);
}

/// The allocator's files (one per job) form no loop either: each names only the files
/// below it (`super::x`), and only `mod.rs`, the facade, names them all.
#[test]
fn allocator_files_point_down() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/allocator");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let parts: BTreeSet<String> = files
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|s| s != "mod")
        .collect();
    assert!(
        parts.contains("objects") && parts.contains("stats"),
        "{parts:?}"
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let part = f.file_stem().unwrap().to_string_lossy().into_owned();
        if part == "mod" {
            continue;
        }
        let code = without_test_items(&code_only(&std::fs::read_to_string(f).unwrap()));
        let code = code
            .replace("super::", "crate::")
            .replace("crate::allocator::", "crate::");
        let names = named_modules(&code, &parts);
        graph
            .entry(part.clone())
            .or_default()
            .extend(names.into_iter().filter(|n| *n != part));
    }
    let mut broken = Vec::new();
    for (m, deps) in &graph {
        println!(
            "allocator::{m:8} -> {}",
            deps.iter().cloned().collect::<Vec<_>>().join(", ")
        );
        for d in deps {
            if let Some(back) = path_back(&graph, d, m) {
                broken.push(format!("{m} -> {}", back.join(" -> ")));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "allocator files loop:\n{}",
        broken.join("\n")
    );
}

/// The module a file of `src/copy/` is (`kernels/float_int/long.rs`: `kernels::float_int::long`,
/// a `mod.rs`: its folder), as path segments under `copy`.
fn copy_module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = segs.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        segs.push(stem.to_string());
    }
    segs
}

/// The `copy` modules that `code` (the code of module `module`) names, as absolute paths under
/// `copy` (each the longest prefix of the path named that is one of `known`): through
/// `crate::copy::..`, `super::..` (chains of them, from inside inline `mod x { .. }` blocks
/// too) and `self::..`, single paths and `{..}` groups alike.
fn copy_names(
    code: &str,
    module: &[String],
    known: &BTreeSet<Vec<String>>,
) -> BTreeSet<Vec<String>> {
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = code.as_bytes();
    // The inline modules open at each position: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':' || b[i - 1] == b'$');
        if b[i] == b'{' {
            depth += 1;
        } else if b[i] == b'}' {
            if inline.last().is_some_and(|&(_, d)| d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
        } else if boundary && code[i..].starts_with("mod ") {
            // `mod name {` opens an inline module (`mod name;` declares a file).
            let rest = &code[i + 4..];
            let len = rest.bytes().take_while(|&c| is_ident(c)).count();
            if rest[len..].trim_start().starts_with('{') {
                inline.push((rest[..len].to_string(), depth + 1));
            }
        } else if boundary
            && (code[i..].starts_with("super::")
                || code[i..].starts_with("self::")
                || code[i..].starts_with("crate::copy::"))
        {
            let mut base: Vec<String> = module.to_vec();
            base.extend(inline.iter().map(|(n, _)| n.clone()));
            let mut j = i;
            if code[j..].starts_with("crate::copy::") {
                base.clear();
                j += "crate::copy::".len();
            } else if code[j..].starts_with("self::") {
                j += "self::".len();
            } else {
                while code[j..].starts_with("super::") {
                    base.pop();
                    j += "super::".len();
                }
            }
            // The named path: `a::b::c` segments, or the top-level names of a group.
            let mut paths: Vec<Vec<String>> = Vec::new();
            let seg = |j: usize| {
                let len = code[j..].bytes().take_while(|&c| is_ident(c)).count();
                &code[j..j + len]
            };
            let mut path = base.clone();
            loop {
                if code[j..].starts_with('{') {
                    let mut d = 0;
                    let mut expect = true;
                    let mut k = j + 1;
                    while k < b.len() {
                        match b[k] {
                            b'{' => d += 1,
                            b'}' if d == 0 => break,
                            b'}' => d -= 1,
                            b',' if d == 0 => expect = true,
                            c if expect && is_ident(c) => {
                                let s = seg(k);
                                let mut p = path.clone();
                                p.push(s.to_string());
                                // `name::more` inside the group: one more segment.
                                let after = &code[k + s.len()..];
                                if let Some(more) = after.strip_prefix("::") {
                                    let t = seg(k + s.len() + 2);
                                    if !t.is_empty() && !more.starts_with('{') {
                                        p.push(t.to_string());
                                    }
                                }
                                paths.push(p);
                                expect = false;
                                k += s.len();
                                continue;
                            }
                            _ => {}
                        }
                        k += 1;
                    }
                    break;
                }
                let s = seg(j);
                if s.is_empty() {
                    paths.push(path.clone());
                    break;
                }
                path.push(s.to_string());
                j += s.len();
                if !code[j..].starts_with("::") {
                    paths.push(path.clone());
                    break;
                }
                j += 2;
            }
            for p in paths {
                if let Some(n) = (0..=p.len())
                    .rev()
                    .map(|n| &p[..n])
                    .find(|q| known.contains(*q))
                {
                    found.insert(n.to_vec());
                }
            }
        }
        i += 1;
    }
    found
}

/// The layer of a `copy` file (its module path), or `None` for the facade.
fn copy_layer(module: &[String]) -> Option<usize> {
    let rel = module.join("/");
    COPY_LAYERS.iter().position(|(_, prefixes)| {
        prefixes.iter().any(|p| {
            let p = p.trim_end_matches(".rs");
            rel == p.trim_end_matches('/') || (rel.starts_with(p) && p.ends_with('/'))
        })
    })
}

/// The layering rules over a graph of `copy` files: no loop, no file naming a file of a
/// layer above its own (the facade, layer `None`, is not checked and names nothing here).
fn copy_rules_broken(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let name = |m: &Vec<String>| format!("copy::{}", m.join("::"));
    let flat: BTreeMap<String, BTreeSet<String>> = graph
        .iter()
        .map(|(m, d)| (name(m), d.iter().map(name).collect()))
        .collect();
    let mut broken = Vec::new();
    for (m, deps) in graph {
        for d in deps {
            if let Some(back) = path_back(&flat, &name(d), &name(m)) {
                broken.push(format!("{} -> {}", name(m), back.join(" -> ")));
            }
            if let (Some(lm), Some(ld)) = (copy_layer(m), copy_layer(d)) {
                if ld < lm {
                    broken.push(format!(
                        "{} (layer {}) names {} (layer {} above it)",
                        name(m),
                        COPY_LAYERS[lm].0,
                        name(d),
                        COPY_LAYERS[ld].0
                    ));
                }
            }
        }
    }
    broken
}

/// `copy/`'s files in layers (`copy/mod.rs`): printed (`cargo test --lib copy_files --
/// --nocapture`) and checked, with the crate modules the kernels name.
#[test]
fn copy_files_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir = src.join("copy");
    let lib = code_only(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let crate_modules: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let d = l
                .strip_prefix("pub(crate) mod ")
                .or(l.strip_prefix("pub mod "))?;
            Some(d.strip_suffix(';')?.to_string())
        })
        .collect();
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    // Test-only files are not part of the layering.
    files.retain(|f| f.file_stem().unwrap() != "tests");
    let modules: Vec<(PathBuf, Vec<String>)> = files
        .iter()
        .map(|f| (f.clone(), copy_module_of(f.strip_prefix(&dir).unwrap())))
        .collect();
    let known: BTreeSet<Vec<String>> = modules.iter().map(|(_, m)| m.clone()).collect();
    for (_, layers) in COPY_LAYERS {
        for p in *layers {
            let p = p.trim_end_matches(".rs").trim_end_matches('/');
            assert!(
                known.iter().any(|m| m.join("/") == p),
                "COPY_LAYERS names {p}, which is no file of src/copy/"
            );
        }
    }
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut broken = Vec::new();
    for (f, m) in &modules {
        if m.is_empty() {
            continue; // the facade
        }
        let code = without_test_items(&code_only(&std::fs::read_to_string(f).unwrap()));
        assert!(
            copy_layer(m).is_some(),
            "copy::{} is in no layer of COPY_LAYERS",
            m.join("::")
        );
        let names = copy_names(&code, m, &known);
        // A file's own path and its ancestors' (`super::x` from a submodule of x's file;
        // the facade) are not edges.
        let deps: BTreeSet<Vec<String>> = names
            .into_iter()
            .filter(|d| !d.is_empty() && !m.starts_with(d))
            .collect();
        println!(
            "copy::{:24} -> {}",
            m.join("::"),
            deps.iter()
                .map(|d| d.join("::"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if m[0] == "kernels" {
            for c in named_modules(&code, &crate_modules) {
                if c != "copy" && !KERNELS_MAY_NAME.contains(&c.as_str()) {
                    broken.push(format!("kernel copy::{} names crate::{c}", m.join("::")));
                }
            }
        }
        graph.insert(m.clone(), deps);
    }
    broken.extend(copy_rules_broken(&graph));
    assert!(
        broken.is_empty(),
        "copy layering broken:\n{}",
        broken.join("\n")
    );
}

/// The checker itself: a kernel naming the engine, a loop, and resolved paths (`super`
/// chains from inline modules, groups, `crate::copy::`) are found.
#[test]
fn copy_layering_reader() {
    let p = |s: &str| -> Vec<String> {
        s.split("::")
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    };
    let known: BTreeSet<Vec<String>> = [
        "",
        "ops",
        "engine",
        "engine::parallel",
        "kernels",
        "kernels::casts",
        "kernels::steps",
        "kernels::float8",
    ]
    .iter()
    .map(|s| p(s))
    .collect();
    let code = "use super::{casts, Kernel};\nmod avx2 { use super::super::steps::{drive}; }\n\
                fn f() { crate::copy::engine::parallel::split(); self::g(); }\n";
    let got: Vec<String> = copy_names(code, &p("kernels::float8"), &known)
        .iter()
        .map(|m| m.join("::"))
        .collect();
    assert_eq!(
        got,
        [
            "engine::parallel",
            "kernels",
            "kernels::casts",
            "kernels::float8",
            "kernels::steps"
        ]
    );
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(p(a)).or_default().insert(p(b));
            g.entry(p(b)).or_default();
        }
        g
    };
    assert!(copy_rules_broken(&graph(&[
        ("ops", "write"),
        ("write", "engine"),
        ("engine", "kernels::casts")
    ]))
    .is_empty());
    let up = copy_rules_broken(&graph(&[("kernels::casts", "engine")]));
    assert!(
        up.len() == 1 && up[0].contains("layer engine above it"),
        "{up:?}"
    );
    let cycle = copy_rules_broken(&graph(&[
        ("kernels::casts", "kernels::float8"),
        ("kernels::float8", "kernels::casts"),
    ]));
    assert_eq!(cycle.len(), 2, "{cycle:?}");
}
