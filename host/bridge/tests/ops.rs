//! Operation driving: request ids, reply correlation, timeouts, late and duplicate replies,
//! event routing, and mapper faults.

// The fake host relies on unix signals.
#![cfg(unix)]

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use zcode_bridge::{BridgeOptions, OpFailure, SESSION_QUEUE, SessionInbound, SessionLink};
use zcode_contract::{
    Action, ConnectionOp, Effects, ErrorKind, MapperFault, MapperSession, NativeData, NativeReply,
    Operations, Outgoing, SessionInput, SessionOp, Step,
};

fn create(script: Script) -> SessionOp {
    SessionOp::Create(script.text())
}

fn event(inbound: Option<SessionInbound>) -> Value {
    match inbound {
        Some(SessionInbound::Input(SessionInput::Event(NativeData::Text(payload)))) => {
            serde_json::from_str(&payload).unwrap()
        }
        other => panic!("expected an event, got {other:?}"),
    }
}

#[tokio::test]
async fn concurrent_ops_of_two_sessions_get_unique_ids_and_their_own_replies() {
    let bridge = start(&[]).await;
    let (a, _a_events) = bridge.link_session(Box::new(TestSession::default()));
    let (b, _b_events) = bridge.link_session(Box::new(TestSession::default()));

    // The host holds all three requests and answers them in reverse order of arrival.
    let hold = || Script::request("hold", "3");
    let (ra, rb, rc) = guard(async {
        tokio::join!(
            session_op(&a, create(hold())),
            session_op(&b, create(hold())),
            bridge.connection_op(ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(
                hold().text()
            ))),
        )
    })
    .await;

    let mut ids = BTreeSet::new();
    for result in [&ra, &rb, &rc] {
        let replies = replies(result);
        assert_eq!(replies.len(), 1);
        let id = reply_id(&replies[0]);
        // The host echoes the id it was asked with: the reply reached the op that sent it.
        assert_eq!(replies[0]["ok"], json!({"held": id}));
        ids.insert(id);
    }
    assert_eq!(ids.len(), 3, "request ids collide: {ids:?}");
    // Setup used id 1; nothing else was sent.
    assert_eq!(ids, BTreeSet::from([2, 3, 4]));
    bridge.shutdown().await;
}

/// Guest calls that wait inside the mapper until `count` of them are in at once, or fail.
#[derive(Clone)]
struct Meeting(Arc<(Mutex<usize>, Condvar)>, usize);

impl Meeting {
    fn of(count: usize) -> Self {
        Self(Arc::new((Mutex::new(0), Condvar::new())), count)
    }

    fn meet(&self) -> Result<(), MapperFault> {
        let (arrived, changed) = &*self.0;
        let mut arrived = arrived.lock().unwrap();
        *arrived += 1;
        changed.notify_all();
        let (arrived, wait) =
            changed.wait_timeout_while(arrived, HANG_GUARD / 3, |n| *n < self.1).unwrap();
        if wait.timed_out() {
            return Err(MapperFault(format!("only {} guest calls were ever in at once", *arrived)));
        }
        Ok(())
    }
}

/// A test session whose `start` and `issue` wait at the meeting, once.
struct Gated {
    session: TestSession,
    meeting: Option<Meeting>,
}

impl Gated {
    fn new(meeting: &Meeting) -> Box<Self> {
        Box::new(Self { session: TestSession::default(), meeting: Some(meeting.clone()) })
    }

    fn meet(&mut self) -> Result<(), MapperFault> {
        self.meeting.take().map_or(Ok(()), |meeting| meeting.meet())
    }
}

impl Operations<SessionOp> for Gated {
    fn start(&mut self, op_id: u64, op: &SessionOp, first: u64) -> Result<Step, MapperFault> {
        self.meet()?;
        self.session.start(op_id, op, first)
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperFault> {
        self.session.resume(op_id, reply, first)
    }
}

impl MapperSession for Gated {
    fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault> {
        self.session.map(inputs)
    }

