//! Running an install's programs to ask what they are (the CLI's version, a Node's version),
//! bounded in time and output. Nothing here runs with a shell.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::version::first_version_token;

/// Most stdout kept from the probe; a version line is short.
const MAX_STDOUT: u64 = 64 * 1024;
/// Most stderr characters quoted in an error.
const STDERR_TAIL: usize = 300;
/// How long output is awaited after the probe exited, even past the deadline.
const MIN_DRAIN: Duration = Duration::from_millis(100);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProbeCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

/// Runs `command` and returns the first version token of its stdout. Fails on a spawn
/// error, a timeout, a non-zero exit or output without a version.
pub fn probe_version(command: &ProbeCommand, timeout: Duration) -> Result<String, String> {
    let stdout = run_bounded(command, timeout, "the CLI version probe")?;
    first_version_token(&stdout)
        .map(str::to_string)
        .ok_or_else(|| "the CLI version probe printed no version".to_string())
}

/// Runs `command` (stdin closed) and returns its stdout. Fails on a spawn error, a timeout or
/// a non-zero exit; `what` names the run in errors.
pub fn run_bounded(
    command: &ProbeCommand,
    timeout: Duration,
    what: &str,
) -> Result<String, String> {
    let mut child = Command::new(&command.program)
        .args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&command.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", command.program.display()))?;
    let stdout = collect(child.stdout.take().expect("piped stdout"), MAX_STDOUT);
    let stderr = collect(child.stderr.take().expect("piped stderr"), MAX_STDOUT);

    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what} did not finish within {timeout:?}"));
            }
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                let _ = child.kill();
                return Err(format!("cannot wait for {what}: {e}"));
            }
        }
    };
    // A grandchild may hold the pipes open; never wait past the deadline for them.
    let remaining = || deadline.saturating_duration_since(Instant::now()).max(MIN_DRAIN);
    let stdout = stdout.recv_timeout(remaining()).unwrap_or_default();
    if !status.success() {
        let stderr = stderr.recv_timeout(remaining()).unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr);
        let stderr = stderr.trim();
        let tail_start = stderr.char_indices().rev().nth(STDERR_TAIL - 1).map_or(0, |(i, _)| i);
        return Err(format!("{what} exited with {status}: {}", &stderr[tail_start..]));
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// Reads up to `cap` bytes on a thread; the rest is drained and dropped so that the child
/// never blocks on a full pipe.
fn collect(mut pipe: impl Read + Send + 'static, cap: u64) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = pipe.by_ref().take(cap).read_to_end(&mut kept);
        let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        let _ = tx.send(kept);
    });
    rx
}
