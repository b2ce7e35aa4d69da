//! Requests the Agent sends to its host (3.15.1 `server.ts` `requestClient`): ids
//! `server-<n>` counting from 1 per process, an optional timeout, and — for interactions — a
//! re-announce of the same params under a new id while unanswered, after 1 s, then doubling up
//! to 10 s. An answer to any of a request's ids settles it; answers to settled or unknown ids
//! are dropped silently. An answer that fails the request's result schema rejects it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use super::wire::{CLIENT_REQUEST_CANCELLED, CLIENT_REQUEST_TIMED_OUT, ProtocolError};
use super::zod::{self, Schema};

/// Where announcements are written (the process's single stdout writer in production).
pub type FrameWriter = Arc<dyn Fn(&Value) + Send + Sync>;

/// Asked, while a host answer is being routed, whether the answer may still settle the
/// interaction it belongs to (`false` once a V4 answer won the race).
pub type Claim = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The cap of the re-announce back-off (`MAX_CLIENT_REQUEST_REANNOUNCE_INTERVAL_MS`).
const MAX_REANNOUNCE: Duration = Duration::from_secs(10);

/// How a request to the host failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// The host answered with an error object.
    Remote(ProtocolError),
    /// The answer failed the result schema (zod issues).
    Invalid(Vec<Value>),
    TimedOut {
        timeout_ms: u64,
    },
    Cancelled,
}

impl ClientError {
    /// The protocol error a handler reports when it lets this failure escape.
    pub fn into_protocol(self, method: &str) -> ProtocolError {
        match self {
            ClientError::Remote(error) => error,
            ClientError::Invalid(issues) => {
                let pretty = serde_json::to_string_pretty(&issues).expect("issues serialize");
                ProtocolError::internal("ZodError", pretty, None)
            }
            ClientError::TimedOut { timeout_ms } => ProtocolError::new(
                CLIENT_REQUEST_TIMED_OUT,
                format!("Client request timed out: {method}"),
            )
            .with_data(json!({"timeoutMs": timeout_ms})),
            ClientError::Cancelled => ProtocolError::new(
                CLIENT_REQUEST_CANCELLED,
                format!("Client request cancelled: {method}"),
            ),
        }
    }
}

/// One request to send.
pub struct ClientRequest {
    pub method: &'static str,
    pub params: Value,
    pub result: Schema,
    pub timeout: Option<Duration>,
    /// Re-announce while unanswered (interactions only).
    pub reannounce: bool,
    /// Send the second announcement at once (the `interaction-race` fault).
    pub announce_twice: bool,
    /// Set to `true` to abandon the request (turn stopped, V4 answer arrived).
    pub cancel: Vec<watch::Receiver<bool>>,
    /// The interaction this request asks about, for the race with V4 answers.
    pub interaction: Option<String>,
    /// Told once the first announcement is written (fault points that mean "while the host
    /// is being asked" wait for it).
    pub announced: Option<oneshot::Sender<()>>,
}

impl ClientRequest {
    pub fn new(method: &'static str, params: Value, result: Schema) -> ClientRequest {
        ClientRequest {
            method,
            params,
            result,
            timeout: None,
            reannounce: false,
            announce_twice: false,
            cancel: Vec::new(),
            interaction: None,
            announced: None,
        }
    }
}

struct Slot {
    reply: Option<oneshot::Sender<Result<Value, ProtocolError>>>,
    keys: Vec<String>,
    interaction: Option<String>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    next_slot: u64,
    /// Request id (as a string) → slot.
    keys: HashMap<String, u64>,
    slots: HashMap<u64, Slot>,
}

pub struct Reverse {
    write: FrameWriter,
    claim: Option<Claim>,
    table: Mutex<Table>,
    /// First re-announce interval (1 s; `ZCODE_SIM_REANNOUNCE_MS` shortens it for tests).
    reannounce_base: Duration,
}

