//! Gemini's Live API over a WebSocket (`BidiGenerateContent`), as far as a recording
//! reads it. No I/O.
//!
//! The client opens with `setup` (model, system instruction, tools), then sends
//! `clientContent` turns, `realtimeInput` and `toolResponse`s; the server answers
//! `setupComplete`, then `serverContent` (the model's parts, then `turnComplete`) or a
//! `toolCall`, with `usageMetadata` beside them. Every message is JSON (protobuf JSON:
//! a client may spell a field `clientContent` or `client_content`, as the Python SDK
//! does; the server writes `lowerCamel`); the server may send it in binary frames.

use serde_json::{json, Value};

use crate::neutral::{ModelCall, ToolCall, ToolDef, ToolResult, Usage};

/// The route a Live socket's turns are stored under.
pub const ROUTE: &str = "gemini.live";

/// Is `path` (without its query) a Live socket's?
pub fn is_path(path: &str) -> bool {
    path.ends_with("BidiGenerateContent")
}

/// Does the server message `frame` end a model turn (its content complete, or a tool
/// call the client must answer)?
pub fn ends_turn(frame: &Value) -> bool {
    frame["serverContent"]["turnComplete"] == true || frame.get("toolCall").is_some()
}

/// Does the client message `frame` ask the model for an answer: a `clientContent` that
/// completes the user's turn, or a `toolResponse`?
pub fn asks(frame: &Value) -> bool {
    let content = field(frame, "clientContent", "client_content");
    let complete = content.and_then(|c| field(c, "turnComplete", "turn_complete"));
    complete == Some(&Value::Bool(true)) || field(frame, "toolResponse", "tool_response").is_some()
}

/// Rewrite the tool results a client message carries (a `toolResponse`'s function
/// responses) where `mock` has one for their call (found through `lookup` by its id: the
/// call is in an earlier turn's `toolCall`); how many were replaced. A mocked result that
/// is not a JSON object is sent as `{"result": …}`, the response's own shape.
pub fn rewrite_tool_results(
    frame: &mut Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
) -> usize {
    let key = ["toolResponse", "tool_response"]
        .into_iter()
        .find(|k| frame.get(*k).is_some());
    let Some(response) = key.and_then(|k| frame.get_mut(k)) else {
        return 0;
    };
    let list = ["functionResponses", "function_responses"]
        .into_iter()
        .find(|k| response.get(*k).is_some());
    let Some(responses) = list
        .and_then(|k| response.get_mut(k))
        .and_then(Value::as_array_mut)
    else {
        return 0;
    };
    let results = responses
        .iter_mut()
        .map(|r| (r["id"].as_str().unwrap_or_default().to_owned(), r));
    let calls = std::collections::BTreeMap::new();
    super::shared::rewrite_results(results, &calls, lookup, mock, |r, text| {
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        r["response"] = match value {
            Value::Object(_) => value,
            other => json!({"result": other}),
        };
    })
}

/// A turn's answer in one value: its text, its tool calls, the audio it sent (decoded
/// bytes of its inline data) and its last usage.
pub fn assemble<'a>(server: impl Iterator<Item = &'a Value>) -> Value {
    let (mut text, mut calls, mut audio, mut usage) = (String::new(), Vec::new(), 0, Value::Null);
    for frame in server {
        let parts = frame["serverContent"]["modelTurn"]["parts"].as_array();
        for part in parts.into_iter().flatten() {
            text.push_str(part["text"].as_str().unwrap_or_default());
            let data = part["inlineData"]["data"].as_str().unwrap_or_default();
            audio += super::shared::base64_len(data);
        }
        let called = frame["toolCall"]["functionCalls"].as_array();
        calls.extend(called.into_iter().flatten().cloned());
        if frame.get("usageMetadata").is_some() {
            usage = frame["usageMetadata"].clone();
        }
    }
    json!({"text": text, "functionCalls": calls, "audio_bytes": audio, "usageMetadata": usage})
}

/// The model a client message names: its `setup`'s, without `models/`.
pub fn model_of(frame: &Value) -> Option<&str> {
    let model = frame.get("setup")?["model"].as_str()?;
    Some(model.trim_start_matches("models/"))
}

