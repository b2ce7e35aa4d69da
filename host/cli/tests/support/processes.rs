//! The agent's process tree, read from `/proc`: what it started, and whether any of it is
//! still alive.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A process we saw in the agent's tree: pid and kernel start time (guards against reuse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeenProcess {
    pub pid: u32,
    pub(super) start_time: u64,
}

/// Records the agent's process tree while it runs (short-lived probes included, as far as a
/// polling observer can see them).
pub(super) fn spawn_watcher(
    pid: u32,
    watching: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<u32, SeenProcess>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while watching.load(Ordering::SeqCst) {
            scan_tree(pid, &seen);
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

pub(super) fn scan_tree(pid: u32, seen: &Mutex<BTreeMap<u32, SeenProcess>>) {
    for child in descendants(pid) {
        if let Some(start_time) = start_time(child) {
            seen.lock().unwrap().entry(child).or_insert(SeenProcess { pid: child, start_time });
        }
    }
}

/// All descendants of `pid` (children of every thread, recursively).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else { continue };
        for task in tasks.flatten() {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for child in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
                if !found.contains(&child) {
                    found.push(child);
                    queue.push(child);
                }
            }
        }
    }
    found
}

/// (state, start time) from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // Field 22 of the full line is the start time; `rest` begins at field 3.
    let start_time = fields.get(19)?.parse().ok()?;
    Some((state, start_time))
}

fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// Still running: same pid and start time, and not a zombie (a zombie is dead, only unreaped).
pub(super) fn is_alive(process: &SeenProcess) -> bool {
    matches!(stat(process.pid), Some((state, start)) if start == process.start_time && state != 'Z' && state != 'X')
}
