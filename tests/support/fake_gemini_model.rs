//! What the fake Gemini upstream answers (the HTTP side is in `fake_gemini.rs`):
//! `GenerateContentResponse`s, whole or as stream chunks, and Google's errors.
//!
//! Content is a pure function of the request; only `responseId` (and `createTime` on the
//! Vertex forms) is fresh on every call, and a function call's `id`, as from the real API.
//!
//! The script, which tests can rely on. The question is the text of the last `user` turn
//! that is not a function-response turn; the tools the script knows are `get_weather` and
//! `get_time`, called when declared in `tools[].functionDeclarations` (and allowed by
//! `toolConfig.functionCallingConfig`: mode `NONE` calls nothing).
//! - The tools the question names by keyword (`weather`, `time`), in the order it names
//!   them (else the first known tool declared), are paired with the capitalised words that
//!   do not start a sentence (its cities; `Paris` if none), and called with `{"city": …}`.
//! - One tool named: one turn of parallel calls, one per city ("weather in Paris and
//!   Tokyo": two `functionCall` parts in one answer). Two tools named: one turn per tool,
//!   in order ("the weather in Paris and the time in Tokyo": `get_weather` for Paris, then,
//!   once its result is back, `get_time` for Tokyo, then the answer).
//! - Once every planned call has its `functionResponse`: one sentence per result, `It is
//!   {temp_c}°C and {sky} in {city}.` for a weather result, `It is {time} in {city}.` for a
//!   time result, `The tool said: {json}` otherwise. A response wrapped as `{"result": …}`
//!   or `{"output": …}` (the SDK's convention) is unwrapped; a JSON string is parsed.
//! - No known tool: `You said: {question}`.
//!
//! Like the real API, a tool-calling answer is a `model` turn of `functionCall` parts
//! (`finishReason: STOP`), the first of them with a `thoughtSignature` (standard base64,
//! with `+` and `/`, so the SDK echoes it re-encoded in the URL-safe alphabet), and
//! `get_weather` calls carry an `id` while `get_time` calls do not (the API sets ids only
//! sometimes). A signature is a function of the call and its position in the conversation,
//! so the fake checks, statelessly, what it receives back: a signature that does not decode
//! (either alphabet, padding optional) to the one it issued is refused ("Corrupted thought
//! signature."), and so, on `gemini-3*` models, is a function-call turn without one. It
//! also refuses what the real API refuses about turns: a function-response turn that does
//! not follow a function-call turn with as many parts, or whose names or ids do not match.
//! On `gemini-3*` models the final text also carries a signature, on its last part.
//!
//! A streamed answer: a tool-calling turn is one chunk; a text is split over several chunks
//! at uneven sizes (mid-word, never inside a character). Every chunk repeats `responseId`
//! and `modelVersion` and carries the usage so far; only the last has `finishReason` and
//! the final `usageMetadata`.

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Value};

use super::chat_model::{random_token, Answer};
use super::Call;

/// Tools the script knows how to call, and the keyword that asks for each.
const SCRIPTED_TOOLS: [(&str, &str); 2] = [("get_weather", "weather"), ("get_time", "time")];
/// Sizes (in chars) of successive streamed text pieces.
const PIECE_SIZES: [usize; 4] = [5, 11, 3, 17];

/// The status name Google's APIs give an HTTP status.
fn status_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "NOT_IMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        402..=498 => "FAILED_PRECONDITION",
        _ => "INTERNAL",
    }
}

fn error_body(status: StatusCode, message: &str) -> Value {
    json!({"error": {"code": status.as_u16(), "message": message, "status": status_name(status)}})
}

/// Google's error shape, `{"error": {"code", "message", "status"}}`.
pub(super) fn error(status: StatusCode, message: &str) -> Answer {
    Answer::Json {
        status,
        body: error_body(status, message),
        headers: Vec::new(),
    }
}

fn invalid(message: &str) -> Answer {
    error(StatusCode::BAD_REQUEST, message)
}