/// The model call a turn is: its client messages (`frames`) and its assembled answer
/// (which names the socket's model on every turn, its `setup` only on the first).
pub fn extract(frames: &[Value], answer: &Value) -> ModelCall {
    let mut call = ModelCall {
        route: ROUTE.to_owned(),
        model: answer["model"].as_str().unwrap_or_default().to_owned(),
        ..ModelCall::default()
    };
    for frame in frames {
        if let Some(setup) = frame.get("setup") {
            call.model = model_of(frame).unwrap_or_default().to_owned();
            let instruction = field(setup, "systemInstruction", "system_instruction");
            let parts = instruction.and_then(|i| i["parts"].as_array());
            let system: Vec<&str> = parts
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect();
            call.system = (!system.is_empty()).then(|| system.join("\n\n"));
            let tools = setup["tools"].as_array().into_iter().flatten();
            let declared = tools.flat_map(|t| {
                let declared = field(t, "functionDeclarations", "function_declarations");
                declared.and_then(Value::as_array).into_iter().flatten()
            });
            call.tools = declared
                .map(|d| {
                    std::sync::Arc::new(ToolDef {
                        name: d["name"].as_str().unwrap_or_default().to_owned(),
                        parameters: field(d, "parameters", "parameters_json_schema")
                            .or_else(|| d.get("parametersJsonSchema"))
                            .cloned()
                            .unwrap_or(Value::Null),
                        definition: d.clone(),
                    })
                })
                .collect();
        }
        let content = field(frame, "clientContent", "client_content");
        let turns = content.and_then(|c| c["turns"].as_array());
        call.message_count += turns.map_or(0, Vec::len);
        let response = field(frame, "toolResponse", "tool_response");
        let responses = response
            .and_then(|r| field(r, "functionResponses", "function_responses"))
            .and_then(Value::as_array);
        for r in responses.into_iter().flatten() {
            call.tool_results.push(ToolResult {
                call_id: r["id"].as_str().unwrap_or_default().to_owned(),
                name: r["name"].as_str().map(str::to_owned),
                content: r["response"].clone(),
            });
        }
    }
    for c in answer["functionCalls"].as_array().into_iter().flatten() {
        call.tool_calls.push(ToolCall {
            id: c["id"].as_str().unwrap_or_default().to_owned(),
            name: c["name"].as_str().unwrap_or_default().to_owned(),
            arguments: c["args"].clone(),
        });
    }
    let text = answer["text"].as_str().unwrap_or_default().to_owned();
    call.reply = super::shared::spoken_reply(text, answer["audio_bytes"].as_u64().unwrap_or(0));
    let usage = &answer["usageMetadata"];
    call.usage = match usage.is_object() {
        true => Usage {
            prompt: usage["promptTokenCount"].as_u64().unwrap_or(0),
            completion: usage["responseTokenCount"].as_u64().unwrap_or(0),
            cache_read: usage["cachedContentTokenCount"].as_u64().unwrap_or(0),
            ..Usage::default()
        },
        false => Usage::UNKNOWN,
    };
    call
}

/// A field of a client message, in either spelling.
fn field<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_reads_its_setup_content_and_answer() {
        let frames = [
            json!({"setup": {"model": "models/gemini-live-2.5-flash", "systemInstruction": {"parts": [{"text": "Be brief."}]},
                   "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "OBJECT"}}]}]}}),
            json!({"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Paris?"}]}], "turnComplete": true}}),
            json!({"tool_response": {"function_responses": [{"id": "f1", "name": "get_weather", "response": {"temp_c": 21}}]}}),
        ];
        let server = [
            json!({"setupComplete": {}}),
            json!({"serverContent": {"modelTurn": {"parts": [{"text": "It is "}, {"inlineData": {"mimeType": "audio/pcm", "data": "AAAA"}}]}}}),
            json!({"serverContent": {"modelTurn": {"parts": [{"text": "warm."}]}}}),
            json!({"serverContent": {"turnComplete": true}, "usageMetadata": {"promptTokenCount": 9, "responseTokenCount": 3}}),
        ];
        assert!(ends_turn(&server[3]) && !ends_turn(&server[2]));
        assert!(ends_turn(&json!({"toolCall": {"functionCalls": []}})));
        let answer = assemble(server.iter());
        let call = extract(&frames, &answer);
        assert_eq!(call.model, "gemini-live-2.5-flash");
        assert_eq!(call.system.as_deref(), Some("Be brief."));
        assert_eq!(call.tools[0].name, "get_weather");
        assert_eq!(call.message_count, 1);
        assert_eq!(call.tool_results[0].name.as_deref(), Some("get_weather"));
        assert_eq!(call.reply.as_deref(), Some("It is warm."));
        assert_eq!(answer["audio_bytes"], 3);
        assert_eq!((call.usage.prompt, call.usage.completion), (9, 3));
        // A later turn has no setup: its answer names the socket's model.
        let mut later = answer.clone();
        later["model"] = json!("gemini-live-2.5-flash");
        assert_eq!(extract(&frames[1..], &later).model, "gemini-live-2.5-flash");
        assert_eq!(model_of(&frames[0]), Some("gemini-live-2.5-flash"));
    }

    #[test]
    fn a_tool_response_is_mocked() {
        let call = ToolCall {
            id: "f1".into(),
            name: "get_weather".into(),
            arguments: json!({}),
        };
        let lookup = |id: &str| (id == "f1").then(|| call.clone());
        let mut mock = |_: &ToolCall, _: usize| Some(json!("cold"));
        let mut frame = json!({"tool_response": {"function_responses": [
            {"id": "f1", "name": "get_weather", "response": {"temp_c": 21}},
            {"id": "f2", "name": "get_time", "response": {"time": "09:00"}}]}});
        assert_eq!(rewrite_tool_results(&mut frame, &lookup, &mut mock), 1);
        let responses = &frame["tool_response"]["function_responses"];
        assert_eq!(responses[0]["response"], json!({"result": "cold"}));
        assert_eq!(responses[1]["response"], json!({"time": "09:00"}));
    }

    #[test]
    fn a_tool_call_is_read() {
        let server = [
            json!({"toolCall": {"functionCalls": [{"id": "f1", "name": "get_weather", "args": {"city": "Paris"}}]}}),
        ];
        let call = extract(&[], &assemble(server.iter()));
        assert_eq!(call.tool_calls[0].arguments, json!({"city": "Paris"}));
        assert!(call.reply.is_none());
        assert!(is_path(
            "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
        ));
    }
}
