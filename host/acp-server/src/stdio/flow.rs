//! Knowing when the client has read what a session sent.
//!
//! The SDK queues outgoing messages without bound, in two queues before our writer thread, so a
//! client that reads slowly would let a long turn pile up in this process. A session instead
//! asks, after each batch it sends, for a *mark*: a notification of our own that follows the
//! batch through the SDK's queues in order. The stdout sink recognises it, never writes it, and
//! the writer thread resolves it once every frame before it is written. A session keeps at most
//! a couple of marks open, so what it has in flight is bounded and a slow client slows ZCode
//! down instead of filling memory.

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

/// The marks of one connection that are not written yet.
#[derive(Default)]
pub struct Flow {
    next: AtomicU64,
    open: Mutex<HashMap<u64, oneshot::Sender<()>>>,
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

    /// The mark a frame is, if it is one.
    pub(crate) fn recognise(frame: &str) -> Option<u64> {
        let rest = frame.strip_prefix(MARK_PREFIX)?;
        rest.strip_suffix("}}")?.parse().ok()
    }

    pub(crate) fn resolve(&self, id: u64) {
        if let Some(done) = self.open.lock().unwrap().remove(&id) {
            let _ = done.send(());
        }
    }

    /// Stdout is gone: nothing will be written any more, so nobody waits.
    pub(crate) fn resolve_all(&self) {
        self.open.lock().unwrap().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_whole_mark_frame_is_a_mark() {
        let frame = format!("{MARK_PREFIX}42}}}}");
        assert_eq!(Flow::recognise(&frame), Some(42));
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
}
