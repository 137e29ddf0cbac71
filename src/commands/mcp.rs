//! `agentproxy mcp --name NAME -- COMMAND`: the stand-in for a stdio MCP server. Under an
//! agentproxy session it records the server's traffic (record) or answers in its place
//! without starting it (replay; a test's update mode too); outside any session, and under
//! `agentproxy doctor`, it runs COMMAND unchanged.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::cli::McpArgs;
use crate::dialect::mcp::{self, Message};
use crate::error::{Error, Exit, Result};
use crate::proxy::SECRET_HEADER;
use crate::redact::Secrets;
use crate::runner::ancestry::{self, Found, SessionAt};

/// The session's MCP endpoint for one server.
struct Endpoint {
    client: crate::proxy::client::Client,
    base: String,
    /// The session's secret, presented with every request.
    secret: Option<String>,
}

impl Endpoint {
    async fn send(
        &self,
        method: http::Method,
        op: &str,
        body: Option<&Value>,
    ) -> std::result::Result<Value, String> {
        let url = format!("{}{op}", self.base);
        let bytes = body
            .map(|b| serde_json::to_vec(b).unwrap_or_default())
            .unwrap_or_default();
        let mut req = http::Request::builder()
            .method(method)
            .uri(&url)
            .header("content-type", "application/json");
        if let Some(secret) = &self.secret {
            req = req.header(SECRET_HEADER, secret);
        }
        let req = req
            .body(Full::new(Bytes::from(bytes)))
            .map_err(|e| e.to_string())?;
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let value: Value = serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))?;
        if !status.is_success() {
            return Err(format!(
                "{url}: {status}: {}",
                value["error"].as_str().unwrap_or_default()
            ));
        }
        Ok(value)
    }
}

pub async fn run(args: McpArgs) -> Result<Exit> {
    let own = |name: &str| std::env::var(name).ok();
    let SessionAt { url, secret } = match ancestry::find(&own, std::path::Path::new("/proc")) {
        Found::Session(at) => at,
        Found::Nothing => return exec(&args.command),
        Found::Unsure(why) => return Err(Error::McpUnsure { why }),
    };
    let endpoint = Endpoint {
        client: crate::proxy::client::new(),
        base: format!(
            "{}{}{}",
            url.trim_end_matches('/'),
            crate::proxy::mcp::PREFIX,
            args.name
        ),
        secret,
    };
    let mode = endpoint
        .send(http::Method::GET, "", None)
        .await
        .map_err(|why| Error::McpSession {
            url: url.clone(),
            why,
        })?;
    match mode["mode"].as_str() {
        Some("replay") => replay(&endpoint).await,
        Some("record") => {
            // What only the server holds (its own environment, from the MCP host's
            // configuration, and secrets on its command line) is redacted here, before
            // the session sees it: the session knows only its own environment.
            let prefix = format!("MCP_{}", args.name.to_ascii_uppercase().replace('-', "_"));
            let secrets = Secrets::from_env().and(Secrets::from_args(&prefix, &args.command));
            record(&endpoint, &args.command, &secrets).await
        }
        Some(crate::proxy::mcp::PASSTHROUGH) => exec(&args.command),
        other => Err(Error::McpSession {
            url,
            why: format!("it serves MCP in mode {other:?}, not replay, record or passthrough"),
        }),
    }
}

/// No session among our ancestors: become the server.
fn exec(command: &[String]) -> Result<Exit> {
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    Err(Error::McpSpawn {
        command: command.join(" "),
        source: err,
    })
}

/// The session's answer to a `tools/call` it mocks; `None` sends the call to the server.
/// A session that cannot say is not a reason to run a tool it may mock: the client gets
/// an error.
async fn mock_answer(endpoint: &Endpoint, msg: &Value) -> Option<Value> {
    match endpoint.send(http::Method::POST, "/mock", Some(msg)).await {
        Ok(v) => Some(v["answer"].clone()).filter(|a| !a.is_null()),
        Err(why) => {
            let id = match mcp::classify(msg) {
                Message::Request { id, .. } => id.clone(),
                _ => Value::Null,
            };
            Some(mcp::error(
                &id,
                mcp::INTERNAL_ERROR,
                &format!("agentproxy: the session did not answer: {why}"),
            ))
        }
    }
}

/// Report a relayed request/response pair to the session, its secrets redacted.
async fn store(endpoint: &Endpoint, pair: Option<Value>, secrets: &Secrets) {
    let Some(mut pair) = pair else { return };
    secrets.redact_value(&mut pair);
    if let Err(why) = endpoint
        .send(http::Method::POST, "/record", Some(&pair))
        .await
    {
        tell!("agentproxy mcp: failed to record a response: {why}");
    }
}

