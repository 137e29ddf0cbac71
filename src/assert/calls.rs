//! Checks on the tool calls of a turn (or of a whole case): which calls were made, in which
//! order, with which arguments, which ones were not allowed, and how many. Every failure says
//! what was expected, what happened, where in the arguments, and which observed call came
//! nearest.
//!
//! # Semantics
//!
//! - `order: subsequence` (the default): the expectations appear, in order, among the calls;
//!   other calls may come before, between and after them. Matched leftmost-first, which is
//!   optimal here: each expectation tests one call on its own, so if any embedding exists, the
//!   leftmost choice for each expectation leaves at least as much room for the rest.
//! - `order: exact`: the calls are the expectations, one to one, in order. This is the same as a
//!   subsequence with `strict: true`: names in `allow` may still appear in between.
//! - `order: unordered`: each expectation is matched to its own call, in any order. Matched by
//!   maximum bipartite matching, so `[{city: exists}, {city: Paris}]` against calls
//!   `[Paris, London]` passes, where a greedy pass would give Paris to the first expectation.
//! - `strict`: a call that no expectation matched fails, unless its name is in `allow`.
//! - `never`: a call that matches a `never` entry (a name, optionally with argument matchers)
//!   fails, whether or not an expectation also matched it.
//! - `count`: the total number of calls, allowed and matched ones included.
//!
//! Calls are numbered from 1 in messages (`call #2`), and so are expectations.

use std::fmt;

use serde_json::Value;

use super::json::render;
use super::matchers::{MatchContext, Matcher, Mismatch};

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedCall {
    pub name: String,
    /// The arguments as the model wrote them, parsed.
    pub arguments: Value,
    /// The tool's parameters schema, as the request that offered the tool declared it.
    pub schema: Option<Value>,
}

/// A call a spec asks for (or, under `never`, forbids): a tool name, and optionally a matcher
/// over the arguments; without one, any arguments do.
#[derive(Debug, Clone)]
pub struct CallExpectation {
    pub name: String,
    pub args: Option<Matcher>,
}

/// How the expected calls must be arranged among the observed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// In order, other calls allowed around them (the default).
    #[default]
    Subsequence,
    /// In order, and nothing else except names in `allow`.
    Exact,
    /// In any order, one call each.
    Unordered,
}

/// A bound on the number of calls; both ends of a range are inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Exactly(usize),
    Range {
        min: Option<usize>,
        max: Option<usize>,
    },
}

/// Everything a spec asserts about the calls of one scope (a turn, or a whole case).
#[derive(Debug, Clone, Default)]
pub struct CallsSpec {
    pub calls: Vec<CallExpectation>,
    pub order: Order,
    pub strict: bool,
    /// Tool names that `strict` (and `order: exact`) never counts as unexpected.
    pub allow: Vec<String>,
    pub never: Vec<CallExpectation>,
    /// Bound on the total number of calls.
    pub count: Option<Count>,
    /// The observed calls are executions at the MCP boundary, not calls the model made:
    /// the messages say `execution` and `executed`.
    pub executions: bool,
}

/// What kind of assertion failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// No call matched an expectation.
    Missing,
    /// A call matched an expectation, but in the wrong place.
    Order,
    /// A call matched no expectation under `strict` or `order: exact`.
    Unexpected,
    /// A call matched a `never` entry.
    Forbidden,
    /// The number of calls is out of bounds.
    Count,
}

/// One failed assertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    /// One line saying what failed.
    pub message: String,
    /// What the assertion wanted; at `path` when there is one.
    pub expected: String,
    /// What was there instead.
    pub actual: String,
    /// Where in the nearest call's arguments it failed (dotted, as in [`Mismatch::path`]);
    /// `None` when the failure is about a call as a whole.
    pub path: Option<String>,
    /// The observed call that came nearest to satisfying the assertion, and why it did not.
    pub nearest: Option<String>,
    /// Which assertion failed, for pointing at its line in the spec: an index into
    /// [`CallsSpec::calls`] (`Missing`, `Order`) or [`CallsSpec::never`] (`Forbidden`).
    pub expectation: Option<usize>,
    /// Which observed call the failure is about, as an index: the nearest candidate (`Missing`),
    /// the early call (`Order`), the offending call (`Unexpected`, `Forbidden`).
    pub call: Option<usize>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n  expected: {}\n  actual:   {}",
            self.message, self.expected, self.actual
        )?;
        if let Some(path) = &self.path {
            write!(f, "\n  at:       {path}")?;
        }
        if let Some(nearest) = &self.nearest {
            write!(f, "\n  nearest:  {nearest}")?;
        }
        Ok(())
    }
}

