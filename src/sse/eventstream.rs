//! AWS's binary event stream (`application/vnd.amazon.eventstream`, Bedrock's streams):
//! each frame is a prelude (its lengths and their CRC32), typed headers, a payload and the
//! frame's CRC32. Reading and writing frames is `aws-smithy-eventstream`'s; this file maps
//! a frame to the event agentproxy records, and back.
//!
//! A frame is recorded as one [`SseEvent`] named by its headers, its payload (JSON in
//! every Bedrock frame) as the data:
//!
//! - `:message-type` `event`: the `:event-type` (`contentBlockDelta`, `chunk`);
//! - `exception`: `exception:` and the `:exception-type` (`exception:ThrottlingException`);
//! - `error`: `error:` and the `:error-code`, the `:error-message` as the data.
//!
//! Written back, an event gets the headers the AWS SDKs read (`:message-type`, the type,
//! `:content-type: application/json`) and fresh CRCs.

use aws_smithy_eventstream::frame::{write_message_to, DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::{Bytes, BytesMut};

use super::event::SseEvent;

/// The media type of an event stream.
pub const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

const EXCEPTION: &str = "exception:";
const ERROR: &str = "error:";

/// An incremental reader of frames: feed chunks split anywhere, get the frames they
/// complete. A frame whose CRC does not match (or whose lengths are impossible) stops
/// the reader: [`Parser::broken`] says why, and nothing after it is read.
#[derive(Debug, Default)]
pub struct Parser {
    buffer: BytesMut,
    decoder: MessageFrameDecoder,
    broken: Option<String>,
}

impl Parser {
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if self.broken.is_some() {
            return events;
        }
        self.buffer.extend_from_slice(chunk);
        loop {
            match self.decoder.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Complete(message)) => events.push(event_of(&message)),
                Ok(DecodedFrame::Incomplete) => return events,
                Err(e) => {
                    self.broken = Some(format!("an event-stream frame is broken: {e}"));
                    self.buffer.clear();
                    return events;
                }
            }
        }
    }

    /// Ends the stream: bytes left over are a frame cut short.
    pub fn finish(&mut self) {
        if self.broken.is_none() && !self.buffer.is_empty() {
            let left = self.buffer.len();
            self.broken = Some(format!(
                "the event stream ended inside a frame ({left} bytes of it)"
            ));
        }
    }

    /// Why the stream could not be read, if it could not.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }
}

/// The event a frame is recorded as (see the module's documentation).
fn event_of(message: &Message) -> SseEvent {
    let header = |name: &str| {
        (message.headers().iter())
            .find(|h| h.name().as_str() == name)
            .and_then(|h| h.value().as_string().ok())
            .map(|s| s.as_str().to_owned())
    };
    let payload = String::from_utf8_lossy(message.payload()).into_owned();
    let (name, data) = match header(":message-type").as_deref() {
        Some("exception") => (
            format!(
                "{EXCEPTION}{}",
                header(":exception-type").unwrap_or_default()
            ),
            payload,
        ),
        Some("error") => (
            format!("{ERROR}{}", header(":error-code").unwrap_or_default()),
            header(":error-message").unwrap_or_default(),
        ),
        _ => (header(":event-type").unwrap_or_default(), payload),
    };
    SseEvent {
        event: Some(name),
        id: None,
        data,
    }
}

/// One event as a frame (see the module's documentation).
pub fn encode(ev: &SseEvent) -> Bytes {
    let name = ev.event.as_deref().unwrap_or_default();
    let string = |name: &'static str, value: &str| {
        Header::new(name, HeaderValue::String(value.to_owned().into()))
    };
    let json = || string(":content-type", "application/json");
    let message = if let Some(kind) = name.strip_prefix(EXCEPTION) {
        Message::new(ev.data.clone().into_bytes())
            .add_header(string(":message-type", "exception"))
            .add_header(string(":exception-type", kind))
            .add_header(json())
    } else if let Some(code) = name.strip_prefix(ERROR) {
        Message::new(Bytes::new())
            .add_header(string(":message-type", "error"))
            .add_header(string(":error-code", code))
            .add_header(string(":error-message", &ev.data))
    } else {
        Message::new(ev.data.clone().into_bytes())
            .add_header(string(":message-type", "event"))
            .add_header(string(":event-type", name))
            .add_header(json())
    };
    let mut out = Vec::with_capacity(ev.data.len() + 96);
    // Writing fails only past the format's limits (a payload over 16 MiB, a header value
    // over 32 KiB), which no event of a recorded stream reaches: the frame read had them.
    if write_message_to(&message, &mut out).is_err() {
        out.clear();
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, data: &str) -> SseEvent {
        SseEvent {
            event: Some(name.to_owned()),
            id: None,
            data: data.to_owned(),
        }
    }

    #[test]
    fn frames_read_back_as_the_events_they_were_written_from_split_anywhere() {
        let events = [
            ev("messageStart", r#"{"role":"assistant"}"#),
            ev(
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"Hé"}}"#,
            ),
            ev(
                "exception:ThrottlingException",
                r#"{"message":"slow down"}"#,
            ),
            ev("error:InternalFailure", "it broke"),
        ];
        let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
        for step in [1, 3, 7, wire.len()] {
            let mut parser = Parser::default();
            let mut read = Vec::new();
            for chunk in wire.chunks(step) {
                read.extend(parser.push(chunk));
            }
            parser.finish();
            assert_eq!(parser.broken(), None, "step {step}");
            assert_eq!(read, events, "step {step}");
        }
    }

    #[test]
    fn a_frame_is_what_the_aws_sdks_read_its_headers_and_payload() {
        let frame = encode(&ev("chunk", r#"{"bytes":"e30="}"#));
        let message = aws_smithy_eventstream::frame::read_message_from(frame).unwrap();
        let names: Vec<&str> = message
            .headers()
            .iter()
            .map(|h| h.name().as_str())
            .collect();
        assert_eq!(names, [":message-type", ":event-type", ":content-type"]);
        assert_eq!(&message.payload()[..], br#"{"bytes":"e30="}"#);
    }

    #[test]
    fn a_broken_crc_or_a_frame_cut_short_stops_the_reader_and_says_why() {
        let mut wire = encode(&ev("messageStop", r#"{"stopReason":"end_turn"}"#)).to_vec();
        let last = wire.len() - 1;
        wire[last] ^= 0xff;
        let mut parser = Parser::default();
        assert!(parser.push(&wire).is_empty());
        assert!(
            parser.broken().unwrap().contains("broken"),
            "{:?}",
            parser.broken()
        );
        assert!(
            parser.push(&encode(&ev("a", "{}"))).is_empty(),
            "nothing after a broken frame"
        );

        let whole = encode(&ev("messageStop", "{}"));
        let mut parser = Parser::default();
        assert!(parser.push(&whole[..whole.len() - 2]).is_empty());
        parser.finish();
        assert!(parser.broken().unwrap().contains("ended inside a frame"));
    }
}
