//! The simulated Services Server process (ZCode `packages/server/src/entry-stdio.ts`,
//! `stdio.ts`): the hello line, the hello-ack, `[200]` Initialize, then channel messages in
//! arrival order until stdin ends.
//!
//! Requests are dispatched one at a time, as the channel server hands each message to its
//! service synchronously; only deliberate delays (the `late` fault, the unknown-channel
//! timeout) run in the background, and turns run as tasks of their own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::channels::{self, After, RpcError};
use super::conversation::Conversation;
use super::fault::{self, ArmedFault, Fault, Faults};
use super::ipc::message::{INITIALIZE, PROMISE_ERROR, PROMISE_SUCCESS, Request, decode_request};
use super::ipc::transport::FrameDecoder;
use super::ipc::value::RpcValue;
use super::out::Messages;
use super::profile::RuntimeProfile;
use super::router::Router;
use super::store::{ConversationStore, Saved};
use super::{launch, turn};
use crate::common::output::Output;
use crate::common::process::{
    ScenarioOptions, Shutdown, block_on, node_arch, node_platform, number,
};
use crate::v4::wire;

/// `ChannelServer`'s default: a call to an unknown channel fails after this long.
const UNKNOWN_CHANNEL_TIMEOUT: Duration = Duration::from_millis(1000);
/// The entry's hello-ack timeout.
const HELLO_ACK_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest hello-ack line accepted before giving up on it.
const MAX_ACK_BYTES: usize = 64 * 1024;

pub type Shared = Arc<Mutex<Conversation>>;

/// Settings read once at start.
pub struct Options {
    pub scenario_file: Option<PathBuf>,
    pub chunk_delay: Option<Duration>,
    pub max_physical_frame_bytes: usize,
}

pub struct Server {
    pub profile: &'static RuntimeProfile,
    pub options: Options,
    pub faults: Faults,
    pub out: Arc<Output>,
    pub router: Arc<Router>,
    pub store: ConversationStore,
    /// `server-stdio-<uuid>`, as the stdio entry names its connection.
    pub connection_id: String,
    pub signed_out: AtomicBool,
    /// The `clientId` the first `initializeConversationV4` bound.
    pub client_id: Mutex<Option<String>>,
    pub ask_auto_resolution: AtomicBool,
    /// `stale-cas` fired: the next CAS command is answered stale whatever its base.
    pub stale_next_cas: AtomicBool,
    pub settings: Mutex<Value>,
    /// A sign-in started by `oauth.startOAuthWithPolling`, waiting to be polled.
    pub pending_oauth: Mutex<Option<String>>,
    sessions: Mutex<HashMap<String, Shared>>,
    /// Subscription id → session id.
    subscriptions: Mutex<HashMap<String, String>>,
}

impl Server {
    pub fn conversation(&self, session_id: &str) -> Option<Shared> {
        self.sessions.lock().expect("sessions lock").get(session_id).cloned()
    }

    /// The session, loading it from disk when this process has not seen it yet. Loading
    /// settles whatever a dead process left running.
    pub fn load(&self, session_id: &str) -> Result<Option<(Shared, bool)>, String> {
        if let Some(shared) = self.conversation(session_id) {
            return Ok(Some((shared, false)));
        }
        let Some(saved) = self.store.load(session_id)? else { return Ok(None) };
        Ok(Some((self.insert_loaded(saved), true)))
    }

    fn insert_loaded(&self, saved: Saved) -> Shared {
        let mut conversation =
            Conversation::new(saved.record, saved.log, true, self.router.clone());
        conversation.settle_after_restart();
        conversation.ask_auto_resolution = self.ask_auto_resolution.load(Ordering::SeqCst);
        self.insert(conversation)
    }

    pub fn insert(&self, conversation: Conversation) -> Shared {
        let id = conversation.id().to_owned();
        let shared = Arc::new(Mutex::new(conversation));
        self.sessions.lock().expect("sessions lock").insert(id, shared.clone());
        shared
    }

    pub fn forget(&self, session_id: &str) {
        self.sessions.lock().expect("sessions lock").remove(session_id);
        self.subscriptions
            .lock()
            .expect("subscriptions lock")
            .retain(|_, session| session != session_id);
    }