/// The error a `fail_next` call asked for, with the message the real API uses for that
/// status (and, for 429, the `RetryInfo` detail it adds).
pub(super) fn injected_failure(status: StatusCode) -> Answer {
    let message = match status.as_u16() {
        400 => "Request contains an invalid argument.",
        401 => {
            "Request had invalid authentication credentials. Expected OAuth 2 access token, \
             login cookie or other valid authentication credential."
        }
        403 => "The caller does not have permission",
        404 => "Requested entity was not found.",
        429 => {
            "You exceeded your current quota, please check your plan and billing details. For \
             more information on this error, head to: \
             https://ai.google.dev/gemini-api/docs/rate-limits."
        }
        503 => "The model is overloaded. Please try again later.",
        504 => "Deadline expired before operation could complete.",
        500..=599 => {
            "An internal error has occurred. Please retry or report in \
             https://developers.generativeai.google/guide/troubleshooting"
        }
        _ => "The request was rejected (injected by the fake upstream).",
    };
    let mut body = error_body(status, message);
    if status == StatusCode::TOO_MANY_REQUESTS {
        body["error"]["details"] = json!([
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"},
        ]);
    }
    Answer::Json {
        status,
        body,
        headers: Vec::new(),
    }
}

/// One `functionCall` part as the script plans it.
struct PlannedCall {
    name: &'static str,
    args: Value,
}

/// What the scripted model decided to say.
enum Reply {
    Text(String),
    Calls(Vec<PlannedCall>),
}

/// A `contents` entry: its role (`user` when absent, as the API reads a single turn) and
/// its parts.
struct Turn<'a> {
    role: &'a str,
    parts: &'a [Value],
}

impl Turn<'_> {
    fn calls(&self) -> Vec<&Value> {
        self.parts
            .iter()
            .filter_map(|p| p.get("functionCall"))
            .collect()
    }

    fn responses(&self) -> Vec<&Value> {
        self.parts
            .iter()
            .filter_map(|p| p.get("functionResponse"))
            .collect()
    }

    fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|p| p["thought"] != true)
            .filter_map(|p| p["text"].as_str())
            .collect()
    }
}

/// `POST …:generateContent` / `:streamGenerateContent`. `broken`: a stream breaks off
/// after its first chunk with an error event.
pub(super) fn generate(call: &Call, request: &Value, broken: bool, response_id: &str) -> Answer {
    let turns = match read_turns(request) {
        Ok(turns) => turns,
        Err(message) => return invalid(&message),
    };
    if let Some(problem) = turn_problem(&turns, &call.model) {
        return invalid(&problem);
    }
    let reply = script(request, &turns);
    let position = turns.len();
    let thinking = call.model.contains("2.5") || is_gemini3(&call.model);
    let mut parts: Vec<Value> = match &reply {
        Reply::Text(text) => vec![json!({"text": text})],
        Reply::Calls(calls) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut function_call = json!({"name": c.name, "args": c.args});
                if c.name == "get_weather" {
                    function_call["id"] = json!(random_token(8).to_lowercase());
                }
                let mut part = json!({"functionCall": function_call});
                // Parallel calls: only the first part is signed, as the real API does.
                if i == 0 {
                    part["thoughtSignature"] =
                        json!(base64_encode(&signature_for(c.name, &c.args, position)));
                }
                part
            })
            .collect(),
    };
    let prompt_tokens = approx_tokens(&request["contents"].to_string())
        + approx_tokens(&request["systemInstruction"].to_string())
        + approx_tokens(&request["tools"].to_string());
    let candidate_tokens = approx_tokens(&Value::Array(parts.clone()).to_string());
    let thought_tokens = if thinking {
        16 + 8 * parts.len() as u64
    } else {
        0
    };
    if let (Reply::Text(text), true) = (&reply, is_gemini3(&call.model)) {
        parts[0]["thoughtSignature"] =
            json!(base64_encode(&signature_for("", &json!(text), position)));
    }
    let envelope = Envelope {
        model: call.model.clone(),
        response_id: response_id.to_owned(),
        vertex: call.vertex,
        prompt_tokens,
        thought_tokens,
    };
    if !call.stream {
        return Answer::Json {
            status: StatusCode::OK,
            body: envelope.response(parts, Some(candidate_tokens)),
            headers: Vec::new(),
        };
    }
    let mut chunks = match &reply {
        Reply::Calls(_) => vec![envelope.response(parts, Some(candidate_tokens))],
        Reply::Text(text) => envelope.text_chunks(text, parts[0].get("thoughtSignature")),
    };
    if broken {
        chunks.truncate(1);
        if let Some(candidate) = chunks[0]["candidates"][0].as_object_mut() {
            candidate.remove("finishReason");
        }
        chunks.push(error_body(
            StatusCode::SERVICE_UNAVAILABLE,
            "The model is overloaded. Please try again later.",
        ));
    }
    Answer::Stream(frame(&chunks, call.sse))
}

