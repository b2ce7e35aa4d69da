//! The child process: what may be spawned, how it is started, and that nothing of its process
//! group survives shutdown, a dropped bridge, or the end of this process.

// Linux only: the process-table checks read /proc.
#![cfg(target_os = "linux")]

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use support::procs::{is_running, live_group_members, read_pidfile, wait_group_empty};
use support::*;
use zcode_bridge::{BridgeError, BridgeOptions, HostBridge, OpFailure};
use zcode_contract::ConnectionOp;

async fn spawn_err(
    plan: zcode_contract::LaunchPlan,
    connection: TestConnection,
    options: BridgeOptions,
) -> BridgeError {
    match guard(spawn(&plan, connection, options)).await {
        Ok(_) => panic!("spawn succeeded"),
        Err(error) => error,
    }
}

/// A scratch directory and the path of a pid file in it (the fake host's `--pidfile`).
fn pidfile() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.pid").to_string_lossy().into_owned();
    (dir, path)
}

async fn probe(bridge: &HostBridge, method: &str) -> serde_json::Value {
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request(method, "").text()),
    )))
    .await;
    replies(&result)[0]["ok"].clone()
}

#[tokio::test]
async fn only_the_verified_executable_is_started() {
    for executable in ["/does/not/exist".to_string(), "relative/host".to_string()] {
        let mut install = install();
        install.executable = executable.clone();
        let plan = plan(&[]);
        let spec = zcode_bridge::HostSpec {
            install: &install,
            plan: &plan,
            identity: None,
            credentials: Default::default(),
        };
        let result = guard(HostBridge::spawn(spec, Box::new(TestConnection::default()), options()));
        match result.await {
            Err(BridgeError::ExecutableMissing { executable: refused, .. }) => {
                assert_eq!(refused, executable)
            }
            Err(other) => panic!("{executable}: expected a refusal, got {other}"),
            Ok(_) => panic!("{executable}: started"),
        }
    }
}

#[tokio::test]
async fn spawns_with_args_env_and_cwd_and_writes_the_preamble_first() {
    let mut plan = plan(&[]);
    plan.stdin_preamble = b"PREAMBLE ready-to-go\n".to_vec();
    let bridge = start_with(plan, TestConnection::default(), options()).await;
    assert_eq!(probe(&bridge, "preamble").await, json!({"preamble": "PREAMBLE ready-to-go"}));
    // The host leads a process group of its own.
    let pid = bridge.pid().unwrap();
    assert_eq!(probe(&bridge, "pid").await, json!({"pid": pid}));
    assert!(live_group_members(pid).contains(&pid));
    bridge.shutdown().await;
}

