//! Google's application default credentials in a replay. A program on Google Cloud
//! (google-genai with `vertexai=True`, the Anthropic SDK's AnthropicVertex) finds its
//! credentials by itself and refreshes a token before its first call; offline, with no
//! account, that fails, or reaches for the metadata server. A session that cannot record
//! writes a credentials file of its own (an `external_account_authorized_user`, the one
//! kind whose token endpoint the file names) and gives it to the program as
//! `GOOGLE_APPLICATION_CREDENTIALS`: the token refresh comes to the session, which
//! answers with a placeholder token, never sent anywhere (a replay forwards nothing).

use std::io::Write;

use http::{Response, StatusCode};
use serde_json::json;

use super::body::{json_response, ProxyBody};
use crate::dialect::PLACEHOLDER;

/// Where the credentials file sends the program's token refresh.
pub const TOKEN_PATH: &str = "/_agentproxy/google-token";

/// The variable google-auth reads the credentials file's path from, before any other
/// source.
pub const VAR: &str = "GOOGLE_APPLICATION_CREDENTIALS";

/// The credentials file of a session at `base`.
fn credentials(base: &str) -> String {
    json!({
        "type": "external_account_authorized_user",
        "audience": "//iam.googleapis.com/locations/global/workforcePools/agentproxy/providers/replay",
        "client_id": "agentproxy",
        "client_secret": PLACEHOLDER,
        "refresh_token": PLACEHOLDER,
        "token_url": format!("{base}{TOKEN_PATH}"),
    })
    .to_string()
}

/// The credentials file of a session (or `serve`) at `base`, removed when dropped.
pub(crate) fn write(base: &str) -> std::io::Result<tempfile::NamedTempFile> {
    let mut f = tempfile::Builder::new()
        .prefix("agentproxy-google-")
        .suffix(".json")
        .tempfile()?;
    f.write_all(credentials(base).as_bytes())?;
    f.flush()?;
    Ok(f)
}

/// The answer to a token refresh: a placeholder bearer token for an hour.
pub(super) fn token() -> Response<ProxyBody> {
    let token = json!({"access_token": PLACEHOLDER, "expires_in": 3600, "token_type": "Bearer"});
    json_response(StatusCode::OK, &token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_sends_the_refresh_to_the_session_and_holds_no_secret() {
        let file: serde_json::Value =
            serde_json::from_str(&credentials("http://127.0.0.1:9")).unwrap();
        assert_eq!(file["type"], "external_account_authorized_user");
        assert_eq!(
            file["token_url"],
            "http://127.0.0.1:9/_agentproxy/google-token"
        );
        assert_eq!(file["refresh_token"], PLACEHOLDER);
    }
}
