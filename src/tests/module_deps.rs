//! The crate's module graph, read from the sources: which top-level module names which
//! (`crate::x` paths outside comments, string literals and `#[cfg(test)]` items), and the
//! rules it keeps. Diagnostics and caches sit above the foundation: no module names one
//! that names it back (directly or round a longer loop), the foundation names no feature
//! module, and the generic reference count names nothing but the sanitizer report.

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
