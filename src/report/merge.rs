//! `agentproxy report merge`: the JSON reports of a sharded run, read back and joined into
//! the report of the whole run. Pure: the caller reads the files.

use std::path::PathBuf;

use serde::Deserialize;

use super::{RunReport, Summary};
use crate::spec::{shard_owner, Shard};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no report to merge")]
    NoReports,
    #[error("{}: not a JSON report (or case) of agentproxy: {message}", file.display())]
    Unreadable { file: PathBuf, message: String },
    #[error("{}: JSON report version {version}, this agentproxy reads {major}.x; merge with the agentproxy that wrote it", file.display(), major = super::json::FORMAT_VERSION.split('.').next().unwrap_or_default())]
    Version { file: PathBuf, version: String },
    #[error("{}: not the report of a shard (it was run without --shard)", file.display())]
    NotSharded { file: PathBuf },
    #[error("{} is shard {this} and {} is shard {first}: they are not shards of one run", file.display(), first_file.display())]
    Mismatch {
        first_file: PathBuf,
        first: Shard,
        file: PathBuf,
        this: Shard,
    },
    #[error("shard {index}/{total} is given twice: {} and {}", first.display(), again.display())]
    Repeated {
        index: usize,
        total: usize,
        first: PathBuf,
        again: PathBuf,
    },
    #[error("{}: shard {index}/{total} cannot be merged with {given} report(s): a shard is K/N with 1 <= K <= N, and a run of N shards has N reports", file.display())]
    OutOfRange {
        file: PathBuf,
        index: usize,
        total: usize,
        given: usize,
    },
    #[error("shard(s) {} of {total} missing: merge every shard's report", missing.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))]
    Missing { missing: Vec<usize>, total: usize },
    #[error("{} lists other cases than {}: the shards of one run select the same cases (same specs, --case and --filter)", file.display(), first.display())]
    OtherCases { first: PathBuf, file: PathBuf },
}

#[derive(Deserialize)]
struct Document {
    version: String,
    #[serde(flatten)]
    report: RunReport,
}

/// Read one JSON report; `file` names it in errors.
pub fn parse(file: PathBuf, text: &str) -> Result<(PathBuf, RunReport), MergeError> {
    #[derive(Deserialize)]
    struct Version {
        version: Option<String>,
    }
    let unreadable = |e: serde_json::Error| MergeError::Unreadable {
        file: file.clone(),
        message: e.to_string(),
    };
    // The version first: a newer major may not parse as this one's fields.
    let version = serde_json::from_str::<Version>(text)
        .map_err(unreadable)?
        .version;
    let Some(version) = version else {
        return Err(MergeError::Unreadable {
            file,
            message: "it has no `version`".to_owned(),
        });
    };
    let major = |v: &str| v.split('.').next().unwrap_or_default().to_owned();
    if major(&version) != major(super::json::FORMAT_VERSION) {
        return Err(MergeError::Version { file, version });
    }
    let doc: Document = serde_json::from_str(text).map_err(unreadable)?;
    debug_assert_eq!(doc.version, version);
    Ok((file, doc.report))
}

/// One case of a run, as `serve --cases-dir` writes it; `file` names it in errors.
pub fn case(file: PathBuf, text: &str) -> Result<super::CaseReport, MergeError> {
    serde_json::from_str(text).map_err(|e| MergeError::Unreadable {
        file,
        message: e.to_string(),
    })
}

/// The whole run from the reports of each of its shards, given once each in any order:
/// every case from the shard that ran it, the summary counted again, the longest
/// shard's duration.
/// Reports with their files, by shard (`None`: not given).
type Shards = Vec<Option<(PathBuf, RunReport)>>;

