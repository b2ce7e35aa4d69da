//! The app-server's V4 transport: frames go out `complete` as `v4/conversation/frame`
//! notifications on stdout, held per connection while the host reports it saturated
//! (`v4/connection/flow`).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::common::output::Output;
use crate::v4::inbox::Remembered;
use crate::v4::publisher::Subscriber;
use crate::v4::wire::{Frame, Framing, write_complete};

/// Where V4 frames go: per connection, paused while the host reports it saturated.
#[derive(Default)]
pub struct Gateway {
    /// Ordered, not hashed, as `State::sessions` is: one look-up for every frame.
    connections: BTreeMap<String, Connection>,
    /// `workspace-config/<key>` subscriptions (conversation ones live in each publisher).
    pub config_subscribers: Vec<Subscriber>,
    /// Each session's remembered ACKs, for replays of a command.
    pub acks: HashMap<String, Remembered>,
}

#[derive(Default)]
struct Connection {
    saturated: bool,
    closed: bool,
    held: Vec<String>,
}

impl Gateway {
    /// The frame, to write now, or `None` while its connection is saturated (its notification
    /// is held) or closed (the frame is dropped).
    pub fn deliver(&mut self, frame: Frame) -> Option<Frame> {
        let connection = match self.connections.get_mut(&*frame.connection_id) {
            Some(connection) => connection,
            None => self.connections.entry(frame.connection_id.to_string()).or_default(),
        };
        if connection.closed {
            return None;
        }
        if connection.saturated {
            connection.held.push(frame_notification_text(&frame));
            return None;
        }
        Some(frame)
    }

    /// `v4/connection/flow`: `saturated` holds the connection's frames, `drained` flushes them
    /// in order, `closed` drops them and its config subscriptions.
    pub fn flow(&mut self, out: &Output, connection_id: &str, state: &str) {
        let connection = self.connections.entry(connection_id.to_owned()).or_default();
        match state {
            "saturated" => connection.saturated = true,
            "drained" => {
                connection.saturated = false;
                connection.closed = false;
                for notification in std::mem::take(&mut connection.held) {
                    out.write(|queue| {
                        queue.extend_from_slice(notification.as_bytes());
                        queue.push(b'\n');
                    });
                }
            }
            _ => {
                connection.closed = true;
                connection.held.clear();
                self.config_subscribers
                    .retain(|subscriber| &*subscriber.connection_id != connection_id);
            }
        }
    }
}

/// [`frame_notification`] as JSON text, written by hand into one buffer: a streamed delta's
/// frame.
pub fn frame_notification_text(frame: &Frame) -> String {
    let mut text = String::with_capacity(frame.text_capacity());
    write_frame_notification(&mut text, frame);
    text
}

/// Appends [`frame_notification_text`] to `out`.
pub fn write_frame_notification(out: &mut String, frame: &Frame) {
    out.push_str(r#"{"method":"v4/conversation/frame","params":"#);
    write_complete(out, frame, Framing::Complete);
    out.push('}');
}

/// [`frame_notification_text`] as a tree, for a reply that writes it beside its result.
pub fn frame_notification(frame: &Frame) -> Value {
    serde_json::from_str(&frame_notification_text(frame)).expect("the text is JSON")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use std::sync::Arc;

    use super::*;
    use crate::v4::publisher::Delta;
    use crate::v4::wire::{DeliveryKind, Logical};

    #[test]
    fn a_frames_notification_is_its_complete_wire() {
        let append = Delta::Append { row_id: 7, path: "text", append: "a \"b\"\n".into() };
        let upsert = Delta::Op(json!({"op": "row.upserted", "row": {"rowId": 8}}));
        let deltas = vec![Arc::new(append), Arc::new(upsert)];
        let snapshot = json!({"fromSeq": 0, "payload": {"kind": "snapshot"}});
        let frame = |delivery, logical| Frame {
            topic: "conversation/sess_1".into(),
            subscription_id: "sub_1".into(),
            connection_id: "conn_1".into(),
            ordinal: 4,
            delivery,
            logical,
        };
        let typed = frame(
            DeliveryKind::Online,
            Logical::Deltas { from_seq: 3, to_seq: 5, sent_at: 9, deltas },
        );
        assert_eq!(
            frame_notification(&typed),
            json!({"method": "v4/conversation/frame", "params": {
            "wireVersion": 3, "kind": "complete", "deliveryKind": "online",
            "logicalFrameId": "sub_1:4", "logicalFrameOrdinal": 4,
            "topic": "conversation/sess_1", "subscriptionId": "sub_1",
            "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub_1",
                "fromSeq": 3, "toSeq": 5, "sentAt": 9, "payload": {"kind": "deltas",
                "deltas": [
                    {"op": "row.delta", "rowId": 7, "path": "text", "append": "a \"b\"\n"},
                    {"op": "row.upserted", "row": {"rowId": 8}},
                ]}}}})
        );
        // The bytes too: ZCode's member order, escaped as serde_json escapes.
        let text = concat!(
            r#"{"method":"v4/conversation/frame","params":{"wireVersion":3,"kind":"complete","#,
            r#""deliveryKind":"online","logicalFrameId":"sub_1:4","logicalFrameOrdinal":4,"#,
            r#""topic":"conversation/sess_1","subscriptionId":"sub_1","frame":{"#,
            r#""topic":"conversation/sess_1","subscriptionId":"sub_1","fromSeq":3,"toSeq":5,"#,
            r#""sentAt":9,"payload":{"kind":"deltas","deltas":[{"op":"row.delta","rowId":7,"#,
            r#""path":"text","append":"a \"b\"\n"},{"op":"row.upserted","row":{"rowId":8}}]}}}}"#
        );
        assert_eq!(frame_notification_text(&typed), text);
        assert!(frame_notification_text(&typed).capacity() > text.len(), "room for a newline");
        assert_eq!(typed.logical_value(), frame_notification(&typed)["params"]["frame"]);
        for delivery in [DeliveryKind::Initial, DeliveryKind::Recovery] {
            let tree = frame(delivery, Logical::Tree(snapshot.clone()));
            let params = &frame_notification(&tree)["params"];
            assert_eq!(
                (&params["deliveryKind"], &params["frame"]),
                (&json!(delivery.as_str()), &snapshot)
            );
        }
    }

    #[test]
    fn a_saturated_connection_holds_its_frames_and_a_closed_one_drops_them() {
        let frame = |ordinal| Frame {
            topic: "t".into(),
            subscription_id: "s".into(),
            connection_id: "c".into(),
            ordinal,
            delivery: DeliveryKind::Online,
            logical: Logical::Tree(json!({})),
        };
        let mut gateway = Gateway::default();
        assert!(gateway.deliver(frame(1)).is_some());
        gateway.connections.entry("c".into()).or_default().saturated = true;
        assert!(gateway.deliver(frame(2)).is_none());
        assert_eq!(gateway.connections["c"].held.len(), 1);
        gateway.connections.get_mut("c").unwrap().closed = true;
        assert!(gateway.deliver(frame(3)).is_none());
        assert_eq!(gateway.connections["c"].held.len(), 1);
    }
}
