//! `agentproxy serve`: one proxy for a whole test session (the pytest plugin), whose
//! cassette, mode and tool mocks each test switches through the control endpoint, so SDK
//! clients made once, at import time, keep working. See docs/pytest.md for the protocol.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::cassette::{store, Writer};
use crate::cli::ServeArgs;
use crate::error::{Error, Exit, Result};
use crate::proxy::google_adc;
use crate::proxy::switch::{Control, Switch, Switched, TEST_HEADER};
use crate::proxy::Options;
use crate::report::Cause;
use crate::runner::env;
use crate::runner::mocks::{tools_from_json, RunMocks};
use crate::runner::plan::{self, Forwarding, Plan, PlanError, Setup, Use};
use crate::spec::Mode;
use crate::trajectory::{self, Asserted};

mod request;

/// The version of the control protocol this binary speaks (see `control`).
pub use super::control::PROTOCOL;
use super::control::{
    self, Checked, Drift, Ended, Listening, Name, Named, PutMatch, PutMocks, Refused, SoFar,
    Started,
};
use request::{confined, failure, load_error, session_mode, test_spec, TestSpec};

/// A test being served.
struct Active {
    spec: TestSpec,
    usage: Use,
    /// A replay of a cassette that is not there: a test that asks the model nothing needs
    /// none, so it fails only when a request comes.
    missing: bool,
    match_rules: crate::cassette::MatchRules,
    writer: Option<Writer>,
    mocks: RunMocks,
    started: std::time::Instant,
}

struct Harness {
    switch: Arc<Switch>,
    fwd: Forwarding,
    /// The tests being served, by name (several at once when a harness runs tests
    /// concurrently and names each request's test).
    active: tokio::sync::Mutex<BTreeMap<String, Active>>,
    /// What every control request and every stand-in presents, for all tests.
    secret: Arc<str>,
    /// The directory the cassettes must be in, its links resolved.
    root: PathBuf,
    /// The session's mode: a test starts in it unless it asks for another.
    mode: Mode,
    /// Under CI in a session that replays: every test replays, whatever it asks.
    replay_only: bool,
    /// Where each ended test is written as a case of the run report (`--cases-dir`).
    cases_dir: Option<PathBuf>,
    /// The cassettes serve named this session, and the test each is for.
    owners: std::sync::Mutex<BTreeMap<PathBuf, String>>,
}

/// Between tests every request misses: nothing is recorded or forwarded, and the miss
/// says why.
fn idle(fwd: &Forwarding, secret: &str) -> std::result::Result<Options, PlanError> {
    let nothing = Setup {
        secret: Some(secret.to_owned()),
        ..Setup::new(PathBuf::new(), None, Use::Replay)
    };
    let mut options = plan::plan(nothing, fwd)?.options;
    options.advice.origin = Some(IDLE.to_owned());
    Ok(options)
}

/// Why a request outside any test missed.
const IDLE: &str = "no agentproxy test is active, and between tests every request misses: make model requests inside a test (one with the `agentproxy` fixture or marker under pytest; any test under the vitest and jest helpers)";

fn error(status: StatusCode, message: impl std::fmt::Display) -> (StatusCode, Value) {
    let refused = Refused {
        error: message.to_string(),
    };
    (status, answer(&refused))
}

