//! Transport death: every fault fails every pending op, notifies every linked session, refuses
//! later ops, and terminates the host.

// Linux only: the process-table checks read /proc.
#![cfg(target_os = "linux")]

mod support;

use serde_json::Value;
use support::procs::wait_group_empty;
use support::*;
use zcode_bridge::{BridgeOptions, HostBridge, OpFailure, SessionInbound};
use zcode_contract::{ConnectionOp, SessionOp};

/// Two linked sessions and one connection op, each with a request the host never answers;
/// then `fault` fires (the host waits until all three stalled requests arrived). Returns the
/// reason the transport closed with.
async fn fault_with_pending_ops(bridge: &HostBridge, fault: &str) -> String {
    let (a, mut a_events) = bridge.link_session(Box::new(TestSession::default()));
    let (b, mut b_events) = bridge.link_session(Box::new(TestSession::default()));
    let stall = || Script::request("stall", "");
    let trigger = Script::request("fault_after", &format!("3:{fault}"));
    let (ra, rb, rc, rt) = guard(async {
        tokio::join!(
            session_op(&a, SessionOp::Prompt(stall().text())),
            session_op(&b, SessionOp::Prompt(stall().text())),
            bridge.connection_op(ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(
                stall().text()
            ))),
            bridge.connection_op(ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(
                trigger.text()
            ))),
        )
    })
    .await;

    let reason = bridge.closed_reason().expect("the transport is closed");
    // Every pending request was answered `Lost` with the reason; the test mapper then ends
    // the op listing what it got.
    for result in [&ra, &rb, &rc, &rt] {
        let replies = replies(result);
        assert_eq!(replies.len(), 1);
        assert_eq!(replies[0]["lost"], Value::String(reason.clone()), "{replies:?}");
    }
    for events in [&mut a_events, &mut b_events] {
        let closed = guard(events.recv()).await;
        assert_eq!(closed, Some(SessionInbound::TransportClosed(reason.clone())));
    }
    let later = guard(session_op(&a, SessionOp::Prompt(Script::request("echo", "").text()))).await;
    assert_eq!(later, Err(OpFailure::Transport(reason.clone())));
    let later = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("echo", "").text()),
    )))
    .await;
    assert_eq!(later, Err(OpFailure::Transport(reason.clone())));
    // A session linked after the close learns it at once.
    let (_late, mut late_events) = bridge.link_session(Box::new(TestSession::default()));
    assert_eq!(late_events.try_recv(), Some(SessionInbound::TransportClosed(reason.clone())));
    reason
}

/// The bridge terminates the host by itself once the transport failed; no shutdown needed.
async fn assert_host_terminated(bridge: &HostBridge, pid: u32) {
    assert!(wait_group_empty(pid).await, "the host's process group outlived the transport");
    bridge.shutdown().await;
    assert_eq!(bridge.pid(), None);
}

#[tokio::test]
async fn a_malformed_frame_fails_the_transport() {
    let bridge = start(&[]).await;
    let pid = bridge.pid().unwrap();
    let reason = fault_with_pending_ops(&bridge, "malformed").await;
    assert_eq!(reason, "host protocol error: non-JSON frame");
    assert_host_terminated(&bridge, pid).await;
}

#[tokio::test]
async fn an_oversized_frame_fails_the_transport() {
    let bridge = start(&[]).await;
    let pid = bridge.pid().unwrap();
    let reason = fault_with_pending_ops(&bridge, "oversized").await;
    assert_eq!(reason, "host protocol error: frame too long");
    assert_host_terminated(&bridge, pid).await;
}

#[tokio::test]
async fn invalid_utf8_fails_the_transport() {
    let bridge = start(&[]).await;
    let pid = bridge.pid().unwrap();
    let reason = fault_with_pending_ops(&bridge, "invalid_utf8").await;
    assert_eq!(reason, "host protocol error: invalid UTF-8");
    assert_host_terminated(&bridge, pid).await;
}

#[tokio::test]
async fn a_frame_that_never_completes_hits_the_buffer_cap() {
    let options = BridgeOptions { stdout_buffer_cap: 64 * 1024, ..options() };
    let connection = TestConnection::default().without_frame_limit();
    let bridge = start_with(plan(&[]), connection, options).await;
    let pid = bridge.pid().unwrap();
    let reason = fault_with_pending_ops(&bridge, "no_newline").await;
    assert_eq!(reason, "the host wrote more than 65536 bytes without completing a frame");
    assert_host_terminated(&bridge, pid).await;
}

/// Issue 12: the truncated last frame of a killed host is a symptom; the kill is the cause.
#[tokio::test]
async fn a_host_killed_mid_frame_is_reported_by_its_exit() {
    let bridge = start(&[]).await;
    let pid = bridge.pid().unwrap();
    let reason = fault_with_pending_ops(&bridge, "cut_off_kill").await;
    assert!(reason.starts_with("the host exited (signal: 9"), "{reason}");
    assert_host_terminated(&bridge, pid).await;
}

#[tokio::test]
async fn a_host_crash_mid_op_fails_the_transport() {
    let bridge = start(&[]).await;
    let pid = bridge.pid().unwrap();
    let reason = fault_with_pending_ops(&bridge, "crash").await;
    // Exit and end of stdout race; either is reported, the exit with its status.
    assert!(
        reason == "the host exited (exit status: 3)" || reason == "the host closed its stdout",
        "{reason}"
    );
    assert_host_terminated(&bridge, pid).await;
}

#[tokio::test]
async fn a_failed_write_to_stdin_fails_the_transport() {
    let bridge = start(&[]).await;
    let pid = bridge.pid().unwrap();
    let (link, mut events) = bridge.link_session(Box::new(TestSession::default()));
    // The host closes its stdin (and lives on); the next request cannot be written.
    let result =
        guard(session_op(&link, SessionOp::Prompt(Script::request("close_stdin", "").text())))
            .await;
    assert_eq!(replies(&result)[0]["ok"], "closed");
    let result =
        guard(session_op(&link, SessionOp::Prompt(Script::request("echo", "").text()))).await;
    let reason = bridge.closed_reason().expect("the transport is closed");
    assert!(reason.starts_with("writing to the host's stdin failed"), "{reason}");
    assert_eq!(replies(&result)[0]["lost"], Value::String(reason.clone()));
    assert_eq!(guard(events.recv()).await, Some(SessionInbound::TransportClosed(reason)));
    assert_host_terminated(&bridge, pid).await;
}

#[tokio::test]
async fn shutdown_loses_pending_requests_and_tells_sessions() {
    let bridge = start(&[]).await;
    let (link, mut events) = bridge.link_session(Box::new(TestSession::default()));
    // `biased` polls the op first: its request is pending before the shutdown starts.
    let stall = SessionOp::Prompt(Script::request("stall", "").text());
    let (result, ()) =
        guard(async { tokio::join!(biased; session_op(&link, stall), bridge.shutdown()) }).await;
    assert_eq!(replies(&result)[0]["lost"], "shutting down");
    assert_eq!(
        guard(events.recv()).await,
        Some(SessionInbound::TransportClosed("shutting down".into()))
    );
    let later =
        guard(session_op(&link, SessionOp::Prompt(Script::request("echo", "").text()))).await;
    assert_eq!(later, Err(OpFailure::Transport("shutting down".into())));
    // Idempotent.
    guard(bridge.shutdown()).await;
}
