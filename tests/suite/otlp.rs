//! OpenTelemetry export end to end: `agentproxy export --otlp` of committed cassettes
//! posted to a fake OTLP/HTTP collector on loopback, the document checked against the
//! official schema (`opentelemetry-proto`'s `ExportTraceServiceRequest`, parsed strictly
//! by protobuf's JSON parser in the venv), and `agentproxy test --otlp` sending one trace
//! per case. A collector that refuses the traces fails the command (exit 3).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use serde_json::Value;
use support::proxy::bin;
use support::server::{Body, Server};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What the collector received: each request's path, content type and body.
#[derive(Default)]
struct Received {
    requests: Mutex<Vec<(String, String, Vec<u8>)>>,
    /// The status it answers with.
    status: Mutex<u16>,
    /// Its answer's body starts and never ends (a broken collector's error).
    endless: Mutex<bool>,
}

async fn collect(state: Arc<Received>, req: Request<hyper::body::Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let kind = (req.headers().get("content-type"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
    state.requests.lock().unwrap().push((path, kind, body));
    let status = *state.status.lock().unwrap();
    let body = match *state.endless.lock().unwrap() {
        true => {
            let start = futures_util::stream::iter([Ok(hyper::body::Frame::data(
                Bytes::from_static(b"collector overloaded, "),
            ))]);
            http_body_util::StreamBody::new(start.chain(futures_util::stream::pending()))
                .boxed_unsync()
        }
        false => Full::new(Bytes::from_static(b"{}")).boxed_unsync(),
    };
    let mut r = Response::new(body);
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    r
}

async fn collector(status: u16) -> (Server, Arc<Received>) {
    let state = Arc::new(Received::default());
    *state.status.lock().unwrap() = status;
    (
        Server::start("collector", state.clone(), collect).await,
        state,
    )
}

/// Run the binary off the runtime the collector serves on.
async fn agentproxy(args: Vec<String>) -> (i32, String) {
    agentproxy_with(args, vec![]).await
}

/// [`agentproxy`] with these variables set.
async fn agentproxy_with(args: Vec<String>, env: Vec<(&'static str, PathBuf)>) -> (i32, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(bin())
            .args(&args)
            .envs(env)
            .current_dir(repo())
            .env_remove("CI")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text)
    })
    .await
    .unwrap()
}

/// The venv's interpreter, or `None` when the Python tests are skipped on purpose.
fn python() -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        return None;
    }
    let python = repo().join(".venv/bin/python");
    assert!(python.exists(), "run scripts/setup-python.sh");
    Some(python)
}

/// Parse `doc` as an `ExportTraceServiceRequest` with protobuf's strict JSON parser
/// (unknown fields and wrong types fail); the number of spans it read.
fn check_schema(doc: &[u8]) -> Option<usize> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("traces.json");
    std::fs::write(&file, doc).unwrap();
    let script = "import sys\n\
from google.protobuf import json_format\n\
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest\n\
req = json_format.Parse(open(sys.argv[1]).read(), ExportTraceServiceRequest())\n\
print(sum(len(s.spans) for r in req.resource_spans for s in r.scope_spans))\n";
    let out = Command::new(python)
        .args(["-c", script])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
}