fn is_gemini3(model: &str) -> bool {
    model.starts_with("gemini-3")
}

/// `contents`, checked as the real API checks it.
fn read_turns(request: &Value) -> Result<Vec<Turn<'_>>, String> {
    let contents = match request.get("contents").and_then(Value::as_array) {
        Some(contents) if !contents.is_empty() => contents,
        _ => return Err("* GenerateContentRequest.contents: contents is not specified\n".into()),
    };
    contents
        .iter()
        .enumerate()
        .map(|(i, content)| {
            let role = match content.get("role").and_then(Value::as_str) {
                None | Some("") | Some("user") => "user",
                Some("model") => "model",
                // Older REST examples send function responses in a `function` turn.
                Some("function") | Some("tool") => "user",
                Some(_) => return Err("Please use a valid role: user, model.".to_owned()),
            };
            match content.get("parts").and_then(Value::as_array) {
                Some(parts) if !parts.is_empty() => Ok(Turn { role, parts }),
                _ => Err(format!(
                    "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be \
                     empty.\n"
                )),
            }
        })
        .collect()
}

/// What the real API refuses about function-call turns, worded like its refusals.
fn turn_problem(turns: &[Turn<'_>], model: &str) -> Option<String> {
    for (i, turn) in turns.iter().enumerate() {
        let responses = turn.responses();
        let previous_calls = match i.checked_sub(1).map(|p| &turns[p]) {
            Some(previous) if previous.role == "model" => previous.calls(),
            _ => Vec::new(),
        };
        if !responses.is_empty() {
            if previous_calls.is_empty() {
                return Some(
                    "Please ensure that function response turn comes immediately after a \
                     function call turn."
                        .into(),
                );
            }
            if responses.len() != previous_calls.len() {
                return Some(
                    "Please ensure that the number of function response parts is equal to the \
                     number of function call parts of the function call turn."
                        .into(),
                );
            }
            let mut names: Vec<&str> = responses
                .iter()
                .filter_map(|r| r["name"].as_str())
                .collect();
            let mut called: Vec<&str> = previous_calls
                .iter()
                .filter_map(|c| c["name"].as_str())
                .collect();
            names.sort_unstable();
            called.sort_unstable();
            if names != called {
                return Some(format!(
                    "* GenerateContentRequest.contents[{i}]: the function response names \
                     {names:?} do not match the function calls {called:?} of the previous turn.\n"
                ));
            }
            for id in responses.iter().filter_map(|r| r["id"].as_str()) {
                if !previous_calls.iter().any(|c| c["id"] == id) {
                    return Some(format!(
                        "* GenerateContentRequest.contents[{i}]: function response id {id} \
                         matches no function call of the previous turn.\n"
                    ));
                }
            }
        }
        if turn.role == "model" && !turn.calls().is_empty() {
            if turns
                .get(i + 1)
                .is_some_and(|next| next.responses().is_empty())
            {
                return Some(
                    "Please ensure that function response turn comes immediately after a \
                     function call turn."
                        .into(),
                );
            }
            if let Some(problem) = signature_problem(turn, i, model) {
                return Some(problem);
            }
        }
    }
    None
}

/// The first `functionCall` part of the model turn at `position` must carry the signature
/// the fake issued for it (on gemini-3 models a missing one is refused too).
fn signature_problem(turn: &Turn<'_>, position: usize, model: &str) -> Option<String> {
    let first = turn
        .parts
        .iter()
        .find(|p| p.get("functionCall").is_some())?;
    let call = &first["functionCall"];
    let name = call["name"].as_str().unwrap_or_default();
    match first.get("thoughtSignature").and_then(Value::as_str) {
        None if is_gemini3(model) => Some(format!(
            "Function call is missing a thought_signature in functionCall parts. This is \
             required for tools to work correctly, and missing thought_signature may lead to \
             degraded model performance. Additional data, function call `default_api:{name}` , \
             position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures \
             for more details.",
            position + 1
        )),
        None => None,
        Some(signature) => {
            let expected = signature_for(name, &call["args"], position);
            (base64_decode(signature).as_deref() != Some(expected.as_slice()))
                .then(|| "Corrupted thought signature.".to_owned())
        }
    }
}

/// The signature the fake issues for a call (or, with an empty name, a final text) that
/// answered a conversation of `position` turns: opaque bytes that start like the real
/// ones (a protobuf field) and encode, in standard base64, with `+` and `/`.
pub fn signature_for(name: &str, args: &Value, position: usize) -> Vec<u8> {
    let mut bytes = vec![0x0a, 0x11, 0x01, 0xfb, 0xff, 0xbf];
    let mut state = fnv1a(format!("{name}\u{0}{args}\u{0}{position}").as_bytes());
    for _ in 0..14 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.push((state >> 24) as u8);
    }
    bytes
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The scripted model: plan the calls the question needs, make the next turn of them, and
/// describe the results once they are all back.
fn script(request: &Value, turns: &[Turn<'_>]) -> Reply {
    let Some(asked) = turns
        .iter()
        .rposition(|t| t.role == "user" && t.responses().is_empty())
    else {
        return Reply::Text("You said: ".into());
    };
    let question = turns[asked].text();
    let steps = plan(request, &question);
    let last = turns.last().expect("contents is not empty");
    let done = turns[asked + 1..]
        .iter()
        .filter(|t| t.role == "model" && !t.calls().is_empty())
        .count();
    if last.role == "user" && !steps.is_empty() && done < steps.len() {
        let answered = asked + 1 == turns.len() || !last.responses().is_empty();
        if answered {
            let mut steps = steps;
            return Reply::Calls(steps.swap_remove(done));
        }
    }
    if done == 0 {
        return Reply::Text(format!("You said: {question}"));
    }
    Reply::Text(describe_results(&turns[asked + 1..]))
}

/// The declared function names the script may call.
fn callable_tools(request: &Value) -> Vec<String> {
    let config = &request["toolConfig"]["functionCallingConfig"];
    if config["mode"] == "NONE" {
        return Vec::new();
    }
    let allowed: Option<Vec<&str>> = config["allowedFunctionNames"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect());
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|tool| {
            tool.get("functionDeclarations")
                .or(tool.get("function_declarations"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|declaration| declaration["name"].as_str().map(str::to_owned))
        .filter(|name| allowed.as_ref().is_none_or(|a| a.contains(&name.as_str())))
        .collect()
}

/// The turns of calls the question needs, in order; empty when no known tool is offered.
fn plan(request: &Value, question: &str) -> Vec<Vec<PlannedCall>> {
    let offered = callable_tools(request);
    let known: Vec<(&'static str, &'static str)> = SCRIPTED_TOOLS
        .iter()
        .copied()
        .filter(|(name, _)| offered.iter().any(|o| o == name))
        .collect();
    let Some(first_known) = known.first().map(|(name, _)| *name) else {
        return Vec::new();
    };
    let lower = question.to_lowercase();
    let mut mentioned: Vec<(usize, &'static str)> = known
        .iter()
        .filter_map(|(name, keyword)| Some((lower.find(keyword)?, *name)))
        .collect();
    mentioned.sort_unstable();
    let mut tools: Vec<&'static str> = mentioned.into_iter().map(|(_, name)| name).collect();
    if tools.is_empty() {
        tools.push(first_known);
    }
    let mut cities = capitalised_words(question);
    if cities.is_empty() {
        cities.push("Paris".to_owned());
    }
    let call = |name: &'static str, city: &str| PlannedCall {
        name,
        args: json!({"city": city}),
    };
    if let [tool] = tools.as_slice() {
        return vec![cities.iter().map(|city| call(tool, city)).collect()];
    }
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| vec![call(tool, cities.get(i).unwrap_or(&cities[0]))])
        .collect()
}

/// Capitalised words that do not start a sentence: in "What's the weather in Paris and
/// Tokyo?" that is Paris and Tokyo.
fn capitalised_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphabetic());
        let capitalised = word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().all(char::is_alphabetic);
        if capitalised && !sentence_start && word != "I" && !words.iter().any(|w| w == word) {
            words.push(word.to_owned());
        }
        sentence_start = raw.ends_with(['.', '?', '!']);
    }
    words
}

