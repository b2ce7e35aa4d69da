//! The Agent process on stdio: start-up (the storage frames, `--prepare-storage`), the line
//! reader, the request queue and the method table.
//!
//! Ordering follows the 3.15.1 transport (`zcode-protocol/transport.ts`): requests are handled
//! one at a time in arrival order — a request that waits on the host (such as
//! `session/create` waiting for `session/requestRuntimePreferences`) holds up the ones behind
//! it — except responses to the Agent's own requests and `session/stop` /
//! `workspace/cancelGenerateText`, which are handled at once. A response is written together
//! with the notifications that belong to it (a V4 subscribe's initial frame), with nothing in
//! between.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Stdin};
use tokio::sync::mpsc;

use super::fault::AppFault;
use super::server::{INVALID_UTF8_LINE, MALFORMED_LINE, Reply, Server, not_simulated};
use super::wire::{self, Incoming, ProtocolError};
use super::{legacy, turn, v4};
use crate::common::process::read_lines;

/// Handled at once instead of queued (the transport's bypass list).
const BYPASS: &[&str] = &["session/stop", "workspace/cancelGenerateText"];

type Queue = mpsc::UnboundedSender<(Value, String, Option<Value>)>;

/// Reads stdin until it closes, then exits the process.
pub async fn serve(server: Arc<Server>, prepare_storage: bool) {
    let mut stalled = false;
    for armed in server.faults.take("start") {
        match armed.kind {
            AppFault::SlowStart => tokio::time::sleep(armed.delay()).await,
            AppFault::Crash => server.out.exit(1, Some("Error: simulated crash at start".into())),
            AppFault::Exit => server.out.exit(1, None),
            AppFault::Stall => stalled = true,
            _ => {}
        }
    }
    let mut reader = BufReader::with_capacity(1 << 16, tokio::io::stdin());
    if prepare_storage {
        // Preparing the storage is all this mode does (storage-startup source).
        match storage_path_handshake(&server, &mut reader).await {
            Ok(reuse) => {
                if !reuse {
                    storage_startup_frames(&server);
                }
                server.out.frame(&wire::notification("startup/storagePrepared", json!({})));
                server.out.exit(0, None);
            }
            Err((kind, message)) => {
                let database_id = server.state().store.database_id();
                server.out.frame(&wire::notification(
                    "startup/storageState",
                    json!({"schemaVersion": 1, "attemptId": uuid::Uuid::new_v4().to_string(),
                           "databaseId": database_id, "databaseKind": "session",
                           "sequence": 1, "phase": "failed", "elapsedMs": 0,
                           "errorCode": kind}),
                ));
                server.out.exit(1, Some(message));
            }
        }
        return std::future::pending().await;
    }
    storage_startup_frames(&server);
    let (queue, mut queued) = mpsc::unbounded_channel::<(Value, String, Option<Value>)>();
    let worker = tokio::spawn({
        let server = server.clone();
        async move {
            while let Some((id, method, params)) = queued.recv().await {
                handle(server.clone(), id, method, params).await;
            }
        }
    });
    read_lines(&mut reader, stalled, |line| on_line(&server, line, &queue)).await;
    // Like the transport at EOF: short requests already queued may still answer.
    drop(queue);
    let _ = tokio::time::timeout(Duration::from_millis(100), worker).await;
    server.out.exit(0, None);
    std::future::pending::<()>().await;
}

fn on_line(server: &Arc<Server>, line: &[u8], queue: &Queue) {
    match wire::decode(line) {
        Incoming::Blank | Incoming::Notification { .. } => {}
        Incoming::ParseError => server.out.frame(&wire::parse_error_frame()),
        Incoming::Invalid(issues) => server.out.frame(&wire::invalid_message_frame(&issues)),
        Incoming::Response { id, result } => {
            server.reverse.settle(&id, Ok(result));
        }
        Incoming::ErrorResponse { id, code, message, data } => {
            server.reverse.settle(&id, Err(ProtocolError { code, message, data }));
        }
        Incoming::Request { id, method, params } => {
            if BYPASS.contains(&method.as_str()) {
                tokio::spawn(handle(server.clone(), id, method, params));
            } else {
                let _ = queue.send((id, method, params));
            }
        }
    }
}

