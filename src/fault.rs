//! Injected faults: what goes wrong on purpose, and when. A fault fires on the n-th model
//! request (of the case, or of one turn) and on the `times - 1` requests after it, so it is
//! deterministic by occurrence, never by chance. This module is the grammar (one for a
//! spec's `faults:` and for `--fault`) and the choice of the fault a request gets; the
//! proxy serves it and each dialect gives it its native shape. A crash test's point is here
//! too: the proxy holds the program's next request once it has passed.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::fuzz::Way;

/// What goes wrong.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `429` with `Retry-After`.
    RateLimit,
    /// A `5xx` (`status:`, 500 unless given).
    ServerError,
    /// The provider's overloaded answer: Anthropic `529 overloaded_error`, OpenAI `503`,
    /// Gemini `503 UNAVAILABLE`.
    Overloaded,
    /// The request is held for `for:`, then the connection closed without an answer.
    Timeout,
    /// The connection is closed before the first byte of an answer.
    Disconnect,
    /// The stream is cut after `after_events:` events, without its terminator.
    TruncateStream,
    /// An error event inside a `200` stream.
    StreamError,
    /// The answer's tool call carries arguments that are not JSON.
    MalformedToolArgs,
    /// The answer's tool call carries arguments that break the tool's JSON schema in one
    /// way (`violation:`).
    SchemaViolation,
    /// The answer's tool call names a tool the request did not declare.
    UnknownTool,
    /// The answer stops on the length limit in the middle of its tool call.
    Length,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::RateLimit,
        Kind::ServerError,
        Kind::Overloaded,
        Kind::Timeout,
        Kind::Disconnect,
        Kind::TruncateStream,
        Kind::StreamError,
        Kind::MalformedToolArgs,
        Kind::SchemaViolation,
        Kind::UnknownTool,
        Kind::Length,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::RateLimit => "rate_limit",
            Kind::ServerError => "server_error",
            Kind::Overloaded => "overloaded",
            Kind::Timeout => "timeout",
            Kind::Disconnect => "disconnect",
            Kind::TruncateStream => "truncate_stream",
            Kind::StreamError => "stream_error",
            Kind::MalformedToolArgs => "malformed_tool_args",
            Kind::SchemaViolation => "schema_violation",
            Kind::UnknownTool => "unknown_tool",
            Kind::Length => "length",
        }
    }

    /// Does the fault spoil a tool call of the answer (rather than replace the answer)?
    pub fn spoils_tool_call(self) -> bool {
        matches!(
            self,
            Kind::MalformedToolArgs | Kind::SchemaViolation | Kind::UnknownTool | Kind::Length
        )
    }

    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The names of every kind, for error messages and help.
    pub fn names() -> String {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        names.join(", ")
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One declared fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// `request:` (≥ 1): the model request it fires on, counted from 1 over the case (over
    /// the turn, for a turn's fault); retries are requests too.
    pub request: usize,
    pub kind: Kind,
    /// `times:` (≥ 1, default 1): how many requests in a row it fires on.
    pub times: usize,
    /// `status:` (`server_error` only, 500–599, default 500).
    pub status: u16,
    /// `retry_after:` (`rate_limit` only, a duration, default `0s`).
    pub retry_after: Duration,
    /// `for:` (`timeout` only, a duration, default `10s`): how long the request is held.
    pub hold: Duration,
    /// `after_events:` (`truncate_stream` only, ≥ 0, default 1): the events served before
    /// the cut.
    pub after_events: usize,
    /// `tool:` (tool-call kinds only): the tool whose call is spoiled; the answer's first
    /// tool call unless given.
    pub tool: Option<String>,
    /// `violation:` (`schema_violation` only): how the arguments break the schema; the
    /// first way the schema allows unless given.
    pub violation: Option<Way>,
}

/// The keys of a fault, in the order the docs give them.
pub const KEYS: [&str; 9] = [
    "request",
    "kind",
    "times",
    "status",
    "retry_after",
    "for",
    "after_events",
    "tool",
    "violation",
];

/// A fault under construction: keys set one at a time, checked together by [`Draft::done`].
#[derive(Debug, Default)]
pub struct Draft {
    request: Option<usize>,
    kind: Option<Kind>,
    times: Option<usize>,
    status: Option<u16>,
    retry_after: Option<Duration>,
    hold: Option<Duration>,
    after_events: Option<usize>,
    tool: Option<String>,
    violation: Option<Way>,
}