    fn issue(&mut self, first: u64) -> Result<Outgoing, MapperFault> {
        self.meet()?;
        self.session.issue(first)
    }
}

/// Runs a session op on a thread of its own, so that its guest call can block that thread.
fn op_on_a_thread(link: SessionLink, script: Script) -> tokio::task::JoinHandle<Value> {
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let result = runtime.block_on(session_op(&link, create(script)));
        replies(&result)[0].clone()
    })
}

/// No lock another owner needs is held across a guest call: two sessions' calls are in the
/// mapper at once (each waits there for the other), and still get ids of their own, never
/// handed out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_calls_of_two_sessions_run_at_once_and_get_ids_of_their_own() {
    let bridge = start(&[]).await;
    let meeting = Meeting::of(2);
    let (a, _a_events) = bridge.link_session(Gated::new(&meeting));
    let (b, _b_events) = bridge.link_session(Gated::new(&meeting));
    let (ra, rb) = guard(async {
        let ra = op_on_a_thread(a.clone(), Script::request("echo", "a"));
        let rb = op_on_a_thread(b.clone(), Script::request("echo", "b"));
        (ra.await.unwrap(), rb.await.unwrap())
    })
    .await;
    assert_eq!((&ra["ok"], &rb["ok"]), (&json!({"echo": "a"}), &json!({"echo": "b"})));
    let (ida, idb) = (reply_id(&ra), reply_id(&rb));
    assert_ne!(ida, idb);
    let after = replies(&guard(session_op(&a, create(Script::request("echo", "")))).await);
    assert!(reply_id(&after[0]) > ida.max(idb), "{after:?} after {ida} and {idb}");
    bridge.shutdown().await;
}

/// The same for an operation's call and a call of mapping (`issue`): one allocator serves both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_and_mapping_run_at_once_and_get_ids_of_their_own() {
    let bridge = start(&[]).await;
    let meeting = Meeting::of(2);
    let (a, _a_events) = bridge.link_session(Gated::new(&meeting));
    let (b, mut b_input) = bridge.link_session(Gated::new(&meeting));
    let ask = json!({"ask": "echo", "arg": "b"}).to_string();
    let (ra, mapped) = guard(async {
        let ra = op_on_a_thread(a.clone(), Script::request("echo", "a"));
        let b = b.clone();
        let mapped = tokio::task::spawn_blocking(move || {
            b.map(vec![SessionInput::Event(ask.as_str().into())])
        });
        (ra.await.unwrap(), mapped.await.unwrap())
    })
    .await;
    mapped.expect("mapping issued its request");
    let Some(SessionInbound::Input(SessionInput::Reply(reply))) = guard(b_input.recv()).await
    else {
        panic!("expected the reply to B's request");
    };
    assert_eq!(ra["ok"], json!({"echo": "a"}));
    assert_ne!(reply_id(&ra), reply.id);
    let after = replies(&guard(session_op(&a, create(Script::request("echo", "")))).await);
    assert!(reply_id(&after[0]) > reply_id(&ra).max(reply.id), "{after:?}");
    bridge.shutdown().await;
}

#[tokio::test]
async fn an_op_with_several_rounds_gets_fresh_ids_each_round() {
    let bridge = start(&[]).await;
    let script =
        Script::request("echo", "one").and("echo", "two").then(Script::request("echo", "three"));
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(script.text()),
    )))
    .await;
    let replies = replies(&result);
    let got: Vec<(u64, Value)> =
        replies.iter().map(|r| (reply_id(r), r["ok"]["echo"].clone())).collect();
    assert_eq!(got, vec![(2, json!("one")), (3, json!("two")), (4, json!("three"))]);
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_timed_out_request_is_lost_and_its_late_reply_is_dropped() {
    let (logs, _guard) = Logs::capture();
    let bridge = start(&[]).await;
    let parked = Script::request("park", "").timeout_ms(50);
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(parked.text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "lost": "timed out after 50 ms"})]);

    // The host now answers the parked request (late), then this one.
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("unpark", "").text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "ok": "unparked"})]);
    assert!(
        logs.text().contains("late or unknown native response dropped id=2"),
        "{}",
        logs.text()
    );
    assert_eq!(bridge.closed_reason(), None);
    bridge.shutdown().await;
}