/// The next line of `input`, without its `\n`, as bytes: a line that is not UTF-8 is a
/// line like any other (answered, relayed), never the end of the session. `None` at the
/// end of the input.
async fn next_line(input: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    match input.read_until(b'\n', &mut line).await? {
        0 => Ok(None),
        _ => {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            Ok(Some(line))
        }
    }
}

/// Tell the session what went wrong with the server: the recording is not complete.
async fn problem(endpoint: &Endpoint, what: String) {
    let body = json!({ "problem": what });
    if let Err(why) = endpoint
        .send(http::Method::POST, "/problem", Some(&body))
        .await
    {
        tell!("agentproxy mcp: {what}; the session could not be told: {why}");
    }
}

/// Write one message as a line to the client.
async fn send_line(out: &mut tokio::io::Stdout, msg: &Value) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).unwrap_or_default();
    line.push(b'\n');
    out.write_all(&line).await?;
    out.flush().await
}

/// The answer to a JSON-RPC batch, in any mode.
const BATCH: &str = "agentproxy: JSON-RPC batches are not supported; send one message per line";

/// Refuse a client's batch of `n` messages while recording, as a replay refuses it (MCP
/// dropped batches in 2025-06-18), and name it: a batch the server executed would be a
/// silent gap in the cassette.
async fn refuse_batch(
    endpoint: &Endpoint,
    out: &mut tokio::io::Stdout,
    n: usize,
) -> std::io::Result<()> {
    send_line(out, &mcp::error(&Value::Null, mcp::INVALID_REQUEST, BATCH)).await?;
    problem(
        endpoint,
        format!("the client sent a JSON-RPC batch of {n} message(s), which was refused (batches are not supported; send one message per line): it is not recorded"),
    )
    .await;
    Ok(())
}

/// Replay: answer each client message from the session; the server never starts.
async fn replay(endpoint: &Endpoint) -> Result<Exit> {
    let mut input = BufReader::new(tokio::io::stdin());
    let mut out = tokio::io::stdout();
    while let Some(line) = next_line(&mut input).await.map_err(Error::McpIo)? {
        if line.trim_ascii().is_empty() {
            continue;
        }
        let answer = match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Array(_)) => mcp::error(&Value::Null, mcp::INVALID_REQUEST, BATCH),
            Ok(msg) => endpoint
                .send(http::Method::POST, "/call", Some(&msg))
                .await
                .unwrap_or_else(|why| {
                    let id = match mcp::classify(&msg) {
                        Message::Request { id, .. } => id.clone(),
                        _ => Value::Null,
                    };
                    mcp::error(
                        &id,
                        mcp::MISS_CODE,
                        &format!("agentproxy: the session did not answer: {why}"),
                    )
                }),
            Err(e) => mcp::error(&Value::Null, mcp::PARSE_ERROR, &format!("not JSON: {e}")),
        };
        if !answer.is_null() {
            send_line(&mut out, &answer).await.map_err(Error::McpIo)?;
        }
    }
    Ok(Exit::Ok)
}

/// Record: run the server, relay every line both ways unchanged, and report each request
/// with its response to the session, `secrets` redacted. A `tools/call` the session mocks
/// is answered by the session and never reaches the server.
async fn record(endpoint: &Endpoint, command: &[String], secrets: &Secrets) -> Result<Exit> {
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| Error::McpSpawn {
            command: command.join(" "),
            source,
        })?;
    let (Some(to_server), Some(from_server)) = (child.stdin.take(), child.stdout.take()) else {
        unreachable!("both pipes were asked for");
    };
    let relay = Relay {
        endpoint,
        secrets,
        out: tokio::sync::Mutex::new(tokio::io::stdout()),
        pending: Mutex::default(),
    };
    tokio::join!(relay.forward(to_server), relay.relay_back(from_server));
    let status = child.wait().await.map_err(Error::McpIo)?;
    Ok(match status.code() {
        Some(0) => Exit::Ok,
        Some(code) => Exit::Program(code),
        None => {
            use std::os::unix::process::ExitStatusExt;
            Exit::Program(128 + status.signal().unwrap_or(0))
        }
    })
}

/// What a recording relay shares between its two directions.
struct Relay<'a> {
    endpoint: &'a Endpoint,
    secrets: &'a Secrets,
    /// The client's stdout, written by both directions (mocked answers, relayed lines).
    out: tokio::sync::Mutex<tokio::io::Stdout>,
    /// Requests sent and not yet answered, by their id's JSON text.
    pending: Mutex<HashMap<String, (Value, Instant)>>,
}

