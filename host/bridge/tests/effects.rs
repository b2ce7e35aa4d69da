//! What WIT 0.2 lets a mapper ask of the bridge: untracked writes, steps that await nothing,
//! updates streamed while an operation waits, native requests issued while mapping input,
//! credentials filled into writes, and the identity a host must confirm.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use zcode_bridge::{BridgeError, HostBridge, HostSpec, SESSION_QUEUE, SessionInbound};
use zcode_contract::{
    Action, CredentialEncoding, CredentialSource, NativeData, NativeRequest, NativeWrite,
    Operations, Outgoing, ReplyBody, SecretFill, SessionInput, SessionOp, Step,
};
use zcode_credentials::CredentialStore;

fn note(text: &str) -> String {
    json!({"id": 0, "method": "note", "arg": text}).to_string()
}

fn create(script: Script) -> SessionOp {
    SessionOp::Create(script.text())
}

#[tokio::test]
async fn writes_go_out_before_the_requests_of_their_step() {
    let bridge = start(&[]).await;
    let (link, _events) = bridge.link_session(Box::new(TestSession::default()));
    let script = Script::request("notes", "").write(&note("one")).write(&note("two"));
    let result = guard(session_op(&link, create(script))).await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": "one,two"})]);
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_step_that_awaits_nothing_is_resumed_at_once() {
    let bridge = start(&[]).await;
    let (link, _events) = bridge.link_session(Box::new(TestSession::default()));
    // Round one only writes; round two writes again and an untracked request; round three asks.
    let script = Script::default()
        .write(&note("a"))
        .then(Script::request("note", "b").timeout_ms(0).then(Script::request("notes", "")));
    let result = guard(session_op(&link, create(script))).await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "ok": "a,b"})]);
    bridge.shutdown().await;
}

#[tokio::test]
async fn updates_stream_while_the_operation_waits() {
    let bridge = start(&[]).await;
    let (link, _events) = bridge.link_session(Box::new(TestSession::default()));
    let page = |n: u32| format!("{{\"page\":{n}}}");
    let (one, two, three) = (page(1), page(2), page(3));
    let script = Script::request("echo", "p1")
        .stream(&[&one, &two])
        .then(Script::default().stream(&[&three]));
    let (result, streamed) = guard(session_op_streaming(&link, create(script))).await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": {"echo": "p1"}})]);
    assert_eq!(streamed, vec![one, two, three]);
    // A connection operation has no session to stream to.
    let fault = guard(bridge.connection_op(zcode_contract::ConnectionOp::Probe(
        zcode_contract::ProbeRequest::workspace(Script::request("echo", "").stream(&["{}"]).text()),
    )))
    .await
    .unwrap_err();
    assert!(fault.to_string().contains("cannot send session updates"), "{fault}");
    bridge.shutdown().await;
}

/// The reply to a request issued while mapping comes back as the session's next input.
#[tokio::test]
async fn mapping_can_issue_requests_whose_replies_come_back_as_input() {
    let bridge = start(&[]).await;
    let (link, mut inbound) = bridge.link_session(Box::new(TestSession::default()));
    let ask = json!({"ask": "echo"}).to_string();
    let actions = link.map(vec![SessionInput::Event(ask.as_str().into())]).unwrap();
    assert_eq!(actions, vec![Action::Update(ask)]);
    let Some(SessionInbound::Input(input @ SessionInput::Reply(_))) = guard(inbound.recv()).await
    else {
        panic!("expected the reply as input");
    };
    let actions = link.map(vec![input]).unwrap();
    let Action::Update(update) = &actions[0] else { panic!("{actions:?}") };
    let update: Value = serde_json::from_str(update).unwrap();
    assert_eq!(update, json!({"reply": 2, "ok": {"echo": ""}}));
    // The id was handed out by the bridge: the next operation gets the one after it.
    let result = guard(session_op(&link, create(Script::request("echo", "")))).await;
    assert_eq!(replies(&result)[0]["id"], 3);
    bridge.shutdown().await;
}

/// A request issued while mapping belongs to its session: when the last link is dropped, the
/// request leaves the pending table (its timeout goes with it) and its late reply is dropped.
#[tokio::test]
async fn a_dropped_session_takes_the_requests_it_issued_while_mapping_along() {
    let (logs, _guard) = Logs::capture();
    let bridge = start(&[]).await;
    let (link, inbound) = bridge.link_session(Box::new(TestSession::default()));
    let ask = json!({"ask": "park"}).to_string();
    link.map(vec![SessionInput::Event(ask.as_str().into())]).unwrap();
    drop((link, inbound));
    // The host answers the parked request now, then this one.
    let unpark = zcode_contract::ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace(
        Script::request("unpark", "").text(),
    ));
    let result = guard(bridge.connection_op(unpark)).await;
    assert_eq!(replies(&result), vec![json!({"id": 3, "ok": "unparked"})]);
    assert!(
        logs.text().contains("late or unknown native response dropped id=2"),
        "{}",
        logs.text()
    );
    bridge.shutdown().await;
}