/// The key an id is filed under: a string id as is, a number by its JSON text.
fn key_of(id: &Value) -> String {
    match id {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl Reverse {
    pub fn new(write: FrameWriter, reannounce_base: Duration) -> Reverse {
        Reverse { write, claim: None, table: Mutex::new(Table::default()), reannounce_base }
    }

    /// Routes answers to interactions through `claim` first.
    pub fn with_claim(mut self, claim: Claim) -> Reverse {
        self.claim = Some(claim);
        self
    }

    /// Sends the request and waits for its outcome.
    pub async fn request(&self, mut request: ClientRequest) -> Result<Value, ClientError> {
        let (reply, answer) = oneshot::channel();
        let slot = {
            let mut table = self.table.lock().expect("reverse table lock");
            table.next_slot += 1;
            let slot = table.next_slot;
            let interaction = request.interaction.clone();
            table.slots.insert(slot, Slot { reply: Some(reply), keys: Vec::new(), interaction });
            slot
        };
        self.announce(slot, &request);
        if request.announce_twice {
            self.announce(slot, &request);
        }
        if let Some(announced) = request.announced.take() {
            let _ = announced.send(());
        }
        let timeout = async {
            match request.timeout {
                Some(duration) => tokio::time::sleep(duration).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(timeout, answer);
        let mut interval = self.reannounce_base;
        let mut cancel = std::mem::take(&mut request.cancel);
        let outcome = loop {
            let reannounce = async {
                if request.reannounce {
                    tokio::time::sleep(interval).await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                biased;
                answered = &mut answer => break match answered {
                    Ok(Ok(result)) => {
                        let issues = zod::check(&request.result, Some(&result));
                        if issues.is_empty() { Ok(result) } else { Err(ClientError::Invalid(issues)) }
                    }
                    Ok(Err(error)) => Err(ClientError::Remote(error)),
                    Err(_) => Err(ClientError::Cancelled),
                },
                () = cancelled(&mut cancel) => break Err(ClientError::Cancelled),
                () = &mut timeout => break Err(ClientError::TimedOut {
                    timeout_ms: request.timeout.map_or(0, |timeout| timeout.as_millis() as u64),
                }),
                () = reannounce => {
                    self.announce(slot, &request);
                    interval = (interval * 2).min(MAX_REANNOUNCE);
                }
            }
        };
        self.forget(slot);
        outcome
    }

    /// Writes one announcement under a fresh id.
    fn announce(&self, slot: u64, request: &ClientRequest) {
        let id = {
            let mut table = self.table.lock().expect("reverse table lock");
            table.next_id += 1;
            let id = format!("server-{}", table.next_id);
            table.keys.insert(id.clone(), slot);
            if let Some(entry) = table.slots.get_mut(&slot) {
                entry.keys.push(id.clone());
            }
            id
        };
        (self.write)(&json!({"id": id, "method": request.method, "params": request.params}));
    }

    fn forget(&self, slot: u64) {
        let mut table = self.table.lock().expect("reverse table lock");
        if let Some(entry) = table.slots.remove(&slot) {
            for key in entry.keys {
                table.keys.remove(&key);
            }
        }
    }

    /// Routes a host response; `false` when no pending request has this id.
    pub fn settle(&self, id: &Value, outcome: Result<Value, ProtocolError>) -> bool {
        let mut table = self.table.lock().expect("reverse table lock");
        let Some(slot) = table.keys.get(&key_of(id)).copied() else { return false };
        let Some(entry) = table.slots.get_mut(&slot) else { return false };
        // The answer loses when a V4 answer already resolved the interaction.
        if let (Some(claim), Some(interaction)) = (&self.claim, &entry.interaction)
            && entry.reply.is_some()
            && !claim(interaction)
        {
            return false;
        }
        match entry.reply.take() {
            Some(reply) => {
                let _ = reply.send(outcome);
                true
            }
            None => false,
        }
    }

    /// The ids currently awaiting an answer (diagnostics and tests).
    #[cfg(test)]
    pub fn pending_ids(&self) -> Vec<String> {
        let table = self.table.lock().expect("reverse table lock");
        let mut ids: Vec<String> = table.keys.keys().cloned().collect();
        ids.sort();
        ids
    }
}

/// Resolves once any of the receivers turns `true`; a receiver whose sender is gone never
/// fires (never when there are none).
async fn cancelled(receivers: &mut [watch::Receiver<bool>]) {
    type Wait<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;
    let mut waits: Vec<Wait<'_>> = receivers
        .iter_mut()
        .map(|receiver| -> Wait<'_> {
            Box::pin(async move {
                if receiver.wait_for(|flag| *flag).await.is_err() {
                    std::future::pending::<()>().await;
                }
            })
        })
        .collect();
    std::future::poll_fn(|context| {
        for wait in &mut waits {
            if wait.as_mut().poll(context).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink() -> FrameWriter {
        Arc::new(|_: &Value| {})
    }

    #[tokio::test]
    async fn an_answer_to_any_announced_id_settles_the_request() {
        let reverse = Arc::new(Reverse::new(sink(), Duration::from_millis(5)));
        let mut request =
            ClientRequest::new("interaction/requestPermission", json!({}), Schema::Unknown);
        request.reannounce = true;
        let task = tokio::spawn({
            let reverse = reverse.clone();
            async move { reverse.request(request).await }
        });
        while reverse.pending_ids().len() < 2 {
            tokio::task::yield_now().await;
        }
        assert!(reverse.settle(&json!("server-1"), Ok(json!({"decision": "allow"}))));
        assert_eq!(task.await.unwrap(), Ok(json!({"decision": "allow"})));
        assert!(!reverse.settle(&json!("server-2"), Ok(json!({}))), "late answers are dropped");
        assert!(reverse.pending_ids().is_empty());
    }

    #[tokio::test]
    async fn timeouts_invalid_answers_and_cancellation_are_distinct() {
        let reverse = Arc::new(Reverse::new(sink(), Duration::from_secs(1)));
        let mut timed =
            ClientRequest::new("session/requestRuntimePreferences", json!({}), Schema::Bool);
        timed.timeout = Some(Duration::from_millis(1));
        assert_eq!(reverse.request(timed).await, Err(ClientError::TimedOut { timeout_ms: 1 }));

        let request = ClientRequest::new("x/y", json!({}), Schema::Bool);
        let task = tokio::spawn({
            let reverse = reverse.clone();
            async move { reverse.request(request).await }
        });
        while reverse.pending_ids().is_empty() {
            tokio::task::yield_now().await;
        }
        reverse.settle(&json!(reverse.pending_ids()[0]), Ok(json!("no")));
        assert!(matches!(task.await.unwrap(), Err(ClientError::Invalid(_))));

        let (stop, stopped) = watch::channel(false);
        let mut request = ClientRequest::new("x/z", json!({}), Schema::Unknown);
        request.cancel.push(stopped);
        stop.send_replace(true);
        assert_eq!(reverse.request(request).await, Err(ClientError::Cancelled));
    }
}