/// A reply behind another session's backlog is ZCode's answer all the same: while the reader
/// waits for that session to take its input, the reply may be in the pipe, so the wait does not
/// count against the request's timeout (F-28 in docs/reliability.md).
#[tokio::test]
async fn a_reply_behind_a_full_session_queue_is_not_timed_out_by_the_wait() {
    let bridge = start(&[]).await;
    let (a, mut a_input) = bridge.link_session(Box::new(TestSession::default()));
    guard(session_op(&a, create(Script::request("echo", "").add_routes(&["a"])))).await.unwrap();
    // The host writes the events, then the reply: the reader waits once A's queue is full.
    let events = SESSION_QUEUE + 50;
    let behind = Script::request("emit", &vec!["a"; events].join(",")).timeout_ms(1000);
    let op = bridge
        .connection_op(ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(behind.text())));
    let late_reader = async {
        // Three times the timeout before A takes anything, then all of it.
        tokio::time::sleep(Duration::from_secs(3)).await;
        for seq in 1..=events {
            assert_eq!(event(a_input.recv().await)["seq"], json!(seq));
        }
    };
    let (result, ()) = guard(async { tokio::join!(op, late_reader) }).await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "ok": "emitted"})]);
    bridge.shutdown().await;
}

/// But a session's own request behind its own full queue still times out: a session that
/// takes no input while its operation waits (as while it is being opened) would otherwise wait
/// for ever.
#[tokio::test]
async fn a_reply_behind_its_own_sessions_full_queue_still_times_out() {
    let bridge = start(&[]).await;
    let (a, _a_input) = bridge.link_session(Box::new(TestSession::default()));
    guard(session_op(&a, create(Script::request("echo", "").add_routes(&["a"])))).await.unwrap();
    let events = SESSION_QUEUE + 50;
    let behind = Script::request("emit", &vec!["a"; events].join(",")).timeout_ms(300);
    let result = guard(session_op(&a, create(behind))).await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "lost": "timed out after 300 ms"})]);
    bridge.shutdown().await;
}

#[tokio::test]
async fn large_timeouts_are_capped() {
    let options = BridgeOptions { max_timeout: Duration::from_millis(60), ..options() };
    let bridge = start_with(plan(&[]), TestConnection::default(), options).await;
    let script = Script::request("park", "").timeout_ms(u32::MAX);
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(script.text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "lost": "timed out after 60 ms"})]);
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_zero_timeout_request_is_written_but_not_awaited() {
    let (logs, _guard) = Logs::capture();
    let bridge = start(&[]).await;
    // `echo` would be answered, but a zero timeout means no reply is expected: the op ends on
    // the second request's reply, and the first one's answer is dropped as unknown.
    let script = Script::request("echo", "fire-and-forget").timeout_ms(0).and("echo", "awaited");
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(script.text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "ok": {"echo": "awaited"}})]);
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("echo", "x").text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 4, "ok": {"echo": "x"}})]);
    assert!(
        logs.text().contains("late or unknown native response dropped id=2"),
        "{}",
        logs.text()
    );
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_duplicate_reply_is_dropped_and_never_matched_to_another_request() {
    let (logs, _guard) = Logs::capture();
    let bridge = start(&[]).await;
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("twice", "").text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": "first"})]);
    // The duplicate was written before this request's reply, so it has been handled by now.
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("echo", "x").text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "ok": {"echo": "x"}})]);
    assert!(
        logs.text().contains("late or unknown native response dropped id=2"),
        "{}",
        logs.text()
    );
    bridge.shutdown().await;
}

