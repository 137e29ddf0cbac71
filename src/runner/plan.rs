//! What one run does with its cassette (replay, record or update), the proxy options that
//! takes, and the cassette written after it. Shared by a spec's case and a test of
//! `agentproxy serve` (the pytest plugin).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::error::CaseError;
use super::mocks::MockSet;
use crate::cassette::format::{format_version, Upstreams};
use crate::cassette::{Cassette, CassetteError, MatchRules, Writer};
use crate::matching::index::Repeat;
use crate::matching::{self, normalize::Rules};
use crate::proxy::{upstream::Upstream, Mocks, Options, Outcome, Replay};
use crate::redact::Secrets;
use crate::spec::{Mode, ToolMock};

/// What the cassette is used for in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    Replay,
    Record,
    Update,
}

impl Use {
    /// For `mode`, given whether the cassette exists; `None`: replay without a cassette.
    pub(crate) fn of(mode: Mode, exists: bool) -> Option<Use> {
        match (mode, exists) {
            (Mode::Replay, false) => None,
            (Mode::Replay, true) | (Mode::Auto, true) => Some(Use::Replay),
            (Mode::Record, _) | (Mode::Auto, false) => Some(Use::Record),
            (Mode::Update, _) => Some(Use::Update),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Use::Replay => "replay",
            Use::Record => "record",
            Use::Update => "update",
        }
    }
}

/// Where recordings go, and the limits of the proxy.
pub(crate) struct Forwarding<'a> {
    pub upstreams: &'a Upstreams,
    pub upstream_timeout: Duration,
    pub max_body: usize,
}

/// A run ready to start.
pub(crate) struct Plan {
    pub options: Options,
    /// The rules the cassette is matched and written with.
    pub match_rules: MatchRules,
    /// Locked before the program starts: a recording is never lost at the end for a
    /// reason that was knowable now. `None` in replay.
    pub writer: Option<Writer>,
    /// The cassette a record or update run replaces, for the trajectory diff.
    pub previous: Option<Cassette>,
    pub mocks: Arc<MockSet>,
}

/// The proxy options for a run that uses `existing` (the cassette at `path`, if any) as
/// `usage` says, under the caller's `match_rules`, with `tools` mocked.
pub(crate) fn plan(
    path: &Path,
    existing: Option<Cassette>,
    usage: Use,
    match_rules: &MatchRules,
    repeat: Repeat,
    tools: &BTreeMap<String, ToolMock>,
    fwd: &Forwarding,
) -> Result<Plan, CaseError> {
    let match_rules = match (&existing, usage) {
        (Some(c), Use::Replay | Use::Update) => c.match_rules.merged(match_rules),
        _ => match_rules.clone(),
    };
    let rules = Rules::compile(&match_rules)?;
    let previous = (usage != Use::Replay).then(|| existing.clone()).flatten();
    let replay = match (existing, usage) {
        (Some(mut c), Use::Replay | Use::Update) => {
            if c.match_rules != match_rules {
                matching::rekey(&mut c.interactions, &rules);
            }
            Some(Replay::new(c.interactions, repeat, false))
        }
        _ => None,
    };
    let upstream = match usage {
        Use::Replay => None,
        Use::Record | Use::Update => Some(Upstream::new(fwd.upstreams, fwd.upstream_timeout)?),
    };
    let writer = match usage {
        Use::Replay => None,
        Use::Record | Use::Update => Some(Writer::open(path)?),
    };
    let mocks = Arc::new(MockSet::compile(tools)?);
    let options = Options {
        rules,
        secrets: Secrets::from_vars(std::env::vars()),
        max_body: fwd.max_body,
        upstream,
        replay,
        print_misses: false,
        mocks: (!mocks.is_empty()).then(|| {
            let m = mocks.clone();
            Arc::new(move |c: &crate::neutral::ToolCall, n: usize| m.result_for(c, n)) as Mocks
        }),
        log_exchanges: true,
        mcp_http: Default::default(),
        faults: Default::default(),
        fuzz: None,
        crash: None,
    };
    Ok(Plan {
        options,
        match_rules,
        writer,
        previous,
        mocks,
    })
}

/// Write the cassette of a record or update run that recorded something (update keeps
/// what was replayed and adds what was recorded, in the order of the run); `None` when
/// nothing new was recorded.
pub(crate) fn save(
    writer: &Writer,
    upstreams: &Upstreams,
    match_rules: &MatchRules,
    usage: Use,
    outcome: &Outcome,
) -> Result<Option<Cassette>, CassetteError> {
    // A session that answered every request itself (faults, mocks at the MCP boundary)
    // still leaves a cassette, empty, so the case replays.
    let answered_itself = !outcome.faults.is_empty() || !outcome.mcp_mocked.is_empty();
    if outcome.recorded.is_empty() && !(answered_itself && outcome.upstream_errors.is_empty()) {
        return Ok(None);
    }
    let interactions = match usage {
        Use::Update => outcome.exchanges.clone(),
        _ => outcome.recorded.clone(),
    };
    let cassette = Cassette {
        format: format_version(),
        recorder: format!("agentproxy {}", env!("CARGO_PKG_VERSION")),
        recorded_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        upstreams: upstreams.clone(),
        match_rules: match_rules.clone(),
        interactions,
    };
    writer.save(&cassette)?;
    Ok(Some(cassette))
}
