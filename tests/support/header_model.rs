//! The one model of the C API's description: the sections of `src/ffi/` (read from the
//! sources, before the crate exists) and the generated `include/tensor.h` (its sections,
//! functions with their doc comments and `Errors:` lines, status codes, defines, typedefs
//! and structs). Only the standard library is used, so every reader includes this file:
//!
//! * build.rs (`#[path = "tests/support/header_model.rs"]`): the section titles and the
//!   banners it writes into the header;
//! * the tests (`#[path = "support/header_model.rs"]`) and the fuzz targets
//!   (`#[path = "../tests/support/header_model.rs"]`): the header's functions, their
//!   documented statuses and their sections.
//!
//! **Sections.** Each `pub mod` of src/ffi/mod.rs, in declaration order, is one section of
//! the header (cbindgen emits the functions in module order), and the first `//!` line of
//! the module is its title; src/ffi/mod.rs's own first line titles the types and constants
//! cbindgen emits before every function. build.rs opens each section with [`banner`]; the
//! parser reads the banners back, and `docs/c-api.md` has a heading of each title.
//!
//! **Documented statuses.** The statuses of a function are read from the text of its doc
//! comment from the first `Errors:` to the end of the comment:
//!
//! * every status name of the header (`TENSOR_ERR_<NAME>` defines, read from the header
//!   itself, so new codes are understood) written as `<NAME>` counts, wherever it appears
//!   there (in a list, after "only", inside parentheses);
//! * `as <function>` (e.g. "Errors: as tensor_empty, plus OVERFLOW.") adds every status
//!   that function documents, recursively.
//!
//! `TENSOR_OK` is always allowed and never needs documenting. A function returning
//! `tensor_status_t` without an `Errors:` line has `errors_line == None`: a test treats that
//! as a failure.
// Each reader uses part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

// ---- the sources: sections --------------------------------------------------------------

/// The modules of src/ffi/mod.rs that form the header, in order: its `pub mod <name>;` lines
/// (a `pub(crate) mod` is not part of the API).
pub fn api_modules(mod_rs: &str) -> Vec<&str> {
    mod_rs
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect()
}

/// A module's title: its first `//!` line.
pub fn module_title(src: &str) -> Option<&str> {
    let line = src.lines().next()?.strip_prefix("//!")?.trim();
    (!line.is_empty()).then_some(line)
}

/// The name of a module's first `pub extern "C" fn`.
pub fn first_exported_fn(src: &str) -> Option<&str> {
    let key = "pub extern \"C\" fn ";
    let rest = &src[src.find(key)? + key.len()..];
    rest.split(|c: char| !is_ident_char(c)).next()
}

const RULE_LEN: usize = 94;

/// The comment that opens a section of the header.
pub fn banner(title: &str) -> String {
    let rule = "=".repeat(RULE_LEN);
    format!("/* {rule}\n * {title}\n * {rule} */\n\n")
}

/// The title of a [`banner`] comment (`None` for any other comment).
fn banner_title(comment: &str) -> Option<&str> {
    let rule = "=".repeat(RULE_LEN);
    let inner = comment
        .strip_prefix("/* ")?
        .strip_suffix(" */")?
        .strip_prefix(rule.as_str())?
        .strip_suffix(rule.as_str())?;
    inner.strip_prefix("\n * ")?.strip_suffix("\n * ")
}

// ---- the header -------------------------------------------------------------------------

/// One exported function of the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedFn {
    pub name: String,
    /// The return type as written (`tensor_status_t`, `void`, `struct tensor_t *`, ...).
    pub returns: String,
    /// The parameters as written, one string each (`const int64_t *sizes`).
    pub params: Vec<String>,
    /// Its doc comment's text (lines joined with spaces).
    pub doc: String,
    /// The text after `Errors:` (joined into one line), if the doc has one.
    pub errors_line: Option<String>,
    /// Status names (`NULL_POINTER`, ...) the doc names directly after `Errors:`.
    pub named: BTreeSet<String>,
    /// Functions the `Errors:` text refers to with "as <function>".
    pub as_of: Vec<String>,
    /// The title of its section (`""` before the first banner).
    pub section: String,
    /// Byte offset in the header text where its doc comment (or, without one, its
    /// declaration) starts: where build.rs puts a section's banner.
    pub start: usize,
}

