//! Killing host process groups when this process goes away without shutting its bridges down.
//!
//! Every live group is kept in a process-wide registry. An `atexit` hook (installed with the
//! first group) SIGKILLs them when the process exits normally (`main` returns or
//! `std::process::exit`). Signals are the embedding binary's business, because taking over
//! SIGTERM would override its own graceful shutdown: a binary without one calls
//! [`install_signal_cleanup`]; one with its own handler calls `HostBridge::shutdown` (or
//! [`kill_all_host_groups`]) from it. SIGKILL of this process cannot be caught by anything.

#[cfg(unix)]
mod imp {
    use std::sync::{Mutex, Once};

    use crate::sync::lock;

    static LIVE_GROUPS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());
    static AT_EXIT: Once = Once::new();

    pub(crate) fn register(pgid: libc::pid_t) {
        AT_EXIT.call_once(|| {
            // SAFETY: registers a plain `extern "C"` function that never unwinds.
            if unsafe { libc::atexit(kill_at_exit) } != 0 {
                tracing::warn!("could not register the exit hook that kills host process groups");
            }
        });
        lock(&LIVE_GROUPS).push(pgid);
    }

    pub(crate) fn unregister(pgid: libc::pid_t) {
        lock(&LIVE_GROUPS).retain(|&live| live != pgid);
    }

    pub fn kill_all_host_groups() {
        for &pgid in lock(&LIVE_GROUPS).iter() {
            // SAFETY: killpg only reads its two integer arguments.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
    }

    extern "C" fn kill_at_exit() {
        // A panic must not unwind into libc.
        let _ = std::panic::catch_unwind(kill_all_host_groups);
    }

    pub fn install_signal_cleanup() -> std::io::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        for kind in [SignalKind::terminate(), SignalKind::interrupt(), SignalKind::hangup()] {
            let mut stream = signal(kind)?;
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    kill_all_host_groups();
                    // Die of the same signal, as if no handler had been installed.
                    // SAFETY: resets one signal's disposition and raises it in this process.
                    unsafe {
                        libc::signal(kind.as_raw_value(), libc::SIG_DFL);
                        libc::raise(kind.as_raw_value());
                    }
                }
            });
        }
        Ok(())
    }
}

#[cfg(not(unix))]
mod imp {
    /// Without process groups there is no registry: children are spawned with `kill_on_drop`.
    pub fn kill_all_host_groups() {}

    pub fn install_signal_cleanup() -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(unix)]
pub(crate) use imp::{register, unregister};

/// SIGKILLs every host process group of this process that is not known to be gone. For fatal
/// paths (a signal handler, an abort) where an orderly `HostBridge::shutdown` cannot run.
pub fn kill_all_host_groups() {
    imp::kill_all_host_groups();
}

/// For binaries without their own signal handling: on SIGTERM, SIGINT or SIGHUP, kill every host
/// process group and then die of that signal as the default action would. Must be called inside
/// a tokio runtime.
pub fn install_signal_cleanup() -> std::io::Result<()> {
    imp::install_signal_cleanup()
}
