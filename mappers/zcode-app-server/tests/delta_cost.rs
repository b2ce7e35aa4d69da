//! What one streamed Desktop 4.0.0 text delta costs the mapper, for an instruction count under
//! callgrind (issue 27; docs/performance.md): the V4 `row.delta` frame ZCode writes for each
//! delta, pushed through `AppServerConnection` and mapped by a V4 session (its members in
//! ZCode's order). ZCode merges the legacy `model.streaming` events (about one per 170
//! such deltas, `host/simulator/src/app_server/delta_batch.rs`), so a delta's own traffic is
//! its V4 line (`DELTA_COST_FRAMING=v4`, the default); `lines` and `arrays` add a legacy event
//! to every delta, as two lines or one array line, the traffic the simulator wrote before it
//! merged them. A push holds one delta's bytes, or `DELTA_COST_PER_READ` deltas' as one read of
//! the Agent's stdout does (about 150 in 64 KiB), so that the connection joins them
//! (`zcode_mapper_sdk::joined`). Only [`stream`] is meant to be counted:
//!
//! ```text
//! CARGO_PROFILE_RELEASE_STRIP=false cargo test --release --manifest-path mappers/Cargo.toml \
//!     -p zcode-app-server --test delta_cost --no-run
//! valgrind --tool=callgrind --toggle-collect='delta_cost::stream' \
//!     <test binary> --ignored --exact per_delta   # Ir / DELTA_COST_DELTAS (20 000) per delta
//! ```
//!
//! (the release profile strips the symbol the toggle names unless told not to.)

use std::collections::BTreeSet;

use serde_json::{Value, json};
use zcode_app_server::{AppServerConnection, AppServerSession};
use zcode_contract::{
    Action, ClientFeatures, Inbound, NativeReply, ReplyBody, SessionInit, SessionInput, SessionOp,
    Step,
};
use zcode_mapper_sdk::{Connection, SessionMachine};

/// The Agent's answers to what the session asks while it opens and prompts (a 4.0.0 Agent:
/// V4, flow control).
fn answer(request: &Value) -> Value {
    match request["method"].as_str().unwrap() {
        "runtime/capabilities" => json!({"independentPlanState": true}),
        "session/create" => json!({"session": {"sessionId": "sess_1"}, "settings": {}}),
        "session/subscribe" => json!({"sessionId": "sess_1", "eventSeq": 4, "events": []}),
        "v4/conversation/subscribe" => {
            json!({"ack": {"subscriptionId": "sub-1", "mode": "snapshot", "logEpoch": "e1"}})
        }
        "session/send" => json!({"sessionId": "sess_1", "accepted": true, "stateRevision": 3}),
        _ => json!({}),
    }
}

/// A session and the routes it holds, as the core keeps them.
struct Routed {
    session: AppServerSession,
    routes: BTreeSet<String>,
}

/// Runs `op` to its end against [`answer`]; the requests it sent.
fn run(routed: &mut Routed, op: SessionOp, next_id: &mut u64) -> Vec<Value> {
    let Routed { session, routes } = routed;
    let mut sent = Vec::new();
    let mut step = session.start(1, &op, *next_id);
    while let Step::Wait(out) = step {
        routes.retain(|route| !out.routes_removed.contains(route));
        routes.extend(out.routes_added);
        *next_id += out.requests.len() as u64;
        let Some(request) = out.requests.first() else {
            step = session.resume(1, None, *next_id);
            continue;
        };
        let frame: Value = serde_json::from_slice(&request.bytes).unwrap();
        let body = ReplyBody::Ok(answer(&frame).to_string().into());
        sent.push(frame);
        step = session.resume(1, Some(&NativeReply { id: request.id, body }), *next_id);
    }
    assert!(matches!(step, Step::Done(Ok(_))), "{step:?}");
    sent
}

/// A V4 line as ZCode writes it: the wire frame's members in its order (`wireVersion` first,
/// `topic` before `frame`), which the connection's routing on the line's head relies on.
/// serde_json would sort them, putting `topic` after the frame.
fn v4_line(from: u64, deltas: Value) -> String {
    let frame = json!({"fromSeq": from, "payload": {"deltas": deltas, "kind": "deltas"},
        "sentAt": 1_764_820_800_000_u64, "subscriptionId": "sub-1", "toSeq": from + 1,
        "topic": "conversation/sess_1"});
    format!(
        r#"{{"method":"v4/conversation/frame","params":{{"wireVersion":3,"kind":"complete","deliveryKind":"online","logicalFrameId":"sub-1:{from}","logicalFrameOrdinal":{from},"topic":"conversation/sess_1","subscriptionId":"sub-1","frame":{frame}}}}}"#
    )
}

