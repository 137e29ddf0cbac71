//! Every sample output in the README and `docs/` that is marked with a command is what
//! that command prints today.
//!
//! A sample is marked by a comment before its fenced block:
//!
//! ```text
//! <!-- sample: agentproxy test examples/chat/chat.yaml -v -->
//! ```
//!
//! The command runs in `sh` at the repository root, offline (the committed cassettes),
//! with stdout and stderr merged; times, milliseconds and ports are masked before the
//! comparison. A block marked `<!-- snapshot: PATH -->` is the body of that insta snapshot
//! (output of a unit test that builds its input in code). `UPDATE_DOC_SAMPLES=1 cargo test --test suite doc_samples::` writes each block from
//! a real run instead (review the diff).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;

const MARK: &str = "<!-- sample: ";
const SNAPSHOT: &str = "<!-- snapshot: ";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every Markdown file under `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md") {
            files.push(p);
        }
    }
    files.sort();
    files
}

/// Where a sample's text comes from.
enum Source {
    /// A shell command line.
    Command(String),
    /// An insta snapshot file, relative to the repository.
    Snapshot(String),
}

/// One marked sample: its source, and the line range of its block's body.
struct Sample {
    source: Source,
    line: usize,
    body: std::ops::Range<usize>,
}

/// The samples of a document, each marker followed (after blank lines) by a fence.
fn samples(path: &Path, lines: &[&str]) -> Vec<Sample> {
    let mut out = vec![];
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim();
        let (rest, make): (_, fn(String) -> Source) = if let Some(r) = line.strip_prefix(MARK) {
            (r, Source::Command)
        } else if let Some(r) = line.strip_prefix(SNAPSHOT) {
            (r, Source::Snapshot)
        } else {
            continue;
        };
        let marked = rest
            .strip_suffix("-->")
            .expect("a sample marker ends with -->");
        let open = (i + 1..lines.len())
            .find(|&j| !lines[j].trim().is_empty())
            .filter(|&j| lines[j].starts_with("```"))
            .unwrap_or_else(|| {
                panic!(
                    "{}:{}: a sample marker must precede a fenced block",
                    path.display(),
                    i + 1
                )
            });
        // A block closes on its own fence: a ```` block may hold ``` blocks.
        let fence: String = lines[open].chars().take_while(|&c| c == '`').collect();
        let close = (open + 1..lines.len())
            .find(|&j| lines[j].trim_end() == fence)
            .unwrap_or_else(|| panic!("{}:{}: unclosed block", path.display(), open + 1));
        out.push(Sample {
            source: make(marked.trim().to_owned()),
            line: i + 1,
            body: open + 1..close,
        });
    }
    out
}

/// Run a sample's command as a user would, offline.
fn run(command: &str) -> String {
    let bin_dir = Path::new(support::proxy::bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &format!("{{ {command}\n}} 2>&1")])
        .current_dir(repo())
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    for (name, _) in std::env::vars() {
        if name.starts_with("AGENTPROXY_") || name == "CI" || name.ends_with("_API_KEY") {
            cmd.env_remove(name);
        }
    }
    let out = cmd.output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The text of a sample's source as it is today.
fn produce(source: &Source) -> String {
    match source {
        Source::Command(command) => run(command),
        Source::Snapshot(path) => {
            let text = std::fs::read_to_string(repo().join(path)).unwrap();
            // The header (source, expression) sits between two `---` lines.
            text.splitn(3, "---\n")
                .nth(2)
                .unwrap_or_default()
                .to_owned()
        }
    }
}

/// What varies from run to run: durations, and the port the proxy got; and from machine
/// to machine: whether the program could be contained.
fn mask(text: &str) -> String {
    let level =
        Regex::new(r"egress: (contained \(network namespace\)|not contained: [^;\n]*)").unwrap();
    let text = level.replace_all(text, "egress: LEVEL");
    let seconds = Regex::new(r"\b\d+\.\d+s\b").unwrap();
    let millis = Regex::new(r"\b\d+ ?ms\b").unwrap();
    let port = Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    let text = seconds.replace_all(&text, "N.NNs");
    let text = millis.replace_all(&text, "N ms");
    let text = port.replace_all(&text, "127.0.0.1:PORT");
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

#[test]
fn marked_sample_outputs_are_what_their_commands_print() {
    let update = std::env::var_os("UPDATE_DOC_SAMPLES").is_some();
    let mut stale = vec![];
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let found = samples(&doc, &lines);
        let mut rewritten: Vec<String> = vec![];
        let mut at = 0;
        for s in &found {
            let actual = produce(&s.source);
            let documented = lines[s.body.clone()].join("\n");
            checked += 1;
            if mask(&actual) != mask(&documented) {
                let what = match &s.source {
                    Source::Command(c) => c,
                    Source::Snapshot(p) => p,
                };
                stale.push(format!(
                    "{}:{}: `{what}`\n--- documented\n{documented}\n--- now\n{actual}",
                    doc.strip_prefix(repo()).unwrap().display(),
                    s.line,
                ));
            }
            rewritten.extend(lines[at..s.body.start].iter().map(|l| l.to_string()));
            rewritten.extend(actual.trim_end().lines().map(|l| l.trim_end().to_owned()));
            at = s.body.end;
        }
        if update && !found.is_empty() {
            rewritten.extend(lines[at..].iter().map(|l| l.to_string()));
            std::fs::write(&doc, rewritten.join("\n") + "\n").unwrap();
        }
    }
    assert!(checked > 0, "no marked sample found");
    assert!(
        update || stale.is_empty(),
        "{} sample(s) differ from a real run (UPDATE_DOC_SAMPLES=1 rewrites them):\n\n{}",
        stale.len(),
        stale.join("\n\n")
    );
}

#[test]
fn masking_hides_times_and_ports_only() {
    assert_eq!(
        mask("PASS  a (2.81s, replay)  \nlistening on http://127.0.0.1:42601, 12 ms\n"),
        "PASS  a (N.NNs, replay)\nlistening on http://127.0.0.1:PORT, N ms"
    );
    assert_eq!(mask("27 prompt / 6 completion"), "27 prompt / 6 completion");
}
