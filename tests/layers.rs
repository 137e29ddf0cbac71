//! The layer order written at the top of `src/lib.rs` holds in the imports: no module of
//! the crate names a module of its own layer or of a layer above it (tests excepted).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// `module -> layer`, read from the `- layer N…: `a` `b`` lines of lib.rs's docs.
fn layers(lib: &str) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! - layer ")) {
        let (number, rest) = line
            .split_once([':', ','])
            .expect("a layer line has a colon");
        let n: usize = number.trim().parse().expect("a layer number");
        for name in rest.split('`').skip(1).step_by(2) {
            out.insert(name.to_owned(), n);
        }
    }
    out
}

/// The text of a source file without `#[cfg(test)] mod … { … }` blocks and comments.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(open) = after.find(['{', ';']) else {
            break;
        };
        if after.as_bytes()[open] == b';' {
            rest = &after[open + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::name` a text mentions, grouped `crate::{a, b::c}` included.
fn named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let after = &text[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for part in inner.split(',') {
                let head = part.trim().split("::").next().unwrap_or("").trim();
                out.push(head.to_owned());
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            out.push(after[..end].to_owned());
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" && name != "snapshots" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

#[test]
fn imports_point_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer = layers(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs");
        if top == "lib" || top == "main" {
            continue;
        }
        let own = *layer
            .get(top)
            .unwrap_or_else(|| panic!("module `{top}` is missing from the layer list in lib.rs"));
        for name in named(&code(&fs::read_to_string(file).unwrap())) {
            if name == top {
                continue;
            }
            if let Some(&other) = layer.get(&name) {
                if other >= own {
                    wrong.push(format!(
                        "{} (layer {own}) names `crate::{name}` (layer {other})",
                        rel.display()
                    ));
                }
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layer order:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_layer_list_names_every_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let layer = layers(&lib);
    for line in lib.lines() {
        if let Some(name) = (line.strip_prefix("pub mod "))
            .or_else(|| line.strip_prefix("pub(crate) mod "))
            .and_then(|l| l.strip_suffix(';'))
        {
            assert!(layer.contains_key(name), "`{name}` has no layer in lib.rs");
        }
    }
    assert!(layer.len() >= 10, "the layer list was not found: {layer:?}");
}