/// A typed answer as the JSON it is sent as.
fn answer(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// The test a control request is about: the one it names, else the only one running.
fn which(
    active: &BTreeMap<String, Active>,
    named: Option<String>,
) -> std::result::Result<String, (StatusCode, Value)> {
    let conflict = |why: String| Err(error(StatusCode::CONFLICT, why));
    match named {
        Some(name) if active.contains_key(&name) => Ok(name),
        Some(name) => conflict(format!("test `{name}` is not running")),
        None => match active.len() {
            0 => conflict("no test is active".to_owned()),
            1 => Ok(active.keys().next().cloned().unwrap_or_default()),
            n => conflict(format!(
                "{n} tests are running and this request names none of them ({TEST_HEADER}: NAME)"
            )),
        },
    }
}

impl Harness {
    async fn control(
        self: Arc<Self>,
        method: Method,
        path: String,
        named: Option<String>,
        body: Value,
    ) -> (StatusCode, Value) {
        if (method.clone(), path.as_str()) == (Method::POST, "test") {
            return self.start(&body).await;
        }
        if (method.clone(), path.as_str()) == (Method::POST, "cassettes") {
            return match control::read::<Name>("cassettes", &body) {
                Ok(asked) => {
                    let cassettes = (asked.tests.iter())
                        .map(|t| control::cassette_of(&t.dir, &t.name))
                        .collect();
                    (StatusCode::OK, answer(&Named { cassettes }))
                }
                Err(e) => error(StatusCode::BAD_REQUEST, e),
            };
        }
        let test = match which(&*self.active.lock().await, named) {
            Ok(t) => t,
            Err(e) => return e,
        };
        match (method, path.as_str()) {
            (Method::PUT, "test/mocks") => match control::read::<PutMocks>("mocks", &body)
                .and_then(|put| tools_from_json(&put.mocks))
            {
                Ok(tools) => self.amend(&test, |spec| spec.tools = tools).await,
                Err(e) => error(StatusCode::BAD_REQUEST, e),
            },
            (Method::PUT, "test/match") => match control::read::<PutMatch>("match", &body)
                .and_then(|put| crate::spec::match_from_json(&put.rules))
            {
                Ok((rules, repeat)) => {
                    self.amend(&test, |spec| (spec.match_rules, spec.repeat) = (rules, repeat))
                        .await
                }
                Err(e) => error(StatusCode::BAD_REQUEST, e),
            },
            (Method::GET, "test") => match self.switch.so_far(&test) {
                Some((exchanges, _)) => (StatusCode::OK, answer(&SoFar::of(&exchanges))),
                None => not_running(&test),
            },
            (Method::POST, "test/check") => self.check(&test, &body),
            (Method::DELETE, "test") => match failure(&body) {
                Ok(failure) => match self.end(&test, failure.as_deref()).await {
                    Ok(ended) => (StatusCode::OK, answer(&ended)),
                    Err(e) => e,
                },
                Err(e) => error(StatusCode::BAD_REQUEST, e),
            },
            (method, path) => error(
                StatusCode::NOT_FOUND,
                format!("no control endpoint {method} /_agentproxy/{path}; see `agentproxy docs pytest`"),
            ),
        }
    }

    /// Judge an `expect:` block (the spec's grammar, as JSON) against the test so far.
    fn check(&self, test: &str, body: &Value) -> (StatusCode, Value) {
        let expect = match crate::spec::expect_from_json(body) {
            Ok(e) => e,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        };
        if expect.exit.is_some() || expect.output.is_some() {
            return error(
                StatusCode::BAD_REQUEST,
                "`exit` and `output` are about a program `agentproxy test` starts; check them in the test itself",
            );
        }
        let Some((exchanges, requests)) = self.switch.so_far(test) else {
            return not_running(test);
        };
        let failures = crate::runner::evaluate::check_exchanges(&expect, &exchanges, requests)
            .iter()
            .filter(|a| !a.passed)
            .map(crate::report::failure)
            .collect();
        (StatusCode::OK, answer(&Checked { failures }))
    }

    async fn start(&self, body: &Value) -> (StatusCode, Value) {
        let spec = match test_spec(body, self.mode) {
            Ok(s) => s,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        };
        let mut active = self.active.lock().await;
        if active.contains_key(&spec.name) {
            return error(
                StatusCode::CONFLICT,
                format!(
                    "test `{}` is still active; end it (DELETE /_agentproxy/test) first",
                    spec.name
                ),
            );
        }
        let path = path_clean::clean(self.root.join(&spec.cassette));
        let claimed = match spec.derived {
            true => self.claim(&path, &spec.name),
            false => Ok(()),
        };
        if let Err(other) = claimed {
            return error(
                StatusCode::CONFLICT,
                format!(
                    "tests `{other}` and `{}` would share the cassette {}; rename one",
                    spec.name,
                    path.display()
                ),
            );
        }
        match self.plan(spec) {
            Ok((a, options)) => {
                let started = Started {
                    mode: a.usage.name(),
                    cassette: a.spec.cassette.clone(),
                };
                self.switch.start(&a.spec.name, options);
                active.insert(a.spec.name.clone(), a);
                (StatusCode::OK, answer(&started))
            }
            Err(e) => error(StatusCode::BAD_REQUEST, e),
        }
    }

    /// Claim the cassette serve named `path` for the test `name`; `Err` names the test of
    /// the session that has it.
    fn claim(&self, path: &Path, name: &str) -> std::result::Result<(), String> {
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        let owner = owners
            .entry(path.to_owned())
            .or_insert_with(|| name.to_owned());
        match owner == name {
            true => Ok(()),
            false => Err(owner.clone()),
        }
    }

    /// Plan the test: what it is while it runs, and its proxy's options.
    fn plan(&self, mut spec: TestSpec) -> std::result::Result<(Active, Options), String> {
        if self.replay_only {
            // In CI only the session's own command line chooses a mode that records.
            spec.mode = Mode::Replay;
        }
        spec.cassette = confined(&self.root, &spec.cassette)?;
        let existing = match spec.cassette.exists() {
            true => Some(store::load(&spec.cassette).map_err(load_error)?),
            false => None,
        };
        let usage = Use::of(spec.mode, existing.is_some()).unwrap_or(Use::Replay);
        let missing = usage == Use::Replay && existing.is_none();
        let setup = Setup {
            tools: spec.tools.clone(),
            match_rules: spec.match_rules.clone(),
            repeat: spec.repeat,
            log_exchanges: true,
            secret: Some(self.secret.to_string()),
            rerecord: spec.rerecord.clone(),
            runner: spec.runner,
            ..Setup::new(spec.cassette.clone(), existing, usage)
        };
        let Plan {
            options,
            match_rules,
            writer,
            mocks,
            ..
        } = plan::plan(setup, &self.fwd).map_err(|e| e.to_string())?;
        let active = Active {
            spec,
            usage,
            missing,
            match_rules,
            writer,
            mocks,
            started: std::time::Instant::now(),
        };
        Ok((active, options))
    }

    /// Change what the test `name` asked for (its mocks, its tolerances): allowed before
    /// its first request only, since the requests already answered were answered without
    /// the change.
    async fn amend(&self, name: &str, change: impl FnOnce(&mut TestSpec)) -> (StatusCode, Value) {
        let too_late = || {
            error(
                StatusCode::CONFLICT,
                format!("test `{name}` already made model requests; mock tools and set tolerances before the agent runs"),
            )
        };
        let old = {
            let mut active = self.active.lock().await;
            if self
                .switch
                .so_far(name)
                .is_some_and(|(_, requests)| requests > 0)
            {
                return too_late();
            }
            let Some(current) = active.remove(name) else {
                return not_running(name);
            };
            let mut spec = current.spec.clone();
            change(&mut spec);
            // Its writer's lock is released before the test is planned again.
            drop(current);
            let planned = match self.plan(spec.clone()) {
                Ok(p) => p,
                Err(e) => {
                    // It cannot go on as asked: it ends here, as a failed start does.
                    self.switch.take(name);
                    return error(StatusCode::BAD_REQUEST, e);
                }
            };
            let (a, options) = planned;
            // Checked and swapped at once. A request that came meanwhile (the program
            // asked while the test changed its mocks) ends the test: too late.
            let Some(old) = self.switch.restart(name, options) else {
                self.switch.take(name);
                return too_late();
            };
            active.insert(name.to_owned(), a);
            old
        };
        Switch::drain(old).await;
        (StatusCode::OK, json!({}))
    }

    /// `path` relative to the root (whole components only), as a report shows it.
    fn relative(&self, path: &str) -> String {
        match Path::new(path).strip_prefix(&self.root) {
            Ok(p) => p.display().to_string(),
            Err(_) => path.to_owned(),
        }
    }

    /// End the test `name` (`failure`: why it failed in its own code, as its harness says):
    /// drain, write its cassette when recording, say what happened.
    async fn end(
        &self,
        name: &str,
        failure: Option<&str>,
    ) -> std::result::Result<Ended, (StatusCode, Value)> {
        // Taken out together, so a test of the same name may start at once.
        let (a, proxy) = {
            let mut active = self.active.lock().await;
            let Some(a) = active.remove(name) else {
                return Err(not_running(name));
            };
            (a, self.switch.take(name))
        };
        let outcome = match proxy {
            Some(p) => Switch::drain(p).await,
            None => Default::default(),
        };
        let (written, trajectory) = self.save(&a, &outcome).await?;
        let mut mock_problems = a.mocks.problems();
        mock_problems.extend(outcome.mcp.problems);
        // Every request missed a cassette that is not there: one line says so.
        let misses = match (a.missing, outcome.misses.len()) {
            (true, n) if n > 0 => vec![no_cassette(&a.spec, n)],
            _ => outcome.misses,
        };
        let mut ended = Ended {
            so_far: SoFar::of(&outcome.exchanges),
            mode: a.usage.name(),
            cassette: a.spec.cassette.clone(),
            written,
            trajectory,
            misses,
            unused: outcome.unused,
            upstream_errors: outcome.upstream_errors,
            rejected: outcome.rejected,
            mock_problems,
            status: crate::report::Status::Passed,
            failures: vec![],
        };
        // The verdict is the runner's, as the run report has it: the harness renders it.
        let case = self.case(
            &a,
            name,
            failure,
            (&outcome.exchanges, outcome.requests),
            &ended,
        );
        ended.status = case.status;
        ended.failures = (case.causes())
            .filter_map(|c| match c {
                Cause::Miss(text) | Cause::Problem(text) => Some(text.to_owned()),
                Cause::Assertion(..) | Cause::Fuzz(_) => None,
            })
            .collect();
        if let Some(dir) = &self.cases_dir {
            write_case(dir, &case).map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e))?;
        }
        Ok(ended)
    }

    /// Write the cassette of a test that records (`a`) with what it recorded: whether it
    /// was written, and the trajectory against the recording it replaced, if any.
    async fn save(
        &self,
        a: &Active,
        outcome: &crate::proxy::Outcome,
    ) -> std::result::Result<(bool, Option<Drift>), (StatusCode, Value)> {
        // The cassette this test's recording replaces, read before it is, and the diff
        // after: both off the runtime, which other tests' proxies share.
        let previous = match &a.writer {
            Some(_) => {
                let path = a.spec.cassette.clone();
                tokio::task::spawn_blocking(move || plan::replaced(&path))
                    .await
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let saved = match &a.writer {
            Some(w) => plan::save(
                w,
                &self.fwd.upstreams,
                &a.match_rules,
                None,
                a.usage,
                outcome,
            )
            .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e))?,
            None => None,
        };
        let written = saved.is_some();
        let trajectory = match previous.zip(saved) {
            Some((old, new)) => tokio::task::spawn_blocking(move || {
                let d = trajectory::diff_cassettes(&old, &new, &Asserted::everything());
                Drift {
                    verdict: d.verdict.as_str(),
                    diff: trajectory::render_text(&d),
                }
            })
            .await
            .ok(),
            None => None,
        };
        Ok((written, trajectory))
    }

    /// The test `name` that `ended` as a case of the run report: `done` are its exchanges
    /// and how many requests it made; `failure`, why it failed in its own code.
    fn case(
        &self,
        a: &Active,
        name: &str,
        failure: Option<&str>,
        (exchanges, requests): (&[crate::cassette::Interaction], usize),
        ended: &Ended,
    ) -> crate::report::CaseReport {
        crate::runner::harness::case(crate::runner::harness::Ended {
            runner: a.spec.runner.name(),
            // The npm helpers name a test by its file's absolute path.
            name: &self.relative(name),
            mode: a.usage.name(),
            cassette: &self.relative(&a.spec.cassette.display().to_string()),
            duration_ms: u64::try_from(a.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            exchanges,
            requests,
            mocked: &a.spec.tools.keys().cloned().collect(),
            misses: &ended.misses,
            problems: (ended.upstream_errors.iter())
                .chain(&ended.mock_problems)
                .cloned()
                .collect(),
            unused: &ended.unused,
            diff: ended.trajectory.as_ref().map(|d| d.diff.clone()),
            failure,
        })
    }
}