/// As for an operation's request (`ops.rs`): while the reader waits for another session to
/// take its backlog, the reply may be behind it, and the wait does not count against the
/// request's timeout.
#[tokio::test]
async fn a_reply_to_mapping_behind_a_full_session_queue_is_not_timed_out_by_the_wait() {
    let bridge = start(&[]).await;
    let (a, mut a_input) = bridge.link_session(Box::new(TestSession::default()));
    guard(session_op(&a, create(Script::request("echo", "").add_routes(&["a"])))).await.unwrap();
    let (link, mut inbound) = bridge.link_session(Box::new(TestSession::default()));
    let events = SESSION_QUEUE + 50;
    let routes = vec!["a"; events].join(",");
    let ask = json!({"ask": "emit", "arg": routes, "timeoutMs": 1000}).to_string();
    link.map(vec![SessionInput::Event(ask.as_str().into())]).unwrap();
    // Three times the timeout before A takes anything, then all of it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for _ in 0..events {
        assert!(matches!(guard(a_input.recv()).await, Some(SessionInbound::Input(_))));
    }
    match guard(inbound.recv()).await {
        Some(SessionInbound::Input(SessionInput::Reply(reply))) => {
            assert_eq!(reply.body, ReplyBody::Ok("\"emitted\"".into()))
        }
        other => panic!("expected the reply, got {other:?}"),
    }
    bridge.shutdown().await;
}

#[tokio::test]
async fn writes_from_mapping_are_written() {
    let bridge = start(&[]).await;
    let (link, _inbound) = bridge.link_session(Box::new(TestSession::default()));
    let event = json!({"write": note("from-mapping")}).to_string();
    link.map(vec![SessionInput::Event(event.as_str().into())]).unwrap();
    let result = guard(session_op(&link, create(Script::request("notes", "")))).await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": "from-mapping"})]);
    bridge.shutdown().await;
}

/// A session mapper that issues a request which times out: the `Lost` reply arrives as input.
struct Asker;

impl Operations<SessionOp> for Asker {
    fn start(
        &mut self,
        _: u64,
        _: &SessionOp,
        _: u64,
    ) -> Result<Step, zcode_contract::MapperFault> {
        unreachable!("no operation runs in this test")
    }

    fn resume(
        &mut self,
        _: u64,
        _: Option<&zcode_contract::NativeReply>,
        _: u64,
    ) -> Result<Step, zcode_contract::MapperFault> {
        unreachable!("no operation runs in this test")
    }
}

impl zcode_contract::MapperSession for Asker {
    fn map(
        &mut self,
        _: Vec<SessionInput>,
    ) -> Result<zcode_contract::Effects, zcode_contract::MapperFault> {
        Ok(zcode_contract::Effects { requests: 1, ..Default::default() })
    }

    fn issue(&mut self, first: u64) -> Result<Outgoing, zcode_contract::MapperFault> {
        let frame = json!({"id": first, "method": "stall", "arg": ""});
        let request = NativeRequest {
            id: first,
            bytes: format!("{frame}\n").into_bytes(),
            label: "stall".into(),
            timeout_ms: 50,
        };
        Ok(Outgoing { requests: vec![request], ..Outgoing::default() })
    }
}

#[tokio::test]
async fn a_request_issued_while_mapping_times_out_as_a_lost_reply() {
    let bridge = start(&[]).await;
    let (link, mut inbound) = bridge.link_session(Box::new(Asker));
    assert!(link.map(vec![SessionInput::Event("{}".into())]).unwrap().is_empty());
    match guard(inbound.recv()).await {
        Some(SessionInbound::Input(SessionInput::Reply(reply))) => {
            assert_eq!(reply.body, ReplyBody::Lost("timed out after 50 ms".into()))
        }
        other => panic!("expected a lost reply, got {other:?}"),
    }
    bridge.shutdown().await;
}

#[tokio::test]
async fn issuing_other_than_what_was_announced_is_a_fault() {
    struct Liar;
    impl Operations<SessionOp> for Liar {
        fn start(
            &mut self,
            _: u64,
            _: &SessionOp,
            _: u64,
        ) -> Result<Step, zcode_contract::MapperFault> {
            unreachable!()
        }
        fn resume(
            &mut self,
            _: u64,
            _: Option<&zcode_contract::NativeReply>,
            _: u64,
        ) -> Result<Step, zcode_contract::MapperFault> {
            unreachable!()
        }
    }
    impl zcode_contract::MapperSession for Liar {
        fn map(
            &mut self,
            _: Vec<SessionInput>,
        ) -> Result<zcode_contract::Effects, zcode_contract::MapperFault> {
            Ok(zcode_contract::Effects { requests: 2, ..Default::default() })
        }
        fn issue(&mut self, _: u64) -> Result<Outgoing, zcode_contract::MapperFault> {
            Ok(Outgoing::default())
        }
    }
    let bridge = start(&[]).await;
    let (link, _inbound) = bridge.link_session(Box::new(Liar));
    let fault = link.map(vec![SessionInput::Event("{}".into())]).unwrap_err();
    assert!(fault.0.contains("announced 2 native requests but issued 0"), "{fault}");
    assert!(link.fault().is_some());
    bridge.shutdown().await;
}

