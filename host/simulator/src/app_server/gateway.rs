//! The app-server's V4 transport: frames go out `complete` as `v4/conversation/frame`
//! notifications on stdout, held per connection while the host reports it saturated
//! (`v4/connection/flow`).

use std::collections::HashMap;

use serde_json::Value;

use super::wire;
use crate::common::output::Output;
use crate::v4::publisher::Subscriber;
use crate::v4::wire::{Frame, Framing, encode};

/// Where V4 frames go: per connection, paused while the host reports it saturated.
#[derive(Default)]
pub struct Gateway {
    connections: HashMap<String, Connection>,
    /// `workspace-config/<key>` subscriptions (conversation ones live in each publisher).
    pub config_subscribers: Vec<Subscriber>,
    /// Acks by `(sessionId, commandId)`, for replays of a command.
    pub acks: HashMap<(Option<String>, String), Value>,
}

#[derive(Default)]
struct Connection {
    saturated: bool,
    closed: bool,
    held: Vec<Value>,
}

impl Gateway {
    /// The notification to write for one frame, or `None` while its connection is saturated
    /// (the frame is held) or closed (the frame is dropped).
    pub fn deliver(&mut self, frame: Frame) -> Option<Value> {
        let connection = self.connections.entry(frame.connection_id.clone()).or_default();
        if connection.closed {
            return None;
        }
        let notification = frame_notification(frame);
        if connection.saturated {
            connection.held.push(notification);
            return None;
        }
        Some(notification)
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
                    out.frame(&notification);
                }
            }
            _ => {
                connection.closed = true;
                connection.held.clear();
                self.config_subscribers
                    .retain(|subscriber| subscriber.connection_id != connection_id);
            }
        }
    }
}

/// A frame as the app-server writes it: one `complete` wire in a `v4/conversation/frame`.
pub fn frame_notification(frame: Frame) -> Value {
    let mut wires =
        encode(frame, Framing::Complete, false, false).expect("complete always encodes");
    wire::notification("v4/conversation/frame", wires.remove(0))
}
