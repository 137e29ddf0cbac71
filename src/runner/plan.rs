//! The one place a session's proxy options are built: what one run does with its cassette
//! (replay, record or update), what the session adds to it (mocks, MCP servers, faults, a
//! crash point, a fuzz run), and the cassette written after it. `record`, `replay`,
//! `serve`, a spec's case and the determinism check all start their session from a
//! [`Setup`] through [`plan`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::mocks::{MockSet, RunMocks};
use crate::cassette::format::{format_version, RecordedBy, Upstreams};
use crate::cassette::{store, Cassette, CassetteError, MatchRules, Writer};
use crate::dialect;
use crate::fault::CrashPoint;
use crate::matching;
use crate::matching::index::Repeat;
use crate::matching::key::KeyHash;
use crate::matching::nearmiss::{Advice, Runner};
use crate::matching::normalize::{RuleError, Rules};
use crate::proxy::upstream::{InvalidUpstream, Upstream};
use crate::proxy::{new_secret, FuzzCall, Mocks, Options, Outcome, Replay, SECRET_VAR};
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
pub(crate) struct Forwarding {
    pub upstreams: Upstreams,
    pub upstream_timeout: Duration,
    pub max_body: usize,
}

impl Forwarding {
    /// For a replay, which forwards nowhere.
    pub(crate) fn nowhere(max_body: usize) -> Forwarding {
        Forwarding {
            upstreams: Upstreams::default(),
            upstream_timeout: Duration::ZERO,
            max_body,
        }
    }
}

/// Everything a session is asked to do: the one input its proxy options are built from.
pub(crate) struct Setup {
    /// The cassette file, written after a record or update run.
    pub path: PathBuf,
    /// The cassette as it is now, if there is one.
    pub existing: Option<Cassette>,
    pub usage: Use,
    /// The caller's tolerances (flags or spec), added to the cassette's own.
    pub match_rules: MatchRules,
    pub repeat: Repeat,
    /// Serve streams paced by their recorded latency.
    pub realtime: bool,
    /// Serve each model request the recording at its position, whatever its body (a fuzz
    /// run, the determinism check).
    pub by_position: bool,
    pub tools: BTreeMap<String, ToolMock>,
    /// Streamable HTTP MCP servers by name.
    pub mcp_http: BTreeMap<String, String>,
    /// Remote agents over A2A, and their mocks.
    pub a2a: crate::proxy::a2a::Setup,
    pub faults: crate::fault::Plan,
    pub crash: Option<CrashPoint>,
    pub fuzz: Option<FuzzCall>,
    /// Print each miss report on stderr as it happens.
    pub print_misses: bool,
    /// The command that re-records the cassette (shell words), for the miss report.
    pub rerecord: Option<String>,
    /// Whose words the miss report's hints speak.
    pub runner: Runner,
    /// The spec case this run is, written into the cassette it records.
    pub recorded_by: Option<RecordedBy>,
    /// Keep every exchange served or recorded (trajectories, serve's answers).
    pub log_exchanges: bool,
    /// Tolerate the volatile fields of the known clients recorded (Claude Code's session
    /// id and date): on unless `--no-client-tolerances`.
    pub known_clients: bool,
    /// What becomes of the program's traffic that is not to a base URL (see
    /// `proxy::egress`).
    pub egress: crate::proxy::egress::Setup,
    /// The secret the control prefix asks for (`serve` keeps one for all its tests);
    /// `None`: `AGENTPROXY_SECRET` of agentproxy's environment, else a fresh one.
    pub secret: Option<String>,
}

impl Setup {
    /// A run that uses the cassette at `path` (`existing`, if there is one) as `usage`
    /// says, asking nothing more. A replay without a cassette misses every request.
    pub(crate) fn new(path: PathBuf, existing: Option<Cassette>, usage: Use) -> Setup {
        Setup {
            path,
            existing,
            usage,
            match_rules: MatchRules::default(),
            repeat: Repeat::None,
            realtime: false,
            by_position: false,
            tools: BTreeMap::new(),
            mcp_http: BTreeMap::new(),
            a2a: Default::default(),
            faults: crate::fault::Plan::default(),
            crash: None,
            fuzz: None,
            print_misses: false,
            rerecord: None,
            runner: Runner::Cli,
            recorded_by: None,
            log_exchanges: false,
            known_clients: true,
            egress: Default::default(),
            secret: None,
        }
    }
}