#[tokio::test]
async fn waits_for_the_handshake_before_any_request() {
    let mut plan = plan(&["--handshake"]);
    plan.needs_handshake = true;
    // The fake host exits with an error if a request arrives before its handshake completed,
    // so setup succeeding proves the order.
    let bridge = start_with(plan, TestConnection::default(), options()).await;
    assert_eq!(probe(&bridge, "echo").await, json!({"echo": ""}));
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_handshake_that_never_completes_times_out_and_the_host_is_stopped() {
    let (_dir, pidfile) = pidfile();
    let mut plan = plan(&["--handshake-never-ready", "--pidfile", &pidfile]);
    plan.needs_handshake = true;
    let options = BridgeOptions { handshake_timeout: Duration::from_millis(100), ..options() };
    let error = spawn_err(plan, TestConnection::default(), options).await;
    assert!(matches!(error, BridgeError::HandshakeTimeout { .. }), "{error}");
    assert!(live_group_members(read_pidfile(pidfile.as_ref())).is_empty());
}

#[tokio::test]
async fn a_host_that_dies_during_the_handshake_fails_the_spawn() {
    let mut plan = plan(&["--handshake-never-ready"]);
    plan.needs_handshake = true;
    // A request-shaped preamble arrives before the handshake: the fake host exits with 9.
    plan.stdin_preamble = b"{\"id\":1,\"method\":\"echo\"}\n".to_vec();
    let error = spawn_err(plan, TestConnection::default(), options()).await;
    match error {
        BridgeError::HandshakeFailed(reason) => assert!(
            reason == "the host exited (exit status: 9)" || reason == "the host closed its stdout",
            "{reason}"
        ),
        other => panic!("expected HandshakeFailed, got {other}"),
    }
}

#[tokio::test]
async fn a_failed_setup_fails_the_spawn_and_stops_the_host() {
    let (_dir, pidfile) = pidfile();
    let plan = plan(&["--pidfile", &pidfile]);
    let connection = TestConnection::default().with_setup(Script::fail("not signed in"));
    let error = spawn_err(plan, connection, options()).await;
    match error {
        BridgeError::Setup(OpFailure::Mapper(error)) => assert_eq!(error.message, "not signed in"),
        other => panic!("expected a setup failure, got {other}"),
    }
    assert!(live_group_members(read_pidfile(pidfile.as_ref())).is_empty());
}

#[tokio::test]
async fn shutdown_of_a_cooperative_host_leaves_nothing() {
    let bridge = start(&[]).await;
    let pid = bridge.pid().unwrap();
    bridge.shutdown().await;
    assert_eq!(bridge.pid(), None);
    assert!(live_group_members(pid).is_empty());
    assert_eq!(bridge.closed_reason().as_deref(), Some("shutting down"));
}

#[tokio::test]
async fn shutdown_kills_a_stubborn_host_and_its_sigterm_ignoring_grandchild() {
    // The host ignores stdin EOF and SIGTERM; so does its grandchild.
    let bridge = start(&["--ignore-stdin-eof", "--ignore-term"]).await;
    let pid = bridge.pid().unwrap();
    let grandchild = probe(&bridge, "spawn_grandchild").await["pid"].as_u64().unwrap() as u32;
    assert!(is_running(grandchild));
    assert_eq!(live_group_members(pid).len(), 2);

    guard(bridge.shutdown()).await;
    assert!(live_group_members(pid).is_empty(), "left behind: {:?}", live_group_members(pid));
    assert!(!is_running(grandchild));
    assert!(!is_running(pid));
}

#[tokio::test]
async fn dropping_the_bridge_without_shutdown_kills_the_group() {
    let bridge = start(&["--ignore-stdin-eof", "--ignore-term"]).await;
    let pid = bridge.pid().unwrap();
    let grandchild = probe(&bridge, "spawn_grandchild").await["pid"].as_u64().unwrap() as u32;
    let clone = bridge.clone();
    drop(bridge);
    // A clone keeps the host alive.
    assert_eq!(probe(&clone, "echo").await, json!({"echo": ""}));
    drop(clone);
    assert!(wait_group_empty(pid).await, "left behind: {:?}", live_group_members(pid));
    assert!(!is_running(grandchild));
}

/// Runs the exit probe; returns it and the (host pid, grandchild pid) it printed.
fn run_exit_probe(mode: &str) -> (std::process::Child, u32, u32) {
    let mut probe = Command::new(exit_probe_path())
        .arg(fake_host_path())
        .arg(mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(probe.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let pids: Vec<u32> = line.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "probe printed {line:?}");
    (probe, pids[0], pids[1])
}

#[tokio::test]
async fn exiting_without_shutdown_kills_the_group() {
    let (mut probe, host, grandchild) = run_exit_probe("exit");
    assert!(probe.wait().unwrap().success());
    assert!(wait_group_empty(host).await, "left behind: {:?}", live_group_members(host));
    assert!(!is_running(grandchild));
}

#[tokio::test]
async fn sigterm_with_signal_cleanup_kills_the_group() {
    let (mut probe, host, grandchild) = run_exit_probe("signal");
    assert!(is_running(grandchild));
    // SAFETY: signals the probe process this test started.
    unsafe { libc::kill(probe.id() as libc::pid_t, libc::SIGTERM) };
    let status = probe.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    assert!(wait_group_empty(host).await, "left behind: {:?}", live_group_members(host));
    assert!(!is_running(grandchild));
}