/// What becomes of a line from the client.
enum Step {
    /// Sent on to the server.
    Forward,
    /// Answered here (a mock, a refusal): the server never sees it.
    Answered,
    /// The client's stdout is gone: the relay ends.
    Stop,
}

impl Relay<'_> {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Value, Instant)>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Send `answer` to the client.
    async fn answer(&self, answer: &Value) -> Step {
        match send_line(&mut *self.out.lock().await, answer).await {
            Ok(()) => Step::Answered,
            Err(_) => Step::Stop,
        }
    }

    /// The client's lines to the server, until the client is done (then the server's
    /// stdin closes, which tells it to exit).
    async fn forward(&self, mut to_server: tokio::process::ChildStdin) {
        let mut input = BufReader::new(tokio::io::stdin());
        while let Ok(Some(mut line)) = next_line(&mut input).await {
            match self.client_line(&line).await {
                Step::Forward => {}
                Step::Answered => continue,
                Step::Stop => break,
            }
            line.push(b'\n');
            let sent = to_server.write_all(&line).await;
            if sent.is_err() || to_server.flush().await.is_err() {
                break;
            }
        }
    }

    /// A line from the client: a batch is refused, a request whose id is in flight
    /// refused, a mocked `tools/call` answered; any other request is remembered.
    async fn client_line(&self, line: &[u8]) -> Step {
        let msg = match serde_json::from_slice::<Value>(line) {
            Ok(Value::Array(batch)) => {
                let mut out = self.out.lock().await;
                return match refuse_batch(self.endpoint, &mut out, batch.len()).await {
                    Ok(()) => Step::Answered,
                    Err(_) => Step::Stop,
                };
            }
            Ok(msg) => msg,
            Err(_) => return Step::Forward,
        };
        let Message::Request { id, method } = mcp::classify(&msg) else {
            return Step::Forward;
        };
        // Two requests in flight with one id: the answer could go to either.
        if self.pending().contains_key(&id.to_string()) {
            let e = mcp::error(
                id,
                mcp::INVALID_REQUEST,
                "agentproxy: a request with this id is still in flight; ids must be unique among pending requests",
            );
            return self.answer(&e).await;
        }
        if method == "tools/call" {
            if let Some(answer) = mock_answer(self.endpoint, &msg).await {
                return self.answer(&answer).await;
            }
        }
        let id = id.to_string();
        self.pending().insert(id, (msg, Instant::now()));
        Step::Forward
    }

    /// The server's lines to the client, each answer stored first; then what the server
    /// left unanswered, or answered without being asked, is reported.
    async fn relay_back(&self, from_server: tokio::process::ChildStdout) {
        // Answers whose id no request in flight had.
        let mut foreign: Vec<String> = Vec::new();
        let mut input = BufReader::new(from_server);
        while let Ok(Some(mut line)) = next_line(&mut input).await {
            let answered = serde_json::from_slice::<Value>(&line).ok().and_then(|msg| {
                let Message::Response { id } = mcp::classify(&msg) else {
                    return None;
                };
                let asked = self.pending().remove(&id.to_string());
                if asked.is_none() {
                    foreign.push(id.to_string());
                }
                asked.map(|(request, sent)| {
                    let latency_ms = u64::try_from(sent.elapsed().as_millis()).unwrap_or(u64::MAX);
                    json!({ "request": request, "response": msg, "latency_ms": latency_ms })
                })
            });
            // Stored before the client sees it: the tools a server lists decide how mocks
            // answer, and a client that ends the session on an answer must not outrun
            // its recording.
            store(self.endpoint, answered, self.secrets).await;
            line.push(b'\n');
            let relayed = {
                let mut out = self.out.lock().await;
                out.write_all(&line).await.is_ok() && out.flush().await.is_ok()
            };
            if !relayed {
                break;
            }
        }
        self.server_gone(foreign).await;
    }

    /// The server is gone: what it left unanswered gets an error, not silence, and is
    /// reported with the answers no request asked for.
    async fn server_gone(&self, foreign: Vec<String>) {
        let left: Vec<(String, (Value, Instant))> = self.pending().drain().collect();
        let mut out = self.out.lock().await;
        for (_, (request, _)) in &left {
            if let Message::Request { id, method } = mcp::classify(request) {
                let e = mcp::error(
                    id,
                    mcp::INTERNAL_ERROR,
                    "agentproxy: the MCP server exited before answering",
                );
                let _ = send_line(&mut out, &e).await;
                let why = format!(
                    "it ended without answering request {id} ({method}); it is not recorded"
                );
                problem(self.endpoint, why).await;
            }
        }
        for id in foreign {
            let why = format!(
                "it answered id {id}, which no request in flight had; the answer is not recorded"
            );
            problem(self.endpoint, why).await;
        }
    }
}