/// Why a session could not be planned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    #[error(transparent)]
    Cassette(#[from] CassetteError),

    #[error(transparent)]
    Rules(#[from] RuleError),

    #[error(transparent)]
    Upstream(#[from] InvalidUpstream),
    #[error("failed to make the session's secret: {0}")]
    Secret(std::io::Error),
    #[error("failed to make the session's certificate authority: {0}")]
    Ca(crate::proxy::egress::CaError),
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
    pub mocks: RunMocks,
}

/// The known clients with side traffic that the cassette `setup` replays was recorded
/// from: the replay refuses that traffic without failing.
fn side_clients(setup: &Setup) -> Vec<&'static dialect::KnownClient> {
    let Some(c) = setup
        .existing
        .as_ref()
        .filter(|_| setup.usage == Use::Replay)
    else {
        return Vec::new();
    };
    (dialect::known_clients())
        .filter(|client| !client.side.is_empty() && c.match_rules.of_recorded_client(client))
        .collect()
}

/// The proxy options, the writer and the mocks of the run `setup` asks for.
pub(crate) fn plan(setup: Setup, fwd: &Forwarding) -> Result<Plan, PlanError> {
    let usage = setup.usage;
    let advice = advice(&setup);
    let scope = ca_scope(&setup);
    let mut egress = (setup.egress.clone())
        .options(|| scope)
        .map_err(PlanError::Ca)?;
    egress.side = side_clients(&setup);
    let match_rules = match (&setup.existing, usage) {
        (Some(c), Use::Replay | Use::Update) => c.match_rules.merged(&setup.match_rules),
        _ => setup.match_rules,
    };
    // A cassette served or updated keeps the hash its keys were made with; one whose keys
    // mix kinds is keyed anew. A new recording keys with the current hash.
    let kept = (setup.existing.as_ref()).filter(|_| matches!(usage, Use::Replay | Use::Update));
    // The cassette's own rules first: one it carries that cannot compile names the file.
    if let Some(c) = kept.filter(|c| !c.match_rules.is_empty()) {
        Rules::compile(&c.match_rules).map_err(|e| CassetteError::Invalid {
            path: setup.path.clone(),
            pointer: "/match".to_owned(),
            message: e.to_string(),
        })?;
    }
    let hash = kept.map(|c| KeyHash::of(c.interactions.iter().map(|i| i.key.as_str())));
    let rules = Rules::compile(&match_rules)?.hashed_with(hash.flatten().unwrap_or_default());
    let previous = (usage != Use::Replay)
        .then(|| setup.existing.clone())
        .flatten();
    let interactions = match (setup.existing, usage) {
        (Some(mut c), Use::Replay | Use::Update) => {
            if c.match_rules != match_rules || hash == Some(None) {
                // New tolerance changes what a key covers: recompute the recorded keys.
                matching::rekey(&mut c.interactions, &rules);
            }
            Some(c.interactions)
        }
        (None, Use::Replay) => Some(vec![]),
        _ => None,
    };
    let replay = interactions.map(|i| {
        let replay = Replay::new(i, setup.repeat, setup.realtime);
        match setup.by_position {
            true => replay.lenient(),
            false => replay,
        }
    });
    let (upstream, writer) = match usage {
        Use::Replay => (None, None),
        Use::Record | Use::Update => (
            Some(Upstream::new(&fwd.upstreams, fwd.upstream_timeout)?),
            Some(store::open_writer(&setup.path)?),
        ),
    };
    let mocks = RunMocks {
        tools: Arc::new(MockSet::new(&setup.tools)),
        agents: Arc::new(MockSet::new(&setup.a2a.mocks)),
    };
    let a2a = setup.a2a.agents(answering(&mocks.agents));
    let secret = match setup.secret {
        Some(s) => s,
        None => match std::env::var(SECRET_VAR) {
            Ok(s) if !s.is_empty() => s,
            _ => new_secret().map_err(PlanError::Secret)?,
        },
    };
    // The session's own secret too: a program that sends its environment to the model (a
    // coding agent does) must not leave the key to the control endpoint in a cassette, a
    // report or a trace.
    let secrets = Secrets::from_env().and(Secrets::from_vars([(
        SECRET_VAR.to_owned(),
        secret.clone(),
    )]));
    let options = Options {
        secret,
        rules,
        secrets,
        max_body: fwd.max_body,
        upstream,
        replay,
        print_misses: setup.print_misses,
        advice,
        mocks: answering(&mocks.tools),
        log_exchanges: setup.log_exchanges,
        mcp_http: setup.mcp_http,
        a2a,
        faults: setup.faults,
        fuzz: setup.fuzz,
        crash: setup.crash,
        known_clients: setup.known_clients,
        egress,
    };
    Ok(Plan {
        options,
        match_rules,
        writer,
        previous,
        mocks,
    })
}

/// The mocks of `set` as the proxy asks them, `None` when it has none.
fn answering(set: &Arc<MockSet>) -> Option<Mocks> {
    let set = set.clone();
    (!set.is_empty()).then(|| {
        Arc::new(move |c: &crate::neutral::ToolCall, n: usize| set.result_for(c, n)) as Mocks
    })
}

/// The names the session's CA may vouch for: the providers' hosts and the other hosts the
/// cassette it serves holds; any (`None`) when the session records other hosts, whose
/// names are not known before the program runs.
fn ca_scope(setup: &Setup) -> Option<Vec<String>> {
    if setup.egress.record_other_hosts {
        return None;
    }
    let providers =
        (dialect::PROVIDERS.iter()).flat_map(|row| row.hosts.iter().map(|h| h.to_string()));
    let recorded = (setup.existing.iter())
        .flat_map(|c| &c.interactions)
        .filter_map(|i| crate::proxy::egress::host_port(&i.request.path))
        .map(|hp| {
            hp.rsplit_once(':')
                .map_or(hp.clone(), |(host, _)| host.to_owned())
        });
    // The session's own address: a client that dials it with TLS (google-genai's Live
    // client always does) is answered with a certificate of this authority.
    let own = ["127.0.0.1", "::1", "localhost"].map(str::to_owned);
    let mut names: Vec<String> = providers.chain(recorded).chain(own).collect();
    names.sort();
    names.dedup();
    Some(names)
}

/// For a cassette `by` recorded, served by another session: the miss report's word on it,
/// and the command that re-records it (the case's, not a plain `record` over it).
/// What the session's miss reports advise. A spec case's cassette served by anything but
/// that case: its mocks and its way of driving the program are missing, and a miss says
/// so and how to run it.
fn advice(setup: &Setup) -> Advice {
    let foreign = match (&setup.existing, &setup.recorded_by) {
        (Some(c), None) => c.recorded_by.as_ref().map(foreign_origin),
        _ => None,
    };
    Advice {
        rerecord: (foreign.as_ref())
            .map(|(_, rerecord)| rerecord.clone())
            .or(setup.rerecord.clone()),
        origin: foreign.map(|(origin, _)| origin),
        runner: setup.runner,
        unrecorded: setup.existing.is_none() && setup.usage == Use::Replay,
    }
}

fn foreign_origin(by: &RecordedBy) -> (String, String) {
    let command = |mode: Option<&str>| {
        let mut words = vec!["agentproxy", "test", &by.spec, "--case", &by.case];
        words.extend(mode.map(|m| ["--mode", m]).into_iter().flatten());
        super::env::shell_line(&words)
    };
    let origin = format!(
        "this cassette was recorded by {}: a plain replay does not drive the program as the case does{}; run it with `{}`",
        by.describe(),
        if by.mocks.is_empty() { "" } else { " or apply its mocks" },
        command(None)
    );
    (origin, command(Some("record")))
}

/// The cassette at `path` a recording is about to replace, read to say how the
/// trajectory changed; `None` when there is none, or when it cannot be read (said on
/// stderr: the recording goes on, without the diff).
pub(crate) fn replaced(path: &Path) -> Option<Cassette> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0) {
        return None;
    }
    store::load(path)
        .inspect_err(|e| {
            tell!("agentproxy: warning: the cassette being replaced cannot be read, so no trajectory diff: {e}")
        })
        .ok()
}