/// The reports in their shards' order (`None` where a shard is missing), and the first
/// one's file and shard: each checked to be a shard of the same run, once.
fn by_shard(
    reports: Vec<(PathBuf, RunReport)>,
) -> Result<(Shards, Option<(PathBuf, Shard)>), MergeError> {
    let mut by_index: Shards = vec![];
    let mut first: Option<(PathBuf, Shard)> = None;
    let given = reports.len();
    for (file, report) in reports {
        let Some(shard) = report.shard else {
            return Err(MergeError::NotSharded { file });
        };
        // A report file says what shard it is: a number out of range, or far more shards
        // than reports to merge, is no run to merge (and must not size the table; a few
        // missing are named below).
        if shard.index == 0 || shard.index > shard.total || shard.total > given + 64 {
            return Err(MergeError::OutOfRange {
                file,
                index: shard.index,
                total: shard.total,
                given,
            });
        }
        let (first_file, first_shard) = first.get_or_insert_with(|| (file.clone(), shard));
        if (shard.total, shard.strategy) != (first_shard.total, first_shard.strategy) {
            return Err(MergeError::Mismatch {
                first_file: first_file.clone(),
                first: *first_shard,
                file,
                this: shard,
            });
        }
        by_index.resize_with(shard.total, || None);
        if let Some((again, _)) = &by_index[shard.index - 1] {
            return Err(MergeError::Repeated {
                index: shard.index,
                total: shard.total,
                first: again.clone(),
                again: file,
            });
        }
        by_index[shard.index - 1] = Some((file, report));
    }
    Ok((by_index, first))
}