impl ExportedFn {
    pub fn returns_status(&self) -> bool {
        self.returns.trim() == "tensor_status_t"
    }
}

/// One section of the header: a banner and the functions after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub title: String,
    /// In header order.
    pub functions: Vec<String>,
}

/// A `typedef struct name { fields } name;` of the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Struct {
    pub name: String,
    /// The field declarations, whitespace-normalised (`size_t struct_size`).
    pub fields: Vec<String>,
}

/// The parsed header.
#[derive(Debug, Clone)]
pub struct Header {
    /// `NULL_POINTER` -> 1, ... (from `#define TENSOR_ERR_<NAME> <code>`), plus `OK` -> 0.
    pub statuses: BTreeMap<String, i32>,
    /// In header order.
    pub functions: Vec<ExportedFn>,
    /// In header order.
    pub sections: Vec<Section>,
    /// Every `#define NAME VALUE`.
    pub defines: BTreeMap<String, String>,
    /// Every other typedef (scalar types, opaque handles, function pointers), normalised.
    pub typedefs: Vec<String>,
    pub structs: Vec<Struct>,
}

/// Whether `name` is an exported function name (only those prefixes are exported).
fn is_exported_name(name: &str) -> bool {
    name.starts_with("tensor_") || name.starts_with("storage_")
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The words (identifier-like tokens) of `text`.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !is_ident_char(c))
        .filter(|w| !w.is_empty())
        .collect()
}

fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of one `/** ... */` comment: the leading ` * ` of each line removed, the lines
/// joined with spaces.
fn comment_text(raw: &str) -> String {
    let inner = raw
        .trim()
        .trim_start_matches("/**")
        .trim_end_matches("*/")
        .to_string();
    inner
        .lines()
        .map(|l| {
            let t = l.trim();
            t.strip_prefix('*').unwrap_or(t).trim()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits a C declaration `ret name(params)` (one or more lines) into its parts, when it
/// declares an exported function.
fn parse_declaration(decl: &str) -> Option<(String, String, Vec<String>)> {
    let decl = normalise(decl);
    let open = decl.find('(')?;
    let close = decl.rfind(')')?;
    let head = decl[..open].trim_end();
    let name_start = head
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_ident_char(c))
        .last()
        .map(|(i, _)| i)?;
    let name = &head[name_start..];
    if !is_exported_name(name) {
        return None;
    }
    let returns = head[..name_start].trim().to_string();
    let inside = decl[open + 1..close].trim();
    let params = if inside.is_empty() || inside == "void" {
        Vec::new()
    } else {
        // No parameter of the C API is a function pointer type written inline (they are
        // typedefs), so commas separate parameters.
        inside.split(',').map(|p| p.trim().to_string()).collect()
    };
    Some((name.to_string(), returns, params))
}

/// The fields of a struct body (between its braces), without their doc comments.
fn struct_fields(body: &str) -> Vec<String> {
    let mut text = String::new();
    let mut rest = body;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    text.push_str(rest);
    text.split(';')
        .map(normalise)
        .filter(|f| !f.is_empty())
        .collect()
}

/// Parses the header text: comments (doc comments and banners), preprocessor lines, and the
/// declarations between them, each ending at the first `;` outside braces.
pub fn parse_header(text: &str) -> Header {
    let mut h = Header {
        statuses: BTreeMap::from([("OK".to_string(), 0)]),
        functions: Vec::new(),
        sections: Vec::new(),
        defines: BTreeMap::new(),
        typedefs: Vec::new(),
        structs: Vec::new(),
    };
    let mut doc: Option<(usize, String)> = None;
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let trimmed = rest.trim_start();
        if trimmed.is_empty() {
            break;
        }
        i += rest.len() - trimmed.len();
        let line_end = trimmed.find('\n').map_or(text.len(), |n| i + n + 1);
        if trimmed.starts_with("/*") {
            let end = trimmed.find("*/").map_or(text.len(), |n| i + n + 2);
            let comment = &text[i..end];
            if let Some(title) = banner_title(comment) {
                h.sections.push(Section {
                    title: title.to_string(),
                    functions: Vec::new(),
                });
                doc = None;
            } else if comment.starts_with("/**") {
                doc = Some((i, comment_text(comment)));
            }
            i = end;
            continue;
        }
        if trimmed.starts_with("//") || trimmed.starts_with('}') {
            // a line comment, the closing brace of `extern "C" {`
            i = line_end;
            continue;
        }
        if trimmed.starts_with('#') {
            let w: Vec<&str> = text[i + 1..line_end].split_whitespace().collect();
            if w.len() >= 3 && w[0] == "define" {
                h.defines.insert(w[1].to_string(), w[2..].join(" "));
            }
            doc = None;
            i = line_end;
            continue;
        }
        if let Some(after) = trimmed.strip_prefix("extern \"C\" {") {
            i = text.len() - after.len();
            continue;
        }
        // A declaration: to the first ';' outside braces.
        let mut depth = 0usize;
        let mut end = text.len();
        for (k, c) in trimmed.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ';' if depth == 0 => {
                    end = i + k;
                    break;
                }
                _ => {}
            }
        }
        let decl = &text[i..end];
        let (start, doc_text) = doc.take().unwrap_or((i, String::new()));
        if let Some(body) = decl
            .strip_prefix("typedef struct ")
            .filter(|d| d.contains('{'))
        {
            let open = body.find('{').unwrap();
            let close = body.rfind('}').unwrap_or(body.len());
            h.structs.push(Struct {
                name: body[..open].trim().to_string(),
                fields: struct_fields(&body[open + 1..close]),
            });
        } else if decl.starts_with("typedef ") {
            h.typedefs.push(normalise(decl));
        } else if let Some((name, returns, params)) = parse_declaration(decl) {
            let (errors_line, named, as_of) = match doc_text.find("Errors:") {
                None => (None, BTreeSet::new(), Vec::new()),
                Some(e) => {
                    let line = doc_text[e + "Errors:".len()..].trim().to_string();
                    let ws = words(&line);
                    let named = ws
                        .iter()
                        .filter(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))
                        .map(|w| w.to_string())
                        .collect();
                    let as_of = ws
                        .windows(2)
                        .filter(|p| p[0] == "as" && is_exported_name(p[1]))
                        .map(|p| p[1].to_string())
                        .collect();
                    (Some(line), named, as_of)
                }
            };
            if let Some(s) = h.sections.last_mut() {
                s.functions.push(name.clone());
            }
            h.functions.push(ExportedFn {
                section: h.sections.last().map_or(String::new(), |s| s.title.clone()),
                name,
                returns,
                params,
                doc: doc_text,
                errors_line,
                named,
                as_of,
                start,
            });
        }
        i = (end + 1).min(text.len());
    }
    for (name, value) in &h.defines {
        if let Some(status) = name.strip_prefix("TENSOR_ERR_") {
            if let Ok(code) = value.trim_matches(|c| c == '(' || c == ')').parse::<i32>() {
                h.statuses.insert(status.to_string(), code);
            }
        }
    }
    // Only status names count (the defines are all known now).
    for f in &mut h.functions {
        f.named.retain(|w| h.statuses.contains_key(w) && w != "OK");
    }
    h
}

impl Header {
    pub fn function(&self, name: &str) -> Option<&ExportedFn> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Every status name `name` documents (with `as <function>` references resolved),
    /// always including `OK`. `Err` names a reference to a function the header lacks.
    pub fn documented(&self, name: &str) -> Result<BTreeSet<String>, String> {
        let mut out = BTreeSet::from(["OK".to_string()]);
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_string()];
        while let Some(n) = todo.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            let f = self
                .function(&n)
                .ok_or_else(|| format!("'{name}' documents its errors as those of '{n}', which the header does not declare"))?;
            out.extend(f.named.iter().cloned());
            todo.extend(f.as_of.iter().cloned());
        }
        Ok(out)
    }

    /// The documented statuses of `name` as codes.
    pub fn documented_codes(&self, name: &str) -> Result<BTreeSet<i32>, String> {
        Ok(self
            .documented(name)?
            .iter()
            .map(|s| self.statuses[s])
            .collect())
    }

    /// The status name of `code` (`"99?"`-style text for an unknown code).
    pub fn status_name(&self, code: i32) -> String {
        self.statuses
            .iter()
            .find(|(_, &c)| c == code)
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| format!("unknown status {code}"))
    }
}