    pub fn bind_subscription(&self, subscription_id: &str, session_id: &str) {
        let mut subscriptions = self.subscriptions.lock().expect("subscriptions lock");
        // One subscription per session and connection: a new one replaces the old.
        subscriptions.retain(|_, session| session != session_id);
        subscriptions.insert(subscription_id.to_owned(), session_id.to_owned());
    }

    pub fn subscription_session(&self, subscription_id: &str) -> Option<String> {
        self.subscriptions.lock().expect("subscriptions lock").get(subscription_id).cloned()
    }

    pub fn unbind_subscription(&self, subscription_id: &str) {
        self.subscriptions.lock().expect("subscriptions lock").remove(subscription_id);
    }

    /// Saves the session unless it is still a deferred draft.
    pub fn persist(&self, conversation: &Conversation) {
        if conversation.persisted
            && let Err(error) = self.store.save(&conversation.record, &conversation.publisher.log)
        {
            eprintln!("zcode-sim: {error}");
        }
    }

    pub fn is_signed_out(&self) -> bool {
        self.signed_out.load(Ordering::SeqCst)
    }

    /// Fires a fault whose point was reached; `Err` when the caller must stop (the process is
    /// exiting or the work froze).
    pub fn fire(&self, armed: &ArmedFault) -> Result<(), Frozen> {
        self.fire_in(armed, None)
    }

    /// [`Self::fire`] for a fault a turn of conversation `topic` reached: a frame fault is
    /// that conversation's.
    pub fn fire_in(&self, armed: &ArmedFault, topic: Option<&str>) -> Result<(), Frozen> {
        match armed.kind {
            Fault::Crash => {
                let message =
                    format!("zcode-server:stdio fatal: Error: simulated crash at {}", armed.point);
                self.out.exit(1, Some(message));
                Err(Frozen)
            }
            Fault::Exit => {
                self.out.exit(1, None);
                Err(Frozen)
            }
            Fault::Stall => Err(Frozen),
            Fault::StaleCas => {
                self.stale_next_cas.store(true, Ordering::SeqCst);
                Ok(())
            }
            fault if fault.is_frame_fault() => {
                self.router.arm(topic, fault);
                Ok(())
            }
            fault => {
                self.router.write_broken(fault);
                Ok(())
            }
        }
    }
}

/// A fault stopped the work for good (the process exits or the work never continues).
#[derive(Debug)]
pub struct Frozen;