#[tokio::test]
async fn routes_are_registered_before_the_request_is_written() {
    let bridge = start(&[]).await;
    let (link, mut events) = bridge.link_session(Box::new(TestSession::default()));
    // The host emits three events on the new route before it replies.
    let script = Script::request("emit", "r1,r1,r1").add_routes(&["r1"]);
    let result = guard(session_op(&link, create(script))).await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": "emitted"})]);
    for seq in 1..=3 {
        assert_eq!(event(events.try_recv()), json!({"seq": seq}));
    }
    assert!(events.try_recv().is_none());
    // The link maps what it receives with its own mapper session.
    let input = SessionInput::Event("{\"seq\":1}".into());
    assert_eq!(link.map(vec![input]).unwrap(), vec![Action::Update("{\"seq\":1}".into())]);
    bridge.shutdown().await;
}

#[tokio::test]
async fn events_go_to_the_session_that_owns_the_route_in_order() {
    let bridge = start(&[]).await;
    let (a, mut a_events) = bridge.link_session(Box::new(TestSession::default()));
    let (b, mut b_events) = bridge.link_session(Box::new(TestSession::default()));
    guard(session_op(&a, create(Script::request("echo", "").add_routes(&["a"])))).await.unwrap();
    guard(session_op(&b, create(Script::request("echo", "").add_routes(&["b"])))).await.unwrap();

    // seq 1..=5 on routes a, b, a, nobody, a.
    let script = Script::request("emit", "a,b,a,nobody,a");
    guard(bridge.connection_op(ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(
        script.text(),
    ))))
    .await
    .unwrap();
    let a_seqs: Vec<Value> = (0..3).map(|_| event(a_events.try_recv())["seq"].clone()).collect();
    assert_eq!(a_seqs, vec![json!(1), json!(3), json!(5)]);
    assert_eq!(event(b_events.try_recv()), json!({"seq": 2}));
    assert!(a_events.try_recv().is_none() && b_events.try_recv().is_none());
    bridge.shutdown().await;
}

