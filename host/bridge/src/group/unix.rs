use std::sync::atomic::{AtomicBool, Ordering};

use crate::exit_cleanup;

/// The process group the child leads (its id is the child's pid).
///
/// Once the group is seen without live members it is marked gone and never signalled again:
/// its id could then be reused by an unrelated group.
pub(crate) struct ProcessGroup {
    pgid: libc::pid_t,
    gone: AtomicBool,
}

impl ProcessGroup {
    /// Takes charge of the group led by `pid`; until it is gone it is killed at process exit.
    pub(crate) fn adopt(pid: u32) -> Self {
        let pgid = libc::pid_t::try_from(pid).expect("process ids fit in pid_t");
        exit_cleanup::register(pgid);
        Self { pgid, gone: AtomicBool::new(false) }
    }

    pub(crate) fn terminate(&self) {
        self.signal(libc::SIGTERM);
    }

    pub(crate) fn kill(&self) {
        self.signal(libc::SIGKILL);
    }

    fn signal(&self, signal: libc::c_int) {
        if self.gone.load(Ordering::SeqCst) {
            return;
        }
        // SAFETY: killpg only reads its two integer arguments.
        let result = unsafe { libc::killpg(self.pgid, signal) };
        if result != 0 && last_errno() == Some(libc::ESRCH) {
            self.mark_gone();
        }
    }

    /// Whether any process of the group is still running. Zombies do not count: they cannot
    /// run, and where nothing reaps orphans (a container without an init) they never go away.
    pub(crate) fn has_live_members(&self) -> bool {
        if self.gone.load(Ordering::SeqCst) {
            return false;
        }
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        let exists =
            unsafe { libc::killpg(self.pgid, 0) } == 0 || last_errno() != Some(libc::ESRCH);
        let live = exists && members_may_be_running(self.pgid);
        if !live {
            self.mark_gone();
        }
        live
    }

    fn mark_gone(&self) {
        if !self.gone.swap(true, Ordering::SeqCst) {
            exit_cleanup::unregister(self.pgid);
        }
    }
}

impl Drop for ProcessGroup {
    /// Last line of defence: whatever path dropped the bridge, the group does not outlive it.
    fn drop(&mut self) {
        self.kill();
        exit_cleanup::unregister(self.pgid);
    }
}

fn last_errno() -> Option<i32> {
    std::io::Error::last_os_error().raw_os_error()
}

/// Linux: scan `/proc` for a member of the group that is not a zombie.
#[cfg(target_os = "linux")]
fn members_may_be_running(pgid: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|entry| {
        let is_pid =
            entry.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        is_pid
            && std::fs::read_to_string(entry.path().join("stat"))
                .is_ok_and(|stat| is_live_member(&stat, pgid))
    })
}

/// `/proc/<pid>/stat` is `pid (comm) state ppid pgrp ...`; `comm` may contain spaces and
/// parentheses, so the fields are read after the last `)`.
#[cfg(target_os = "linux")]
fn is_live_member(stat: &str, pgid: libc::pid_t) -> bool {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next();
    let pgrp = fields.nth(1).and_then(|f| f.parse::<libc::pid_t>().ok());
    pgrp == Some(pgid) && !matches!(state, Some("Z" | "X" | "x"))
}

/// Elsewhere an existing group is assumed to have a running member.
#[cfg(not(target_os = "linux"))]
fn members_may_be_running(_pgid: libc::pid_t) -> bool {
    true
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn reads_state_and_group_after_the_command_name() {
        assert!(is_live_member("42 (node) S 1 42 42 0", 42));
        assert!(is_live_member("43 (a) b (c)) R 42 42 42 0", 42));
        assert!(!is_live_member("44 (node) Z 1 42 42 0", 42));
        assert!(!is_live_member("45 (node) S 1 7 7 0", 42));
        assert!(!is_live_member("garbage", 42));
    }
}
