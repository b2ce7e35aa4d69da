//! The byte pumps between the bridge and the child: stdin writer, stdout reader, stderr drain.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::mpsc;
use zcode_contract::Inbound;

use crate::shared::Shared;
use crate::sync::lock;

const READ_CHUNK: usize = 64 * 1024;

/// Owns the child's stdin: writes queued bytes in order, and closes stdin when the queue's
/// last sender is dropped (the transport closed). A failed write fails the transport.
pub(crate) async fn write_stdin(
    shared: Arc<Shared>,
    mut stdin: ChildStdin,
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(bytes) = queue.recv().await {
        let written = async {
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        };
        if let Err(error) = written.await {
            // A broken pipe is how a host that died looks from here: report its exit.
            let symptom = format!("writing to the host's stdin failed: {error}");
            fail_with_cause(&shared, symptom).await;
            return;
        }
    }
    tracing::debug!("host stdin closed");
}

/// Feeds the child's stdout to the mapper and acts on what it completes. After the transport
/// closed, stdout is still drained (so the child never blocks on a full pipe) but ignored.
pub(crate) async fn read_stdout(shared: Arc<Shared>, mut stdout: ChildStdout) {
    let _guard = FailOnPanic(&shared);
    let mut buffer = vec![0; READ_CHUNK];
    // Bytes pushed since a push last completed anything: a mapper that never completes a frame
    // would otherwise buffer without bound.
    let mut unframed = 0usize;
    loop {
        let read = match stdout.read(&mut buffer).await {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) => {
                shared.fail_closed(format!("reading the host's stdout failed: {error}"));
                break;
            }
        };
        if shared.closed_reason().is_some() {
            continue;
        }
        let pushed = lock(&shared.connection).push(&buffer[..read]);
        match pushed {
            Err(error) => fail_with_cause(&shared, format!("host protocol error: {error}")).await,
            Ok(inbound) if inbound.is_empty() => {
                unframed += read;
                if unframed > shared.options.stdout_buffer_cap {
                    shared.fail_closed(format!(
                        "the host wrote more than {} bytes without completing a frame",
                        shared.options.stdout_buffer_cap
                    ));
                }
            }
            Ok(inbound) => {
                unframed = 0;
                for item in inbound {
                    handle(&shared, item).await;
                }
            }
        }
    }
    if shared.closed_reason().is_none() {
        let finished = lock(&shared.connection).finish();
        match finished {
            Ok(inbound) => {
                for item in inbound {
                    handle(&shared, item).await;
                }
            }
            // A host killed mid-write leaves a cut-off frame: the exit is the news, not the frame.
            Err(error) => {
                let symptom = format!("host protocol error at end of output: {error}");
                fail_with_cause(&shared, symptom).await;
            }
        }
    }
    shared.stdout_done.send_replace(true);
    let reason = exit_reason(&shared).await.unwrap_or_else(|| "the host closed its stdout".into());
    shared.fail_closed(reason);
}

/// Acts on one completed frame. Input for a session whose queue is full waits here, so the
/// reader stops reading until that session catches up.
async fn handle(shared: &Shared, inbound: Inbound) {
    let delivery = match inbound {
        Inbound::Reply(reply) => shared.resolve(reply),
        Inbound::Event(event) => shared.route_event(event),
        Inbound::Write(write) => {
            match shared.prepare_write(&write) {
                Ok(bytes) => shared.write_now(bytes),
                Err(fault) => shared.fail_closed(fault.to_string()),
            }
            None
        }
        Inbound::Ready => {
            tracing::debug!("host handshake complete");
            shared.mark_ready();
            None
        }
        Inbound::Ignored(reason) => {
            tracing::debug!(reason = %reason, "native frame ignored");
            None
        }
    };
    if let Some(delivery) = delivery {
        shared.hand_over(delivery).await;
    }
}

/// Fails the transport with the child's exit when it exits promptly (the usual cause of a
/// broken pipe or a cut-off frame), else with `symptom`.
async fn fail_with_cause(shared: &Shared, symptom: String) {
    match exit_reason(shared).await {
        Some(exit) => {
            tracing::debug!(%symptom, "host output or input broke as the host exited");
            shared.fail_closed(exit);
        }
        None => shared.fail_closed(symptom),
    }
}

/// Stdout usually ends because the child exited; say so when the exit follows promptly.
async fn exit_reason(shared: &Shared) -> Option<String> {
    let mut exit = shared.exit.subscribe();
    let status =
        tokio::time::timeout(crate::lifecycle::EXIT_STDOUT_SLACK, exit.wait_for(Option::is_some))
            .await
            .ok()?
            .ok()?;
    status.map(|status| format!("the host exited ({status})"))
}

/// Drains the child's stderr so it can never block on a full pipe. The content is never logged
/// (it may contain secrets); only the byte count is.
pub(crate) async fn drain_stderr(mut stderr: ChildStderr) {
    let mut buffer = vec![0; READ_CHUNK];
    let mut total = 0u64;
    while let Ok(read @ 1..) = stderr.read(&mut buffer).await {
        total += read as u64;
    }
    tracing::debug!(bytes = total, "host stderr closed");
}

/// If the reader panics (a mapper bug), the transport must still fail closed.
struct FailOnPanic<'a>(&'a Shared);

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail_closed("internal error: the host stdout reader panicked".into());
        }
    }
}
