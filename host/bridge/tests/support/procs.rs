//! Process-table checks, read independently of the bridge's own implementation.

use std::time::Duration;

/// Pids of processes in group `pgid` that are not zombies (Linux `/proc`).
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // A line that does not read as expected is skipped, not fatal: on a busy machine
        // processes come and go while /proc is scanned, and the callers poll again.
        let Some(name_end) = stat.rfind(')') else { continue };
        let fields: Vec<&str> = stat[name_end + 1..].split_whitespace().collect();
        let (Some(&state), Some(Ok(group))) =
            (fields.first(), fields.get(2).map(|g| g.parse::<u32>()))
        else {
            continue;
        };
        if group == pgid && state != "Z" {
            live.push(pid);
        }
    }
    live
}

/// True if `pid` exists and is not a zombie.
pub fn is_running(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let exists = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
    exists
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat[stat.rfind(')').unwrap() + 1..].split_whitespace().next() == Some("Z")
        })
}

/// Polls until the group has no live member; false if the hang guard ran out.
pub async fn wait_group_empty(pgid: u32) -> bool {
    let deadline = tokio::time::Instant::now() + super::HANG_GUARD;
    while tokio::time::Instant::now() < deadline {
        if live_group_members(pgid).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

pub fn read_pidfile(path: &std::path::Path) -> u32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}