/// Runs the server; `argv` is what Node received after the script.
pub fn run(root: &Path, profile: &'static RuntimeProfile) -> std::process::ExitCode {
    if let Err(message) = launch::check(|key| std::env::var(key).ok()) {
        eprintln!("zcode-sim: {message}");
        return std::process::ExitCode::from(1);
    }
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("zcode-sim: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let faults = match Faults::from_env(&channels::all_methods()) {
        Ok(faults) => faults,
        Err(message) => {
            eprintln!("zcode-sim: invalid ZCODE_SIM_FAULT: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let root = root.to_path_buf();
    block_on(async move {
        let out = Output::start(faults.has(Fault::SplitWrites));
        let router = Arc::new(Router::new(out.clone(), options.max_physical_frame_bytes));
        let server = Arc::new(Server {
            profile,
            store: ConversationStore::for_root(&root),
            options,
            faults,
            out,
            router,
            connection_id: format!("server-stdio-{}", uuid::Uuid::new_v4()),
            signed_out: AtomicBool::new(crate::common::auth::signed_out()),
            client_id: Mutex::new(None),
            ask_auto_resolution: AtomicBool::new(true),
            stale_next_cas: AtomicBool::new(false),
            settings: Mutex::new(json!({})),
            pending_oauth: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            subscriptions: Mutex::new(HashMap::new()),
        });
        serve(server).await
    });
    std::process::ExitCode::SUCCESS
}

fn options() -> Result<Options, String> {
    let ScenarioOptions { scenario_file, chunk_delay } = ScenarioOptions::from_env()?;
    // A simulator knob (not a ZCode variable): a lower physical limit makes fragments common.
    let max_physical_frame_bytes = match number("ZCODE_SIM_V4_MAX_FRAME_BYTES")? {
        None => wire::MAX_FRAME_BYTES,
        Some(bytes) if (2048..=wire::MAX_FRAME_BYTES as u64).contains(&bytes) => bytes as usize,
        Some(bytes) => {
            return Err(format!(
                "ZCODE_SIM_V4_MAX_FRAME_BYTES must be between 2048 and {}: {bytes}",
                wire::MAX_FRAME_BYTES
            ));
        }
    };
    Ok(Options { scenario_file, chunk_delay, max_physical_frame_bytes })
}

async fn serve(server: Arc<Server>) {
    let out = server.out.clone();
    let mut shutdown = Shutdown::install();
    let mut stalled = false;
    for armed in server.faults.take(fault::START) {
        match armed.kind {
            Fault::SlowStart => tokio::time::sleep(armed.delay()).await,
            _ => stalled |= server.fire(&armed).is_err(),
        }
    }
    let mut stdin = tokio::io::stdin();
    if !stalled {
        let mut version = server.profile.server_version.to_owned();
        for armed in server.faults.take(fault::HELLO) {
            match armed.kind {
                Fault::WrongHelloVersion => version = "0.0.0-simulated-mismatch".into(),
                _ => stalled |= server.fire(&armed).is_err(),
            }
        }
        let hello = json!({"type": "zcode-hello", "version": version, "platform": node_platform(),
                       "arch": node_arch(), "pid": std::process::id()});
        out.bytes(format!("{hello}\n").into_bytes());
        if !stalled {
            let mut decoder = FrameDecoder::default();
            match read_ack(&mut stdin, &mut decoder, &mut shutdown).await {
                Ok(()) => {
                    out.message(INITIALIZE, None, &RpcValue::Undefined);
                    read_messages(&server, &mut stdin, decoder, &mut shutdown).await;
                }
                Err(AckFailure::Fatal(message)) => {
                    out.exit(1, Some(format!("zcode-server:stdio fatal: Error: {message}")));
                    std::future::pending::<()>().await;
                }
                Err(AckFailure::Shutdown) => {}
            }
        }
    }
    if stalled {
        // Nothing more is read or written; stdin is drained so its end can be noticed.
        let mut sink = vec![0u8; 1 << 16];
        loop {
            tokio::select! {
                read = stdin.read(&mut sink) => if matches!(read, Ok(0) | Err(_)) { break },
                () = shutdown.requested() => break,
            }
        }
    }
    // Stdin ended or a signal came: listeners go first, then the process.
    server.router.dispose_all();
    out.exit(0, None);
    std::future::pending::<()>().await;
}

enum AckFailure {
    Fatal(String),
    Shutdown,
}

/// Reads the one-line hello-ack; bytes after its newline already belong to the binary phase.
async fn read_ack(
    stdin: &mut tokio::io::Stdin,
    decoder: &mut FrameDecoder,
    shutdown: &mut Shutdown,
) -> Result<(), AckFailure> {
    let mut line = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let deadline = tokio::time::Instant::now() + HELLO_ACK_TIMEOUT;
    loop {
        if let Some(newline) = line.iter().position(|byte| *byte == b'\n') {
            decoder.push(&line[newline + 1..]);
            return check_ack(&line[..newline]).map_err(AckFailure::Fatal);
        }
        if line.len() > MAX_ACK_BYTES {
            return Err(AckFailure::Fatal("Invalid hello-ack: line too long".into()));
        }
        tokio::select! {
            read = stdin.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return Err(AckFailure::Fatal("stdin closed before the hello-ack".into())),
                Ok(count) => line.extend_from_slice(&chunk[..count]),
            },
            () = tokio::time::sleep_until(deadline) => {
                return Err(AckFailure::Fatal("Handshake timeout: no hello-ack received within 10s".into()));
            }
            () = shutdown.requested() => return Err(AckFailure::Shutdown),
        }
    }
}

/// `helloAckMessageSchema`: `{type: "zcode-hello-ack", version: string, clientId: non-empty}`.
fn check_ack(line: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(line);
    let ack: Value = serde_json::from_str(text.trim())
        .map_err(|error| format!("Failed to parse hello-ack: {error}"))?;
    let mut problems = Vec::new();
    if ack.get("type").and_then(Value::as_str) != Some("zcode-hello-ack") {
        problems.push("type: expected \"zcode-hello-ack\"");
    }
    if !ack.get("version").is_some_and(Value::is_string) {
        problems.push("version: expected string");
    }
    if ack.get("clientId").and_then(Value::as_str).is_none_or(|id| id.trim().is_empty()) {
        problems.push("clientId: expected a non-empty string");
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("Invalid hello-ack: {}", problems.join("; ")))
    }
}

async fn read_messages(
    server: &Arc<Server>,
    stdin: &mut tokio::io::Stdin,
    mut decoder: FrameDecoder,
    shutdown: &mut Shutdown,
) {
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        while let Some(body) = decoder.next_body() {
            match decode_request(&body) {
                Ok(Some(request)) => handle(server, request),
                Ok(None) => {}
                // The real channel server cannot answer a message it cannot read either.
                Err(error) => eprintln!("zcode-sim: ignored an unreadable message: {error}"),
            }
        }
        tokio::select! {
            read = stdin.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return,
                Ok(count) => decoder.push(&chunk[..count]),
            },
            () = shutdown.requested() => return,
        }
    }
}

