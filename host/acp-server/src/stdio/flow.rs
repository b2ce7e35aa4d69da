//! Knowing when the client has read what a session sent.
//!
//! The SDK queues outgoing messages without bound, in two queues before our writer thread, so a
//! client that reads slowly would let a long turn pile up in this process. A session instead
//! asks, after each batch it sends, for a *mark*: a notification of our own that follows the
//! batch through the SDK's queues in order. The stdout sink recognises it, never writes it, and
//! the writer thread resolves it once every frame before it is written. A session keeps at most
//! a couple of marks open, so what it has in flight is bounded and a slow client slows ZCode
//! down instead of filling memory.
//!
//! A *block* travels the same way: frames a session wrote out itself (text chunks, from their
//! checked parts) wait here, and a notification of our own takes their place in the SDK's
//! queues; the sink writes the frames where it finds it. The SDK then handles one small
//! message per batch of chunks instead of building and serializing a tree per chunk, and the
//! order with everything the SDK sends is kept.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_client_protocol::{BoxFuture, UntypedMessage};
use tokio::sync::oneshot;

/// The mark's method: an extension name (`$/`), which a client that ever saw one ignores.
pub const MARK_METHOD: &str = "$/zcode-acp/written";

/// How the SDK writes a mark notification, up to its number: the sink matches the start of a
/// frame only, which no text a session sends can reach.
const MARK_PREFIX: &str =
    "{\"jsonrpc\":\"2.0\",\"method\":\"$/zcode-acp/written\",\"params\":{\"mark\":";

/// A block's method, and how the SDK writes it up to its number (as for a mark).
pub const BLOCK_METHOD: &str = "$/zcode-acp/frames";
const BLOCK_PREFIX: &str =
    "{\"jsonrpc\":\"2.0\",\"method\":\"$/zcode-acp/frames\",\"params\":{\"block\":";

/// What a frame of ours in the SDK's queue stands for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Placeholder {
    Mark(u64),
    Block(u64),
}

/// The marks of one connection that are not written yet, and the blocks not yet in the
/// writer's queue.
#[derive(Default)]
pub struct Flow {
    next: AtomicU64,
    open: Mutex<HashMap<u64, oneshot::Sender<()>>>,
    blocks: Mutex<HashMap<u64, String>>,
}

impl Flow {
    /// A new mark, sent by `send` behind everything sent before; resolves once it would have
    /// been written (or once it cannot be: the connection or stdout is gone).
    pub fn mark(
        &self,
        send: impl FnOnce(UntypedMessage) -> Result<(), agent_client_protocol::Error>,
    ) -> BoxFuture<'static, ()> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (done, written) = oneshot::channel();
        self.open.lock().unwrap().insert(id, done);
        let sent =
            UntypedMessage::new(MARK_METHOD, serde_json::json!({ "mark": id })).and_then(send);
        if sent.is_err() {
            self.resolve(id);
        }
        Box::pin(async move {
            let _ = written.await;
        })
    }

    /// Queues `frames` (complete frames, one a line, no newline after the last) behind
    /// everything sent before, through `send`.
    pub fn block(
        &self,
        frames: String,
        send: impl FnOnce(UntypedMessage) -> Result<(), agent_client_protocol::Error>,
    ) -> Result<(), agent_client_protocol::Error> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.blocks.lock().unwrap().insert(id, frames);
        let sent =
            UntypedMessage::new(BLOCK_METHOD, serde_json::json!({ "block": id })).and_then(send);
        if sent.is_err() {
            self.blocks.lock().unwrap().remove(&id);
        }
        sent
    }

    /// The mark or block a frame stands for, if it is one of ours.
    pub(crate) fn recognise(frame: &str) -> Option<Placeholder> {
        let number = |rest: &str| rest.strip_suffix("}}")?.parse().ok();
        if let Some(rest) = frame.strip_prefix(MARK_PREFIX) {
            return number(rest).map(Placeholder::Mark);
        }
        number(frame.strip_prefix(BLOCK_PREFIX)?).map(Placeholder::Block)
    }

    /// The frames of a block, once: the sink hands them to the writer.
    pub(crate) fn take_block(&self, id: u64) -> Option<String> {
        self.blocks.lock().unwrap().remove(&id)
    }

    pub(crate) fn resolve(&self, id: u64) {
        if let Some(done) = self.open.lock().unwrap().remove(&id) {
            let _ = done.send(());
        }
    }

    /// Stdout is gone: nothing will be written any more, so nobody waits.
    pub(crate) fn resolve_all(&self) {
        self.open.lock().unwrap().clear();
        self.blocks.lock().unwrap().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_whole_mark_frame_is_a_mark() {
        let frame = format!("{MARK_PREFIX}42}}}}");
        assert_eq!(Flow::recognise(&frame), Some(Placeholder::Mark(42)));
        let block = format!("{BLOCK_PREFIX}7}}}}");
        assert_eq!(Flow::recognise(&block), Some(Placeholder::Block(7)));
        // Text that quotes a mark is an ordinary frame.
        let quoted = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"text\":{}}}}}",
            serde_json::to_string(&frame).unwrap()
        );
        assert_eq!(Flow::recognise(&quoted), None);
        assert_eq!(Flow::recognise(&format!("{MARK_PREFIX}42,\"x\":1}}}}")), None);
    }

    #[tokio::test]
    async fn a_mark_resolves_when_written_or_when_it_cannot_be_sent() {
        let flow = Flow::default();
        let mut sent = None;
        let written = flow.mark(|message| {
            sent = Some(message);
            Ok(())
        });
        let message = sent.expect("the mark was sent");
        assert_eq!(message.method, MARK_METHOD);
        flow.resolve(message.params["mark"].as_u64().unwrap());
        written.await;
        flow.mark(|_| Err(agent_client_protocol::Error::internal_error())).await;
    }

    #[test]
    fn a_block_is_taken_once_and_dropped_when_it_cannot_be_sent() {
        let flow = Flow::default();
        let mut sent = None;
        flow.block("a\nb".into(), |message| {
            sent = Some(message);
            Ok(())
        })
        .unwrap();
        let message = sent.expect("the placeholder was sent");
        assert_eq!(message.method, BLOCK_METHOD);
        // The SDK writes it as the sink expects.
        let written = serde_json::to_string(&serde_json::json!({
            "jsonrpc": "2.0", "method": message.method, "params": message.params
        }))
        .unwrap();
        let Some(Placeholder::Block(id)) = Flow::recognise(&written) else {
            panic!("{written} is a block");
        };
        assert_eq!(flow.take_block(id).as_deref(), Some("a\nb"));
        assert_eq!(flow.take_block(id), None);
        assert!(
            flow.block("c".into(), |_| Err(agent_client_protocol::Error::internal_error()))
                .is_err()
        );
        assert!(flow.blocks.lock().unwrap().is_empty());
    }
}