/// Write the cassette of a record or update run that recorded something (update keeps
/// what was replayed and adds what was recorded, in the order of the run); `None` when
/// nothing new was recorded.
pub(crate) fn save(
    writer: &Writer,
    upstreams: &Upstreams,
    match_rules: &MatchRules,
    recorded_by: Option<&RecordedBy>,
    usage: Use,
    outcome: &Outcome,
) -> Result<Option<Cassette>, CassetteError> {
    // A session that answered every request itself (faults, mocks at the MCP boundary)
    // still leaves a cassette, empty, so the case replays.
    let answered_itself = !outcome.faults.fired.is_empty() || !outcome.mcp.mocked.is_empty();
    if outcome.recorded.is_empty() && !(answered_itself && outcome.upstream_errors.is_empty()) {
        return Ok(None);
    }
    let mut interactions = match usage {
        Use::Update => outcome.exchanges.clone(),
        _ => outcome.recorded.clone(),
    };
    // The known clients recorded bring their tolerances; the keys are made under them.
    let mut match_rules = match_rules.clone();
    for client in dialect::known_clients().filter(|c| outcome.clients.contains(c.name)) {
        match_rules = match_rules.merged(&MatchRules::of_client(client));
    }
    // The session's rules compiled; a known client's are tested to (see `dialect`).
    // Keys of mixed kinds (an update's served and recorded ones never are) are made anew.
    let hash = KeyHash::of(interactions.iter().map(|i| i.key.as_str()));
    let rekeyed = !outcome.clients.is_empty() || hash.is_none();
    if let (true, Ok(rules)) = (rekeyed, Rules::compile(&match_rules)) {
        matching::rekey(
            &mut interactions,
            &rules.hashed_with(hash.unwrap_or_default()),
        );
    }
    let cassette = Cassette {
        format: format_version(),
        recorder: format!("agentproxy {}", env!("CARGO_PKG_VERSION")),
        recorded_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        recorded_by: recorded_by.cloned(),
        upstreams: upstreams.clone(),
        match_rules,
        interactions,
    };
    writer.save(&cassette)?;
    Ok(Some(cassette))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The session's secret is one of the secrets redacted, whoever made it.
    #[test]
    fn the_sessions_secret_is_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let setup = Setup {
            secret: Some("0123456789abcdef0123456789abcdef".into()),
            ..Setup::new(dir.path().join("c.json"), None, Use::Replay)
        };
        let fwd = Forwarding {
            upstreams: Upstreams(BTreeMap::new()),
            upstream_timeout: Duration::from_secs(1),
            max_body: 1024,
        };
        let options = plan(setup, &fwd).ok().unwrap().options;
        assert_eq!(
            options
                .secrets
                .redact_str("env: AGENTPROXY_SECRET=0123456789abcdef0123456789abcdef")
                .as_deref(),
            Some("env: AGENTPROXY_SECRET=${AGENTPROXY_SECRET}")
        );
    }

    /// Only a cassette that is there and reads is the one replaced: none, an empty file
    /// and a broken one give no diff (the broken one said in a warning).
    #[test]
    fn the_cassette_replaced_is_one_that_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        assert!(replaced(&path).is_none());
        std::fs::write(&path, "").unwrap();
        assert!(replaced(&path).is_none());
        std::fs::write(&path, "{\"format\": \"2.0\", \"interactions\": [").unwrap();
        assert!(replaced(&path).is_none());
        let cassette = Cassette {
            format: format_version(),
            recorder: "agentproxy test".into(),
            recorded_at: "2026-01-01T00:00:00Z".into(),
            recorded_by: None,
            upstreams: Upstreams(BTreeMap::new()),
            match_rules: MatchRules::default(),
            interactions: vec![],
        };
        store::save(&path, &cassette).unwrap();
        assert_eq!(
            replaced(&path).map(|c| c.recorder).as_deref(),
            Some("agentproxy test")
        );
    }
}
