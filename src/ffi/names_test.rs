//! The function name each exported function passes to the boundary helpers (`guard`,
//! `guard_or`, `call`, `call_tensor`, and `get_element` / `set_element`, which forward it) is the function's
//! own: error messages start with it. Checked by reading the sources of src/ffi/.

use std::collections::BTreeSet;

/// (name, body) of every `pub extern "C" fn` in `src`: the body ends at the first `}` at
/// the start of a line (rustfmt's closing brace of an item).
fn exported(src: &str) -> Vec<(&str, &str)> {
    const KEY: &str = "pub extern \"C\" fn ";
    let starts: Vec<usize> = src.match_indices(KEY).map(|(i, _)| i).collect();
    let mut out = Vec::new();
    for (k, &i) in starts.iter().enumerate() {
        let rest = &src[i + KEY.len()..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let next = starts.get(k + 1).map_or(src.len(), |&j| j) - i - KEY.len();
        let end = rest[..next].find("\n}").unwrap_or(next);
        out.push((&rest[..name_len], &rest[name_len..end]));
    }
    out
}

/// Every string literal in `body` (no escapes in function names).
fn literals(body: &str) -> Vec<&str> {
    body.split('"').skip(1).step_by(2).collect()
}

#[test]
fn every_exported_function_reports_errors_under_its_own_name() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            sources.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
        }
    }
    let mut names = BTreeSet::new();
    for (_, src) in &sources {
        names.extend(exported(src).into_iter().map(|(n, _)| n.to_string()));
    }
    assert!(
        names.len() > 100,
        "parsed only {} exported functions",
        names.len()
    );
    let mut checked = 0;
    for (path, src) in &sources {
        for (name, body) in exported(src) {
            let guarded = ["guard(", "guard_or(", "call(", "call_tensor(", "_element("]
                .iter()
                .any(|h| body.contains(h));
            let named: Vec<&str> = literals(body)
                .into_iter()
                .filter(|l| names.contains(*l))
                .collect();
            for l in &named {
                assert_eq!(
                    *l,
                    name,
                    "{}: fn {name} reports errors as \"{l}\"",
                    path.display()
                );
            }
            if guarded {
                assert!(
                    named.contains(&name),
                    "{}: fn {name} runs behind the boundary without passing \"{name}\"",
                    path.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "checked only {checked} functions");
}
