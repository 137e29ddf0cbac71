//! Injected faults and fuzz arguments on the way to the program: which model request gets
//! a fault, and the answer it gets. An error or a cut answer replaces the recording or the
//! upstream's: that request uses up no recording and is never forwarded, so the retry gets
//! what the request would have. A spoiled tool call needs the real answer: that request is
//! served as any other, then its answer's tool call spoiled on the way to the program. A
//! fuzz run's arguments go the same way, into the first call to their tool.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::Mutex;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;

use super::body::{chunks, disconnect, full, json_response, Disconnect, ProxyBody};
use super::exchange::Exchange;
use super::options::FuzzCall;
use crate::cassette::{Body, Interaction};
use crate::dialect::{ErrorFault, Route, Spoil};
use crate::fault::{Fault, Fired, Kind, Next, Plan};
use crate::neutral::ModelCall;
use crate::sse::{Framing, SseEvent};

/// The faults and the fuzz arguments of one session, and what became of them.
pub(super) struct Faults {
    plan: Plan,
    fuzz: Option<FuzzCall>,
    log: Mutex<Log>,
}

#[derive(Default)]
struct Log {
    fired: Vec<Fired>,
    /// Tool-call faults that could not fire.
    problems: Vec<String>,
    /// With faults: each model request's number and the status it was answered with.
    answered: Vec<(usize, Option<u16>)>,
    /// Exchanges whose tool call a fault or a fuzz run spoiled, by arrival: the call's
    /// index, how, and by what (the fault's kind, or `fuzz`).
    spoiled: HashMap<u64, (usize, Spoil, String)>,
    /// The fuzz run's arguments have reached the program.
    fuzzed: bool,
}

/// What became of a session's faults and fuzz arguments: the session's [`FaultOutcome`],
/// and the exchanges whose answers were spoiled, by arrival number.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub told: FaultOutcome,
    pub spoiled: HashMap<u64, (usize, Spoil, String)>,
}

/// What became of a session's faults and fuzz arguments, as its outcome tells it.
#[derive(Debug, Default)]
pub struct FaultOutcome {
    /// The faults that fired, in order, each with what the program did next.
    pub fired: Vec<Fired>,
    /// Tool-call faults that could not fire (no tool call in the answer, no way to break
    /// its schema) and faults whose request never came: each fails a test case.
    pub problems: Vec<String>,
    /// A fuzz run's arguments reached the program (in an answer calling their tool).
    pub fuzzed: bool,
}

impl FaultOutcome {
    /// The summary `record` and `replay` tell: one line for the faults that fired (none
    /// when none did), and a warning for each that could not.
    pub fn lines(&self) -> Vec<String> {
        let each: Vec<String> = self.fired.iter().map(ToString::to_string).collect();
        let injected = (!self.fired.is_empty()).then(|| {
            format!(
                "agentproxy: {} fault(s) injected: {}",
                self.fired.len(),
                each.join(", ")
            )
        });
        let problems = (self.problems.iter()).map(|p| format!("agentproxy: warning: fault {p}"));
        injected.into_iter().chain(problems).collect()
    }

    /// What a test case's verdict says of them: each fault that could not fire.
    pub fn problems(&self) -> impl Iterator<Item = String> + '_ {
        self.problems.iter().map(|p| format!("fault {p}"))
    }
}

/// A fault a request is due to get.
pub(super) struct Due {
    fault: Fault,
    /// The request's number in the case, and its turn.
    nth: usize,
    turn: Option<usize>,
}

impl Due {
    pub(super) fn fault(&self) -> &Fault {
        &self.fault
    }
}

impl Faults {
    pub(super) fn new(plan: Plan, fuzz: Option<FuzzCall>) -> Faults {
        Faults {
            plan,
            fuzz,
            log: Mutex::default(),
        }
    }

    /// A fuzz run rewrites answers: each must be looked at.
    pub(super) fn rewrites(&self) -> bool {
        self.fuzz.is_some()
    }

