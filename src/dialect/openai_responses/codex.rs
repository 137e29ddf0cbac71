//! Codex CLI (npm `@openai/codex`): how its Responses requests are recognised, and the
//! values in them that change on every run.
//!
//! - `client_metadata` holds the installation, session, thread, turn and window ids and
//!   the time the request started;
//! - `prompt_cache_key` is the session id;
//! - every input item has a new id (`msg_…`, `at_…`, a UUIDv7), and Codex's own metadata
//!   beside it (`internal_chat_message_metadata_passthrough`: its creation time, the turn
//!   id);
//! - the environment context carries `<current_date>`, so a replay on another day differs;
//! - a command's output, as Codex tells the model, starts with a `Chunk ID:` and a
//!   `Wall time:` line, new on every run; in its code mode, a script's report says
//!   `Wall time 0.2 seconds`, and a command's result handed back whole is JSON with
//!   `"chunk_id"` and `"wall_time_seconds"`;
//! - the skills block names its skill roots under `CODEX_HOME`
//!   (``- `r0` = `/home/me/.codex/skills/.system` ``), and the environment context its
//!   working directory and workspace roots (`<cwd>`, `<root>`), which differ from machine
//!   to machine (a cassette committed with a project replays in CI's checkout).
//!
//! At start-up it syncs its curated plugins from GitHub and its plugin catalogue from
//! chatgpt.com, and sends analytics to ab.chatgpt.com, whatever its environment says
//! (`side`).

use http::HeaderMap;
use serde_json::Value;

use crate::dialect::provider::KnownClient;

pub(crate) const CODEX: KnownClient = KnownClient {
    name: "Codex CLI",
    recognise: is_codex,
    ignore: &[
        "/client_metadata",
        "/prompt_cache_key",
        "/input/*/id",
        "/input/*/internal_chat_message_metadata_passthrough",
    ],
    holes: &[
        (
            "codex_date",
            r"<current_date>\d{4}-\d{2}-\d{2}</current_date>",
            None,
        ),
        (
            "codex_chunk_id",
            r#"Chunk ID: [^\n]*|"chunk_id":"[^"]*""#,
            None,
        ),
        (
            "codex_wall_time",
            r#"Wall time:? [^\n]*|"wall_time_seconds":[0-9.eE+-]+"#,
            None,
        ),
        ("codex_skill_root", r"- `r\d+` = `[^`\n]*`", None),
        ("codex_workspace", r"<(cwd|root)>[^<]*</(cwd|root)>", None),
    ],
    side: &["github.com", "api.github.com", "chatgpt.com", "ab.chatgpt.com"],
    side_why: "its plugin sync at start-up (`git ls-remote` of the curated plugins, the plugin catalogue) and its analytics, which only its config file switches off",
};

/// Its user agent or originator (`codex_exec/0.171.0 …`, `codex_cli_rs/…`), or its
/// installation id in `client_metadata`.
fn is_codex(headers: &HeaderMap, body: &Value) -> bool {
    let says_codex = |name: &str| {
        (headers.get(name).and_then(|v| v.to_str().ok())).is_some_and(|v| v.starts_with("codex_"))
    };
    says_codex("user-agent")
        || says_codex("originator")
        || body
            .pointer("/client_metadata/x-codex-installation-id")
            .is_some()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cassette::{Body, MatchRules};
    use crate::matching::normalize::Rules;
    use crate::matching::request_key;

    #[test]
    fn codex_is_known_by_its_user_agent_originator_or_installation_id() {
        let mut h = HeaderMap::new();
        assert!(!is_codex(&h, &json!({"model": "gpt-5", "input": "Hi"})));
        h.insert("originator", "codex_exec".parse().unwrap());
        assert!(is_codex(&h, &json!({})));
        let body = json!({"client_metadata": {"x-codex-installation-id": "3ef5a72d"}});
        assert!(is_codex(&HeaderMap::new(), &body));
        h.clear();
        h.insert("user-agent", "OpenAI/Python 2.8.0".parse().unwrap());
        assert!(!is_codex(&h, &json!({"client_metadata": {"user": "me"}})));
    }

    /// Two runs of `codex exec "Say hello"` on different days: every id, time and date
    /// differs, and so do a command's chunk id and wall time; the request keys the same.
    #[test]
    fn two_runs_of_codex_key_the_same_under_its_tolerances() {
        let run = |id: &str, date: &str, chunk: &str, wall: &str| {
            json!({
                "client_metadata": {"x-codex-installation-id": id, "turn_id": id},
                "prompt_cache_key": id,
                "model": "gpt-5.5",
                "input": [
                    {"id": format!("msg_{id}"), "role": "user", "type": "message",
                     "internal_chat_message_metadata_passthrough": {"create_time": 1.5, "turn_id": id},
                     "content": [{"type": "input_text", "text": format!(
                         "<environment_context>\n  <cwd>/home/{id}/repo</cwd>\n  <current_date>{date}</current_date>\n  <workspace_roots><root>/home/{id}/repo</root></workspace_roots>\n</environment_context>")},
                       {"type": "input_text", "text": format!(
                         "### Skill roots\n- `r0` = `/home/{id}/.codex/skills/.system`\n### Available skills")}]},
                    {"id": format!("fc_{id}"), "type": "function_call_output", "call_id": "call_1",
                     "output": format!("Chunk ID: {chunk}\nWall time: {wall} seconds\nProcess exited with code 0\nOutput:\nhello\n")},
                    {"id": format!("ctco_{id}"), "type": "custom_tool_call_output", "call_id": "call_2",
                     "output": [{"type": "input_text", "text": format!("Script completed\nWall time {wall} seconds\nOutput:\n")},
                                {"type": "input_text", "text": format!(
                                    r#"{{"chunk_id":"{chunk}","wall_time_seconds":{wall},"exit_code":0,"output":"hello\n"}}"#)}]},
                ],
            })
        };
        let rules = Rules::compile(&MatchRules::of_client(&CODEX)).unwrap();
        let key = |body: Value| {
            let body = Body::Json(body.into());
            request_key(
                "openai.responses",
                "POST",
                "/v1/responses",
                Some(&body),
                &rules,
            )
        };
        let first = key(run("01a24e19-16ba", "2026-12-07", "3f2a1b", "0.0512"));
        assert_eq!(
            first,
            key(run("01a24e20-99cd", "2027-01-15", "9c0d4e", "1.2000"))
        );
        let mut other = run("01a24e19-16ba", "2026-12-07", "3f2a1b", "0.0512");
        other["input"][1]["output"] =
            json!("Chunk ID: 3f2a1b\nWall time: 0.05 seconds\nOutput:\nbye\n");
        assert_ne!(first, key(other), "what the command printed is matched");
    }
}