fn handle(server: &Arc<Server>, request: Request) {
    match request {
        Request::Call { id, channel, method, args } => call(server, id, &channel, &method, args),
        Request::Listen { id, channel, event, arg } => {
            if let Err(message) = channels::listen(server, &channel, &event, arg.as_ref(), id) {
                // The listen path has no error response: the failure stays on this side.
                eprintln!("zcode-sim: listen {channel}.{event} failed: {message}");
            }
        }
        // Both dispose the request's registration: a listen stops, a call's token is
        // cancelled (no simulated service looks at it, so its answer still comes).
        Request::Cancel { id } | Request::Dispose { id } => {
            server.router.dispose(id);
        }
    }
}

fn call(server: &Arc<Server>, id: i64, channel: &str, method: &str, args: Vec<Option<Value>>) {
    let mut delay = None;
    let mut duplicate = false;
    let mut armed = server.faults.take(method);
    if let Some(command) = channels::command_point(method, &args) {
        armed.extend(server.faults.take(command));
    }
    for armed in armed {
        match armed.kind {
            Fault::Late => delay = Some(armed.delay()),
            Fault::Duplicate => duplicate = true,
            Fault::BigHistory => seed_big_history(server, &args, armed.value),
            _ => {
                if server.fire(&armed).is_err() {
                    return;
                }
            }
        }
    }
    let Some(reply) = channels::call(server, channel, method, &args) else {
        let out = server.out.clone();
        let error = RpcError::unknown_channel(channel, UNKNOWN_CHANNEL_TIMEOUT);
        tokio::spawn(async move {
            tokio::time::sleep(UNKNOWN_CHANNEL_TIMEOUT).await;
            out.message(PROMISE_ERROR, Some(id), &RpcValue::Object(error.to_json()));
        });
        return;
    };
    let (kind, body) = match reply.result {
        Ok(Some(value)) => (PROMISE_SUCCESS, RpcValue::from_json(&value)),
        Ok(None) => (PROMISE_SUCCESS, RpcValue::Undefined),
        Err(error) => (PROMISE_ERROR, RpcValue::Object(error.to_json())),
    };
    let out = server.out.clone();
    let write = move || {
        out.message(kind, Some(id), &body);
        if duplicate {
            out.message(kind, Some(id), &body);
        }
    };
    match delay {
        None => write(),
        Some(delay) => {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                write();
            });
        }
    }
    // Turns start once their acknowledgement is on its way.
    if let After::Drive(shared) = reply.after {
        turn::drive(server.clone(), shared);
    }
}

/// The `big-history` fault at the history read: the session the call names finds `mib` MiB
/// of history before its own rows (an unknown session is left to the call to refuse).
fn seed_big_history(server: &Server, args: &[Option<Value>], mib: u64) {
    let session_id =
        args.first().and_then(Option::as_ref).and_then(|params| params["sessionId"].as_str());
    let Some(Ok(Some((shared, _)))) = session_id.map(|id| server.load(id)) else { return };
    let mut conversation = shared.lock().expect("conversation lock");
    turn::prepend_big_history(&mut conversation, mib * 1024 * 1024);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_the_hello_ack_schema() {
        assert!(check_ack(br#"{"type":"zcode-hello-ack","version":"1","clientId":"c"}"#).is_ok());
        assert!(check_ack(br#"{"type":"zcode-hello-ack","version":"1","clientId":"  "}"#).is_err());
        assert!(check_ack(br#"{"type":"zcode-hello","version":"1","clientId":"c"}"#).is_err());
        assert!(
            check_ack(br#"{"type":"zcode-hello-ack","clientId":"c"}"#)
                .unwrap_err()
                .contains("version")
        );
        assert!(check_ack(b"not json").unwrap_err().contains("Failed to parse"));
    }
}
