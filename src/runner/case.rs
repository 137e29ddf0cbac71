//! One case of a spec, end to end: choose what the cassette is used for, start a proxy
//! session, drive the program through the turns, write the cassette when recording, and
//! evaluate the expectations into a case report.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::driver::{CommandApp, DriveError, Driven};
use super::env;
use super::error::{CaseError, ProgramError};
use super::evaluate;
use super::plan::{self, Forwarding, Plan, Setup, Use};
use super::url::UrlApp;
use super::verdict::{self, Ran};
use crate::cassette::format::{RecordedBy, Upstreams};
use crate::cassette::{age, store, Cassette, Writer};
use crate::proxy::{FuzzCall, Outcome, Session};
use crate::report::{CaseReport, FuzzReport, FuzzRun, Status};
use crate::spec::{Case, Fuzz, Mode, Spec, Target};

/// Run settings shared by every case of a run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub mode: Mode,
    pub cassette_dir: PathBuf,
    /// The longest a case may take, all turns included.
    pub timeout: Duration,
    /// Where each provider records from.
    pub upstreams: Upstreams,
    pub upstream_timeout: Duration,
    /// Where the proxy listens; a fixed port is needed for `url:` apps.
    pub listen: SocketAddr,
    pub max_body: usize,
    /// Warn of a replayed cassette recorded longer ago than this.
    pub max_age: Option<Duration>,
    /// Replay paced as recorded (see [`crate::proxy::replay::Replay::realtime`]).
    pub realtime: bool,
    /// `--mcp NAME=URL`: streamable HTTP MCP servers, over the spec's `mcp:`.
    pub mcp: BTreeMap<String, String>,
    /// `--a2a NAME=URL`: remote agents, over the spec's `a2a:`.
    pub a2a: BTreeMap<String, String>,
    /// `--fault`: faults for every case, counted over the case, after its own.
    pub faults: Vec<crate::fault::Fault>,
    /// `--contain`: how a `command:` program is contained.
    pub contain: super::contain::Contain,
    /// `--allow-host`: other hosts a replay lets the program reach, beside the spec's.
    pub allow_hosts: Vec<crate::spec::HostPattern>,
    /// `--record-other-hosts`: record other hosts' traffic, as `egress.record` does.
    pub record_other_hosts: bool,
}

impl Settings {
    /// The streamable HTTP MCP servers of a case of `spec`: its `mcp:`, then `--mcp`.
    pub fn mcp_servers(&self, spec: &Spec) -> BTreeMap<String, String> {
        let mut out = spec.mcp.clone();
        out.extend(self.mcp.clone());
        out
    }

    /// The remote agents of a case of `spec`: its `a2a:`, then `--a2a`.
    pub fn a2a_agents(&self, spec: &Spec) -> BTreeMap<String, String> {
        let mut out = spec.a2a.clone();
        out.extend(self.a2a.clone());
        out
    }

