//! `--report json`: the run report as one pretty-printed JSON document.
//!
//! The document is the [`RunReport`] with a format version in front:
//!
//! ```json
//! {
//!   "version": "2.9",
//!   "cases": [ { "spec", "name", "status", "mode", "cassette", "duration_ms",
//!                "turns": [ { "index", "input", "reply", "output",
//!                             "tool_calls": [ { "name", "arguments", "result", "result_origin", "execution" } ],
//!                             "executions": [ { "server", "name", "arguments", "is_error" } ],
//!                             "assertions": [ { "passed", "what", "message", "expected",
//!                                               "actual", "path", "nearest" } ],
//!                             "model_calls", "requests",
//!                             "faults": [ { "request", "turn", "kind", "status", "detail" } ],
//!                             "usage": { "prompt", "completion", "cache_read",
//!                                                  "cache_creation", "calls_without_usage" },
//!                             "latency_ms", "missed", "not_reached" } ],
//!                "assertions", "misses", "problems", "warnings", "error", "usage", "diff",
//!                "fuzz": { "tool", "seed",
//!                          "runs": [ { "index", "kind", "violation", "arguments",
//!                                      "passed", "failures" } ] } } ],
//!   "summary": { "passed", "failed", "errors", "skipped", "turns_not_reached" },
//!   "duration_ms": 5231,
//!   "shard": { "index", "total", "strategy" }
//! }
//! ```
//!
//! `shard` is `null` unless the run was one shard (`--shard`). Keys come in this fixed
//! order, absent optional values are `null`, `status` is one of
//! `passed`, `failed`, `error`, `skipped`; two runs that did the same thing give the same
//! bytes except for the durations. The minor version grows when fields are added; the major
//! when a field changes meaning or goes away.

use serde::Serialize;

use super::RunReport;

/// The version of the JSON report format.
pub const FORMAT_VERSION: &str = "2.9";

#[derive(Serialize)]
struct Document<'a> {
    version: &'static str,
    #[serde(flatten)]
    report: &'a RunReport,
}

/// The report as pretty JSON, ending with a newline.
pub fn render(report: &RunReport) -> String {
    let doc = Document {
        version: FORMAT_VERSION,
        report,
    };
    // Cannot fail: every map in the report has string keys and no value serializer errs.
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::report::sample;

    #[test]
    fn json_report_snapshot() {
        insta::assert_snapshot!(render(&sample::run()));
    }

    #[test]
    fn json_report_parses_back_with_version_and_summary() {
        let v: Value = serde_json::from_str(&render(&sample::run())).expect("valid JSON");
        assert_eq!(v["version"], "2.9");
        assert_eq!(v["summary"]["failed"], 2);
        assert_eq!(
            v["cases"][3]["turns"][0]["tool_calls"][1]["arguments"]["country"],
            "CH"
        );
        assert_eq!(v["cases"][4]["status"], "error");
        let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
        assert_eq!(
            keys,
            ["cases", "duration_ms", "shard", "summary", "version"]
        );
    }
}