fn spans(doc: &Value) -> Vec<&Value> {
    doc["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["scopeSpans"].as_array().unwrap())
        .flat_map(|s| s["spans"].as_array().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn export_posts_schema_valid_traces_to_a_collector() {
    let (server, got) = collector(200).await;
    let (code, out) = agentproxy(vec![
        "export".into(),
        "--otlp".into(),
        server.url(),
        "cassettes/examples/weather-agent.json".into(),
        "cassettes/examples/mcp-agent/mails-the-weather.json".into(),
    ])
    .await;
    assert_eq!(code, 0, "{out}");
    let requests = got.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let (path, kind, body) = &requests[0];
    assert_eq!(path, "/v1/traces");
    assert_eq!(kind, "application/json");
    let doc: Value = serde_json::from_slice(body).unwrap();
    let all = spans(&doc);
    let agents: Vec<&&Value> = all
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("invoke_agent"))
        .collect();
    assert_eq!(agents.len(), 2, "one trace per cassette");
    assert_ne!(agents[0]["traceId"], agents[1]["traceId"]);
    assert!(all.iter().any(|s| s["name"] == "execute_tool get_weather"));
    assert!(all.iter().any(|s| s["name"] == "tools/call get_weather"));
    if let Some(n) = check_schema(body) {
        assert_eq!(n, all.len());
    }

    // A collector that refuses them: the command fails and says so.
    *got.status.lock().unwrap() = 503;
    let export = || {
        agentproxy(vec![
            "export".into(),
            "--otlp".into(),
            format!("{}/v1/traces", server.url()),
            "cassettes/examples/weather-agent.json".into(),
        ])
    };
    let (code, out) = export().await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("failed to export the traces to http://127.0.0.1:")
            && out.contains("HTTP 503"),
        "{out}"
    );
    // One whose error body never ends: quoted as far as it came, within seconds.
    *got.status.lock().unwrap() = 500;
    *got.endless.lock().unwrap() = true;
    let began = std::time::Instant::now();
    let (code, out) = export().await;
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("HTTP 500 Internal Server Error collector overloaded,"),
        "{out}"
    );
    assert!(
        began.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn test_sends_a_trace_per_case_with_its_status() {
    let (server, got) = collector(200).await;
    let (code, out) = agentproxy(vec![
        "test".into(),
        "examples/travel-agent/travel.yaml".into(),
        "-q".into(),
        "--otlp".into(),
        server.url(),
        "--otlp-no-content".into(),
    ])
    .await;
    assert_eq!(code, 0, "{out}");
    let requests = got.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{out}");
    let doc: Value = serde_json::from_slice(&requests[0].2).unwrap();
    let all = spans(&doc);
    let agents: Vec<&&Value> = all
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("invoke_agent"))
        .collect();
    let names: Vec<&str> = agents.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "invoke_agent paris weather",
            "invoke_agent weather and time in two cities"
        ]
    );
    let text = String::from_utf8_lossy(&requests[0].2);
    assert!(
        text.contains("\"agentproxy.case.status\",\"value\":{\"stringValue\":\"passed\"}"),
        "{text}"
    );
    assert!(
        !text.contains("gen_ai.input.messages") && !text.contains("Paris?"),
        "no content"
    );
    if let Some(n) = check_schema(&requests[0].2) {
        assert_eq!(n, all.len());
    }
    server.stop().await;
}

/// A private CA (its certificate as PEM) and a TLS configuration for `127.0.0.1` signed by it.
fn private_ca() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(leaf_key.serialize_der());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key.into())
        .unwrap();
    (ca.pem(), Arc::new(config))
}

#[tokio::test(flavor = "multi_thread")]
async fn export_reaches_a_collector_behind_a_private_ca_that_ssl_cert_file_names() {
    let (ca, tls) = private_ca();
    let state = Arc::new(Received::default());
    *state.status.lock().unwrap() = 200;
    let server = Server::start_tls("collector", state.clone(), collect, tls).await;
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("ca.pem");
    std::fs::write(&bundle, ca).unwrap();
    let args = || {
        vec![
            "export".to_owned(),
            "--otlp".to_owned(),
            server.url(),
            "cassettes/examples/weather-agent.json".to_owned(),
        ]
    };
    // Not trusted: the web roots alone refuse the collector's certificate.
    let (code, out) = agentproxy(args()).await;
    assert_eq!(code, 3, "{out}");
    assert!(state.requests.lock().unwrap().is_empty());
    // Named by SSL_CERT_FILE, or found in SSL_CERT_DIR, as an OpenSSL client finds it.
    for var in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
        let path = match var {
            "SSL_CERT_FILE" => bundle.clone(),
            _ => dir.path().to_owned(),
        };
        let (code, out) = agentproxy_with(args(), vec![(var, path)]).await;
        assert_eq!(code, 0, "{var}: {out}");
    }
    let requests = state.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].0, "/v1/traces");
    server.stop().await;
}
