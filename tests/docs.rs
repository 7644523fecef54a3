//! The user documentation stays whole: `docs/c-api.md` has a heading of each section of the
//! header listing its functions, every relative link in the README and `docs/` points at a file of this
//! repository, and no tracked file sends a reader to a document outside the repository.

#[path = "support/header_model.rs"]
mod header_model;

use header_model::{api_modules, banner, first_exported_fn, module_title, parse_header};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The guide's `## ` headings (outside fenced code), each with the functions its `Functions:`
/// paragraphs name (its `### ` sub-headings' included): the backquoted `tensor_*` /
/// `storage_*` names from `Functions:` to the end of the paragraph.
fn guide_sections(guide: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
    let (mut in_code, mut in_list) = (false, false);
    for line in guide.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        if let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), BTreeSet::new()));
            continue;
        }
        in_list = if line.starts_with("Functions:") {
            true
        } else {
            in_list && !line.trim().is_empty()
        };
        if let (true, Some((_, names))) = (in_list, out.last_mut()) {
            for quoted in line.split('`').skip(1).step_by(2) {
                if quoted.starts_with("tensor_") || quoted.starts_with("storage_") {
                    names.insert(quoted.to_string());
                }
            }
        }
    }
    out
}

/// Each section of the header (a `pub mod` of src/ffi/, titled by its first `//!` line) is a
/// `## ` heading of docs/c-api.md, in header order, whose `Functions:` lists name exactly the
/// section's functions; no other heading lists functions.
#[test]
fn the_api_guide_has_a_heading_of_each_header_section_listing_its_functions() {
    let header = parse_header(&read(&root().join("include/tensor.h")));
    assert!(
        header.sections.len() >= 9 && header.functions.len() > 100,
        "the header model found only {:?}",
        header.sections
    );
    let guide = guide_sections(&read(&root().join("docs/c-api.md")));
    let titles: Vec<&str> = header.sections.iter().map(|s| s.title.as_str()).collect();
    let headings: Vec<&str> = guide
        .iter()
        .map(|(h, _)| h.as_str())
        .filter(|h| titles.contains(h))
        .collect();
    assert_eq!(
        headings, titles,
        "docs/c-api.md needs a `## ` heading of each section title of include/tensor.h \
         (the first `//!` line of each src/ffi/ module), in header order"
    );
    let mut wrong = Vec::new();
    for (heading, listed) in &guide {
        let Some(section) = header.sections.iter().find(|s| &s.title == heading) else {
            if !listed.is_empty() {
                wrong.push(format!(
                    "'{heading}' is no section of the header but lists {listed:?}"
                ));
            }
            continue;
        };
        let functions: BTreeSet<String> = section.functions.iter().cloned().collect();
        let missing: Vec<_> = functions.difference(listed).collect();
        let extra: Vec<_> = listed.difference(&functions).collect();
        if !missing.is_empty() || !extra.is_empty() {
            wrong.push(format!(
                "'{heading}': add {missing:?} to its `Functions:` list, remove {extra:?} \
                 (they are in another section, or not exported)"
            ));
        }
    }
    assert!(wrong.is_empty(), "docs/c-api.md: {wrong:#?}");
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

/// The model reads declarations, not comments, and the sections build.rs's banners open.
#[test]
fn the_header_model_sees_declarations_and_sections_not_comments() {
    let header = format!(
        "/**\n * tensor_fake(x) in a comment\n */\n#define TENSOR_ERR_SHAPE 4\n{}\
         typedef struct tensor_x_t {{\n  /** a; b */\n  int64_t a;\n}} tensor_x_t;\n\
         typedef void (*tensor_deleter_fn)(void *data);\n{}\
         /** Doc. Errors: SHAPE. */\nint64_t tensor_ndim(const struct tensor_t *t);\n\
         tensor_status_t tensor_view(const struct tensor_t *self_,\n  int64_t ndim);\n{}\
         void storage_release(struct storage_t *s);\n",
        banner("Types"),
        banner("Tensors: two"),
        banner("Storages")
    );
    let h = parse_header(&header);
    let names: Vec<_> = h.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["tensor_ndim", "tensor_view", "storage_release"]);
    let sections: Vec<_> = h
        .sections
        .iter()
        .map(|s| (s.title.as_str(), s.functions.len()))
        .collect();
    assert_eq!(
        sections,
        [("Types", 0), ("Tensors: two", 2), ("Storages", 1)]
    );
    assert_eq!(h.function("storage_release").unwrap().section, "Storages");
    assert_eq!(
        h.function("tensor_ndim").unwrap().doc,
        "Doc. Errors: SHAPE."
    );
    assert!(h.function("tensor_view").unwrap().doc.is_empty());
    assert_eq!(h.structs.len(), 1);
    assert_eq!(h.structs[0].fields, ["int64_t a"]);
    assert_eq!(
        h.typedefs,
        ["typedef void (*tensor_deleter_fn)(void *data)"]
    );
    assert_eq!(h.defines["TENSOR_ERR_SHAPE"], "4");
}

/// build.rs's reading of the sources: the `pub mod`s in order, their titles, first functions.
#[test]
fn the_sections_come_from_the_ffi_modules() {
    let ffi = root().join("src/ffi");
    let mod_rs = read(&ffi.join("mod.rs"));
    let modules = api_modules(&mod_rs);
    assert!(
        modules.len() >= 8 && !modules.contains(&"handle"),
        "{modules:?}"
    );
    let header = parse_header(&read(&root().join("include/tensor.h")));
    let mut titles = vec![module_title(&mod_rs).unwrap().to_string()];
    for m in &modules {
        let src = read(&ffi.join(format!("{m}.rs")));
        let title = module_title(&src).unwrap().to_string();
        let first = first_exported_fn(&src).unwrap();
        assert_eq!(header.function(first).unwrap().section, title, "{m}.rs");
        titles.push(title);
    }
    let in_header: Vec<_> = header.sections.iter().map(|s| s.title.clone()).collect();
    assert_eq!(in_header, titles);
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

/// The pages of `docs/` name other headings in words, not by `#anchor` links: Doxygen
/// (the HTML reference, CI's `docs` stage) cannot resolve GitHub's generated anchors.
#[test]
fn docs_pages_have_no_anchor_links() {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            for (i, line) in read(&path).lines().enumerate() {
                if line.contains("](#") {
                    found.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "anchor links Doxygen cannot resolve: {found:?}"
    );
}