    /// The names every relay of a case of `spec` serves: its agents and mocked agents.
    pub fn a2a_names(&self, spec: &Spec) -> Vec<String> {
        let mut names: Vec<String> = (self.a2a_agents(spec).into_keys())
            .chain(spec.agents.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Where a recording forwards to, and the proxy's limits.
    pub(crate) fn forwarding(&self) -> Forwarding {
        Forwarding {
            upstreams: self.upstreams.clone(),
            upstream_timeout: self.upstream_timeout,
            max_body: self.max_body,
        }
    }
}

/// Run one case; every outcome, failures and errors included, becomes a report.
pub async fn run(spec: &Spec, case: &Case, s: &Settings) -> CaseReport {
    let started = Instant::now();
    let cassette_path = case.cassette_path(&s.cassette_dir);
    let mut report = CaseReport::new(&spec.file, &case.name, "", &cassette_path);
    if let Some(reason) = &case.skip {
        report.mode = "skip".into();
        report.skip(reason);
        return report;
    }
    if let Err(e) = run_inner(spec, case, s, cassette_path.clone(), &mut report, None).await {
        report.status = Status::Error;
        report.error = Some(e.to_string());
    }
    if let (Some(fuzz), false) = (&case.fuzz, report.status == Status::Error) {
        run_fuzz(spec, case, s, fuzz, &cassette_path, &mut report).await;
    }
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report
}

/// Run the fuzz runs of `case` after its own run (reported in `report`), from the cassette
/// at `path`; a failing run fails the case.
async fn run_fuzz(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    fuzz: &Fuzz,
    path: &Path,
    report: &mut CaseReport,
) {
    let runs = match store::load(path) {
        Ok(cassette) => super::fuzz::runs(fuzz, &cassette),
        Err(e) => Err(format!("the cassette could not be read: {e}")),
    };
    let runs = match runs {
        Ok(r) => r,
        Err(why) => {
            report
                .problems
                .push(format!("fuzz `{}`: no run: {why}", fuzz.tool));
            report.conclude();
            return;
        }
    };
    let asked = fuzz.valid + fuzz.invalid + fuzz.arguments.len();
    if runs.len() < asked {
        report.warnings.push(format!(
            "fuzz `{}`: {} runs of the {asked} asked: the schema allows no more distinct arguments",
            fuzz.tool,
            runs.len()
        ));
    }
    let mut out = FuzzReport {
        tool: fuzz.tool.clone(),
        seed: fuzz.seed,
        runs: Vec::with_capacity(runs.len()),
    };
    for (i, (kind, run)) in runs.into_iter().enumerate() {
        let call = FuzzCall {
            tool: fuzz.tool.clone(),
            arguments: run.arguments,
        };
        let mut r = CaseReport::new(&spec.file, &case.name, "replay", path);
        if let Err(e) = run_inner(spec, case, s, path.to_owned(), &mut r, Some(&call)).await {
            r.status = Status::Error;
            r.error = Some(e.to_string());
        }
        out.runs.push(FuzzRun {
            index: i + 1,
            kind,
            violation: run.violation,
            arguments: call.arguments,
            passed: r.status == Status::Passed,
            failures: super::fuzz::failures(&r),
            output: r.turns.iter().map(|t| t.output.as_str()).collect(),
        });
    }
    report.fuzz = Some(out);
    report.conclude();
}

/// The session a run of `case` asks for: the one place a case's session is chosen, so its
/// own run, its fuzz runs and the determinism check (`usage` replay, `by_position`) serve
/// the same MCP servers, mocks, faults and crash point. A fuzz run replays by position:
/// past the call, the program's requests carry the generated arguments and cannot match by
/// content.
pub(crate) fn setup(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    path: &Path,
    existing: Option<Cassette>,
    usage: Use,
    fuzz: Option<&FuzzCall>,
) -> Setup {
    let mut faults = case.fault_plan();
    faults.case.extend(s.faults.iter().cloned());
    Setup {
        match_rules: spec.match_rules.clone(),
        repeat: spec.repeat,
        realtime: s.realtime,
        by_position: fuzz.is_some(),
        tools: spec.tools.clone(),
        mcp_http: s.mcp_servers(spec),
        a2a: crate::proxy::a2a::Setup {
            agents: s.a2a_agents(spec),
            mocks: spec.agents.clone(),
        },
        faults,
        crash: case.crash.as_ref().map(|c| c.after.clone()),
        fuzz: fuzz.cloned(),
        log_exchanges: true,
        // A program the case starts has the proxy as its only way out; on a listener
        // others can reach, the proxy is no forward proxy (no relay for them).
        egress: crate::proxy::egress::Setup {
            intercept: matches!(spec.app.target, crate::spec::Target::Command(_))
                && s.listen.ip().is_loopback(),
            allow: (spec.egress.allow.iter())
                .chain(&s.allow_hosts)
                .cloned()
                .collect(),
            record_other_hosts: spec.egress.record || s.record_other_hosts,
        },
        recorded_by: Some(recorded_by(spec, case)),
        runner: crate::matching::nearmiss::Runner::Spec,
        rerecord: Some(super::env::shell_line(&[
            "agentproxy",
            "test",
            &spec.file.display().to_string(),
            "--case",
            &case.name,
            "--mode",
            "record",
        ])),
        ..Setup::new(path.to_owned(), existing, usage)
    }
}

/// The case's cassette as it is (`None` when there is none yet) and how the run uses it,
/// in `report` too; a stale cassette a replay uses is warned of.
fn cassette_use(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    cassette_path: &Path,
    report: &mut CaseReport,
    fuzz: Option<&FuzzCall>,
) -> Result<(Option<Cassette>, Use), CaseError> {
    let existing = if cassette_path.exists() {
        Some(store::load(cassette_path)?)
    } else {
        None
    };
    let mode = if fuzz.is_some() { Mode::Replay } else { s.mode };
    let Some(usage) = Use::of(mode, existing.is_some()) else {
        report.mode = Use::Replay.name().into();
        return Err(CaseError::NoCassette {
            path: cassette_path.to_owned(),
            spec: spec.file.clone(),
            case: case.name.clone(),
        });
    };
    report.mode = usage.name().into();
    let max_age = s.max_age.filter(|_| fuzz.is_none());
    if let (Some(c), Some(max), Use::Replay | Use::Update) = (&existing, max_age, usage) {
        let stale = age::stale(
            &path_clean::clean(cassette_path),
            &c.recorded_at,
            max,
            std::time::SystemTime::now(),
        );
        report.warnings.extend(stale);
    }
    Ok((existing, usage))
}

/// Run the case once into `report`: as the mode says, or (`fuzz`) as a fuzz run, which
/// replays the cassette by position with its arguments in the first call to their tool.
pub(super) async fn run_inner(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    cassette_path: PathBuf,
    report: &mut CaseReport,
    fuzz: Option<&FuzzCall>,
) -> Result<(), CaseError> {
    let (existing, usage) = cassette_use(spec, case, s, &cassette_path, report, fuzz)?;
    let Plan {
        options,
        match_rules,
        writer,
        previous,
        mocks,
    } = plan::plan(
        setup(spec, case, s, &cassette_path, existing, usage, fuzz),
        &s.forwarding(),
    )?;
    let session = Session::start(options, s.listen).await?;
    let base = format!("http://{}", session.addr());

    let driven = drive(spec, case, s, &session, &base, usage).await;
    let outcome = session.stop().await;

    let (driven, drive_error) = match driven {
        Ok(d) => (d, None),
        // A program that never started did nothing to judge: its start error is the report.
        Err((
            _,
            e @ ProgramError::Drive {
                source: DriveError::Spawn { .. },
            },
        )) if outcome.requests == 0 => {
            return Err(e.into());
        }
        Err((partial, e)) => (partial, Some(e)),
    };
    let verdict = verdict::judge(Ran {
        case,
        outcome: &outcome,
        driven: &driven,
        stopped: drive_error.as_ref().map(ToString::to_string),
        mocked: mocks.names().map(str::to_owned).collect(),
        mock_problems: mocks.problems(),
        fuzz,
        require: spec.egress.require,
    });
    verdict.fill(report, &outcome);
    report.containment = driven.level.as_ref().map(ToString::to_string);

    // A crashed program's own error says more than "nothing was recorded".
    let writer = writer.filter(|_| drive_error.is_none() || !outcome.recorded.is_empty());
    if let Some(writer) = writer {
        let saved = save_cassette(spec, case, s, &writer, &match_rules, usage, &outcome)?;
        if let (Some(old), Some(new)) = (&previous, &saved) {
            let mut d = crate::trajectory::diff_cassettes(old, new, &crate::spec::asserted(case));
            d.assertions_held =
                Some(report.misses.is_empty() && report.failures().next().is_none());
            report.diff = Some(crate::trajectory::render_text(&d));
        }
    }
    if !outcome.upstream_errors.is_empty() {
        return Err(CaseError::UpstreamFailed {
            errors: outcome.upstream_errors,
        });
    }
    if let Some(e) = drive_error {
        if report.misses.is_empty() {
            return Err(e.into());
        }
        // The program failed because a request missed: that is the test failure to report,
        // and the miss is shown once, not again as the program's stderr repeats it.
        report.error = Some(evaluate::without_misses(&e.to_string(), &report.misses));
    }
    report.conclude();
    Ok(())
}

/// Write the case's cassette after a record or update run. A record run that saw no
/// request at all is an error: the program bypassed the proxy.
fn save_cassette(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    writer: &Writer,
    match_rules: &crate::cassette::MatchRules,
    usage: Use,
    outcome: &Outcome,
) -> Result<Option<Cassette>, CaseError> {
    if usage == Use::Record && outcome.requests == 0 {
        return Err(CaseError::NoRequest {
            spec: spec.file.clone(),
        });
    }
    Ok(plan::save(
        writer,
        &s.upstreams,
        match_rules,
        Some(&recorded_by(spec, case)),
        usage,
        outcome,
    )?)
}

/// What a case's cassette says of the case that recorded it.
fn recorded_by(spec: &Spec, case: &Case) -> RecordedBy {
    RecordedBy {
        spec: spec.file.display().to_string(),
        case: case.name.clone(),
        mocks: spec.tools.keys().cloned().collect(),
    }
}

/// Drive the program through the turns. A non-zero exit is an error unless the case
/// judges it (`exit:`). On failure, the outputs of the turns that did complete come back
/// with the error, so the report still shows them. In a crash test, the program is killed
/// once the session holds its request after the point, and started again: with the same
/// input, in the turn it was killed in (a resumable program picks up from there).
pub(crate) async fn drive(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    session: &Session,
    base: &str,
    usage: Use,
) -> Result<Driven, (Driven, ProgramError)> {
    let mut driven = Driven {
        outputs: Vec::with_capacity(case.turns.len()),
        ..Driven::default()
    };
    let deadline = super::driver::deadline_after(s.timeout);
    match &spec.app.target {
        Target::Url(url) => {
            let app = UrlApp::new(url, &case.slug);
            for (i, turn) in case.turns.iter().enumerate() {
                session.set_turn(i);
                // `app.timeout` per request, within what is left of the case's time.
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                let limit = spec.app.timeout.map_or(left, |t| t.min(left));
                // Parsing refuses a `url:` case without input.
                let input = turn.input.as_deref().unwrap_or_default();
                match app.turn(input, limit).await {
                    Ok(out) => driven.outputs.push(out),
                    Err(e) => return Err((driven, e.into())),
                }
            }
            Ok(driven)
        }
        Target::Command(argv) => {
            let app = command_app(spec, case, s, argv, (base, session), usage);
            drive_command(spec, case, &app, session, deadline, driven).await
        }
    }
}

/// Drive a `command:` program (see [`drive`]) through the turns, by `deadline`.
async fn drive_command(
    spec: &Spec,
    case: &Case,
    app: &CommandApp,
    session: &Session,
    deadline: tokio::time::Instant,
    mut driven: Driven,
) -> Result<Driven, (Driven, ProgramError)> {
    let first = case.turns.first().and_then(|t| t.input.as_deref());
    let mut running = match app.start(first, deadline, Some(session)) {
        Ok(r) => r,
        Err(e) => return Err((driven, e.into())),
    };
    driven.level = running.level.clone();
    // Until the crash, every wait is also a wait for it.
    let mut crash = case.crash.as_ref().map(|_| session);
    let single = case.turns.len() == 1;
    let turns = if single { &[][..] } else { &case.turns[..] };
    if single {
        session.set_turn(0);
        if let Some(first) = first {
            running
                .send(first)
                .await
                .map_err(|e| (Driven::default(), e.into()))?;
        }
        driven.outputs.push(String::new());
    }
    let mut i = 0;
    while let Some(turn) = turns.get(i) {
        session.set_turn(i);
        let input = turn.input.as_deref().unwrap_or_default();
        match or_crash(crash, running.turn(i, input, spec.app.timeout)).await {
            Some(Ok(out)) => driven.outputs.push(out),
            Some(Err(e)) => return Err((driven, e.into())),
            None => {
                // Killed in turn `i`: started again, it gets that turn's input.
                crash = None;
                if let Err(e) =
                    restart(app, first, deadline, session, &mut running, &mut driven).await
                {
                    return Err((driven, e));
                }
                continue;
            }
        }
        i += 1;
    }
    let finished = loop {
        match or_crash(crash, running.finish()).await {
            Some(f) => break f,
            None => {
                crash = None;
                if let Err(e) =
                    restart(app, first, deadline, session, &mut running, &mut driven).await
                {
                    return Err((driven, e));
                }
                if let (true, Some(first)) = (single, first) {
                    if let Err(e) = running.send(first).await {
                        return Err((driven, e.into()));
                    }
                }
            }
        }
    };
    let finished = match finished {
        Ok(f) => f,
        Err(e) => return Err((driven, e.into())),
    };
    if let Some(last) = driven.outputs.last_mut() {
        last.push_str(&finished.trailing_output);
    }
    if finished.code != 0 && !case.judges_exit() {
        let e = ProgramError::Exited {
            code: finished.code,
            stderr: finished.stderr,
        };
        return Err((driven, e));
    }
    driven.exit = Some((finished.code, finished.stderr));
    Ok(driven)
}

/// How to start a case's `command:` program against the session at `base`.
fn command_app(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    argv: &[String],
    (base, session): (&str, &Session),
    usage: Use,
) -> CommandApp {
    let v1 = format!("{base}/v1");
    let replay = usage == Use::Replay;
    let no_proxy = std::env::var("NO_PROXY")
        .or_else(|_| std::env::var("no_proxy"))
        .ok();
    let mut vars: Vec<(String, String)> =
        env::injected(base, Some(session.secret()), replay, &|n| {
            std::env::var_os(n).is_some()
        })
        .into_iter()
        .chain(env::mcp_urls(base, s.mcp_servers(spec).keys()))
        .chain(env::a2a_urls(base, &s.a2a_names(spec)))
        .chain(env::self_path())
        .chain(session.google_credentials().map(env::google_credentials))
        .chain(
            (session.ca_bundle())
                .into_iter()
                .flat_map(|b| env::forward_proxy(base, b, no_proxy.as_deref())),
        )
        .map(|v| (v.name, v.value))
        .collect();
    // Python buffers a pipe's output, and a turn waits for its reply line.
    vars.push(("PYTHONUNBUFFERED".into(), "1".into()));
    for (k, v) in spec.app.env.iter().chain(&case.env) {
        vars.push((k.clone(), crate::spec::expand_env_value(v, &v1, base)));
    }
    CommandApp {
        argv: argv.to_owned(),
        env: vars,
        cwd: Some(spec.app.cwd.clone()),
        reply_until: spec.app.reply_until.as_ref().map(|p| p.regex.clone()),
        contain: s.contain,
    }
}

/// `wait`'s result, or `None` when `crash` (the session) holds a request first: the
/// program is to be killed.
async fn or_crash<T>(
    crash: Option<&Session>,
    wait: impl std::future::Future<Output = T>,
) -> Option<T> {
    match crash {
        None => Some(wait.await),
        Some(session) => tokio::select! {
            t = wait => Some(t),
            () = session.crash_held() => None,
        },
    }
}

/// Kill the crash test's program, let the session end its held request, and start the
/// program again with its first input.
async fn restart(
    app: &CommandApp,
    first: Option<&str>,
    deadline: tokio::time::Instant,
    session: &Session,
    running: &mut super::driver::Running,
    driven: &mut Driven,
) -> Result<(), ProgramError> {
    driven.killed = Some(running.kill().await);
    session.release_crash();
    *running = app.start(first, deadline, Some(session))?;
    Ok(())
}