/// Write `case` into `dir` as a file of its own, whole or not at all (another serve of the
/// run may be writing there too, and `report cases` may read it at any time).
fn write_case(dir: &Path, case: &crate::report::CaseReport) -> std::result::Result<(), String> {
    let failed = |e: &dyn std::fmt::Display| {
        format!(
            "failed to write the test's case into {}: {e}",
            dir.display()
        )
    };
    std::fs::create_dir_all(dir).map_err(|e| failed(&e))?;
    let mut file = tempfile::Builder::new()
        .prefix(".case")
        .tempfile_in(dir)
        .map_err(|e| failed(&e))?;
    serde_json::to_writer(&mut file, case).map_err(|e| failed(&e))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let name = format!("{stamp:024}-{}.json", std::process::id());
    file.persist(dir.join(name)).map_err(|e| failed(&e.error))?;
    Ok(())
}

/// Why a test whose cassette is not there failed: `requests` of its requests needed it.
fn no_cassette(spec: &TestSpec, requests: usize) -> String {
    let record = match &spec.rerecord {
        Some(command) => format!("`{command}`"),
        None => "a mode that records (record or auto)".to_owned(),
    };
    format!(
        "no cassette {} to replay, and the test made {requests} request(s) that needed one; record it with {record}",
        spec.cassette.display()
    )
}

