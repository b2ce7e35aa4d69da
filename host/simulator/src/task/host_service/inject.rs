//! Frames a misbehaving host would write: broken lines, oversize lines, unknown events and
//! sequence gaps. Each is deliberate and documented in `docs/simulator.md`.

use serde_json::{Value, json};

use super::session::LiveSession;
use crate::common::output::Output;
use crate::task::fault::FaultKind;

/// Bytes of padding in an oversize frame: just past the 16 MiB frame limit of ZCode clients.
const OVERSIZE_PADDING: usize = 16 * 1024 * 1024 + 1024;
/// Subscription id used when a fault frame has no subscriber to go to.
const NO_SUBSCRIBER: &str = "zcode-sim-fault";
const NOTE: &str = "injected by zcode-sim";
/// How many sequence numbers a `seq-gap` skips.
const SEQ_GAP: u64 = 5;

/// Injects the fault into a session's event stream.
pub fn into_session(live: &mut LiveSession, kind: FaultKind) {
    match kind {
        FaultKind::UnknownSessionEvent => {
            let turn_id = live.turn.as_ref().map(|turn| turn.turn_id.clone());
            live.emit_session_event(
                turn_id.as_deref(),
                "sim.unknownSessionEvent",
                json!({"note": NOTE}),
            );
        }
        FaultKind::SeqGap => live.record.last_seq += SEQ_GAP,
        _ => {
            let subscribers = live.subscribers.clone();
            unrouted(live.output(), kind, &subscribers);
        }
    }
}

/// Writes a frame-level fault addressed to `subscriptions` (or a placeholder id).
pub fn unrouted(out: &Output, kind: FaultKind, subscriptions: &[String]) {
    let fallback = [NO_SUBSCRIBER.to_owned()];
    let targets = if subscriptions.is_empty() { &fallback[..] } else { subscriptions };
    match kind {
        FaultKind::Malformed => {
            out.bytes(b"{\"method\":\"event\",\"params\":{\"subscriptionId\":\n".to_vec());
        }
        FaultKind::Oversize => out.bytes(oversize_frame(&targets[0])),
        FaultKind::InvalidUtf8 => out.bytes(invalid_utf8_frame(&targets[0])),
        FaultKind::UnknownEvent => {
            for subscription_id in targets {
                out.frame(&event_frame(
                    subscription_id,
                    json!({"type": "sim.unknownEvent", "detail": {"note": NOTE}}),
                ));
            }
        }
        FaultKind::UnknownSessionEvent => {
            for subscription_id in targets {
                out.frame(&event_frame(
                    subscription_id,
                    json!({"type": "session.event", "event": {
                        "eventId": "zcode-sim-unknown", "sessionId": "zcode-sim-unknown", "seq": 0,
                        "timestamp": crate::common::clock::now_ms(), "deliveryKind": "desktop-continuous",
                        "type": "sim.unknownSessionEvent", "payload": {}}}),
                ));
            }
        }
        // Sequence gaps only exist inside a session; the other kinds are not frames.
        _ => {}
    }
}

fn event_frame(subscription_id: &str, event: Value) -> Value {
    json!({"method": "event", "params": {"subscriptionId": subscription_id, "event": event}})
}

/// A valid JSON line (an ignorable `state.updated`) that is too long for any ZCode client.
fn oversize_frame(subscription_id: &str) -> Vec<u8> {
    let head = serde_json::to_string(&event_frame(
        subscription_id,
        json!({"type": "state.updated", "notification": {"padding": ""}}),
    ))
    .expect("serializable");
    // Splice the padding into the empty string so the line stays valid JSON.
    let marker = "\"padding\":\"\"";
    let split = head.find(marker).expect("marker present") + marker.len() - 1;
    let mut bytes = Vec::with_capacity(head.len() + OVERSIZE_PADDING + 1);
    bytes.extend_from_slice(&head.as_bytes()[..split]);
    bytes.resize(bytes.len() + OVERSIZE_PADDING, b'x');
    bytes.extend_from_slice(&head.as_bytes()[split..]);
    bytes.push(b'\n');
    bytes
}

/// An otherwise well-formed event line whose string value contains bytes that are not UTF-8.
fn invalid_utf8_frame(subscription_id: &str) -> Vec<u8> {
    let head = serde_json::to_string(&event_frame(
        subscription_id,
        json!({"type": "state.updated", "notification": {"text": "@"}}),
    ))
    .expect("serializable");
    let mut bytes = head.replace("\"@\"", "\"\u{1}\"").into_bytes();
    let position = bytes.iter().position(|byte| *byte == 1).expect("placeholder present");
    bytes.splice(position..=position, [0xff, 0xfe, 0xfd]);
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversize_frames_are_valid_json_past_the_limit() {
        let bytes = oversize_frame("sub");
        assert!(bytes.len() > 16 * 1024 * 1024);
        let value: Value = serde_json::from_slice(&bytes[..bytes.len() - 1]).unwrap();
        assert_eq!(value["params"]["subscriptionId"], "sub");
    }

    #[test]
    fn invalid_utf8_frames_are_not_utf8() {
        let bytes = invalid_utf8_frame("sub");
        assert!(std::str::from_utf8(&bytes).is_err());
        // Apart from those bytes it is a well-formed event line.
        let repaired = String::from_utf8_lossy(&bytes);
        let value: Value = serde_json::from_str(repaired.trim_end()).unwrap();
        assert_eq!(value["params"]["event"]["type"], "state.updated");
    }
}
