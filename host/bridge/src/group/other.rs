use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Without process groups the bridge can only kill the child itself: the reaper task owns the
/// child handle and kills it when asked (the child is also spawned with `kill_on_drop`).
/// docs/host-bridge.md describes the job object a Windows port should use instead.
pub(crate) struct ProcessGroup {
    exited: AtomicBool,
    kill_requested: AtomicBool,
    kill: Notify,
}

impl ProcessGroup {
    pub(crate) fn adopt(_pid: u32) -> Self {
        Self {
            exited: AtomicBool::new(false),
            kill_requested: AtomicBool::new(false),
            kill: Notify::new(),
        }
    }

    /// There is no graceful signal to send; terminating means killing.
    pub(crate) fn terminate(&self) {
        self.kill();
    }

    pub(crate) fn kill(&self) {
        self.kill_requested.store(true, Ordering::SeqCst);
        self.kill.notify_one();
    }

    pub(crate) fn has_live_members(&self) -> bool {
        !self.exited.load(Ordering::SeqCst)
    }

    /// For the reaper: resolves once a kill was requested.
    pub(crate) async fn kill_requested(&self) {
        while !self.kill_requested.load(Ordering::SeqCst) {
            self.kill.notified().await;
        }
    }

    pub(crate) fn mark_exited(&self) {
        self.exited.store(true, Ordering::SeqCst);
    }
}