/// One sentence per `functionResponse` after the question, in order.
fn describe_results(turns: &[Turn<'_>]) -> String {
    let calls: Vec<&Value> = turns.iter().flat_map(|t| t.calls()).collect();
    let sentences: Vec<String> = turns
        .iter()
        .flat_map(|t| t.responses())
        .map(|response| {
            let name = response["name"].as_str().unwrap_or_default();
            let mut value = response["response"].clone();
            for wrapper in ["result", "output"] {
                if value.as_object().is_some_and(|o| o.len() == 1) && value.get(wrapper).is_some() {
                    value = value[wrapper].take();
                }
            }
            if let Some(parsed) = value.as_str().and_then(|s| serde_json::from_str(s).ok()) {
                value = parsed;
            }
            let asked_city = calls
                .iter()
                .find(|c| {
                    c["name"] == name && (response["id"].is_null() || c["id"] == response["id"])
                })
                .and_then(|c| c["args"]["city"].as_str());
            let city = value["city"].as_str().or(asked_city).unwrap_or("your city");
            match (&value["temp_c"], &value["sky"], &value["time"]) {
                (Value::Number(temp), sky, _) => format!(
                    "It is {temp}°C and {} in {city}.",
                    sky.as_str().unwrap_or("clear")
                ),
                (_, _, Value::String(time)) => format!("It is {time} in {city}."),
                _ => format!("The tool said: {value}"),
            }
        })
        .collect();
    sentences.join(" ")
}

/// A stable stand-in for a tokenizer: about four bytes per token, at least one.
fn approx_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

/// The fields every response of one call repeats.
struct Envelope {
    model: String,
    response_id: String,
    vertex: bool,
    prompt_tokens: u64,
    thought_tokens: u64,
}

impl Envelope {
    /// A `GenerateContentResponse` with `parts`; `candidate_tokens` set: the last one, with
    /// `finishReason` and the final usage; unset: an intermediate chunk.
    fn response(&self, parts: Vec<Value>, candidate_tokens: Option<u64>) -> Value {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if candidate_tokens.is_some() {
            candidate["finishReason"] = json!("STOP");
        }
        let candidates = candidate_tokens.unwrap_or_else(|| {
            approx_tokens(&candidate["content"]["parts"].to_string())
                .saturating_sub(2)
                .max(1)
        });
        let mut usage = json!({
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": candidates,
            "totalTokenCount": self.prompt_tokens + candidates + self.thought_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.prompt_tokens}],
        });
        if self.thought_tokens > 0 {
            usage["thoughtsTokenCount"] = json!(self.thought_tokens);
        }
        let mut body = json!({
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self.model,
            "responseId": self.response_id,
        });
        if self.vertex {
            body["usageMetadata"]["trafficType"] = json!("ON_DEMAND");
            body["createTime"] = json!(now_rfc3339());
        }
        body
    }

    /// A text answer over several chunks; the last carries the signature, if any.
    fn text_chunks(&self, text: &str, signature: Option<&Value>) -> Vec<Value> {
        let pieces = pieces(text);
        let total = approx_tokens(&json!([{"text": text}]).to_string());
        pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| {
                let mut part = json!({"text": piece});
                let last = i + 1 == pieces.len();
                if let (true, Some(signature)) = (last, signature) {
                    part["thoughtSignature"] = signature.clone();
                }
                self.response(vec![part], last.then_some(total))
            })
            .collect()
    }
}

