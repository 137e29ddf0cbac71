//! Claude Code (the `claude` CLI, which the Claude Agent SDK runs): how its requests are
//! recognised, and the values in them that change on every run.
//!
//! - `metadata.user_id` is a JSON string with a device id (random per home directory) and
//!   the session id (new each run);
//! - the first system block is a billing header, `x-anthropic-billing-header: cc_version=…;
//!   cc_entrypoint=…;` and, talking to Anthropic's own host, a per-request `cch=` hash and
//!   prompt ids;
//! - the environment block ends with `Today's date is 2026-12-05.`, so a replay on another
//!   day differs.

use http::HeaderMap;
use serde_json::Value;

use crate::dialect::provider::KnownClient;

pub(crate) const CLAUDE_CODE: KnownClient = KnownClient {
    name: "Claude Code",
    recognise: is_claude_code,
    ignore: &["/metadata/user_id"],
    holes: &[
        (
            "claude_code_billing",
            r"x-anthropic-billing-header: [^\n]*",
            Some("/system/0/text"),
        ),
        (
            "claude_code_date",
            r"Today's date is \d{4}-\d{2}-\d{2}",
            None,
        ),
    ],
    // Its side traffic is switched off by CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC.
    side: &[],
    side_why: "",
};

/// Its user agent (`claude-cli/2.1.332 (external, sdk-py, …)`), or its billing header as
/// the first system block.
fn is_claude_code(headers: &HeaderMap, body: &Value) -> bool {
    let agent = (headers.get(http::header::USER_AGENT))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    agent.starts_with("claude-cli/")
        || body["system"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("x-anthropic-billing-header:"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claude_code_is_known_by_its_user_agent_or_its_billing_header() {
        let mut h = HeaderMap::new();
        assert!(!is_claude_code(&h, &json!({"system": "You are helpful."})));
        h.insert(
            http::header::USER_AGENT,
            "claude-cli/2.1.332 (external, sdk-py, agent-sdk/0.2.189)"
                .parse()
                .unwrap(),
        );
        assert!(is_claude_code(&h, &json!({})));
        let body = json!({"system": [{"type": "text",
            "text": "x-anthropic-billing-header: cc_version=2.1.332.20d; cc_entrypoint=sdk-py;"}]});
        assert!(is_claude_code(&HeaderMap::new(), &body));
        h.insert(
            http::header::USER_AGENT,
            "Anthropic/Python 0.75.0".parse().unwrap(),
        );
        assert!(!is_claude_code(
            &h,
            &json!({"system": [{"type": "text", "text": "Hi"}]})
        ));
    }
}
