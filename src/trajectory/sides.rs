//! The two recordings side by side: each turn's steps (its tool calls in order, then its
//! reply) aligned row by row, identical calls on one row by their longest common
//! subsequence, a call of the same tool in between beside its counterpart as changed, the
//! rest alone on their side. What `diff --format html` lays out in two columns; the
//! changes themselves are [`super::changes`]'.

use std::collections::HashMap;

use serde_json::Value;
use similar::{capture_diff_slices, Algorithm, DiffTag};

use crate::neutral::ToolCall;

/// One turn of both recordings, aligned.
#[derive(Debug, Clone, PartialEq)]
pub struct AlignedTurn {
    /// 0-based; renderers number turns from 1.
    pub turn: usize,
    pub rows: Vec<Row>,
}

/// A step of the old recording beside its counterpart in the new one.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub old: Option<Cell>,
    pub new: Option<Cell>,
}

impl Row {
    /// Both sides, and equal.
    pub fn same(&self) -> bool {
        self.old.is_some() && self.old == self.new
    }
}

/// One step of a recording.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A tool call, with the result the model was told (`None`: none in the recording).
    Call {
        name: String,
        arguments: Value,
        result: Option<Value>,
    },
    Reply(String),
}

/// One turn of one recording, as the alignment reads it.
pub(super) struct Steps<'a, 's> {
    pub tools: &'a [&'s ToolCall],
    pub reply: Option<&'s str>,
    /// Results by call id.
    pub results: &'a HashMap<&'s str, Value>,
}

/// Turn `turn` of the two recordings, aligned.
pub(super) fn turn(turn: usize, old: &Steps<'_, '_>, new: &Steps<'_, '_>) -> AlignedTurn {
    let key = |c: &&ToolCall| format!("{}\0{}", c.name, c.arguments);
    let (ko, kn): (Vec<String>, Vec<String>) = (
        old.tools.iter().map(key).collect(),
        new.tools.iter().map(key).collect(),
    );
    let same_tool = |i: usize, j: usize| old.tools[i].name == new.tools[j].name;
    let cell = |s: &Steps<'_, '_>, i: usize| {
        let c = s.tools[i];
        Cell::Call {
            name: c.name.clone(),
            arguments: c.arguments.clone(),
            result: s.results.get(c.id.as_str()).cloned(),
        }
    };
    let mut rows: Vec<Row> = monotone(&ko, &kn, &same_tool)
        .into_iter()
        .map(|(i, j)| Row {
            old: i.map(|i| cell(old, i)),
            new: j.map(|j| cell(new, j)),
        })
        .collect();
    if old.reply.is_some() || new.reply.is_some() {
        rows.push(Row {
            old: old.reply.map(|r| Cell::Reply(r.to_owned())),
            new: new.reply.map(|r| Cell::Reply(r.to_owned())),
        });
    }
    AlignedTurn { turn, rows }
}

/// A monotone alignment of two sequences by key: the longest common subsequence of equal
/// keys on shared rows; within each stretch between them, an old item beside the next new
/// item `related` to it, the new items it passes over alone before it; the rest alone.
fn monotone(
    old: &[String],
    new: &[String],
    related: &dyn Fn(usize, usize) -> bool,
) -> Vec<(Option<usize>, Option<usize>)> {
    let mut out = Vec::with_capacity(old.len().max(new.len()));
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        let (tag, or, nr) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            out.extend(or.zip(nr).map(|(i, j)| (Some(i), Some(j))));
            continue;
        }
        let mut next = nr.start;
        for i in or {
            match (next..nr.end).find(|&j| related(i, j)) {
                Some(j) => {
                    out.extend((next..j).map(|j| (None, Some(j))));
                    out.push((Some(i), Some(j)));
                    next = j + 1;
                }
                None => out.push((Some(i), None)),
            }
        }
        out.extend((next..nr.end).map(|j| (None, Some(j))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(s: &str) -> Vec<String> {
        s.chars().map(String::from).collect()
    }

    /// Rows as `old/new` letters, `-` for an empty side.
    fn rows(old: &str, new: &str) -> Vec<String> {
        let (o, n) = (keys(old), keys(new));
        // Related: the same letter, any case (a call of the same tool).
        let related = |i: usize, j: usize| o[i].eq_ignore_ascii_case(&n[j]);
        monotone(&o, &n, &related)
            .into_iter()
            .map(|(i, j)| {
                let side =
                    |k: Option<usize>, v: &[String]| k.map_or("-".to_owned(), |k| v[k].clone());
                format!("{}{}", side(i, &o), side(j, &n))
            })
            .collect()
    }

    #[test]
    fn equal_steps_share_rows_and_changed_ones_sit_beside_their_counterpart() {
        assert_eq!(rows("abc", "abc"), ["aa", "bb", "cc"]);
        // b's arguments changed (B): beside it; d was added after it.
        assert_eq!(rows("abc", "aBdc"), ["aa", "bB", "-d", "cc"]);
        // x removed, y added in its place: unrelated, each alone.
        assert_eq!(rows("axc", "ayc"), ["aa", "x-", "-y", "cc"]);
        // A new call passed over to reach the counterpart comes first, alone.
        assert_eq!(rows("ab", "ayB"), ["aa", "-y", "bB"]);
        assert_eq!(rows("", "ab"), ["-a", "-b"]);
        assert_eq!(rows("ab", ""), ["a-", "b-"]);
    }

    #[test]
    fn a_moved_call_is_removed_on_one_row_and_added_on_another() {
        // The rows stay in both recordings' order, so a move cannot share a row.
        assert_eq!(rows("ab", "ba"), ["-b", "aa", "b-"]);
    }
}