/// `text` in pieces of uneven char counts (never inside a UTF-8 sequence).
fn pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    for size in PIECE_SIZES.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let end = rest
            .char_indices()
            .nth(*size)
            .map_or(rest.len(), |(i, _)| i);
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    if pieces.is_empty() {
        pieces.push("");
    }
    pieces
}

/// The stream's bytes, one element per HTTP chunk: server-sent events (`sse`), each
/// exactly `data: <one-line JSON>\r\n\r\n`; else the elements of one JSON array, pretty
/// printed and separated by `\n,\r\n` as Google sends them.
fn frame(chunks: &[Value], sse: bool) -> Vec<Bytes> {
    if sse {
        return chunks
            .iter()
            .map(|c| Bytes::from(format!("data: {c}\r\n\r\n")))
            .collect();
    }
    let mut frames: Vec<Bytes> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let pretty = serde_json::to_string_pretty(c).expect("a Value always serializes");
            Bytes::from(format!("{}{pretty}", if i == 0 { "[" } else { "\n,\r\n" }))
        })
        .collect();
    frames.push(Bytes::from_static(b"\n]"));
    frames
}

/// The current time as RFC 3339 with microseconds, as Vertex writes `createTime`.
fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        now.subsec_micros()
    )
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as the API writes `bytes` fields.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(STANDARD[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Either alphabet (standard or URL-safe), padding optional, as proto3 JSON reads `bytes`.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut bits = 0u32;
    let mut count = 0;
    for c in text.bytes() {
        let value = match c {
            b'-' => 62,
            b'_' => 63,
            _ => STANDARD.iter().position(|&s| s == c)? as u32,
        };
        bits = bits << 6 | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    (count < 6).then_some(out)
}
