//! Which part of a request's conversation is new.
//!
//! Chat-style APIs resend the whole history with every call. To show (and compare) what a
//! call actually *added*, each request's items are compared with those of the requests
//! before it: the longest common prefix is history, the rest is new. The items the model
//! produced right after that prefix echo the previous response and are skipped too: the
//! previous call already showed them as its reply and tool calls.

use serde_json::Value;

use crate::dialect::Route;

/// Where the new part of `items` (the conversation of a `route` request) starts: after the
/// longest prefix shared with one of the `earlier` requests (most recent first), then past
/// the items the model produced that echo the previous response.
pub fn new_start(route: Route, items: &[Value], earlier: &[&[Value]]) -> usize {
    let mut start = 0;
    for prev in earlier {
        let common = items
            .iter()
            .zip(prev.iter())
            .take_while(|(a, b)| a == b)
            .count();
        start = start.max(common);
        if common == prev.len() {
            // The usual case: the previous request is all history.
            break;
        }
    }
    if start > 0 {
        while start < items.len() && route.is_model_output(&items[start]) {
            start += 1;
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn new_part_skips_history_and_the_echoed_reply() {
        let chat = Route::OpenAiChat;
        let first = vec![
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": "hi"}),
        ];
        let mut second = first.clone();
        second.push(json!({"role": "assistant", "content": null, "tool_calls": []}));
        second.push(json!({"role": "tool", "tool_call_id": "call_1", "content": "18"}));
        assert_eq!(new_start(chat, &first, &[]), 0);
        assert_eq!(new_start(chat, &second, &[&first]), 3);
        // A different conversation (a title call) shares nothing: all of it is new.
        let other = vec![json!({"role": "user", "content": "title?"})];
        assert_eq!(new_start(chat, &other, &[&second, &first]), 0);
        // The best of the earlier requests wins.
        assert_eq!(new_start(chat, &second, &[&other, &first]), 3);
        // Responses: every kind of call the model made is its output, not only functions.
        let items = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
            json!({"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}),
            json!({"type": "function_call_output", "call_id": "c", "output": "ok"}),
        ];
        assert_eq!(new_start(Route::OpenAiResponses, &items, &[&items[..1]]), 3);
    }
}