impl Count {
    fn admits(self, n: usize) -> bool {
        match self {
            Count::Exactly(want) => n == want,
            Count::Range { min, max } => {
                min.is_none_or(|min| n >= min) && max.is_none_or(|max| n <= max)
            }
        }
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Count::Exactly(n) => write!(f, "exactly {n}"),
            Count::Range {
                min: Some(min),
                max: Some(max),
            } => write!(f, "between {min} and {max}"),
            Count::Range {
                min: Some(min),
                max: None,
            } => write!(f, "at least {min}"),
            Count::Range {
                min: None,
                max: Some(max),
            } => write!(f, "at most {max}"),
            Count::Range {
                min: None,
                max: None,
            } => f.write_str("any number of"),
        }
    }
}

impl CallExpectation {
    /// The arguments' mismatches against this expectation (empty when there is no matcher).
    fn mismatches(&self, call: &ObservedCall) -> Vec<Mismatch> {
        let ctx = MatchContext {
            schema: call.schema.as_ref(),
        };
        self.args
            .as_ref()
            .map(|m| m.mismatches(Some(&call.arguments), &ctx))
            .unwrap_or_default()
    }

    fn accepts(&self, call: &ObservedCall) -> bool {
        let ctx = MatchContext {
            schema: call.schema.as_ref(),
        };
        self.name == call.name
            && self
                .args
                .as_ref()
                .is_none_or(|m| m.check(Some(&call.arguments), &ctx).is_ok())
    }
}

impl fmt::Display for CallExpectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.args {
            Some(args) => write!(f, "{} {args}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Checks `observed` against `spec`; an empty result means every assertion held.
///
/// Failures come in this order: per expectation (missing or out of order), then unexpected
/// calls, forbidden calls, and the count.
pub fn check_calls(spec: &CallsSpec, observed: &[ObservedCall]) -> Vec<Failure> {
    let fits: Vec<Vec<bool>> = spec
        .calls
        .iter()
        .map(|e| observed.iter().map(|c| e.accepts(c)).collect())
        .collect();
    let mut check = Check {
        spec,
        observed,
        fits,
        claims: vec![None; observed.len()],
        failures: Vec::new(),
    };
    match spec.order {
        Order::Subsequence | Order::Exact => check.in_order(),
        Order::Unordered => check.unordered(),
    }
    if spec.strict || spec.order == Order::Exact {
        check.unexpected();
    }
    check.forbidden();
    check.count();
    check.failures
}

/// Why an observed call is spoken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// It satisfied this expectation.
    Matched(usize),
    /// It fits an expectation but came too early, and is already reported as an order failure.
    Early,
}

struct Check<'a> {
    spec: &'a CallsSpec,
    observed: &'a [ObservedCall],
    /// `fits[i][j]`: observed call `j` satisfies expectation `i`.
    fits: Vec<Vec<bool>>,
    /// For each observed call, what it was used for.
    claims: Vec<Option<Claim>>,
    failures: Vec<Failure>,
}

