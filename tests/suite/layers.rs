//! The layer order written at the top of `src/lib.rs` holds in the imports: no module of
//! the crate names a module of its own layer or of a layer above it, and no two files of a
//! folder name each other in a circle, its `mod.rs` included (tests excepted).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

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

/// The files of each folder under `src/` and which of them each names: a child file names
/// a sibling `x.rs` by `super::x` or `crate::FOLDER::x`, and the folder's `mod.rs` by
/// `super::NAME` where `mod.rs` itself defines NAME (a name it re-exports from a child
/// counts as naming that child), or `super::*`; `mod.rs` names a child by `self::x`, a
/// bare `x::` path or `crate::FOLDER::x` (its `mod x;` and `pub use` lines left out). A
/// subfolder is one node of its parent folder, its `mod.rs` speaking for it.
fn file_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = Vec::new();
    sources(src, &mut files);
    let item = Regex::new(r"\b(?:fn|struct|enum|trait|type|const|static)\s+(\w+)").unwrap();
    let reexport = Regex::new(r"\buse\s+(?:self::)?(\w+)::([^;]*);").unwrap();
    let declaration = Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*;").unwrap();
    let pub_use = Regex::new(r"(?ms)^\s*pub(?:\([^)]*\))?\s+use\b[^;]*;").unwrap();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let Some(folder) = rel.parent().filter(|f| !f.as_os_str().is_empty()) else {
            continue;
        };
        let dir = src.join(folder);
        // Sibling nodes: the folder's files, and its subfolders.
        let siblings: BTreeSet<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .filter(|n| n != "mod" && n != "tests" && n != "snapshots")
            .collect();
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let (folder, me) = match stem.as_str() {
            // A subfolder's mod.rs speaks for the subfolder in its parent.
            "mod" if rel.components().count() > 2 => (
                folder.parent().unwrap(),
                folder.file_name().unwrap().to_string_lossy().into_owned(),
            ),
            _ => (folder, stem.clone()),
        };
        let node = |name: &str| format!("{}/{name}", folder.display());
        let body = code(&fs::read_to_string(&file).unwrap());
        let prefix = format!(
            "crate::{}::",
            folder.display().to_string().replace('/', "::")
        );
        let mut named: Vec<String> = Vec::new();
        if stem == "mod" && me == stem {
            let own = pub_use
                .replace_all(&declaration.replace_all(&body, ""), "")
                .into_owned();
            let path = Regex::new(&format!(
                r"(?:\bself::|{}|(?:^|[^\w:]))(\w+)::",
                regex::escape(&prefix)
            ))
            .unwrap();
            named.extend(path.captures_iter(&own).map(|c| c[1].to_owned()));
            named.retain(|n| siblings.contains(n));
        } else {
            let parent = if me == stem {
                dir.join("mod.rs")
            } else {
                dir.parent().unwrap().join("mod.rs")
            };
            let siblings: BTreeSet<String> = if me == stem {
                siblings
            } else {
                fs::read_dir(dir.parent().unwrap())
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
                    .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
                    .filter(|n| n != "mod" && n != "tests" && n != "snapshots")
                    .collect()
            };
            let parent_code = fs::read_to_string(&parent)
                .map(|t| code(&t))
                .unwrap_or_default();
            let mut own: BTreeSet<String> = item
                .captures_iter(&parent_code)
                .map(|c| c[1].to_owned())
                .collect();
            let mut reexported: BTreeMap<String, String> = BTreeMap::new();
            for c in reexport.captures_iter(&parent_code) {
                if !siblings.contains(&c[1]) {
                    continue;
                }
                for name in c[2].trim_matches(['{', '}', ' ']).split(',') {
                    let last = name
                        .rsplit(" as ")
                        .next()
                        .unwrap()
                        .rsplit("::")
                        .next()
                        .unwrap()
                        .trim();
                    if !last.is_empty() && last != "*" {
                        reexported.insert(last.to_owned(), c[1].to_owned());
                    }
                }
            }
            own.retain(|n| !reexported.contains_key(n));
            let path = Regex::new(&format!(
                r"\b(?:super::|{})(\{{[^}}]*\}}|\w+|\*)",
                regex::escape(&prefix)
            ))
            .unwrap();
            for c in path.captures_iter(&body) {
                let names: Vec<&str> = match c[1].strip_prefix('{') {
                    Some(group) => group.trim_end_matches('}').split(',').collect(),
                    None => vec![&c[1]],
                };
                for name in names {
                    let head = name
                        .split("::")
                        .next()
                        .unwrap()
                        .split(" as ")
                        .next()
                        .unwrap()
                        .trim();
                    if siblings.contains(head) {
                        named.push(head.to_owned());
                    } else if let Some(child) = reexported.get(head) {
                        named.push(child.clone());
                    } else if own.contains(head) || head == "*" {
                        named.push("mod".to_owned());
                    }
                }
            }
        }
        for other in named.into_iter().filter(|n| *n != me) {
            edges.entry(node(&me)).or_default().insert(node(&other));
        }
    }
    edges
}

