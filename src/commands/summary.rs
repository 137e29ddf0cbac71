//! The one-line JSON summaries `record --json` and `replay --json` print, as types: the
//! fields docs/ci.md documents, in its order, each taken from the session's outcome.

use std::path::Path;

use serde::Serialize;

use crate::fault::Fired;

use super::session::Ended;

/// What both summaries end with: the session's faults, its traffic to other hosts, how
/// far the program was contained and how it and agentproxy exited.
#[derive(Serialize)]
pub struct Common<'a> {
    pub faults: &'a [Fired],
    pub fault_problems: &'a [String],
    pub egress: &'a crate::proxy::egress::Log,
    pub containment: Option<String>,
    pub program_exit: Option<i32>,
    pub exit_code: i32,
}

impl<'a> Common<'a> {
    pub fn of(ended: &'a Ended, exit_code: i32) -> Common<'a> {
        let out = &ended.outcome;
        Common {
            faults: &out.faults.fired,
            fault_problems: &out.faults.problems,
            egress: &out.egress,
            containment: ended.level.as_ref().map(ToString::to_string),
            program_exit: ended.child,
            exit_code,
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "command", rename_all = "lowercase")]
pub enum Summary<'a> {
    Record {
        cassette: &'a Path,
        recorded: usize,
        streamed: usize,
        trajectory: Option<&'static str>,
        upstream_errors: &'a [String],
        #[serde(flatten)]
        common: Common<'a>,
    },
    Replay {
        cassette: &'a Path,
        interactions: usize,
        served: usize,
        misses: &'a [String],
        unused: &'a [String],
        #[serde(flatten)]
        common: Common<'a>,
    },
}

impl Summary<'_> {
    /// Print it as one line on stdout.
    pub fn print(&self) -> crate::error::Result<()> {
        let line = serde_json::to_string(self).map_err(crate::error::Error::RenderReport)?;
        super::output::print(&format!("{line}\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_has_the_documented_fields_in_order() {
        let ended = Ended {
            outcome: crate::proxy::Outcome::default(),
            child: Some(0),
            level: None,
            injected: vec![],
        };
        let record = Summary::Record {
            cassette: Path::new("c.json"),
            recorded: 2,
            streamed: 1,
            trajectory: None,
            upstream_errors: &[],
            common: Common::of(&ended, 0),
        };
        assert_eq!(
            serde_json::to_string(&record).unwrap(),
            r#"{"command":"record","cassette":"c.json","recorded":2,"streamed":1,"trajectory":null,"upstream_errors":[],"faults":[],"fault_problems":[],"egress":{},"containment":null,"program_exit":0,"exit_code":0}"#
        );
        let replay = Summary::Replay {
            cassette: Path::new("c.json"),
            interactions: 3,
            served: 2,
            misses: &["m".to_owned()],
            unused: &[],
            common: Common::of(&ended, 1),
        };
        assert_eq!(
            serde_json::to_string(&replay).unwrap(),
            r#"{"command":"replay","cassette":"c.json","interactions":3,"served":2,"misses":["m"],"unused":[],"faults":[],"fault_problems":[],"egress":{},"containment":null,"program_exit":0,"exit_code":1}"#
        );
    }
}