impl Draft {
    /// Set `key` from its text, as written in a spec or a `--fault` flag.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let count = |min: usize| {
            value
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= min)
                .ok_or_else(|| {
                    format!("`{key}` must be a whole number of at least {min}, not `{value}`")
                })
        };
        let duration = || {
            humantime::parse_duration(value)
                .map_err(|_| format!("`{key}` must be a duration like 0s, 2s or 1m, not `{value}`"))
        };
        match key {
            "request" => self.request = Some(count(1)?),
            "kind" => {
                let kind = Kind::from_name(value).ok_or_else(|| {
                    format!(
                        "unknown fault kind `{value}`; expected one of {}",
                        Kind::names()
                    )
                })?;
                self.kind = Some(kind);
            }
            "times" => self.times = Some(count(1)?),
            "status" => {
                let status = value
                    .parse::<u16>()
                    .ok()
                    .filter(|s| (500..600).contains(s))
                    .ok_or_else(|| format!("`status` must be a 5xx status, not `{value}`"))?;
                self.status = Some(status);
            }
            "retry_after" => self.retry_after = Some(duration()?),
            "for" => {
                let d = duration()?;
                if d.is_zero() {
                    return Err("`for` must be longer than zero".into());
                }
                self.hold = Some(d);
            }
            "after_events" => self.after_events = Some(count(0)?),
            "tool" => {
                if value.is_empty() {
                    return Err("`tool` must name a tool".into());
                }
                self.tool = Some(value.to_owned());
            }
            "violation" => {
                let way = Way::from_name(value).ok_or_else(|| {
                    format!(
                        "unknown violation `{value}`; expected one of {}",
                        Way::names()
                    )
                })?;
                self.violation = Some(way);
            }
            _ => {
                return Err(format!(
                    "unknown fault key `{key}`; expected one of {}",
                    KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// The fault, once `request` and `kind` are given and every other key suits the kind.
    pub fn done(self) -> Result<Fault, String> {
        let kind = self.kind.ok_or("a fault needs `kind`")?;
        let request = self.request.ok_or("a fault needs `request` (from 1)")?;
        let only = |set: bool, key: &str, owner: Kind| {
            if set && kind != owner {
                Err(format!("`{key}` is for `{owner}` faults, not `{kind}`"))
            } else {
                Ok(())
            }
        };
        only(self.status.is_some(), "status", Kind::ServerError)?;
        only(self.retry_after.is_some(), "retry_after", Kind::RateLimit)?;
        only(self.hold.is_some(), "for", Kind::Timeout)?;
        only(
            self.after_events.is_some(),
            "after_events",
            Kind::TruncateStream,
        )?;
        only(self.violation.is_some(), "violation", Kind::SchemaViolation)?;
        if self.tool.is_some() && !kind.spoils_tool_call() {
            return Err(format!(
                "`tool` is for the faults that spoil a tool call (malformed_tool_args, schema_violation, unknown_tool, length), not `{kind}`"
            ));
        }
        Ok(Fault {
            request,
            kind,
            times: self.times.unwrap_or(1),
            status: self.status.unwrap_or(500),
            retry_after: self.retry_after.unwrap_or_default(),
            hold: self.hold.unwrap_or(Duration::from_secs(10)),
            after_events: self.after_events.unwrap_or(1),
            tool: self.tool,
            violation: self.violation,
        })
    }
}

/// A `--fault` flag: `request=1,kind=rate_limit,times=2`.
pub fn parse_flag(s: &str) -> Result<Fault, String> {
    let mut draft = Draft::default();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` is not KEY=VALUE (in `{s}`)"))?;
        draft.set(key.trim(), value.trim())?;
    }
    draft.done()
}

impl Fault {
    /// Does the fault fire on the `n`-th request (from 1) of its scope?
    pub fn covers(&self, n: usize) -> bool {
        n >= self.request && n - self.request < self.times
    }
}

/// The faults of a run: those counted over the whole case (or session), and those of each
/// turn, counted within it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub case: Vec<Fault>,
    /// By turn (0-based).
    pub turns: Vec<(usize, Fault)>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.case.is_empty() && self.turns.is_empty()
    }

    /// The fault the `nth` model request of the case gets (from 1), being the `nth_in_turn`
    /// request of `turn`: a turn's own fault first, then the case's.
    pub fn pick(&self, nth: usize, turn: Option<usize>, nth_in_turn: usize) -> Option<&Fault> {
        let of_turn = self
            .turns
            .iter()
            .filter(|(t, _)| Some(*t) == turn)
            .map(|(_, f)| f)
            .find(|f| f.covers(nth_in_turn));
        of_turn.or_else(|| self.case.iter().find(|f| f.covers(nth)))
    }

    /// The faults no request reached, said as problems, given how many model requests
    /// came in each turn (`None`: outside any turn): a test of a reaction that never
    /// happened must not pass.
    pub fn unreached(&self, requests: &BTreeMap<Option<usize>, usize>) -> Vec<String> {
        let came = |n: usize| match n {
            1 => "only 1 model request came".to_owned(),
            n => format!("only {n} model requests came"),
        };
        let total: usize = requests.values().sum();
        let case = (self.case.iter().filter(|f| f.request > total)).map(|f| {
            let why = came(total);
            format!("request {}: {} did not fire: {why}", f.request, f.kind)
        });
        let turns = self.turns.iter().filter_map(|(turn, f)| {
            let n = requests.get(&Some(*turn)).copied().unwrap_or(0);
            (f.request > n).then(|| {
                let (turn, why) = (turn + 1, came(n));
                format!(
                    "turn {turn} request {}: {} did not fire: {why} in turn {turn}",
                    f.request, f.kind
                )
            })
        });
        case.chain(turns).collect()
    }
}

/// A fault that fired.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fired {
    /// The request it answered, counted from 1 over the case (or session).
    pub request: usize,
    /// The turn it fired in (0-based), under the test runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    pub kind: Kind,
    /// The HTTP status served; `None` when the connection was closed without one.
    pub status: Option<u16>,
    /// What a tool-call fault spoiled: `get_weather {"unit":"celsius"} (missing_required)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What the program did next: its next model request, when that one got no fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Next>,
}

/// The model request a program made after a fault, and what it was answered.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Next {
    /// Its number in the case (or session), from 1.
    pub request: usize,
    /// The HTTP status served; `None` when the connection was closed without one.
    pub status: Option<u16>,
}

impl fmt::Display for Fired {
    /// `request 2: rate_limit (429)`, `request 3: disconnect (no answer)`, `request 1:
    /// overloaded (529); then request 2: 200` (the program's next request got no fault).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request {}: {}", self.request, self.kind)?;
        match self.status {
            Some(status) => write!(f, " ({status})"),
            None => write!(f, " (no answer)"),
        }?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        match &self.next {
            Some(Next {
                request,
                status: Some(status),
            }) => write!(f, "; then request {request}: {status}"),
            Some(Next { request, .. }) => write!(f, "; then request {request}: no answer"),
            None => Ok(()),
        }
    }
}

/// Where a crash test kills the program: once this point has passed, the next request the
/// program makes is held unanswered and the program is killed while it waits for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrashPoint {
    /// `after: {request: N}`: the case's N-th model request (from 1) has been answered.
    Request(usize),
    /// `after: {executed: TOOL}`: an MCP server has executed `TOOL` (its first execution).
    Executed(String),
}

