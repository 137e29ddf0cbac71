//! `agentproxy docs [TOPIC]`: the documentation, built into the binary so that every
//! install (cargo, the wheel, a release binary) has the pages `--help` points at.

use crate::cli::DocsArgs;
use crate::error::{Error, Exit, Result};

/// Every page: its topic name (the file name under `docs/` without `.md`) and its text.
pub const PAGES: [(&str, &str); 21] = [
    ("readme", include_str!("../../README.md")),
    ("install", include_str!("../../docs/install.md")),
    (
        "getting-started",
        include_str!("../../docs/getting-started.md"),
    ),
    (
        "spec-reference",
        include_str!("../../docs/spec-reference.md"),
    ),
    (
        "cassette-format",
        include_str!("../../docs/cassette-format.md"),
    ),
    (
        "trajectory-diff",
        include_str!("../../docs/trajectory-diff.md"),
    ),
    ("reports", include_str!("../../docs/reports.md")),
    ("faults", include_str!("../../docs/faults.md")),
    ("mcp", include_str!("../../docs/mcp.md")),
    ("a2a", include_str!("../../docs/a2a.md")),
    ("websockets", include_str!("../../docs/websockets.md")),
    ("egress", include_str!("../../docs/egress.md")),
    ("clouds", include_str!("../../docs/clouds.md")),
    ("pytest", include_str!("../../docs/pytest.md")),
    ("vitest", include_str!("../../docs/vitest.md")),
    ("ci", include_str!("../../docs/ci.md")),
    (
        "doctor-and-determinism",
        include_str!("../../docs/doctor-and-determinism.md"),
    ),
    ("holodeck", include_str!("../../docs/holodeck.md")),
    ("security", include_str!("../../docs/security.md")),
    ("architecture", include_str!("../../docs/architecture.md")),
    ("benchmarks", include_str!("../../docs/benchmarks.md")),
];

pub fn run(args: DocsArgs) -> Result<Exit> {
    let text = match args.topic.as_deref() {
        None => index(),
        Some(topic) => page(topic)
            .ok_or_else(|| Error::NoSuchTopic {
                topic: topic.to_owned(),
                topics: PAGES.iter().map(|(name, _)| *name).collect(),
            })?
            .to_owned(),
    };
    super::output::print(&text)?;
    Ok(Exit::Ok)
}

/// The page of `topic` (`spec-reference`, also `spec-reference.md` or `docs/…`).
fn page(topic: &str) -> Option<&'static str> {
    let name = topic.trim_start_matches("docs/").trim_end_matches(".md");
    let name = name.to_ascii_lowercase();
    PAGES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// One line per page: its topic and its title (the page's first heading).
fn index() -> String {
    let width = PAGES.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut out = String::from("agentproxy docs TOPIC prints a page (Markdown). The topics:\n\n");
    for (name, text) in PAGES {
        let title = text
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("# ");
        out.push_str(&format!("  {name:width$}  {title}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every page under docs/ is built in, under its file's name.
    #[test]
    fn every_page_of_docs_is_a_topic() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/docs");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|n| n.strip_suffix(".md").map(str::to_owned))
            .collect();
        files.push("readme".into());
        files.sort();
        let mut topics: Vec<String> = PAGES.iter().map(|(n, _)| (*n).to_owned()).collect();
        topics.sort();
        assert_eq!(topics, files);
    }

    /// Help names pages a user has (`agentproxy docs TOPIC`), never a repository path.
    #[test]
    fn help_points_at_built_in_pages() {
        use clap::CommandFactory;
        let mut cli = crate::cli::Cli::command();
        let mut help = cli.render_long_help().to_string();
        for sub in cli.get_subcommands_mut() {
            help.push_str(&sub.render_long_help().to_string());
        }
        let path = regex::Regex::new(r"docs/[a-z-]+\.md").unwrap();
        assert!(!path.is_match(&help), "{:?}", path.find(&help));
        let named = regex::Regex::new(r"`agentproxy docs ([a-z-]+)`").unwrap();
        let topics: Vec<&str> = named
            .captures_iter(&help)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert!(topics.len() >= 8, "{topics:?}");
        for t in topics {
            assert!(
                page(t).is_some(),
                "help names `agentproxy docs {t}`, no such page"
            );
        }
    }

    #[test]
    fn a_topic_is_found_by_name_or_path() {
        for spelled in ["faults", "faults.md", "docs/faults.md", "FAULTS"] {
            assert!(
                page(spelled).unwrap().starts_with("# Injected faults"),
                "{spelled}"
            );
        }
        assert_eq!(page("nope"), None);
        assert!(index().contains("  spec-reference          Spec reference (`agentproxy test`)\n"));
    }
}
