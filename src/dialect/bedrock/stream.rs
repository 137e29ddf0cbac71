//! ConverseStream: its events (`messageStart`, `contentBlockStart`, `contentBlockDelta`,
//! `contentBlockStop`, `messageStop`, `metadata`, one event-stream frame each) assembled
//! into the equivalent Converse response, and synthesized from one.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::dialect::{delta_pieces, AssembleError};
use crate::sse::SseEvent;

/// A content block being streamed, and its tool input's text so far (`None`: no input
/// delta came).
#[derive(Default)]
struct Block {
    block: Map<String, Value>,
    input: Option<String>,
}

/// Assemble a ConverseStream into the Converse response it amounts to:
/// `output.message` (`role` of `messageStart`, `content` by `contentBlockIndex`: `text`
/// deltas appended, a `toolUse`'s `input` deltas concatenated and parsed, reasoning text
/// appended and its signature set), `stopReason` (and any other field) of `messageStop`,
/// and `usage`, `metrics`, `trace` of `metadata`.
///
/// Fails on an exception frame (`ThrottlingException`, `ModelStreamErrorException`, …) and
/// on a stream without `messageStop`, which broke off and is not passed off as whole.
pub fn assemble(events: &[SseEvent]) -> Result<Value, AssembleError> {
    let mut role = json!("assistant");
    let mut blocks: BTreeMap<u64, Block> = BTreeMap::new();
    let mut answer = Map::new();
    let mut stopped = false;
    let mut last = None;
    for (index, event) in events.iter().enumerate() {
        let kind = event.event.as_deref().unwrap_or_default();
        if kind.starts_with("exception:") || kind.starts_with("error:") {
            let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
            let message = data["message"].as_str().unwrap_or(&event.data);
            return Err(AssembleError::Upstream {
                index,
                message: format!("{kind} {message}"),
            });
        }
        let mut data: Value = serde_json::from_str(&event.data)
            .map_err(|source| AssembleError::NotJson { index, source })?;
        let shape = |problem| AssembleError::Shape { index, problem };
        let at = data["contentBlockIndex"].as_u64();
        let at =
            || at.ok_or_else(|| shape("a content block event has no integer `contentBlockIndex`"));
        match kind {
            "messageStart" => role = data["role"].take(),
            "contentBlockStart" => {
                let mut block = Block::default();
                if let Value::Object(start) = data["start"].take() {
                    block.block = start;
                }
                blocks.insert(at()?, block);
            }
            "contentBlockDelta" => {
                let block = blocks.entry(at()?).or_default();
                apply_delta(block, &data["delta"]);
            }
            "messageStop" => {
                stopped = true;
                if let Value::Object(fields) = data.take() {
                    answer.extend(fields.into_iter().filter(|(k, _)| k != "p"));
                }
            }
            "metadata" => {
                if let Value::Object(fields) = data.take() {
                    answer.extend(fields.into_iter().filter(|(k, _)| k != "p"));
                }
            }
            _ => {}
        }
        last = Some(kind.to_owned());
    }
    let Some(last) = last else {
        return Err(AssembleError::Empty { what: "events" });
    };
    if !stopped {
        return Err(AssembleError::Incomplete {
            events: events.len(),
            last,
            terminal: "messageStop",
        });
    }
    let content = content(blocks)?;
    answer.insert(
        "output".to_owned(),
        json!({"message": {"role": role, "content": content}}),
    );
    Ok(Value::Object(answer))
}

fn apply_delta(block: &mut Block, delta: &Value) {
    if let Some(text) = delta["text"].as_str() {
        append(&mut block.block, "text", text);
    } else if let Some(input) = delta["toolUse"]["input"].as_str() {
        block.input.get_or_insert_with(String::new).push_str(input);
    } else if let Some(reasoning) = delta.get("reasoningContent") {
        let entry = block
            .block
            .entry("reasoningContent")
            .or_insert_with(|| json!({"reasoningText": {}}));
        let Some(text) = entry["reasoningText"].as_object_mut() else {
            return;
        };
        if let Some(piece) = reasoning["text"].as_str() {
            append(text, "text", piece);
        }
        if let Some(signature) = reasoning.get("signature") {
            text.insert("signature".to_owned(), signature.clone());
        }
    }
}

fn append(block: &mut Map<String, Value>, field: &str, piece: &str) {
    match block.get_mut(field) {
        Some(Value::String(s)) => s.push_str(piece),
        _ => {
            block.insert(field.to_owned(), json!(piece));
        }
    }
}

/// The blocks in index order, each tool call's input parsed (none at all is `{}`).
fn content(blocks: BTreeMap<u64, Block>) -> Result<Vec<Value>, AssembleError> {
    let mut content = Vec::with_capacity(blocks.len());
    for (at, Block { mut block, input }) in blocks {
        if let Some(call) = block.get_mut("toolUse").and_then(Value::as_object_mut) {
            let input = input.unwrap_or_default();
            let input = if input.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&input)
                    .map_err(|source| AssembleError::ToolInput { block: at, source })?
            };
            call.insert("input".to_owned(), input);
        }
        content.push(Value::Object(block));
    }
    Ok(content)
}

fn event(kind: &str, data: Value) -> SseEvent {
    SseEvent {
        event: Some(kind.to_owned()),
        id: None,
        data: data.to_string(),
    }
}

/// The ConverseStream of a Converse response: `messageStart`, each block (text in
/// pieces, a tool call's start then its whole input as one delta), `messageStop` and
/// `metadata` with the usage and metrics.
pub fn synthesize(response: &Value) -> Vec<SseEvent> {
    let message = &response["output"]["message"];
    let role = message.get("role").cloned().unwrap_or(json!("assistant"));
    let mut events = vec![event("messageStart", json!({"role": role}))];
    let blocks = message["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (at, block) in blocks.iter().enumerate() {
        if let Some(text) = block["text"].as_str() {
            for piece in delta_pieces(text) {
                events.push(event(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": at, "delta": {"text": piece}}),
                ));
            }
        } else if let Some(call) = block["toolUse"].as_object() {
            let start =
                json!({"toolUse": {"toolUseId": call.get("toolUseId"), "name": call.get("name")}});
            events.push(event(
                "contentBlockStart",
                json!({"contentBlockIndex": at, "start": start}),
            ));
            let input = call.get("input").map_or_else(
                || "{}".to_owned(),
                |i| match i {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            );
            events.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": at, "delta": {"toolUse": {"input": input}}}),
            ));
        } else if let Some(reasoning) = block["reasoningContent"]["reasoningText"].as_object() {
            let mut delta = Map::new();
            for field in ["text", "signature"] {
                if let Some(v) = reasoning.get(field) {
                    delta.insert(field.to_owned(), v.clone());
                }
            }
            events.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": at, "delta": {"reasoningContent": delta}}),
            ));
        }
        events.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
    }
    let mut stop = Map::new();
    stop.insert(
        "stopReason".to_owned(),
        response
            .get("stopReason")
            .cloned()
            .unwrap_or(json!("end_turn")),
    );
    if let Some(fields) = response.get("additionalModelResponseFields") {
        stop.insert("additionalModelResponseFields".to_owned(), fields.clone());
    }
    events.push(event("messageStop", Value::Object(stop)));
    let mut metadata = Map::new();
    for field in ["usage", "metrics", "trace"] {
        if let Some(v) = response.get(field) {
            metadata.insert(field.to_owned(), v.clone());
        }
    }
    if !metadata.is_empty() {
        events.push(event("metadata", Value::Object(metadata)));
    }
    events
}