impl fmt::Display for CrashPoint {
    /// `request 2`, `executed send_email`: how the spec writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashPoint::Request(n) => write!(f, "request {n}"),
            CrashPoint::Executed(tool) => write!(f, "executed {tool}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_gives_a_fault_with_defaults() {
        let f = parse_flag("request=1, kind=rate_limit, times=2").unwrap();
        assert_eq!((f.request, f.kind, f.times), (1, Kind::RateLimit, 2));
        assert_eq!(f.retry_after, Duration::ZERO);
        let f = parse_flag("request=3,kind=server_error,status=502").unwrap();
        assert_eq!((f.status, f.times), (502, 1));
        let f = parse_flag("request=2,kind=truncate_stream,after_events=0").unwrap();
        assert_eq!(f.after_events, 0);
        let f = parse_flag("request=1,kind=timeout,for=1500ms").unwrap();
        assert_eq!(f.hold, Duration::from_millis(1500));
        let f = parse_flag("request=2,kind=schema_violation,tool=book,violation=enum_outsider")
            .unwrap();
        assert_eq!(
            (f.tool.as_deref(), f.violation),
            (Some("book"), Some(Way::EnumOutsider))
        );
        let f = parse_flag("request=2,kind=length").unwrap();
        assert_eq!((f.tool, f.violation), (None, None));
    }