    /// The fault the `nth` model request of the case gets, being the `nth_in_turn` of
    /// `turn`, if one.
    pub(super) fn due(&self, nth: usize, turn: Option<usize>, nth_in_turn: usize) -> Option<Due> {
        let fault = self.plan.pick(nth, turn, nth_in_turn)?;
        Some(Due {
            fault: fault.clone(),
            nth,
            turn,
        })
    }

    /// Answer `ex` through the fault layer: `due` replaces the answer or spoils the one
    /// `answer` gives; without a fault, a pending fuzz run's arguments go into it.
    /// `recorded` is what the request would get, for a fault that cuts or spoils it.
    pub(super) async fn layer<F>(
        &self,
        ex: Exchange,
        due: Option<Due>,
        recorded: impl FnOnce(&Exchange) -> Recorded,
        answer: impl FnOnce(Exchange) -> F,
    ) -> Response<ProxyBody>
    where
        F: Future<Output = Response<ProxyBody>>,
    {
        match due {
            // A held connection ends without an answer, and a client that gives up first
            // drops the hold mid-way: it is noted as it starts.
            Some(due) if due.fault.kind == Kind::Timeout => {
                self.fired(&due, None, None);
                serve(&ex, &due.fault, recorded(&ex)).await
            }
            Some(due) if !due.fault.kind.spoils_tool_call() => {
                let resp = serve(&ex, &due.fault, recorded(&ex)).await;
                self.fired(&due, status(&resp), None);
                resp
            }
            Some(due) => {
                let asked = Asked::of(&ex);
                let resp = answer(ex).await;
                self.spoil(&due, &asked, resp).await
            }
            None => match self.fuzz_pending().filter(|_| ex.route.requires_json()) {
                Some(fuzz) => {
                    let asked = Asked::of(&ex);
                    let resp = answer(ex).await;
                    self.fuzz(fuzz, &asked, resp).await
                }
                None => answer(ex).await,
            },
        }
    }

    /// A socket turn got `due`, put on the wire in the socket's own shape; `status` is the
    /// error's (none: the socket was closed).
    pub(super) fn fired_on_socket(&self, due: &Due, status: Option<u16>) {
        self.fired(due, status, None);
    }

    /// `due` could not fire on a socket turn, for `why`: a problem, as for a request.
    pub(super) fn not_fired(&self, due: &Due, why: &str) {
        let problem = format!(
            "request {}: {} did not fire: {why}; the program got the answer as it was",
            due.nth, due.fault.kind
        );
        self.lock().problems.push(problem);
    }

    /// With faults to inject, remember what the `nth` model request was answered (`None`
    /// when not at all), to say what the program did after a fault.
    pub(super) fn answered(&self, nth: usize, resp: &Response<ProxyBody>) {
        if !self.plan.is_empty() {
            self.lock().answered.push((nth, status(resp)));
        }
    }

    /// The fuzz run's arguments, while they have not reached the program.
    fn fuzz_pending(&self) -> Option<&FuzzCall> {
        let fuzz = self.fuzz.as_ref()?;
        (!self.lock().fuzzed).then_some(fuzz)
    }

    /// Remember that `due` fired, answered with `status` (none: the connection closed
    /// without one); `detail` says what it spoiled.
    fn fired(&self, due: &Due, status: Option<u16>, detail: Option<String>) {
        let fired = Fired {
            request: due.nth,
            turn: due.turn,
            kind: due.fault.kind,
            status,
            detail,
            next: None,
        };
        self.lock().fired.push(fired);
    }

