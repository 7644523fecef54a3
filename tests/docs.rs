//! The user documentation stays whole: every function the header exports is named in
//! `docs/c-api.md`, every relative link in the README and `docs/` points at a file of this
//! repository, and no tracked file sends a reader to a document outside the repository.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Names of the functions declared in a C header: an identifier directly followed by `(`
/// on a line that starts a declaration (not a comment, not a macro).
fn declared_functions(header: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in header.lines() {
        let t = line.trim_start();
        if t.starts_with('*') || t.starts_with("/*") || t.starts_with('#') || t.starts_with("//") {
            continue;
        }
        if line.starts_with(' ') || line.starts_with("typedef") {
            continue; // continuation lines of a declaration, function-pointer typedefs
        }
        let Some(paren) = line.find('(') else {
            continue;
        };
        let head = line[..paren].trim_end();
        let name: String = head
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if name.starts_with("tensor_") || name.starts_with("storage_") {
            names.insert(name);
        }
    }
    names
}

#[test]
fn every_exported_function_is_in_the_api_guide() {
    let header = read(&root().join("include/tensor.h"));
    let functions = declared_functions(&header);
    assert!(
        functions.len() > 50 && functions.contains("tensor_view"),
        "the header parser found only {functions:?}"
    );
    let guide = read(&root().join("docs/c-api.md"));
    let missing: Vec<_> = functions
        .iter()
        .filter(|f| !guide.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/c-api.md does not name these exported functions (add each to its section's \
         `Functions:` list): {missing:?}"
    );
}

fn tracked_files() -> Vec<PathBuf> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output();
    match out {
        Ok(o) if o.status.success() => o
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root().join(String::from_utf8_lossy(p).as_ref()))
            .collect(),
        // A source tarball has no git: fall back to the documents that matter most.
        _ => vec![root().join("README.md")],
    }
}

#[test]
fn relative_links_in_the_docs_resolve_inside_the_repository() {
    let mut docs = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md") {
            docs.push(p);
        }
    }
    let repo = root().canonicalize().unwrap();
    let mut broken = Vec::new();
    for doc in &docs {
        // Markdown links `](target)` with a relative target, outside fenced code blocks
        // (where `[](void* p)` is a C++ lambda).
        let mut in_code = false;
        let text: String = read(doc)
            .lines()
            .filter(|l| {
                if l.trim_start().starts_with("```") {
                    in_code = !in_code;
                }
                !in_code
            })
            .collect::<Vec<_>>()
            .join("\n");
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let resolved = doc.parent().unwrap().join(target);
            match resolved.canonicalize() {
                Ok(p) if p.starts_with(&repo) => {}
                _ => broken.push(format!("{}: {target}", doc.display())),
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that do not resolve inside the repository: {broken:?}"
    );
}

#[test]
fn no_tracked_file_points_outside_the_repository() {
    // The project's specification once lived beside the repository; users cannot see it.
    let needles = ["../shared/", "shared/spec/"];
    let this_file = root().join("tests/docs.rs");
    let mut hits = Vec::new();
    for path in tracked_files() {
        if path == this_file {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|s| line.contains(s)) {
                hits.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "references to files outside the repository: {hits:#?}"
    );
}

#[test]
fn the_header_parser_sees_declarations_not_comments() {
    let header = "/**\n * tensor_fake(x) in a comment\n */\nint64_t tensor_ndim(const struct \
                  tensor_t *t);\ntensor_status_t tensor_view(const struct tensor_t *self_,\n  \
                  int64_t ndim);\ntypedef void (*tensor_deleter_fn)(void *data);\n";
    let names: Vec<_> = declared_functions(header).into_iter().collect();
    assert_eq!(names, ["tensor_ndim", "tensor_view"]);
}

/// The Doxygen reference (`make docs`, CI's `docs` stage) covers every installed header and
/// every page of `docs/`: a header or page added later is not left out of it.
#[test]
fn the_api_reference_reads_every_header_and_docs_page() {
    let doxyfile = read(&root().join("docs/Doxyfile"));
    let input: BTreeSet<&str> = doxyfile
        .lines()
        .find_map(|l| l.strip_prefix("INPUT").map(|r| r.trim_start()))
        .and_then(|r| r.strip_prefix('='))
        .expect("docs/Doxyfile has an INPUT line")
        .split_whitespace()
        .collect();
    let mut missing = Vec::new();
    for dir in ["include", "docs"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let wanted = [".h", ".hpp", ".md"].iter().any(|e| name.ends_with(e));
            let path = format!("{dir}/{name}");
            if wanted && !input.contains(path.as_str()) {
                missing.push(path);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in docs/Doxyfile's INPUT: {missing:?}"
    );
}