impl Check<'_> {
    fn in_order(&mut self) {
        let mut cursor = 0;
        let mut last: Option<(usize, usize)> = None;
        for i in 0..self.spec.calls.len() {
            if let Some(j) = (cursor..self.observed.len()).find(|&j| self.fits[i][j]) {
                self.claims[j] = Some(Claim::Matched(i));
                cursor = j + 1;
                last = Some((i, j));
                continue;
            }
            // Leftmost matching leaves no fitting call after the cursor, so a fitting call that
            // is still free sits before an earlier expectation's match: the order is wrong.
            let early = (0..cursor).find(|&j| self.fits[i][j] && self.claims[j].is_none());
            match (early, last) {
                (Some(j), Some((before, at))) => {
                    self.claims[j] = Some(Claim::Early);
                    self.out_of_order(i, j, before, at);
                }
                _ => self.missing(i),
            }
        }
    }

    fn unordered(&mut self) {
        for i in 0..self.spec.calls.len() {
            let mut seen = vec![false; self.observed.len()];
            self.augment(i, &mut seen);
        }
        let matched: Vec<bool> = (0..self.spec.calls.len())
            .map(|i| self.claims.contains(&Some(Claim::Matched(i))))
            .collect();
        for (i, matched) in matched.into_iter().enumerate() {
            if !matched {
                self.missing(i);
            }
        }
    }

    /// Kuhn's augmenting path from expectation `i`: take a free fitting call, or one whose
    /// expectation can move to another call. Depth is bounded by the number of expectations.
    fn augment(&mut self, i: usize, seen: &mut [bool]) -> bool {
        for j in 0..self.observed.len() {
            if !self.fits[i][j] || seen[j] {
                continue;
            }
            seen[j] = true;
            let free = match self.claims[j] {
                Some(Claim::Matched(other)) => self.augment(other, seen),
                _ => true,
            };
            if free {
                self.claims[j] = Some(Claim::Matched(i));
                return true;
            }
        }
        false
    }

    fn missing(&mut self, i: usize) {
        let expectation = &self.spec.calls[i];
        let head = format!(
            "missing {}: {expectation} (expectation #{})",
            self.call(),
            i + 1
        );
        // The nearest candidate: a call to the same tool with the fewest failing assertions,
        // preferring calls no other expectation took, then the earliest.
        let nearest = self
            .observed
            .iter()
            .enumerate()
            .filter(|(_, call)| call.name == expectation.name)
            .map(|(j, call)| (j, expectation.mismatches(call)))
            .min_by_key(|(j, mismatches)| (mismatches.len(), self.claims[*j].is_some(), *j));
        let failure = match nearest {
            None => Failure {
                kind: FailureKind::Missing,
                message: format!("{head}: `{}` was never {}", expectation.name, self.called()),
                expected: expectation.to_string(),
                actual: self.calls_made(),
                path: None,
                nearest: None,
                expectation: Some(i),
                call: None,
            },
            Some((j, mismatches)) => match mismatches.split_first() {
                Some((first, rest)) => {
                    let more = match rest.len() {
                        0 => String::new(),
                        n => format!(" (and {n} more mismatch{})", if n == 1 { "" } else { "es" }),
                    };
                    Failure {
                        kind: FailureKind::Missing,
                        message: format!(
                            "{head}: no `{}` {} has matching arguments",
                            expectation.name,
                            self.call()
                        ),
                        expected: first.expected.clone(),
                        actual: first.actual.clone(),
                        path: Some(first.path.clone()).filter(|p| !p.is_empty()),
                        nearest: Some(format!("{}: {first}{more}", self.label(j))),
                        expectation: Some(i),
                        call: Some(j),
                    }
                }
                // A fitting call is left only when another expectation took it.
                None => Failure {
                    kind: FailureKind::Missing,
                    message: format!(
                        "{head}: every matching {} was taken by another expectation",
                        self.call()
                    ),
                    expected: expectation.to_string(),
                    actual: self.label(j),
                    path: None,
                    nearest: Some(format!("{}, {}", self.label(j), self.claim_note(j))),
                    expectation: Some(i),
                    call: Some(j),
                },
            },
        };
        self.failures.push(failure);
    }

    fn out_of_order(&mut self, i: usize, j: usize, before: usize, at: usize) {
        let expectation = &self.spec.calls[i];
        self.failures.push(Failure {
            kind: FailureKind::Order,
            message: format!(
                "out of order: {expectation} (expectation #{}) was {call} #{}, before {call} #{} `{}`, which matched expectation #{}",
                i + 1,
                j + 1,
                at + 1,
                self.observed[at].name,
                before + 1,
                call = self.call()
            ),
            expected: format!(
                "{expectation} after {} #{} `{}`",
                self.call(),
                at + 1,
                self.observed[at].name
            ),
            actual: self.label(j),
            path: None,
            nearest: Some(self.label(j)),
            expectation: Some(i),
            call: Some(j),
        });
    }

    fn unexpected(&mut self) {
        let rule = if self.spec.order == Order::Exact {
            "order: exact"
        } else {
            "strict"
        };
        let mut expected = format!("only the listed {}s", self.call());
        if !self.spec.allow.is_empty() {
            expected.push_str(&format!(", plus calls to {}", self.spec.allow.join(", ")));
        }
        for (j, call) in self.observed.iter().enumerate() {
            // A forbidden call is reported once, as forbidden.
            let forbidden = self.spec.never.iter().any(|rule| rule.accepts(call));
            if self.claims[j].is_none() && !self.spec.allow.contains(&call.name) && !forbidden {
                self.failures.push(Failure {
                    kind: FailureKind::Unexpected,
                    message: format!(
                        "unexpected {} #{} `{}`: {rule} allows only listed {}s",
                        self.call(),
                        j + 1,
                        call.name,
                        self.call()
                    ),
                    expected: expected.clone(),
                    actual: self.label(j),
                    path: None,
                    nearest: None,
                    expectation: None,
                    call: Some(j),
                });
            }
        }
    }

    fn forbidden(&mut self) {
        for (j, call) in self.observed.iter().enumerate() {
            let never = &self.spec.never;
            if let Some((k, rule)) = never
                .iter()
                .enumerate()
                .find(|(_, rule)| rule.accepts(call))
            {
                self.failures.push(Failure {
                    kind: FailureKind::Forbidden,
                    message: format!(
                        "forbidden {} #{} `{}` ({}: {rule})",
                        self.call(),
                        j + 1,
                        call.name,
                        if self.spec.executions {
                            "not executed"
                        } else {
                            "never"
                        }
                    ),
                    expected: if self.spec.executions {
                        format!("no execution of {rule}")
                    } else {
                        format!("no call to {rule}")
                    },
                    actual: self.label(j),
                    path: None,
                    nearest: None,
                    expectation: Some(k),
                    call: Some(j),
                });
            }
        }
    }

    fn count(&mut self) {
        let Some(count) = self.spec.count else { return };
        let n = self.observed.len();
        if !count.admits(n) {
            self.failures.push(Failure {
                kind: FailureKind::Count,
                message: format!("expected {count} tool calls, got {n}"),
                expected: format!("{count} tool calls"),
                actual: if n == 0 {
                    "0".to_owned()
                } else {
                    format!("{n} ({})", self.names())
                },
                path: None,
                nearest: None,
                expectation: None,
                call: None,
            });
        }
    }

    fn label(&self, j: usize) -> String {
        let call = &self.observed[j];
        format!(
            "{} #{} {} {}",
            self.call(),
            j + 1,
            call.name,
            render(&call.arguments)
        )
    }

    fn call(&self) -> &'static str {
        if self.spec.executions {
            "execution"
        } else {
            "call"
        }
    }

    fn called(&self) -> &'static str {
        if self.spec.executions {
            "executed"
        } else {
            "called"
        }
    }

    fn claim_note(&self, j: usize) -> String {
        match self.claims[j] {
            Some(Claim::Matched(i)) => format!("taken by expectation #{}", i + 1),
            Some(Claim::Early) => "reported as out of order".to_owned(),
            None => "not taken".to_owned(),
        }
    }

    fn calls_made(&self) -> String {
        match (self.observed.is_empty(), self.spec.executions) {
            (true, false) => "no tool calls were made".to_owned(),
            (true, true) => "nothing was executed".to_owned(),
            (false, false) => format!("calls made: {}", self.names()),
            (false, true) => format!("executed: {}", self.names()),
        }
    }

    fn names(&self) -> String {
        self.observed
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