#[tokio::test]
async fn credentials_are_filled_into_writes_and_never_reach_the_mapper() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("keys.json"), r#"{"key:plan":"sk-test-42"}"#).unwrap();
    let source = CredentialSource {
        name: "plan".into(),
        file: "keys.json".into(),
        key: "key:{which}".into(),
        lookups: vec![],
        encodings: vec![CredentialEncoding::Plain],
    };
    let credentials = CredentialStore::new(home.path(), vec![source]);
    let install = install();
    let plan = plan(&[]);
    let spec = HostSpec { install: &install, plan: &plan, identity: None, credentials };
    let bridge = guard(HostBridge::spawn(spec, Box::new(TestConnection::default()), options()))
        .await
        .unwrap();
    let (link, _inbound) = bridge.link_session(Box::new(Filler));
    link.map(vec![SessionInput::Event("{}".into())]).unwrap();
    let result = guard(session_op(&link, create(Script::request("notes", "")))).await;
    assert_eq!(replies(&result), vec![json!({"id": 2, "ok": "sk-test-42"})]);
    bridge.shutdown().await;
}

/// Writes a note whose text is a credential, filled in by the core.
struct Filler;

impl Operations<SessionOp> for Filler {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first: u64,
    ) -> Result<Step, zcode_contract::MapperFault> {
        TestSession::default().start(op_id, op, first)
    }

    fn resume(
        &mut self,
        _: u64,
        reply: Option<&zcode_contract::NativeReply>,
        _: u64,
    ) -> Result<Step, zcode_contract::MapperFault> {
        let Some(ReplyBody::Ok(NativeData::Text(notes))) = reply.map(|r| &r.body) else {
            panic!("{reply:?}")
        };
        let response = json!({"replies": [{"id": reply.unwrap().id, "ok": serde_json::from_str::<Value>(notes).unwrap()}]});
        Ok(Step::Done(Ok(zcode_contract::OpResult {
            response: response.to_string(),
            updates: vec![],
        })))
    }
}

impl zcode_contract::MapperSession for Filler {
    fn map(
        &mut self,
        _: Vec<SessionInput>,
    ) -> Result<zcode_contract::Effects, zcode_contract::MapperFault> {
        let write = NativeWrite {
            bytes: format!("{}\n", note("@@key@@")).into_bytes(),
            label: "note with a credential".into(),
            secret: Some(SecretFill {
                placeholder: "@@key@@".into(),
                source: "plan".into(),
                args: vec![("which".into(), "plan".into())],
                fallback: format!("{}\n", note("refused")).into_bytes(),
            }),
        };
        Ok(zcode_contract::Effects { writes: vec![write], ..Default::default() })
    }

    fn issue(&mut self, _: u64) -> Result<Outgoing, zcode_contract::MapperFault> {
        unreachable!("no request is announced")
    }
}

#[tokio::test]
async fn the_host_must_confirm_its_release_identity() {
    let install = install();
    let plan = plan(&[]);
    let spawn_reporting = |reported: Option<&str>, expected: Option<&str>, unpinned: bool| {
        let mut install = install.clone();
        if unpinned {
            install.unpinned = vec!["server".into()];
        }
        let mut connection = TestConnection::default();
        if let Some(reported) = reported {
            connection = connection.reporting(reported);
        }
        let plan = plan.clone();
        let expected = expected.map(str::to_string);
        async move {
            let spec = HostSpec {
                install: &install,
                plan: &plan,
                identity: expected.as_deref(),
                credentials: Default::default(),
            };
            let result = HostBridge::spawn(spec, Box::new(connection), options()).await;
            if let Ok(bridge) = &result {
                bridge.shutdown().await;
            }
            result.map(|_| ())
        }
    };
    guard(spawn_reporting(Some("zcode 3.16.2"), Some("zcode 3.16.2"), true)).await.unwrap();
    match guard(spawn_reporting(Some("zcode 3.17.1"), Some("zcode 3.16.2"), false)).await {
        Err(BridgeError::IdentityMismatch { expected, reported }) => {
            assert_eq!((expected.as_str(), reported.as_str()), ("zcode 3.16.2", "zcode 3.17.1"))
        }
        other => panic!("expected an identity mismatch, got {other:?}"),
    }
    match guard(spawn_reporting(None, Some("zcode 3.16.2"), true)).await {
        Err(BridgeError::IdentityMismatch { reported, .. }) => assert_eq!(reported, "nothing"),
        other => panic!("expected an identity mismatch, got {other:?}"),
    }
    // Unpinned files and no identity to confirm: nothing is started.
    match guard(spawn_reporting(Some("anything"), None, true)).await {
        Err(BridgeError::Unverifiable(roles)) => assert_eq!(roles, "server"),
        other => panic!("expected an unverifiable install, got {other:?}"),
    }
}