/// A session with a V4 turn running, its text row open; the V4 log at 6.
fn streaming_session() -> Routed {
    let init = SessionInit {
        facts: Default::default(),
        workspace: "/w".into(),
        client: ClientFeatures { plan_operations: false, form_elicitation: true },
    };
    let mut routed = Routed { session: AppServerSession::new(&init), routes: BTreeSet::new() };
    let mut next_id = 1;
    run(&mut routed, SessionOp::Create(r#"{"cwd":"/w","mcpServers":[]}"#.into()), &mut next_id);
    let session = &mut routed.session;
    let snapshot = json!({"method": "v4/conversation/frame", "params": {"wireVersion": 3, "kind": "complete", "deliveryKind": "initial", "logicalFrameId": "f1", "logicalFrameOrdinal": 1, "topic": "conversation/sess_1", "subscriptionId": "sub-1",
        "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub-1", "fromSeq": 0, "toSeq": 5, "sentAt": 1, "payload": {"kind": "snapshot", "snapshot": {"logEpoch": "e1", "seq": 5, "revision": 7, "rows": {"window": [], "totalCount": 0, "firstRowId": null}}}}}});
    session.map(&[SessionInput::Event(snapshot.to_string().into())]);
    let prompt = json!({"sessionId": "sess_1", "prompt": [{"type": "text", "text": "Go"}]});
    let sent = run(&mut routed, SessionOp::Prompt(prompt.to_string()), &mut next_id);
    let session = &mut routed.session;
    let command = &sent[0]["params"]["commandId"];
    let opened = v4_line(
        5,
        json!([
            {"op": "row.appended", "row": {"rowId": 1, "turnId": "turn-1", "createdAt": 1, "createdAtSeq": 1, "kind": "turnHeader", "origin": "userInput", "sourceCommandId": command, "state": "running", "startedAt": 1}},
            {"op": "row.appended", "row": {"rowId": 2, "turnId": "turn-1", "createdAt": 1, "createdAtSeq": 2, "kind": "assistantText", "text": "", "state": "streaming"}},
        ]),
    );
    let effects = session.map(&[SessionInput::Event(opened.into())]);
    assert!(!effects.actions.iter().any(|a| matches!(a, Action::Terminal(_))), "{effects:?}");
    routed
}

/// What the Agent writes for each delta.
#[derive(Clone, Copy)]
enum Framing {
    /// Its V4 line alone.
    V4,
    /// A legacy event too, on a line of its own.
    Lines,
    /// A legacy event too, with the V4 frame in one array line.
    Arrays,
}

/// The bytes written for delta `i`.
fn delta_bytes(i: u64, framing: Framing) -> Vec<u8> {
    let legacy = json!({"method": "session/event", "params": {
        "deliveryKind": "desktop-continuous", "eventId": format!("evt_{i:032x}"),
        "payload": {"assistantMessageId": "msg_0123456789abcdef0123456789abcdef", "delta": "lorem ipsum ",
                    "done": false, "kind": "text_delta", "partId": "prt_0123456789abcdef0123456789abcdef"},
        "seq": 5 + i, "sessionId": "sess_1", "timestamp": 1_764_820_800_000_u64 + i,
        "traceId": "trace_0123456789abcdef0123456789abcdef", "turnId": "turn-1", "type": "model.streaming"}});
    let v4 = v4_line(
        6 + i,
        json!([{"append": "lorem ipsum ", "op": "row.delta", "path": "text", "rowId": 2}]),
    );
    let text = match framing {
        Framing::V4 => format!("{v4}\n"),
        Framing::Lines => format!("{legacy}\n{v4}\n"),
        Framing::Arrays => format!("[{legacy},{v4}]\n"),
    };
    text.into_bytes()
}

/// The bytes of `deltas` deltas, `per_read` to a push.
fn reads(deltas: u64, per_read: u64, framing: Framing) -> Vec<Vec<u8>> {
    let per_read = per_read.max(1);
    let starts = (0..deltas).step_by(per_read as usize);
    starts
        .map(|start| {
            (start..deltas.min(start + per_read)).flat_map(|i| delta_bytes(i, framing)).collect()
        })
        .collect()
}

/// The counted part: each delta's bytes pushed to the connection, and what it routes to a
/// route the session holds mapped by the session in one call (as the core hands a session what
/// one read brought; it drops the rest). The updates shown.
#[inline(never)]
fn stream(connection: &mut AppServerConnection, routed: &mut Routed, pushes: &[Vec<u8>]) -> usize {
    let mut shown = 0;
    for bytes in pushes {
        let inputs: Vec<SessionInput> = connection
            .push(bytes)
            .unwrap()
            .into_iter()
            .filter_map(|inbound| match inbound {
                Inbound::Event(event) if routed.routes.contains(&event.route) => {
                    Some(SessionInput::Event(event.payload))
                }
                Inbound::Event(_) => None,
                other => panic!("{other:?}"),
            })
            .collect();
        let effects = routed.session.map(&inputs);
        shown += effects.actions.iter().filter(|a| matches!(a, Action::Update(_))).count();
    }
    shown
}

#[test]
#[ignore = "a measurement: run under callgrind (see the module's comment)"]
fn per_delta() {
    let deltas: u64 =
        std::env::var("DELTA_COST_DELTAS").map_or(20_000, |n| n.parse().expect("a number"));
    let framing = match std::env::var("DELTA_COST_FRAMING").as_deref() {
        Ok("v4") | Err(_) => Framing::V4,
        Ok("lines") => Framing::Lines,
        Ok("arrays") => Framing::Arrays,
        Ok(other) => panic!("DELTA_COST_FRAMING is v4, lines or arrays, not {other}"),
    };
    let per_read: u64 =
        std::env::var("DELTA_COST_PER_READ").map_or(1, |n| n.parse().expect("a number"));
    let pushes = reads(deltas, per_read, framing);
    let mut connection = AppServerConnection::new();
    let mut routed = streaming_session();
    let shown = stream(&mut connection, &mut routed, &pushes);
    // Every delta shown once (from V4), the legacy duplicate dropped before the session.
    assert_eq!(shown as u64, deltas);
}

/// The measurement's own check, run with the tests: every framing streams and shows each delta,
/// a delta a read or several.
#[test]
fn a_few_deltas_stream_every_way() {
    for framing in [Framing::V4, Framing::Lines, Framing::Arrays] {
        for per_read in [1, 2, 7] {
            let mut routed = streaming_session();
            let pushes = reads(7, per_read, framing);
            assert_eq!(stream(&mut AppServerConnection::new(), &mut routed, &pushes), 7);
        }
    }
}