    /// Spoil the tool call of `resp` (the request's real answer) as `due` says. An answer
    /// with no call to spoil goes to the program unchanged, and the fault is noted as not
    /// fired: a test of a reaction that never happened must not pass quietly.
    async fn spoil(
        &self,
        due: &Due,
        asked: &Asked,
        resp: Response<ProxyBody>,
    ) -> Response<ProxyBody> {
        let (resp, done) = spoiled(asked, resp, |call| spoiling(call, &due.fault)).await;
        match done {
            Ok((nth, how, detail)) => {
                let by = due.fault.kind.to_string();
                self.lock().spoiled.insert(asked.seq, (nth, how, by));
                self.fired(due, status(&resp), Some(detail));
            }
            Err(why) => {
                let problem = format!(
                    "request {}: {} did not fire: {why}; the program got the answer as it was",
                    due.nth, due.fault.kind
                );
                self.lock().problems.push(problem);
            }
        }
        resp
    }

    /// A fuzz run's arguments put in the first call to their tool, if `resp` has one;
    /// until one has, every answer is looked at.
    async fn fuzz(
        &self,
        fuzz: &FuzzCall,
        asked: &Asked,
        resp: Response<ProxyBody>,
    ) -> Response<ProxyBody> {
        let (resp, done) = spoiled(asked, resp, |call| {
            let nth = (call.tool_calls.iter().position(|c| c.name == fuzz.tool))
                .ok_or_else(String::new)?;
            Ok((nth, Spoil::Arguments(fuzz.arguments.clone()), String::new()))
        })
        .await;
        if let Ok((nth, how, _)) = done {
            let mut log = self.lock();
            log.spoiled.insert(asked.seq, (nth, how, "fuzz".to_owned()));
            log.fuzzed = true;
        }
        resp
    }

    /// What became of the faults and the fuzz arguments; taken once the session is over,
    /// when `requests` model requests came in each turn.
    pub(super) fn outcome(&self, requests: &BTreeMap<Option<usize>, usize>) -> Outcome {
        let log = std::mem::take(&mut *self.lock());
        let mut fired = log.fired;
        with_next(&mut fired, &log.answered);
        let mut problems = log.problems;
        problems.extend(self.plan.unreached(requests));
        Outcome {
            told: FaultOutcome {
                fired,
                problems,
                fuzzed: log.fuzzed,
            },
            spoiled: log.spoiled,
        }
    }

