//! The child's life after the spawn: reaping it, and terminating it without orphans.

use std::sync::Arc;
use std::time::Duration;

use tokio::process::Child;
use tokio::time::Instant;

use crate::shared::Shared;

/// How long a child exit and the end of its stdout may lag behind each other. Replies still in
/// the pipe when the child exits are delivered before the transport closes.
pub(crate) const EXIT_STDOUT_SLACK: Duration = Duration::from_millis(500);

/// How often the group is checked while waiting for it to empty (there is no notification for
/// processes that are not our children).
const GROUP_POLL: Duration = Duration::from_millis(20);

/// Bound on waiting for a SIGKILLed group to disappear; only a hang guard.
const KILL_SETTLE: Duration = Duration::from_secs(5);

/// Waits for the child to exit, publishes the status, and fails the transport closed.
pub(crate) async fn reap(shared: Arc<Shared>, mut child: Child) {
    let status = wait_child(&shared, &mut child).await;
    match &status {
        Ok(status) => {
            tracing::debug!(%status, "host process exited");
            shared.exit.send_replace(Some(*status));
        }
        Err(error) => tracing::warn!(%error, "could not wait for the host process"),
    }
    let mut stdout_done = shared.stdout_done.subscribe();
    let _ = tokio::time::timeout(EXIT_STDOUT_SLACK, stdout_done.wait_for(|done| *done)).await;
    let reason = match status {
        Ok(status) => format!("the host exited ({status})"),
        Err(error) => format!("the host process was lost: {error}"),
    };
    shared.fail_closed(reason);
}

#[cfg(unix)]
async fn wait_child(
    _shared: &Shared,
    child: &mut Child,
) -> std::io::Result<std::process::ExitStatus> {
    child.wait().await
}

#[cfg(not(unix))]
async fn wait_child(
    shared: &Shared,
    child: &mut Child,
) -> std::io::Result<std::process::ExitStatus> {
    let status = tokio::select! {
        status = child.wait() => status,
        () = shared.group.kill_requested() => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    shared.group.mark_exited();
    status
}

/// Waits until the transport closes, then terminates the child and its group.
pub(crate) async fn supervise(shared: Arc<Shared>) {
    let mut changes = shared.subscribe_changes();
    while shared.closed_reason().is_none() {
        if changes.changed().await.is_err() {
            return;
        }
    }
    terminate(&shared).await;
    shared.terminated.send_replace(true);
}

/// Stdin is already closed (the transport closed). Give the group `exit_grace` to leave on its
/// own, then SIGTERM it, give it `term_grace`, then SIGKILL it; finally wait for the child to be
/// reaped and the group to be empty.
async fn terminate(shared: &Shared) {
    let options = &shared.options;
    if wait_group_gone(shared, options.exit_grace).await {
        return;
    }
    tracing::debug!("host did not exit after stdin closed; sending SIGTERM to its process group");
    shared.group.terminate();
    if wait_group_gone(shared, options.term_grace).await {
        return;
    }
    tracing::warn!("host process group survived SIGTERM; sending SIGKILL");
    shared.group.kill();
    if !wait_group_gone(shared, KILL_SETTLE).await {
        tracing::warn!("host process group still has live members after SIGKILL");
    }
}

/// True once the child has been reaped and no live process is left in its group.
async fn wait_group_gone(shared: &Shared, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    let mut exit = shared.exit.subscribe();
    loop {
        let reaped = exit.borrow_and_update().is_some();
        if reaped && !shared.group.has_live_members() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        let next_check = (Instant::now() + GROUP_POLL).min(deadline);
        if reaped {
            tokio::time::sleep_until(next_check).await;
        } else {
            // The child exiting is the usual end; wake on it rather than on the poll.
            let _ = tokio::time::timeout_at(deadline, exit.changed()).await;
        }
    }
}