    #[test]
    fn bad_faults_say_what_to_write() {
        for (flag, want) in [
            ("request=1", "a fault needs `kind`"),
            ("kind=disconnect", "a fault needs `request` (from 1)"),
            ("request=0,kind=disconnect", "`request` must be a whole number of at least 1, not `0`"),
            ("request=1,kind=slow", "unknown fault kind `slow`; expected one of rate_limit, server_error, overloaded, timeout, disconnect, truncate_stream, stream_error, malformed_tool_args, schema_violation, unknown_tool, length"),
            ("request=1,kind=rate_limit,status=503", "`status` is for `server_error` faults, not `rate_limit`"),
            ("request=1,kind=server_error,status=404", "`status` must be a 5xx status, not `404`"),
            ("request=1,kind=timeout,for=0s", "`for` must be longer than zero"),
            ("request=1,kind=rate_limit,retry_after=soon", "`retry_after` must be a duration like 0s, 2s or 1m, not `soon`"),
            ("request=1,kind=rate_limit,every=2", "unknown fault key `every`; expected one of request, kind, times, status, retry_after, for, after_events, tool, violation"),
            ("request=1,kind=schema_violation,violation=typo", "unknown violation `typo`; expected one of missing_required, wrong_type, extra_property, enum_outsider"),
            ("request=1,kind=unknown_tool,violation=wrong_type", "`violation` is for `schema_violation` faults, not `unknown_tool`"),
            ("request=1,kind=rate_limit,tool=send_email", "`tool` is for the faults that spoil a tool call (malformed_tool_args, schema_violation, unknown_tool, length), not `rate_limit`"),
            ("request", "`request` is not KEY=VALUE (in `request`)"),
        ] {
            assert_eq!(parse_flag(flag).unwrap_err(), want, "{flag}");
        }
    }

    #[test]
    fn a_fault_covers_its_requests_in_a_row() {
        let f = parse_flag("request=2,kind=rate_limit,times=2").unwrap();
        let fired: Vec<usize> = (1..=5).filter(|n| f.covers(*n)).collect();
        assert_eq!(fired, [2, 3]);
    }

    #[test]
    fn a_turns_fault_counts_within_the_turn_and_comes_first() {
        let plan = Plan {
            case: vec![parse_flag("request=1,kind=overloaded").unwrap()],
            turns: vec![(1, parse_flag("request=2,kind=disconnect").unwrap())],
        };
        let kind = |nth, turn, in_turn| plan.pick(nth, turn, in_turn).map(|f| f.kind);
        assert_eq!(kind(1, Some(0), 1), Some(Kind::Overloaded));
        assert_eq!(kind(2, Some(0), 2), None);
        assert_eq!(kind(3, Some(1), 1), None);
        assert_eq!(kind(4, Some(1), 2), Some(Kind::Disconnect));
        // Outside any turn (record, replay): only the case's faults.
        assert_eq!(kind(1, None, 1), Some(Kind::Overloaded));
    }

    #[test]
    fn a_fault_beyond_the_requests_that_came_is_said_unreached() {
        let plan = Plan {
            case: vec![
                parse_flag("request=2,kind=overloaded").unwrap(),
                parse_flag("request=4,kind=rate_limit").unwrap(),
            ],
            turns: vec![
                (0, parse_flag("request=1,kind=disconnect").unwrap()),
                (1, parse_flag("request=2,kind=disconnect").unwrap()),
                (2, parse_flag("request=1,kind=length").unwrap()),
            ],
        };
        // Two requests in the first turn, one in the second, none in the third.
        let came = BTreeMap::from([(Some(0), 2), (Some(1), 1)]);
        assert_eq!(
            plan.unreached(&came),
            [
                "request 4: rate_limit did not fire: only 3 model requests came",
                "turn 2 request 2: disconnect did not fire: only 1 model request came in turn 2",
                "turn 3 request 1: length did not fire: only 0 model requests came in turn 3",
            ]
        );
        // Outside any turn, counted over the session.
        let session = Plan {
            case: plan.case.clone(),
            turns: vec![],
        };
        assert_eq!(
            session.unreached(&BTreeMap::from([(None, 1)])),
            [
                "request 2: overloaded did not fire: only 1 model request came",
                "request 4: rate_limit did not fire: only 1 model request came"
            ]
        );
        assert!(session.unreached(&BTreeMap::from([(None, 4)])).is_empty());
    }
}