#[tokio::test]
async fn events_for_a_removed_route_are_dropped() {
    let bridge = start(&[]).await;
    let (link, mut events) = bridge.link_session(Box::new(TestSession::default()));
    let (other, mut other_events) = bridge.link_session(Box::new(TestSession::default()));
    guard(session_op(&link, create(Script::request("echo", "").add_routes(&["r1", "r2"]))))
        .await
        .unwrap();
    guard(session_op(&other, create(Script::request("echo", "").add_routes(&["o"]))))
        .await
        .unwrap();

    // The route is removed before the request is written; its event (seq 1) goes nowhere.
    let script = Script::request("emit", "r1,r2").remove_routes(&["r1"]);
    guard(session_op(&link, create(script))).await.unwrap();
    assert_eq!(event(events.try_recv()), json!({"seq": 2}));
    assert!(events.try_recv().is_none());

    // Dropping the other link removes its routes too.
    drop(other);
    guard(bridge.connection_op(ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(
        Script::request("emit", "o,r2").text(),
    ))))
    .await
    .unwrap();
    assert_eq!(event(events.try_recv()), json!({"seq": 2}));
    assert!(other_events.try_recv().is_none());
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_mapper_error_fails_only_that_op() {
    let bridge = start(&[]).await;
    let (link, _events) = bridge.link_session(Box::new(TestSession::default()));
    let result = guard(session_op(&link, create(Script::fail("no such session")))).await;
    match result {
        Err(OpFailure::Mapper(error)) => {
            assert_eq!(
                (error.kind, error.message.as_str()),
                (ErrorKind::Native, "no such session")
            );
        }
        other => panic!("expected a mapper error, got {other:?}"),
    }
    let result = guard(session_op(&link, create(Script::request("echo", "ok")))).await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": {"echo": "ok"}})]);
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_session_fault_makes_only_that_session_unusable() {
    let bridge = start(&[]).await;
    let (broken, _broken_events) = bridge.link_session(Box::new(TestSession::default()));
    let (healthy, _healthy_events) = bridge.link_session(Box::new(TestSession::default()));

    for (script, cause) in [
        (Script::fault("trap"), "trap"),
        (Script::request("echo", "").with_wrong_ids(), "has id 7, but the id handed out was 2"),
        (Script::empty_wait(), "resumed 100000 times without awaiting a reply"),
    ] {
        let (link, _events) = bridge.link_session(Box::new(TestSession::default()));
        match guard(session_op(&link, create(script))).await {
            Err(OpFailure::Fault(fault)) => assert!(fault.0.contains(cause), "{fault}"),
            other => panic!("expected a fault for `{cause}`, got {other:?}"),
        }
        assert!(link.fault().is_some());
    }

    guard(session_op(&broken, create(Script::fault("trap")))).await.unwrap_err();
    // The broken session refuses everything from now on, without calling its mapper.
    let again = guard(session_op(&broken, create(Script::request("echo", "")))).await;
    assert!(matches!(again, Err(OpFailure::Fault(_))), "{again:?}");
    assert!(broken.map(vec![SessionInput::Event("{}".into())]).is_err());

    // Everything else is untouched. The wrong-id op consumed id 2; the healthy op gets 3.
    let result = guard(session_op(&healthy, create(Script::request("echo", "fine")))).await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "ok": {"echo": "fine"}})]);
    assert_eq!(bridge.closed_reason(), None);
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_route_owned_by_another_session_is_refused() {
    let bridge = start(&[]).await;
    let (a, _a_events) = bridge.link_session(Box::new(TestSession::default()));
    let (b, _b_events) = bridge.link_session(Box::new(TestSession::default()));
    guard(session_op(&a, create(Script::request("echo", "").add_routes(&["shared"]))))
        .await
        .unwrap();
    let taken =
        guard(session_op(&b, create(Script::request("echo", "").add_routes(&["shared"])))).await;
    match taken {
        Err(OpFailure::Fault(fault)) => assert!(fault.0.contains("already belongs"), "{fault}"),
        other => panic!("expected a fault, got {other:?}"),
    }
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_mapping_fault_poisons_the_session() {
    let bridge = start(&[]).await;
    let (link, _events) = bridge.link_session(Box::new(TestSession::default()));
    assert!(link.map(vec![SessionInput::Event("{\"mapper-fault\":1}".into())]).is_err());
    let result = guard(session_op(&link, create(Script::request("echo", "")))).await;
    assert!(matches!(result, Err(OpFailure::Fault(_))), "{result:?}");
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_connection_op_fault_fails_the_transport_closed() {
    let bridge = start(&[]).await;
    let (_link, mut events) = bridge.link_session(Box::new(TestSession::default()));
    let script = Script::request("echo", "").add_routes(&["mine"]);
    match guard(
        bridge.connection_op(ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(
            script.text(),
        ))),
    )
    .await
    {
        Err(OpFailure::Fault(fault)) => {
            assert!(fault.0.contains("cannot own event routes"), "{fault}")
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    let reason = bridge.closed_reason().expect("the transport is closed");
    assert!(reason.contains("cannot own event routes"), "{reason}");
    assert_eq!(events.try_recv(), Some(SessionInbound::TransportClosed(reason.clone())));
    let later = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("echo", "").text()),
    )))
    .await;
    assert_eq!(later, Err(OpFailure::Transport(reason)));
    bridge.shutdown().await;
}

#[tokio::test]
async fn stderr_is_drained_and_never_logged() {
    let (logs, _guard) = Logs::capture();
    let bridge = start(&[]).await;
    // 4 MiB on stderr: far more than a pipe holds, so the host would block if nobody read it.
    let result = guard(bridge.connection_op(ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("stderr_flood", "64").text()),
    )))
    .await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": "flooded"})]);
    bridge.shutdown().await;
    // The drain logs its byte count once the pipe closes; wait for that line.
    guard(async {
        while !logs.text().contains("host stderr closed") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(!logs.text().contains("secret-stderr-content"), "stderr content reached the logs");
}
