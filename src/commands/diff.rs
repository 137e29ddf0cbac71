//! `agentproxy diff`: the trajectory diff of two cassettes, tagged against a spec case
//! when one is given, rendered as text, Markdown or JSON.

use super::revision;
use crate::cli::{DiffArgs, DiffFormat};
use crate::error::{Error, Exit, Result};
use crate::spec::{self, Case};
use crate::trajectory::{self, Asserted, Verdict};

pub fn run(args: DiffArgs) -> Result<Exit> {
    let asserted = match &args.spec {
        Some(path) => crate::spec::asserted(&spec_case(path, args.case.as_deref())?),
        None => Asserted::everything(),
    };
    // The match rules of both cassettes apply to each, so the old one is read for its
    // rules first; then each recording is read with its cassette alone in memory, and the
    // cassette let go: the diff holds the steps of both and one file at most, not two.
    let old_rules = revision::load(&args.old)?.match_rules;
    let new = revision::load(&args.new)?;
    let rules = trajectory::diff::rules(&old_rules, &new.match_rules);
    let now = trajectory::Recording::read(&new, rules.as_ref());
    drop(new);
    let was = trajectory::Recording::read(&revision::load(&args.old)?, rules.as_ref());
    let mut d = trajectory::diff_recordings(&was, &now, &asserted);
    d.old_name = Some(args.old.display().to_string());
    d.new_name = Some(args.new.display().to_string());
    let out = match args.format {
        DiffFormat::Text => trajectory::render_text(&d),
        DiffFormat::Markdown => trajectory::render_markdown(&d),
        DiffFormat::Json => trajectory::render_json(&d),
        DiffFormat::Html => {
            let title = format!("Trajectory diff: {}", d.verdict.as_str());
            crate::report::html::document(&title, &trajectory::render_html_body(&d), false)
        }
    };
    super::output::print(&out)?;
    Ok(if args.check && d.verdict == Verdict::Regression {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

/// The case named `name` in the spec at `path`; with no name, the spec's only case.
fn spec_case(path: &std::path::Path, name: Option<&str>) -> Result<Case> {
    let sp = spec::load(path)?;
    let names = || sp.cases.iter().map(|c| c.name.clone()).collect();
    match name {
        Some(n) => sp
            .cases
            .iter()
            .find(|c| c.name == n)
            .cloned()
            .ok_or_else(|| Error::NoSuchCase {
                spec: path.to_owned(),
                name: n.to_owned(),
                cases: names(),
            }),
        None if sp.cases.len() == 1 => Ok(sp.cases[0].clone()),
        None => Err(Error::WhichCase {
            spec: path.to_owned(),
            cases: names(),
        }),
    }
}