    /// The log lock; a panic elsewhere must not lose the outcome, so poisoning is ignored.
    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The status a response was answered with; `None` for a closed connection.
fn status(resp: &Response<ProxyBody>) -> Option<u16> {
    (resp.extensions().get::<Disconnect>().is_none()).then(|| resp.status().as_u16())
}

/// Each fired fault's next request, when it got no fault of its own: from what the
/// requests were answered.
fn with_next(fired: &mut [Fired], answered: &[(usize, Option<u16>)]) {
    let faulted: BTreeSet<usize> = fired.iter().map(|f| f.request).collect();
    for f in fired.iter_mut() {
        let request = f.request + 1;
        if faulted.contains(&request) {
            continue;
        }
        f.next = (answered.iter())
            .find(|(n, _)| *n == request)
            .map(|(_, status)| Next {
                request,
                status: *status,
            });
    }
}

/// Serve `fault` to `ex`. `recorded` is the stream (or whole body) the request would have
/// got, for the kinds that cut or spoil it.
async fn serve(ex: &Exchange, fault: &Fault, recorded: Recorded) -> Response<ProxyBody> {
    let error = |e: ErrorFault| {
        let (status, body) = ex
            .route
            .fault_error(e)
            .unwrap_or((500, serde_json::Value::Null));
        json_response(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &body,
        )
    };
    match fault.kind {
        Kind::RateLimit => {
            let mut resp = error(ErrorFault::RateLimit);
            let secs = fault.retry_after.as_secs_f64().ceil();
            let h = resp.headers_mut();
            h.insert("retry-after", HeaderValue::from(secs as u64));
            h.insert(
                "retry-after-ms",
                HeaderValue::from(u64::try_from(fault.retry_after.as_millis()).unwrap_or(u64::MAX)),
            );
            resp
        }
        Kind::ServerError => error(ErrorFault::ServerError(fault.status)),
        Kind::Overloaded => error(ErrorFault::Overloaded),
        Kind::Timeout => {
            tokio::time::sleep(fault.hold).await;
            disconnect()
        }
        Kind::Disconnect => disconnect(),
        Kind::TruncateStream => match recorded {
            Recorded::Events(evs, framing) => {
                let kept = evs.into_iter().take(fault.after_events).collect();
                stream(chunks(kept, Some(CUT)), framing)
            }
            // A whole body breaks off halfway.
            Recorded::Whole(bytes) => {
                let half = bytes.slice(..bytes.len() / 2);
                let mut resp = Response::new(chunks(vec![half], Some(CUT)));
                resp.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                resp
            }
        },
        // Served by [`spoil`], never here.
        Kind::MalformedToolArgs | Kind::SchemaViolation | Kind::UnknownTool | Kind::Length => {
            error(ErrorFault::ServerError(500))
        }
        Kind::StreamError => match (recorded, ex.route.stream_error()) {
            (Recorded::Events(evs, framing), Some(err)) => {
                // The first event, then the error: the stream had started.
                let mut kept: Vec<Bytes> = evs.into_iter().take(1).collect();
                kept.push(framing.encode(&err));
                stream(chunks(kept, None), framing)
            }
            // A request that does not stream gets the server error instead.
            _ => error(ErrorFault::ServerError(500)),
        },
    }
}

/// The abort a cut stream ends with.
const CUT: &str = "agentproxy: the stream was cut (truncate_stream fault)";

/// What a request would have been answered with, for faults that spoil an answer.
pub(super) enum Recorded {
    /// A stream's encoded events, and how they are framed.
    Events(Vec<Bytes>, Framing),
    /// A whole body.
    Whole(Bytes),
}

impl Recorded {
    /// The answer for `ex`: `response` (recorded, or a stand-in) as a stream when the
    /// request wants one, else whole.
    pub fn of(
        ex: &Exchange,
        response: &serde_json::Value,
        events: Option<(Vec<Bytes>, Framing)>,
    ) -> Recorded {
        if ex.wants_stream() {
            let events = events.or_else(|| {
                let evs: Vec<SseEvent> = ex.synthesize(response)?;
                let framing = ex.framing();
                Some((evs.iter().map(|e| framing.encode(e)).collect(), framing))
            });
            if let Some((evs, framing)) = events {
                return Recorded::Events(evs, framing);
            }
        }
        Recorded::Whole(Bytes::from(
            serde_json::to_vec(response).unwrap_or_default(),
        ))
    }
}

/// What a request asked, kept to spoil its answer once the exchange has gone on its way.
struct Asked {
    seq: u64,
    route: Route,
    request: Value,
    stream: bool,
}

impl Asked {
    fn of(ex: &Exchange) -> Asked {
        Asked {
            seq: ex.seq,
            route: ex.route,
            request: ex.json().cloned().unwrap_or_default(),
            stream: ex.wants_stream(),
        }
    }
}

/// Which call to spoil and how: its index among the answer's tool calls, the spoil, and
/// what that is in words; or why there is none.
type Spoiling = Result<(usize, Spoil, String), String>;

/// `resp` with the tool call `pick` chooses spoiled, re-encoded as the request asked
/// (whole, or a stream); or `resp` as it was, with why nothing was spoiled.
async fn spoiled(
    asked: &Asked,
    resp: Response<ProxyBody>,
    pick: impl FnOnce(&ModelCall) -> Spoiling,
) -> (Response<ProxyBody>, Spoiling) {
    if !resp.status().is_success() {
        let why = format!("the answer was an error ({})", resp.status().as_u16());
        return (resp, Err(why));
    }
    let (parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            let why = format!("the answer broke off: {e}");
            return (
                Response::from_parts(parts, chunks(vec![], Some(&why))),
                Err(why),
            );
        }
    };
    let framing = (parts.headers.get(http::header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .and_then(Framing::of);
    let whole = match framing {
        Some(framing) => {
            let mut parser = framing.parser();
            let mut events = parser.push(&bytes);
            events.extend(parser.finish());
            asked.route.assemble(&events).and_then(Result::ok)
        }
        None => serde_json::from_slice::<Value>(&bytes).ok(),
    };
    let spoiled = whole.and_then(|mut whole| {
        let call = asked.route.extract(&asked.request, &whole)?;
        Some(pick(&call).map(|(nth, how, detail)| {
            asked.route.spoil_tool_call(&mut whole, nth, &how);
            (whole, (nth, how, detail))
        }))
    });
    let (whole, done) = match spoiled {
        Some(Ok(s)) => s,
        Some(Err(why)) => return (Response::from_parts(parts, full(bytes)), Err(why)),
        None => {
            let why = "the answer could not be read as a model response".to_owned();
            return (Response::from_parts(parts, full(bytes)), Err(why));
        }
    };
    let events = (asked.stream)
        .then(|| asked.route.synthesize(&whole, &asked.request))
        .flatten();
    let resp = match events {
        Some(evs) => {
            let framing = asked.route.framing();
            let frames = evs.iter().map(|e| framing.encode(e)).collect();
            stream(chunks(frames, None), framing)
        }
        None => json_response(StatusCode::OK, &whole),
    };
    (resp, Ok(done))
}

/// Which tool call of `call` the fault spoils (its index), how, and what that is in words;
/// or why it cannot fire.
fn spoiling(call: &ModelCall, fault: &Fault) -> Spoiling {
    let nth = match &fault.tool {
        Some(tool) => (call.tool_calls.iter().position(|c| &c.name == tool))
            .ok_or_else(|| format!("the answer has no call to `{tool}`"))?,
        None if call.tool_calls.is_empty() => return Err("the answer has no tool call".into()),
        None => 0,
    };
    let target = &call.tool_calls[nth];
    let name = &target.name;
    let (how, detail) = match fault.kind {
        Kind::MalformedToolArgs => (Spoil::Malformed, format!("{name}'s arguments are not JSON")),
        Kind::Length => (
            Spoil::Length,
            format!("{name}'s call cut short by the length limit"),
        ),
        Kind::UnknownTool => {
            let declared = |n: &str| call.tools.iter().any(|t| t.name == n);
            let unknown = (1..)
                .map(|n| match n {
                    1 => format!("{name}_unknown"),
                    n => format!("{name}_unknown_{n}"),
                })
                .find(|n| !declared(n))
                .unwrap_or_default();
            let detail = format!("{name} called as {unknown}");
            (Spoil::Name(unknown), detail)
        }
        Kind::SchemaViolation => {
            let schema = (call.tools.iter().find(|t| &t.name == name))
                .map(|t| &t.parameters)
                .filter(|p| p.is_object())
                .ok_or_else(|| format!("the request declares no schema for `{name}`"))?;
            let (way, args) = crate::fuzz::near_miss(schema, &target.arguments, fault.violation)
                .ok_or_else(|| match fault.violation {
                    Some(way) => format!("the schema of `{name}` allows no {way} near miss of its arguments"),
                    None => format!("the schema of `{name}` gives no way to break its arguments (no required, typed, closed or enum property)"),
                })?;
            let detail = format!("{name} {args} ({way})");
            (Spoil::Arguments(args), detail)
        }
        other => return Err(format!("`{other}` does not spoil a tool call")),
    };
    Ok((nth, how, detail))
}

/// A logged exchange as the program got it: its tool call spoiled as it was served.
pub(super) fn as_served(it: &mut Interaction, nth: usize, how: &Spoil) {
    let Some(whole) = it.response.body.as_ref().and_then(Body::as_json) else {
        return;
    };
    let mut whole = whole.clone();
    Route::from_name(&it.route).spoil_tool_call(&mut whole, nth, how);
    it.response.body = Some(Body::Json(whole.into()));
    it.response.events = None;
}

fn stream(body: ProxyBody, framing: Framing) -> Response<ProxyBody> {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(framing.content_type()),
    );
    resp
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::fault::parse_flag;
    use crate::neutral::{ToolCall, ToolDef};

    #[test]
    fn a_fault_says_what_the_next_request_got_unless_it_was_faulted_too() {
        let fired = |request, kind| Fired {
            request,
            turn: None,
            kind,
            status: Some(429),
            detail: None,
            next: None,
        };
        let mut all = vec![
            fired(1, Kind::RateLimit),
            fired(2, Kind::RateLimit),
            fired(5, Kind::Disconnect),
            fired(7, Kind::Overloaded),
        ];
        let answered = [
            (1, Some(429)),
            (2, Some(429)),
            (3, Some(200)),
            (5, None),
            (6, None),
        ];
        with_next(&mut all, &answered);
        let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "request 1: rate_limit (429)",
                "request 2: rate_limit (429); then request 3: 200",
                "request 5: disconnect (429); then request 6: no answer",
                // The program made no request after it.
                "request 7: overloaded (429)",
            ]
        );
    }

    fn call() -> ModelCall {
        let tool = |name: &str, arguments| ToolCall {
            id: String::new(),
            name: name.into(),
            arguments,
        };
        ModelCall {
            tools: vec![
                Arc::new(ToolDef {
                    name: "get_weather".into(),
                    parameters: json!({"type": "object", "required": ["city"],
                        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}}),
                    definition: Value::Null,
                }),
                Arc::new(ToolDef {
                    name: "get_time_unknown".into(),
                    parameters: json!({}),
                    definition: Value::Null,
                }),
            ]
            .into(),
            tool_calls: vec![
                tool("get_weather", json!({"city": "Paris", "unit": "c"})),
                tool("get_time", json!({"city": "Tokyo"})),
            ],
            ..ModelCall::default()
        }
    }

    fn spoil(flag: &str) -> Result<(usize, Spoil, String), String> {
        spoiling(&call(), &parse_flag(&format!("request=1,{flag}")).unwrap())
    }

    #[test]
    fn a_tool_call_fault_picks_its_call_and_says_what_it_did() {
        assert_eq!(
            spoil("kind=malformed_tool_args").unwrap(),
            (
                0,
                Spoil::Malformed,
                "get_weather's arguments are not JSON".into()
            )
        );
        // The unknown name is one the request does not declare.
        assert_eq!(
            spoil("kind=unknown_tool,tool=get_time").unwrap(),
            (
                1,
                Spoil::Name("get_time_unknown_2".into()),
                "get_time called as get_time_unknown_2".into()
            )
        );
        assert_eq!(
            spoil("kind=schema_violation").unwrap(),
            (
                0,
                Spoil::Arguments(json!({"unit": "c"})),
                r#"get_weather {"unit":"c"} (missing_required)"#.into()
            )
        );
        let (_, how, _) = spoil("kind=schema_violation,violation=enum_outsider").unwrap();
        assert_eq!(
            how,
            Spoil::Arguments(json!({"city": "Paris", "unit": "c_x"}))
        );
        assert_eq!(spoil("kind=length").unwrap().1, Spoil::Length);
    }

    #[test]
    fn a_tool_call_fault_that_cannot_fire_says_why() {
        for (flag, why) in [
            ("kind=length,tool=book", "the answer has no call to `book`"),
            (
                "kind=schema_violation,tool=get_time",
                "the request declares no schema for `get_time`",
            ),
            (
                "kind=schema_violation,violation=extra_property",
                "the schema of `get_weather` allows no extra_property near miss of its arguments",
            ),
        ] {
            assert_eq!(spoil(flag).unwrap_err(), why, "{flag}");
        }
        let none = ModelCall::default();
        let fault = parse_flag("request=1,kind=unknown_tool").unwrap();
        assert_eq!(
            spoiling(&none, &fault).unwrap_err(),
            "the answer has no tool call"
        );
    }
}