/// The strongly connected components of more than one node (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: HashMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, (n, n));
        w.stack.push(v);
        for next in w.edges.get(v).into_iter().flatten() {
            let low = match w.index.get(next.as_str()) {
                None => {
                    visit(w, next);
                    w.index[next.as_str()].1
                }
                Some(&(i, _)) if w.stack.contains(&next.as_str()) => i,
                Some(_) => continue,
            };
            let entry = w.index.get_mut(v).unwrap();
            entry.1 = entry.1.min(low);
        }
        let (i, low) = w.index[v];
        if i == low {
            let at = w.stack.iter().position(|s| *s == v).unwrap();
            let component: Vec<String> = w.stack.drain(at..).map(str::to_owned).collect();
            if component.len() > 1 {
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        edges,
        index: HashMap::new(),
        stack: vec![],
        out: vec![],
    };
    for v in edges.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

#[test]
fn no_two_files_of_a_folder_name_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = file_edges(&src);
    // A known edge: the routing step names the model API handler.
    assert!(
        edges
            .get("proxy/service")
            .is_some_and(|e| e.contains("proxy/api")),
        "the file graph was not read: {edges:?}"
    );
    let found = circles(&edges);
    assert!(
        found.is_empty(),
        "files that name each other in a circle (mod.rs included):\n{}",
        found
            .iter()
            .map(|c| c.join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_circle_through_mod_rs_is_found() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [
        ("p/mod", "p/a"),
        ("p/a", "p/b"),
        ("p/b", "p/mod"),
        ("p/c", "p/a"),
    ] {
        edges.entry(a.into()).or_default().insert(b.into());
    }
    let mut found = circles(&edges);
    found.iter_mut().for_each(|c| c.sort());
    assert_eq!(found, vec![vec!["p/a", "p/b", "p/mod"]]);
}

/// `text` with its comments, string literals (raw ones too) and char literals blanked,
/// each line kept where it was: what is left is code whose braces can be counted.
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let clear = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        let end = if rest.starts_with("//") {
            i + rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if text[j..].starts_with("/*") {
                    (depth, j) = (depth + 1, j + 2);
                } else if text[j..].starts_with("*/") {
                    (depth, j) = (depth - 1, j + 2);
                } else {
                    j += 1;
                }
            }
            j
        } else if let Some(hashes) = (!ident(i))
            .then(|| rest.strip_prefix("br").or_else(|| rest.strip_prefix('r')))
            .flatten()
            .map(|r| r.len() - r.trim_start_matches('#').len())
            .filter(|&n| {
                rest[rest.len() - rest.trim_start_matches(['b', 'r']).len() + n..].starts_with('"')
            })
        {
            let close = format!("\"{}", "#".repeat(hashes));
            let open = rest.find('"').unwrap() + 1;
            i + open
                + rest[open..]
                    .find(&close)
                    .map_or(rest.len() - open, |k| k + close.len())
        } else if b[i] == b'"' || (rest.starts_with("b\"") && !ident(i)) {
            let mut j = i + if b[i] == b'b' { 2 } else { 1 };
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{1F600}'); otherwise a lifetime or a label.
            let close = match rest.as_bytes().get(1) {
                Some(b'\\') => rest[2..].find('\'').map(|k| k + 3),
                Some(_) => rest[1..]
                    .char_indices()
                    .nth(1)
                    .filter(|(_, c)| *c == '\'')
                    .map(|(k, _)| k + 2),
                None => None,
            };
            match close {
                Some(n) => i + n,
                None => i + 1,
            }
        } else {
            i + 1
        };
        if end > i + 1 || rest.starts_with('"') {
            clear(&mut out, i, end);
        }
        i = end.max(i + 1);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Past the `{…}` block that starts at or after `from` (or its `;`, for an item without).
fn item_end(code: &str, from: usize) -> usize {
    let b = code.as_bytes();
    let mut j = from;
    while j < b.len() && b[j] != b'{' && b[j] != b';' {
        j += 1;
    }
    if j >= b.len() || b[j] == b';' {
        return (j + 1).min(b.len());
    }
    let mut depth = 0;
    while j < b.len() {
        match b[j] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// `code` with every item under `#[cfg(test)]`, `#[test]` or `#[tokio::test]` blanked.
fn without_tests(code: &str) -> String {
    let attr = Regex::new(r"#\[\s*(?:cfg\s*\(\s*test\s*\)|test|tokio::test[^\]]*)\s*\]").unwrap();
    let mut out = code.as_bytes().to_vec();
    for m in attr.find_iter(code) {
        for c in &mut out[m.start()..item_end(code, m.end())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Each function of `code` (blanked, tests left out): its name, first line and length in
/// lines, from its `fn` line to its closing brace.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let fun = Regex::new(r"\bfn\s+(\w+)").unwrap();
    let line = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for m in fun.captures_iter(code) {
        let (start, b) = (m.get(0).unwrap().start(), code.as_bytes());
        // The body: the first `{` outside parentheses and brackets, unless a `;` comes first.
        let (mut j, mut depth) = (m.get(0).unwrap().end(), 0i32);
        while j < b.len() {
            match b[j] {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b';' | b'{' if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        if j >= b.len() || b[j] == b';' {
            continue;
        }
        let end = item_end(code, j);
        out.push((
            m[1].to_owned(),
            line(start),
            line(end - 1) - line(start) + 1,
        ));
    }
    out
}

/// A function reads on one screen or two: none is longer than 100 lines and at most
/// `OVER_80` are longer than 80 (the count only ever goes down); a file holds at most 650
/// lines that are not tests. A one-off clean-up does not hold without this guard.
#[test]
fn functions_and_files_stay_short() {
    const OVER_80: usize = 11;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let (mut long, mut over_80, mut big) = (vec![], vec![], vec![]);
    // Files of modules declared `#[cfg(test)] mod NAME;` are tests too.
    let declared =
        Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    let mut test_only = BTreeSet::new();
    for file in &files {
        let text = blank(&fs::read_to_string(file).unwrap());
        let stem = file.file_stem().unwrap();
        let dir = match stem.to_str() {
            Some("mod" | "lib") => file.parent().unwrap().to_owned(),
            _ => file.with_extension(""),
        };
        for m in declared.captures_iter(&text) {
            test_only.insert(dir.join(format!("{}.rs", &m[1])));
        }
    }
    let tests = |f: &PathBuf| f.to_string_lossy().ends_with("_tests.rs") || test_only.contains(f);
    for file in files.iter().filter(|f| !tests(f)) {
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        let code = without_tests(&blank(&fs::read_to_string(file).unwrap()));
        for (name, line, n) in functions(&code) {
            match n {
                101.. => long.push(format!("{rel}:{line} fn {name}: {n} lines")),
                81..=100 => over_80.push(format!("{rel}:{line} fn {name}: {n} lines")),
                _ => {}
            }
        }
        // Up to its last line of code: the tests are blank now, and usually at the end.
        let non_test = code
            .lines()
            .rev()
            .skip_while(|l| l.trim().is_empty())
            .count();
        if non_test > 650 {
            big.push(format!("{rel}: {non_test} lines besides its tests"));
        }
    }
    assert!(
        long.is_empty(),
        "functions over 100 lines:\n{}",
        long.join("\n")
    );
    assert!(
        over_80.len() <= OVER_80,
        "{} functions over 80 lines (at most {OVER_80}):\n{}",
        over_80.len(),
        over_80.join("\n")
    );
    assert!(big.is_empty(), "files over 650 lines:\n{}", big.join("\n"));
}

#[test]
fn the_length_guard_reads_rust_as_the_compiler_does() {
    let text = "fn a() {\n    let s = \"}\"; // }\n    let c = '}';\n    let r = r#\"{\"#;\n}\n\
                #[cfg(test)]\nmod tests {\n    fn b() {\n    }\n}\nfn c<'a>(x: &'a str) -> &'a str {\n    x\n}\n";
    let code = without_tests(&blank(text));
    let found = functions(&code);
    assert_eq!(
        found,
        [("a".to_owned(), 1, 5), ("c".to_owned(), 11, 3)],
        "{code}"
    );
}