/// The answer about a test that is not running.
fn not_running(name: &str) -> (StatusCode, Value) {
    error(
        StatusCode::CONFLICT,
        format!("test `{name}` is not running"),
    )
}

/// The session's secret: `AGENTPROXY_SECRET` of serve's own environment, or a new one.
fn secret() -> Result<Arc<str>> {
    match std::env::var(crate::proxy::SECRET_VAR) {
        Ok(s) if !s.is_empty() => Ok(s.into()),
        _ => Ok(crate::proxy::new_secret().map_err(Error::Secret)?.into()),
    }
}

/// The directory the cassettes must be in (`--root`, else the working directory), its
/// links resolved.
fn root(given: Option<&Path>) -> Result<PathBuf> {
    let root = given.unwrap_or(Path::new("."));
    root.canonicalize().map_err(|e| Error::ServeRoot {
        root: root.to_owned(),
        source: e,
    })
}

/// Until the harness closes serve's stdin (or dies), or a signal.
async fn until_done() -> Result<()> {
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    });
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(Error::Signal)?;
    tokio::select! {
        _ = stdin_closed => {}
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}

pub async fn run(args: ServeArgs) -> Result<Exit> {
    if args.schema {
        let schema = serde_json::to_string_pretty(&control::schema()).unwrap_or_default();
        super::output::print(&format!("{schema}\n"))?;
        return Ok(Exit::Ok);
    }
    if !args.listen.ip().is_loopback() {
        return Err(Error::NotLoopback {
            addr: args.listen,
            why: "agentproxy serve listens on loopback only",
        });
    }
    let fwd = Forwarding {
        upstreams: args.upstreams.upstreams()?,
        upstream_timeout: args.upstream_timeout,
        max_body: args.max_body_size,
    };
    // An invalid upstream is a usage error now, not a failure of the first recorded test.
    crate::proxy::upstream::Upstream::new(&fwd.upstreams, fwd.upstream_timeout)?;
    let ci = crate::spec::is_ci(&|name| std::env::var(name).ok());
    let mode = session_mode(args.mode, args.mode_from.as_deref(), ci)?;
    let (secret, root) = (secret()?, root(args.root.as_deref())?);
    let switch = Arc::new(Switch::new(idle(&fwd, &secret)?));
    let harness = Arc::new(Harness {
        switch: switch.clone(),
        fwd,
        active: Default::default(),
        secret: secret.clone(),
        root,
        mode,
        replay_only: ci && mode == Mode::Replay,
        cases_dir: args.cases_dir,
        owners: Default::default(),
    });
    let control: Control = {
        let harness = harness.clone();
        Arc::new(move |method, path, named, body| {
            Box::pin(harness.clone().control(method, path, named, body))
        })
    };
    let server = Switched::start(args.listen, switch, control, secret.clone()).await?;
    let base = format!("http://{}", server.addr());
    let is_set = |name: &str| std::env::var_os(name).is_some();
    let replay = mode == Mode::Replay;
    let mut env = env::injected(&base, Some(&secret), replay, &is_set);
    // A replay's Google credentials, whose token refresh serve answers (proxy::google_adc);
    // the file lives until serve ends.
    let google = match replay {
        true => Some(google_adc::write(&base).map_err(Error::GoogleCredentials)?),
        false => None,
    };
    env.extend(google.as_ref().map(|f| env::google_credentials(f.path())));
    if mode == Mode::Auto {
        // Clients made at import time start without a key; a test that has to record
        // with the placeholder fails naming the variable to set.
        env.extend(env::placeholder_keys(&is_set));
    }
    let listening = Listening {
        url: base,
        env: env.into_iter().map(|v| (v.name, v.value)).collect(),
        protocol: control::PROTOCOL,
        mode: mode.as_str(),
    };
    super::output::print(&format!("{}\n", answer(&listening)))?;

    until_done().await?;
    // A test still active keeps what it recorded.
    let still: Vec<String> = harness.active.lock().await.keys().cloned().collect();
    for name in still {
        if let Some(ended) = harness.end(&name, None).await.ok().filter(|e| e.written) {
            tell!(
                "agentproxy serve: wrote {} for the test that was still active",
                ended.cassette.display()
            );
        }
    }
    server.stop().await;
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_request_names_its_test_cassette_and_mode() {
        let s = test_spec(
            &json!({"protocol": control::PROTOCOL, "name": "t", "cassette": "c.json",
            "mode": "auto", "mocks": {"get_time": {"result": {"time": "09:00"}}}}),
            Mode::Replay,
        )
        .unwrap();
        assert_eq!((s.name.as_str(), s.mode), ("t", Mode::Auto));
        assert!(s.tools.contains_key("get_time"));
        let e = test_spec(
            &json!({"protocol": control::PROTOCOL, "name": "t", "cassette": "c.json", "mode": "replya"}),
            Mode::Replay,
        );
        assert_eq!(
            e.err().unwrap(),
            "unknown mode `replya`; expected replay, record, auto or update"
        );
        let e = test_spec(
            &json!({"protocol": control::PROTOCOL, "name": "t", "cassette": "", "mode": "auto"}),
            Mode::Replay,
        );
        assert_eq!(e.err().unwrap(), "`cassette` must be a non-empty string");
        // A request of the protocol, typed: a field it does not have is refused by name,
        // and a test that names no mode starts in the session's.
        let e = test_spec(
            &json!({"protocol": control::PROTOCOL, "name": "t", "cassette": "c.json", "mdoe": "auto"}),
            Mode::Replay,
        );
        assert!(e
            .err()
            .unwrap()
            .starts_with("the start request: unknown field `mdoe`"));
        let s = test_spec(
            &json!({"protocol": control::PROTOCOL, "name": "t", "cassette": "c.json"}),
            Mode::Update,
        );
        assert_eq!(s.unwrap().mode, Mode::Update);
    }

    #[test]
    fn the_session_mode_is_asked_or_replay_under_ci_and_a_configuration_may_not_record_there() {
        assert_eq!(session_mode(None, None, true).unwrap(), Mode::Replay);
        assert_eq!(session_mode(None, None, false).unwrap(), Mode::Auto);
        assert_eq!(
            session_mode(Some(Mode::Record), None, true).unwrap(),
            Mode::Record
        );
        let ini = Some("agentproxy_mode in the ini file");
        assert_eq!(
            session_mode(Some(Mode::Record), ini, false).unwrap(),
            Mode::Record
        );
        assert_eq!(
            session_mode(Some(Mode::Replay), ini, true).unwrap(),
            Mode::Replay
        );
        let e = session_mode(Some(Mode::Auto), ini, true)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("CI is set, and agentproxy_mode in the ini file asks for mode `auto`"),
            "{e}"
        );
    }
}
