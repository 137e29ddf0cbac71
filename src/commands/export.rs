//! `agentproxy export --otlp`: cassettes' trajectories as OpenTelemetry traces, written to
//! a file or posted to an OTLP/HTTP endpoint. `test --otlp` delivers through here too.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use super::revision;
use crate::cli::ExportArgs;
use crate::error::{Error, Exit, Result};
use crate::report::otlp::{self, Trace};

/// How long an endpoint may take to accept the traces.
const POST_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of a collector's error body is read, and for how long at most.
const ERROR_BYTES: usize = 1024;
const ERROR_WAIT: Duration = Duration::from_secs(5);

pub async fn run(args: ExportArgs) -> Result<Exit> {
    let mut loaded = Vec::new();
    for path in &args.cassettes {
        loaded.push((path.display().to_string(), revision::load(path)?));
    }
    let traces: Vec<Trace<'_>> = (loaded.iter())
        .map(|(name, cassette)| Trace {
            name,
            cassette,
            // Spans start when the recording was made (now, for a time it cannot read).
            start: humantime::parse_rfc3339(&cassette.recorded_at)
                .unwrap_or_else(|_| SystemTime::now()),
            case: None,
        })
        .collect();
    deliver(&otlp::export(&traces, !args.no_content), &args.otlp).await?;
    Ok(Exit::Ok)
}

/// Write `doc` to `target`: an `http://` or `https://` endpoint gets it posted, `-` is
/// stdout, anything else a file.
pub(super) async fn deliver(doc: &serde_json::Value, target: &str) -> Result<()> {
    let body = serde_json::to_vec(doc).map_err(Error::RenderReport)?;
    let failed = |why: String| Error::Export {
        to: target.to_owned(),
        why,
    };
    if target.starts_with("http://") || target.starts_with("https://") {
        return post(&endpoint(target), body).await.map_err(failed);
    }
    if target == "-" {
        super::output::print(&format!("{}\n", String::from_utf8_lossy(&body)))?;
        return Ok(());
    }
    std::fs::write(target, body).map_err(|e| failed(e.to_string()))
}

/// The traces endpoint of `url`: as given, or `/v1/traces` under a URL with no path.
fn endpoint(url: &str) -> String {
    let rest = url.split_once("://").map_or("", |(_, rest)| rest);
    match rest.split_once('/') {
        Some((_, path)) if !path.is_empty() => url.to_owned(),
        _ => format!("{}/v1/traces", url.trim_end_matches('/')),
    }
}

async fn post(url: &str, body: Vec<u8>) -> std::result::Result<(), String> {
    let client = crate::proxy::client::new();
    let request = http::Request::post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let sent = tokio::time::timeout(POST_TIMEOUT, client.request(request)).await;
    let response = sent
        .map_err(|_| format!("no answer in {}s", POST_TIMEOUT.as_secs()))?
        .map_err(|e| e.to_string())?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let text = error_text(response.into_body()).await;
    Err(format!("HTTP {status} {text}").trim_end().to_owned())
}

/// The start of a collector's error body, to quote: at most [`ERROR_BYTES`], read for at
/// most [`ERROR_WAIT`]. The rest is never read: an error body may be huge, or never end.
async fn error_text(mut body: hyper::body::Incoming) -> String {
    let mut start = Vec::new();
    let read = async {
        while start.len() < ERROR_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        start.extend_from_slice(&data);
                    }
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(ERROR_WAIT, read).await;
    String::from_utf8_lossy(&start).chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn a_bare_endpoint_gets_the_traces_path() {
        assert_eq!(
            endpoint("http://localhost:4318"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            endpoint("http://localhost:4318/"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            endpoint("https://otel.test/api/public/otel/v1/traces"),
            "https://otel.test/api/public/otel/v1/traces"
        );
    }
}
