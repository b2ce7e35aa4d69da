//! The bulk text stream for benchmarks: events are rendered from a pre-escaped template in
//! batches and written as one buffer per batch, checking for a stop between batches.
//! Bulk events are not kept for `readSessionEvents` (that would cost more than the stream).

use std::io::Write;

use super::Turn;
use crate::common::clock::now_ms;
use crate::common::json_text;
use crate::common::turn::{Halt, StepResult};

const BATCH: u64 = 1024;

/// A string as the inside of a JSON string literal.
fn escaped(text: &str) -> String {
    let mut inner = String::with_capacity(text.len());
    json_text::push_inner(&mut inner, text);
    inner
}

/// The parts of a delta line that stay the same for the whole stream, JSON-escaped.
struct StreamIds {
    session: String,
    turn: String,
    message: String,
    chunk: String,
}

/// One `model.streaming` `text_delta` notification line, as `emit_session_event` would build it.
fn write_delta(buffer: &mut Vec<u8>, subscriber: &str, seq: u64, timestamp: u64, ids: &StreamIds) {
    let StreamIds { session, turn, message, chunk } = ids;
    let result =
        write!(buffer, r#"{{"method":"event","params":{{"subscriptionId":"{subscriber}","#)
            .and_then(|()| write!(buffer, r#""event":{{"type":"session.event","event":{{"#))
            .and_then(|()| {
                write!(buffer, r#""eventId":"{session}-{seq}","sessionId":"{session}","#)
            })
            .and_then(|()| {
                write!(buffer, r#""turnId":"{turn}","seq":{seq},"timestamp":{timestamp},"#)
            })
            .and_then(|()| write!(buffer, r#""deliveryKind":"desktop-continuous","#))
            .and_then(|()| {
                write!(buffer, r#""type":"model.streaming","payload":{{"kind":"text_delta","#)
            })
            .and_then(|()| {
                writeln!(buffer, r#""delta":"{chunk}","assistantMessageId":"{message}"}}}}}}}}}}"#)
            });
    result.expect("writing to a Vec cannot fail");
}

impl Turn {
    pub(super) async fn bulk_stream(&mut self, count: u64, chunk: &str) -> StepResult {
        let ids = StreamIds {
            session: escaped(&self.start.session_id),
            turn: escaped(&self.start.turn_id),
            message: escaped(&self.message_id),
            chunk: escaped(chunk),
        };
        // The `stream` fault point fires once half of the chunks are out.
        let middle = count.saturating_sub(1) / 2 + 1;
        let mut emitted = 0;
        while emitted < count {
            self.start.stop.check()?;
            // A reader that falls behind pauses the stream; a stop still ends it at once.
            tokio::select! {
                () = self.host.out.drain_below_limit() => {}
                () = self.start.stop.stopped() => return Err(Halt::Cancelled),
            }
            let limit = if emitted < middle { middle } else { count };
            let end = limit.min(emitted + BATCH);
            {
                let mut live = self.session();
                let subscribers: Vec<String> =
                    live.subscribers.iter().map(|id| escaped(id)).collect();
                let timestamp = now_ms();
                let mut buffer =
                    Vec::with_capacity((end - emitted) as usize * 400 * subscribers.len());
                for _ in emitted..end {
                    let seq = live.next_seq();
                    for subscriber in &subscribers {
                        write_delta(&mut buffer, subscriber, seq, timestamp, &ids);
                    }
                }
                if !buffer.is_empty() {
                    live.output().bytes(buffer);
                }
            }
            self.append_text("text", &chunk.repeat((end - emitted) as usize));
            emitted = end;
            if emitted == middle {
                self.fault_point("stream").await?;
            }
            tokio::task::yield_now().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn renders_the_same_event_as_the_generic_path() {
        let ids = StreamIds {
            session: "s-1".into(),
            turn: "t".into(),
            message: "m".into(),
            chunk: escaped("a \"quoted\" chunk"),
        };
        let mut buffer = Vec::new();
        write_delta(&mut buffer, "sub", 7, 99, &ids);
        assert_eq!(buffer.last(), Some(&b'\n'));
        let line: Value = serde_json::from_slice(&buffer).unwrap();
        assert_eq!(
            line,
            json!({"method": "event", "params": {"subscriptionId": "sub", "event": {
                "type": "session.event", "event": {
                    "eventId": "s-1-7", "sessionId": "s-1", "turnId": "t", "seq": 7, "timestamp": 99,
                    "deliveryKind": "desktop-continuous", "type": "model.streaming",
                    "payload": {"kind": "text_delta", "delta": "a \"quoted\" chunk",
                                "assistantMessageId": "m"}}}}})
        );
    }

    #[test]
    fn escapes_without_quotes() {
        assert_eq!(escaped("a\"b\n"), "a\\\"b\\n");
    }
}
