//! Connection state in arrival order: input that follows an `initialize` request waits until
//! that request has been answered.
//!
//! The SDK checks each request against the connection's state when it reads it, but marks the
//! connection initialized only when the `initialize` answer is *written*. A client that
//! pipelines `session/new` right behind `initialize` (without waiting for the answer) therefore
//! raced the answer and could be refused with "ACP initialization must complete", although
//! the server answers `initialize` first. Holding the next line until the answer has gone out
//! makes every request see the state its predecessors left, whatever the timing.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::Notify;

/// Shared by the stdin reader (which closes it) and the stdout sink (which opens it).
#[derive(Default)]
pub struct InitializeGate {
    /// Fast path for the sink: nothing is awaited.
    closed: AtomicBool,
    /// The id of the `initialize` request whose answer is awaited.
    awaited: Mutex<Option<Value>>,
    opened: Notify,
}

/// The members of a frame the gate looks at; everything else is skipped unparsed.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

impl InitializeGate {
    /// Called for each line read, before it is handed on: an `initialize` request with a
    /// usable id closes the gate until its answer is written.
    pub fn on_incoming(&self, line: &str) {
        // Cheap filter first: only a line naming the method is parsed.
        if !line.contains("\"initialize\"") {
            return;
        }
        let Ok(frame) = serde_json::from_str::<Envelope>(line) else { return };
        // Only a request the SDK will take as one (and so answer under its id).
        let usable_id = frame.id.filter(|id| id.is_string() || id.is_i64() || id.is_u64());
        let well_formed = frame.jsonrpc.as_deref() == Some("2.0")
            && frame.params.as_ref().is_none_or(|p| p.is_object() || p.is_array())
            && frame.result.is_none()
            && frame.error.is_none();
        if frame.method.as_deref() == Some("initialize")
            && well_formed
            && let Some(id) = usable_id
        {
            *self.awaited.lock().unwrap() = Some(id);
            self.closed.store(true, Ordering::SeqCst);
        }
    }

    /// Called for each frame written: the answer to the awaited `initialize` opens the gate,
    /// and so does an error answered under `null` (the SDK's answer to a request it could not
    /// read as one), so the gate never waits for an answer that will not come.
    pub fn on_outgoing(&self, frame: &str) {
        if !self.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(frame) = serde_json::from_str::<Envelope>(frame) else { return };
        let is_response =
            frame.method.is_none() && (frame.result.is_some() || frame.error.is_some());
        if !is_response {
            return;
        }
        let uncorrelated = frame.error.is_some() && frame.id.as_ref().is_none_or(Value::is_null);
        let mut awaited = self.awaited.lock().unwrap();
        if awaited.is_some() && (*awaited == frame.id || uncorrelated) {
            *awaited = None;
            self.closed.store(false, Ordering::SeqCst);
            self.opened.notify_waiters();
        }
    }

    /// Returns once no `initialize` answer is awaited.
    pub async fn wait_open(&self) {
        loop {
            // Created before the check: `notify_waiters` reaches it even if not polled yet.
            let opened = self.opened.notified();
            if !self.closed.load(Ordering::SeqCst) {
                return;
            }
            opened.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::FutureExt;

    use super::*;

    fn is_open(gate: &InitializeGate) -> bool {
        gate.wait_open().now_or_never().is_some()
    }

    #[tokio::test]
    async fn an_initialize_request_holds_input_until_its_own_answer_is_written() {
        let gate = Arc::new(InitializeGate::default());
        gate.on_incoming(r#"{"jsonrpc":"2.0","id":"i-1","method":"initialize","params":{}}"#);
        assert!(!is_open(&gate));
        // Other frames, and answers to other ids, do not open it.
        gate.on_outgoing(r#"{"jsonrpc":"2.0","method":"session/update","params":{"id":"i-1"}}"#);
        gate.on_outgoing(r#"{"jsonrpc":"2.0","id":"i-2","result":{}}"#);
        gate.on_outgoing(r#"{"jsonrpc":"2.0","id":"i-1","method":"initialize"}"#);
        assert!(!is_open(&gate));
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.wait_open().await }
        });
        gate.on_outgoing(r#"{"jsonrpc":"2.0","id":"i-1","error":{"code":-32602,"message":"x"}}"#);
        waiter.await.unwrap();
        assert!(is_open(&gate));
    }

    #[test]
    fn only_initialize_requests_with_a_usable_id_close_it() {
        let gate = InitializeGate::default();
        for line in [
            r#"{"jsonrpc":"2.0","method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"initialize"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"initialize"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"text":"initialize"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize""#,
            r#"{"jsonrpc":"1.0","id":5,"method":"initialize"}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"initialize","params":"text"}"#,
            "initialize",
        ] {
            gate.on_incoming(line);
            assert!(is_open(&gate), "{line}");
        }
        gate.on_incoming(r#"{"id":7,"jsonrpc":"2.0","method":"initialize"}"#);
        assert!(!is_open(&gate));
        gate.on_outgoing(r#"{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":1}}"#);
        assert!(is_open(&gate));
        // An error the SDK could not correlate opens it too.
        gate.on_incoming(r#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}"#);
        assert!(!is_open(&gate));
        gate.on_outgoing(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#);
        assert!(is_open(&gate));
    }
}