pub fn merge(reports: Vec<(PathBuf, RunReport)>) -> Result<RunReport, MergeError> {
    let (by_index, first) = by_shard(reports)?;
    let missing: Vec<usize> = (by_index.iter().enumerate())
        .filter(|(_, r)| r.is_none())
        .map(|(i, _)| i + 1)
        .collect();
    let (shards, total) = match first {
        Some((_, s)) if missing.is_empty() => {
            (by_index.into_iter().flatten().collect::<Vec<_>>(), s)
        }
        Some((_, s)) => {
            return Err(MergeError::Missing {
                missing,
                total: s.total,
            })
        }
        None => return Err(MergeError::NoReports),
    };
    let (first_file, first_report) = &shards[0];
    let names = |r: &RunReport| -> Vec<(String, String)> {
        r.cases
            .iter()
            .map(|c| (c.spec.clone(), c.name.clone()))
            .collect()
    };
    let listed = names(first_report);
    for (file, report) in &shards[1..] {
        if names(report) != listed {
            return Err(MergeError::OtherCases {
                first: first_file.clone(),
                file: file.clone(),
            });
        }
    }
    let cases = (listed.iter().enumerate())
        .map(|(p, (spec, name))| {
            let owner = shard_owner(total.strategy, total.total, p, spec, name);
            shards[owner - 1].1.cases[p].clone()
        })
        .collect::<Vec<_>>();
    Ok(RunReport {
        summary: Summary::of(&cases),
        cases,
        duration_ms: shards.iter().map(|(_, r)| r.duration_ms).max().unwrap_or(0),
        shard: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{json, sample, CaseReport, Status};

    /// Shard `k` of `n` of the sample run, as `agentproxy test --shard` reports it.
    fn shard_of(k: usize, n: usize, strategy: &str) -> (PathBuf, RunReport) {
        let shard = Shard::parse(&format!("{strategy}:{k}/{n}")).unwrap();
        let mut run = sample::run();
        for (p, c) in run.cases.iter_mut().enumerate() {
            if !shard.contains(p, &c.spec, &c.name) {
                let mut r = CaseReport::new(c.spec.as_ref(), &c.name, "", c.cassette.as_ref());
                r.skip(&format!("not in shard {shard}"));
                *c = r;
            }
        }
        run.summary = Summary::of(&run.cases);
        run.duration_ms = 1000 * k as u64;
        run.shard = Some(shard);
        // Through the JSON document, as the files are.
        parse(format!("shard-{k}.json").into(), &json::render(&run)).unwrap()
    }

    #[test]
    fn the_shards_of_a_run_merge_into_the_whole_run() {
        for strategy in ["hash", "count"] {
            let whole = sample::run();
            let merged = merge(vec![
                shard_of(2, 3, strategy),
                shard_of(3, 3, strategy),
                shard_of(1, 3, strategy),
            ])
            .unwrap();
            assert_eq!(
                json::render(&RunReport {
                    duration_ms: 5231,
                    ..merged.clone()
                }),
                json::render(&whole)
            );
            assert_eq!(merged.duration_ms, 3000, "the longest shard");
            assert_eq!(merged.summary, whole.summary);
            assert!(merged
                .cases
                .iter()
                .all(|c| c.status != Status::Skipped || c.name == "tokyo <later>"));
        }
    }

    #[test]
    fn a_missing_repeated_or_foreign_shard_is_refused() {
        let e = merge(vec![shard_of(1, 3, "hash"), shard_of(3, 3, "hash")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shard(s) 2 of 3 missing: merge every shard's report"
        );
        let e = merge(vec![shard_of(1, 2, "hash"), shard_of(1, 2, "hash")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shard 1/2 is given twice: shard-1.json and shard-1.json"
        );
        let e = merge(vec![shard_of(1, 2, "hash"), shard_of(2, 3, "hash")]).unwrap_err();
        assert_eq!(e.to_string(), "shard-2.json is shard hash:2/3 and shard-1.json is shard hash:1/2: they are not shards of one run");
        let e = merge(vec![shard_of(1, 2, "hash"), shard_of(2, 2, "count")]).unwrap_err();
        assert!(matches!(e, MergeError::Mismatch { .. }), "{e}");

        let (file, mut other) = shard_of(2, 2, "hash");
        other.cases.pop();
        let e = merge(vec![shard_of(1, 2, "hash"), (file, other)]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("shard-2.json lists other cases than shard-1.json"),
            "{e}"
        );

        // What a report file says of its shard is checked before it sizes anything.
        for (index, total) in [(0, 2), (3, 2), (1, usize::MAX)] {
            let (file, mut odd) = shard_of(1, 2, "hash");
            odd.shard = odd.shard.map(|s| Shard { index, total, ..s });
            let e = merge(vec![shard_of(1, 2, "hash"), (file, odd)]).unwrap_err();
            assert!(matches!(e, MergeError::OutOfRange { .. }), "{e}");
        }
        let (file, mut far) = shard_of(1, 2, "hash");
        far.shard = far.shard.map(|s| Shard { total: 100, ..s });
        assert_eq!(
            merge(vec![(file, far)]).unwrap_err().to_string(),
            "shard-1.json: shard 1/100 cannot be merged with 1 report(s): a shard is K/N with 1 <= K <= N, and a run of N shards has N reports"
        );

        let plain = parse("run.json".into(), &json::render(&sample::run())).unwrap();
        assert_eq!(
            merge(vec![plain]).unwrap_err().to_string(),
            "run.json: not the report of a shard (it was run without --shard)"
        );
    }

    #[test]
    fn an_unreadable_or_newer_report_is_refused() {
        let e = parse("a.json".into(), "{").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("a.json: not a JSON report (or case) of agentproxy: "),
            "{e}"
        );
        let e = parse("b.json".into(), r#"{"version": "3.0", "cases": 1}"#).unwrap_err();
        assert_eq!(e.to_string(), "b.json: JSON report version 3.0, this agentproxy reads 2.x; merge with the agentproxy that wrote it");
        let e = parse("c.json".into(), r#"{"version": "2.1", "cases": []}"#).unwrap_err();
        assert!(matches!(e, MergeError::Unreadable { .. }), "{e}");
        let e = parse("d.json".into(), "{}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.json: not a JSON report (or case) of agentproxy: it has no `version`"
        );
    }
}