/// Handles one request to completion and writes its response.
async fn handle(server: Arc<Server>, id: Value, method: String, params: Option<Value>) {
    // Faults about the request itself; the others are consumed by the handlers.
    let generic = [
        AppFault::Crash,
        AppFault::Exit,
        AppFault::Stall,
        AppFault::Malformed,
        AppFault::InvalidUtf8,
    ];
    for armed in server.faults.take_kinds(&method, &generic) {
        match armed.kind {
            AppFault::Crash => {
                return server.out.exit(1, Some(format!("Error: simulated crash at {method}")));
            }
            AppFault::Exit => return server.out.exit(1, None),
            AppFault::Stall => return std::future::pending().await,
            AppFault::InvalidUtf8 => server.out.bytes(INVALID_UTF8_LINE.to_vec()),
            _ => server.out.bytes(MALFORMED_LINE.to_vec()),
        }
    }
    let outcome = dispatch(&server, &method, params).await;
    let mut frames = Vec::new();
    let start = match outcome {
        Ok(reply) => {
            frames.extend(reply.before);
            frames.push(wire::result_frame(&id, reply.result));
            frames.extend(reply.after);
            reply.start
        }
        Err(error) => {
            frames.push(wire::error_frame(&id, &error));
            None
        }
    };
    let mut bytes = Vec::new();
    for line in lines(frames, server.options.array_lines) {
        serde_json::to_writer(&mut bytes, &line).expect("frames serialize");
        bytes.push(b'\n');
    }
    server.out.bytes(bytes);
    if let Some(start) = start {
        tokio::spawn(turn::run(server.clone(), start));
    }
}

/// The lines of frames written together: each frame on its own, or, with `array_lines`, the
/// notifications next to each other as one JSON array (responses stay lines of their own).
fn lines(frames: Vec<Value>, array_lines: bool) -> Vec<Value> {
    if !array_lines {
        return frames;
    }
    let mut lines = Vec::new();
    let mut notifications = Vec::new();
    for frame in frames {
        if frame.get("id").is_some() {
            if !notifications.is_empty() {
                lines.push(Value::Array(std::mem::take(&mut notifications)));
            }
            lines.push(frame);
        } else {
            notifications.push(frame);
        }
    }
    if !notifications.is_empty() {
        lines.push(Value::Array(notifications));
    }
    lines
}

async fn dispatch(
    server: &Arc<Server>,
    method: &str,
    params: Option<Value>,
) -> Result<Reply, ProtocolError> {
    if server.profile.serves_deleted_legacy(method) {
        return Err(not_simulated(method));
    }
    if method.starts_with("v4/") {
        return v4::dispatch(server, method, params).await;
    }
    legacy::dispatch(server, method, params).await
}

/// `--prepare-storage`: the Agent names its database path (`startup/storagePath`) and
/// waits up to 30 s for one `startup/storagePathReady` line; `reuse: true` skips opening
/// the storage again. Returns `reuse`, or the failure's kind and message.
async fn storage_path_handshake(
    server: &Server,
    reader: &mut BufReader<Stdin>,
) -> Result<bool, (&'static str, String)> {
    let path = server.state().store.database_path();
    server
        .out
        .frame(&wire::notification("startup/storagePath", json!({"path": path.to_string_lossy()})));
    let mut line = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), reader.read_until(b'\n', &mut line));
    let invalid = ("invalid_acknowledgement", "Error: Invalid storage acknowledgement".to_owned());
    match read.await {
        Ok(Ok(read)) if read > 0 => {}
        Ok(_) => {
            return Err(("transport_closed", "Error: Storage preparation input closed".into()));
        }
        Err(_) => {
            let message = "Error: Storage observation handshake timed out".to_owned();
            return Err(("startup_status_timeout", message));
        }
    }
    let value: Value = serde_json::from_slice(&line).map_err(|_| invalid.clone())?;
    if line.len() > 1024 || value["method"] != "startup/storagePathReady" {
        return Err(invalid);
    }
    Ok(value["reuse"] == true)
}

/// The `startup/storageState` frames the Agent writes while opening its database, before
/// it reads anything: five of them, `checking` ×3, `committing`, `ready`, as a live
/// capture recorded (`tests/recorded/app-server/README.md`).
fn storage_startup_frames(server: &Server) {
    let database_id = server.state().store.database_id();
    let attempt = uuid::Uuid::new_v4().to_string();
    let phases = ["checking", "checking", "checking", "committing", "ready"];
    for (index, phase) in phases.into_iter().enumerate() {
        server.out.frame(&wire::notification(
            "startup/storageState",
            json!({"schemaVersion": 1, "attemptId": attempt, "sequence": index + 1,
                   "databaseId": database_id, "databaseKind": "session", "phase": phase,
                   "elapsedMs": index}),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_lines_batch_the_notifications_next_to_each_other() {
        let note = |n: u64| json!({"method": "session/event", "params": {"seq": n}});
        let reply = json!({"id": 1, "result": {}});
        let frames = vec![note(1), reply.clone(), note(2), note(3)];
        assert_eq!(lines(frames.clone(), false), frames);
        assert_eq!(
            lines(frames, true),
            vec![json!([note(1)]), reply, json!([note(2), note(3)])],
            "responses stay lines of their own"
        );
    }
}
