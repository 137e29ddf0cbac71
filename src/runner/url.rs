//! Driving a running service (`app.url`): one `POST {"input", "session"}` per turn; the
//! response body is the turn's output.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("failed to reach the app at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("the app at {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("the app at {url} did not answer within {secs}s")]
    Timeout { url: String, secs: u64 },
}

pub struct UrlApp {
    client: crate::proxy::client::Client,
    url: String,
    session: String,
}

impl UrlApp {
    pub fn new(url: &str, session: &str) -> UrlApp {
        UrlApp {
            client: crate::proxy::client::new(),
            url: url.to_owned(),
            session: session.to_owned(),
        }
    }

    /// One turn: the app's answer body, as text.
    pub async fn turn(&self, input: &str, timeout: Duration) -> Result<String, UrlError> {
        let body = serde_json::json!({"input": input, "session": self.session}).to_string();
        let req = http::Request::post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| self.unreachable(e.to_string()))?;
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| self.unreachable(e.to_string()))?;
            let status = resp.status();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| self.unreachable(e.to_string()))?
                .to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if !status.is_success() {
                return Err(UrlError::Status {
                    url: self.url.clone(),
                    status: status.as_u16(),
                    body: text,
                });
            }
            Ok(text)
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| UrlError::Timeout {
                url: self.url.clone(),
                secs: timeout.as_secs(),
            })?
    }

    fn unreachable(&self, message: String) -> UrlError {
        UrlError::Unreachable {
            url: self.url.clone(),
            message,
        }
    }
}
