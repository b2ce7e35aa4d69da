use serde_json::{Value, json};
use zcode_contract::{ConnectionOp, ErrorKind, Inbound, NativeReply, ReplyBody, Step};
use zcode_mapper_sdk::Connection as _;

use crate::connection::AppServerConnection;

fn push(conn: &mut AppServerConnection, lines: &[Value]) -> Vec<Inbound> {
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(line.to_string().as_bytes());
        bytes.push(b'\n');
    }
    conn.push(&bytes).unwrap()
}

fn written(inbound: &Inbound) -> Value {
    let Inbound::Write(write) = inbound else { panic!("not a write: {inbound:?}") };
    assert!(write.secret.is_none());
    serde_json::from_slice(&write.bytes).unwrap()
}

#[test]
fn frames_lines_across_pushes_and_routes_by_session() {
    let mut conn = AppServerConnection::new();
    assert!(conn.push(b"{\"id\":3,\"res").unwrap().is_empty());
    let inbound = conn.push(b"ult\":{\"a\":1}}\n{\"method\":\"session/event\",\"params\":{\"sessionId\":\"s1\",\"seq\":1}}\n").unwrap();
    assert!(matches!(&inbound[0], Inbound::Reply(NativeReply { id: 3, body: ReplyBody::Ok(_) })));
    assert!(matches!(&inbound[1], Inbound::Event(e) if e.route == "session/s1"));
    let frames = push(
        &mut conn,
        &[
            json!({"method": "v4/conversation/frame", "params": {"topic": "conversation/s1"}}),
            json!({"method": "v4/conversation/frame", "params": {"topic": "workspace-config/w"}}),
            json!({"method": "process/resourceSample", "params": {}}),
            json!({"method": "startup/storageState", "params": {"phase": "ready"}}),
            json!({"id": "server-4", "method": "interaction/requestPermission", "params": {"sessionId": "s1"}}),
        ],
    );
    assert!(matches!(&frames[0], Inbound::Event(e) if e.route == "session/s1"));
    assert!(matches!(&frames[1], Inbound::Ignored(_)));
    assert!(matches!(&frames[2], Inbound::Ignored(m) if m == "process/resourceSample"));
    assert!(matches!(&frames[3], Inbound::Ignored(_)));
    assert!(matches!(&frames[4], Inbound::Event(e) if e.route == "session/s1"));
    assert_eq!(conn.finish().unwrap(), Vec::new());
    assert_eq!(conn.push(b"{\"id\":9,\"result\":{}}").unwrap(), Vec::new());
    assert!(matches!(conn.finish().unwrap()[0], Inbound::Reply(NativeReply { id: 9, .. })));
}

/// The legacy events the V4 conversation also carries go to the session's second route, which
/// the session holds only without V4; the rest of its events, to its own.
#[test]
fn legacy_events_v4_carries_have_their_own_route() {
    let mut conn = AppServerConnection::new();
    let event = |kind: &str| json!({"method": "session/event", "params": {"sessionId": "s1", "seq": 1, "type": kind, "payload": {}}});
    let kinds = [
        "model.streaming",
        "tool.updated",
        "session.titleUpdated",
        "session.updated",
        "model.response",
    ];
    // One push each: a read's events for one route are joined.
    for kind in kinds {
        let inbound = push(&mut conn, &[event(kind)]);
        assert!(
            matches!(&inbound[..], [Inbound::Event(e)] if e.route == "session/s1/v4-carried"),
            "{kind}"
        );
        assert!(crate::events::ignored(kind, false).is_some(), "the session drops {kind} with V4");
    }
    for kind in ["turn.completed", "turn.failed", "turn.started", "no.suchEvent"] {
        let inbound = push(&mut conn, &[event(kind)]);
        assert!(matches!(&inbound[..], [Inbound::Event(e)] if e.route == "session/s1"), "{kind}");
    }
    // However the type is written: escaped, after the payload.
    let escaped = br#"{"method":"session/event","params":{"payload":{},"type":"model.str\u0065aming","sessionId":"s1"}}
"#;
    let inbound = conn.push(escaped).unwrap();
    assert!(matches!(&inbound[..], [Inbound::Event(e)] if e.route == "session/s1/v4-carried"));
    // A type that is no string is the session's to refuse.
    let odd = br#"{"method":"session/event","params":{"type":7,"sessionId":"s1"}}
"#;
    assert!(matches!(&conn.push(odd).unwrap()[..], [Inbound::Event(e)] if e.route == "session/s1"));
}

/// A read's frames for one session cross as one input, a line each, in the order they came
/// but for one exception: a V4 frame goes ahead of the session's carried events, which a
/// session with V4 drops (and one without skips every V4 frame). Where deltas come as both, a
/// read's deltas cross as two inputs, not two per delta.
#[test]
fn a_reads_frames_for_a_session_cross_as_one_input() {
    let event = |seq: u64, kind: &str| json!({"method": "session/event", "params": {"sessionId": "s1", "seq": seq, "type": kind, "payload": {}}});
    let frame = |seq: u64| json!({"method": "v4/conversation/frame", "params": {"topic": "conversation/s1", "seq": seq}});
    let request = json!({"id": "server-4", "method": "interaction/requestPermission", "params": {"sessionId": "s1"}});
    let lines = [
        event(1, "turn.started"),
        event(2, "model.streaming"),
        frame(1),
        event(3, "model.streaming"),
        frame(2),
        event(4, "tool.updated"),
        request.clone(),
        event(5, "session.updated"),
        frame(3),
        json!({"method": "state.updated", "params": {}}),
        frame(4),
        json!({"method": "session/event", "params": {"sessionId": "s2", "seq": 1, "type": "model.streaming"}}),
        frame(5),
        event(6, "turn.completed"),
    ];
    let text =
        |values: &[&Value]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n");
    let inbound = push(&mut AppServerConnection::new(), &lines);
    let events: Vec<(&str, Option<&str>)> = inbound
        .iter()
        .map(|i| match i {
            Inbound::Event(e) => (e.route.as_str(), e.payload.as_text()),
            Inbound::Ignored(why) => (why.as_str(), None),
            other => panic!("{other:?}"),
        })
        .collect();
    let own = "session/s1";
    let carried = "session/s1/v4-carried";
    assert_eq!(
        events,
        [
            (own, Some(text(&[&lines[0], &lines[2], &lines[4]]).as_str())),
            (carried, Some(text(&[&lines[1], &lines[3], &lines[5]]).as_str())),
            // A legacy event or a reverse request keeps its place behind the carried events.
            (own, Some(text(&[&lines[6], &lines[8]]).as_str())),
            (carried, Some(text(&[&lines[7]]).as_str())),
            ("state.updated", None),
            (own, Some(text(&[&lines[10]]).as_str())),
            ("session/s2/v4-carried", Some(text(&[&lines[11]]).as_str())),
            (own, Some(text(&[&lines[12], &lines[13]]).as_str())),
        ]
    );
}

/// A line holding a JSON array is a batch of frames, each read in order as a line of its own
/// would be: a real Agent writes notifications so (csuftt/zcode-jetbrains-plugin, ZC-GUI 0.3.7
/// release notes: "array-format notification frames from the new CLI"). The frames are
/// reconstructed from a published probe log, not a capture ("ZCode app-server Session
/// Protocol", CLI 0.16.x, 2026-08-14, §6.2 and §7.2).
#[test]
fn an_array_line_is_a_batch_of_frames_read_in_order() {
    let event = r#"{"method":"session/event","params":{"deliveryKind":"desktop-continuous","eventId":"5fcb907d-a25e-4887-b036-a71c175f3395","payload":{"assistantMessageId":"msg_mssqw4rg_6cc132e0","delta":"ok","done":false,"kind":"text_delta"},"seq":6,"sessionId":"sess_25dd7b36","timestamp":1786699740753,"traceId":"df15e5b2-8411-4ae1-a24a-09f6d058e2c6","turnId":"turn_e626aacb-0fb6-4bcd-a6e1-7de5dca363b3","type":"model.streaming"}}"#;
    let state = r#"{"method":"state.updated","params":{"type":"state.updated","scope":"session","workspace":{"workspaceKey":"zprobe","workspacePath":"/tmp/zprobe-work"},"sessionId":"sess_25dd7b36","revision":2,"reason":"prompt_started","patch":{"status":"running"}}}"#;
    let mut conn = AppServerConnection::new();
    let line = format!("[{event}, {state},{{\"id\":2,\"result\":{{\"accepted\":true}}}}]\n");
    // Cut inside the array: the batch is read once its line is complete.
    let (head, tail) = line.split_at(40);
    assert!(conn.push(head.as_bytes()).unwrap().is_empty());
    let inbound = conn.push(tail.as_bytes()).unwrap();
    assert_eq!(inbound.len(), 3, "{inbound:?}");
    let Inbound::Event(first) = &inbound[0] else { panic!("{:?}", inbound[0]) };
    // A delta V4 also carries: on its own route (`carried_route`).
    assert_eq!(first.route, "session/sess_25dd7b36/v4-carried");
    // The session gets the frame as the element's own text, as a line of its own.
    assert_eq!(first.payload.as_text(), Some(event));
    assert!(matches!(&inbound[1], Inbound::Ignored(m) if m == "state.updated"));
    assert!(matches!(&inbound[2], Inbound::Reply(NativeReply { id: 2, body: ReplyBody::Ok(_) })));
    // An empty batch is no frame; the lines around it are read as ever.
    let inbound = conn.push(b"[]\n{\"id\":3,\"result\":{}}\n").unwrap();
    assert!(matches!(&inbound[..], [Inbound::Reply(NativeReply { id: 3, .. })]));
    // A last line without its newline is a batch too.
    assert!(conn.push(format!("[{event}]").as_bytes()).unwrap().is_empty());
    assert!(matches!(&conn.finish().unwrap()[..], [Inbound::Event(_)]));
}

#[test]
fn a_batch_fails_closed_on_what_a_line_would() {
    let protocol = |message: &str| (ErrorKind::Protocol, message.to_string());
    assert_eq!(
        refusal(b"[{\"id\":3,\"result\":{}},[{\"id\":4,\"result\":{}}]]\n"),
        protocol("ZCode wrote a line that is not a JSON object")
    );
    assert_eq!(
        refusal(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]\n"),
        protocol("ZCode wrote a JSON-RPC 2.0 frame; the Agent speaks NDJSON without it")
    );
    let (kind, message) = refusal(b"[{\"id\":3,\"result\":{}}\n");
    assert_eq!(kind, ErrorKind::Protocol);
    assert!(message.contains("not a JSON array of frames"), "{message}");
}

#[test]
fn answers_what_needs_no_client_itself() {
    let mut conn = AppServerConnection::new();
    let inbound = push(
        &mut conn,
        &[
            json!({"id": "server-1", "method": "session/requestRuntimePreferences", "params": {"sessionId": "s1", "scope": "runtime-materialization"}}),
            json!({"id": "server-2", "method": "interaction/requestOfficialMcpAuthHeaders", "params": {"requestId": "r"}}),
            json!({"id": "server-3", "method": "interaction/browserList", "params": {"sessionId": "s1"}}),
            json!({"id": "server-4", "method": "automation/create", "params": {}}),
            json!({"id": "server-5", "method": "mystery/thing", "params": {}}),
        ],
    );
    assert_eq!(
        written(&inbound[0]),
        json!({"id": "server-1", "result": {"nativeSearchEnhancementsEnabled": false, "memoryEnabled": false, "askUserQuestionAutoResolutionEnabled": false}})
    );
    assert_eq!(
        written(&inbound[1]),
        json!({"id": "server-2", "result": {"ok": false, "reason": "official_auth_unavailable"}})
    );
    assert_eq!(written(&inbound[2])["error"]["code"], -32601);
    assert_eq!(
        written(&inbound[3])["error"]["message"],
        "zcode-acp does not run ZCode automations"
    );
    assert_eq!(written(&inbound[4])["error"]["message"], "zcode-acp does not serve mystery/thing");
}

#[test]
fn fails_closed_on_frames_it_cannot_trust() {
    let bad = [
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".to_vec(),
        b"not json\n".to_vec(),
        b"{\"id\":\"invalid-message\",\"error\":{\"code\":-32600,\"message\":\"Invalid ZCode Protocol message\"}}\n".to_vec(),
        b"{\"method\":\"startup/storageState\",\"params\":{\"phase\":\"failed\",\"errorCode\":\"locked\"}}\n".to_vec(),
        b"{\"method\":\"session/event\",\"params\":{}}\n".to_vec(),
        vec![0xff, b'\n'],
    ];
    for bytes in bad {
        assert!(
            AppServerConnection::new().push(&bytes).is_err(),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
    }
}

/// The refusal one line gets, with its kind.
fn refusal(bytes: &[u8]) -> (ErrorKind, String) {
    let error = AppServerConnection::new().push(bytes).unwrap_err();
    (error.kind, error.message)
}

#[test]
fn each_frame_it_cannot_trust_is_refused_with_its_reason() {
    let protocol = |message: &str| (ErrorKind::Protocol, message.to_string());
    let cases: [(&[u8], (ErrorKind, String)); 14] = [
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
            protocol("ZCode wrote a JSON-RPC 2.0 frame; the Agent speaks NDJSON without it"),
        ),
        // Present is present, whatever the value.
        (
            b"{\"method\":\"session/event\",\"jsonrpc\":null}\n",
            protocol("ZCode wrote a JSON-RPC 2.0 frame; the Agent speaks NDJSON without it"),
        ),
        (b"[1,2]\n", protocol("ZCode wrote a line that is not a JSON object")),
        (b"\"session/event\"\n", protocol("ZCode wrote a line that is not a JSON object")),
        (b"{\"params\":{}}\n", protocol("ZCode wrote a frame with neither `id` nor `method`")),
        // A method that is not a string is no method.
        (b"{\"method\":7}\n", protocol("ZCode wrote a frame with neither `id` nor `method`")),
        (
            b"{\"id\":\"invalid-message\",\"error\":{\"code\":-32600,\"message\":\"Invalid ZCode Protocol message\"}}\n",
            protocol(
                "ZCode refused a frame it could not attribute (\"invalid-message\"): Invalid ZCode Protocol message",
            ),
        ),
        (
            b"{\"id\":null,\"error\":{\"code\":-32700}}\n",
            protocol("ZCode refused a frame it could not attribute (null): no message"),
        ),
        (b"{\"id\":4}\n", protocol("ZCode reply 4 has neither result nor error")),
        (
            b"{\"id\":4,\"result\":null,\"error\":{\"message\":\"m\"}}\n",
            protocol("ZCode reply 4 has both a result and an error"),
        ),
        (
            b"{\"method\":\"session/event\",\"params\":{\"sessionId\":7}}\n",
            protocol("ZCode sent a session/event without a sessionId"),
        ),
        (
            b"{\"method\":\"session/event\",\"params\":[\"s1\"]}\n",
            protocol("ZCode sent a session/event without a sessionId"),
        ),
        (
            b"{\"method\":\"startup/storageState\",\"params\":{\"phase\":\"failed\",\"errorCode\":\"locked\"}}\n",
            (ErrorKind::Native, "ZCode could not open its session database (locked)".to_string()),
        ),
        (b"{\xff}\n", protocol("ZCode wrote a line that is not UTF-8")),
    ];
    for (bytes, expected) in cases {
        assert_eq!(refusal(bytes), expected, "{}", String::from_utf8_lossy(bytes));
    }
    // Not JSON at all, or a member named twice (which one would count is a guess).
    for (bytes, start) in [
        (&b"not json\n"[..], "ZCode wrote a non-JSON line: "),
        (b"{\"id\":1,\"result\":\n", "ZCode wrote a non-JSON line: "),
        (b"{\"id\":1,\"result\":1} trailing\n", "ZCode wrote a non-JSON line: "),
        (b"{\"id\":1,\"id\":2,\"result\":1}\n", "ZCode wrote a frame that is not one envelope: "),
        (
            b"{\"method\":\"session/event\",\"params\":{\"sessionId\":\"a\",\"sessionId\":\"b\"}}\n",
            "ZCode wrote parameters that cannot be read: ",
        ),
    ] {
        let (kind, message) = refusal(bytes);
        assert_eq!(kind, ErrorKind::Protocol);
        assert!(message.starts_with(start), "{message}");
    }
}

#[test]
fn a_reply_result_is_handed_on_byte_identical_however_large() {
    // Keys out of order, spaces, an escape and 20 MB of text: a tree written out again would
    // change all four (and hold the text several times over).
    let result = format!(
        "{{ \"z\" : [1, 2.50, null], \"a\": \"caf\\u00e9 {}\" }}",
        "x".repeat(20 * 1024 * 1024)
    );
    let frame = format!("{{\"result\": {result} , \"id\":12}}\n");
    let mut conn = AppServerConnection::new();
    let inbound = conn.push(frame.as_bytes()).unwrap();
    let [Inbound::Reply(NativeReply { id: 12, body: ReplyBody::Ok(data) })] = &inbound[..] else {
        panic!("not one reply: {:?}", inbound.len())
    };
    assert!(data.as_text() == Some(result.as_str()), "the result text changed");
    for (line, text) in
        [("{\"id\":1,\"result\":null}", "null"), ("{\"id\":2,\"result\":\"s\"}", "\"s\"")]
    {
        let inbound = conn.push(format!("{line}\n").as_bytes()).unwrap();
        let [Inbound::Reply(NativeReply { body: ReplyBody::Ok(data), .. })] = &inbound[..] else {
            panic!("{line}")
        };
        assert_eq!(data.as_text(), Some(text));
    }
}

#[test]
fn a_long_line_in_many_pushes_is_one_line_and_what_follows_is_kept() {
    let mut conn = AppServerConnection::new();
    let text = "y".repeat(3 * 1024 * 1024);
    let event = format!(
        "{{\"method\":\"session/event\",\"params\":{{\"sessionId\":\"s1\",\"payload\":\"{text}\"}}}}"
    );
    let bytes = format!("{event}\n  {{\"id\":5,\"result\":7}}  \n{{\"id\":6,");
    let mut inbound = Vec::new();
    for chunk in bytes.as_bytes().chunks(64 * 1024) {
        inbound.extend(conn.push(chunk).unwrap());
    }
    inbound.extend(conn.push(b"\"result\":8}\n").unwrap());
    let [Inbound::Event(routed), Inbound::Reply(five), Inbound::Reply(six)] = &inbound[..] else {
        panic!("{} inbound", inbound.len())
    };
    assert_eq!(routed.payload.as_text(), Some(event.as_str()));
    assert_eq!((five.id, six.id), (5, 6));
    // Long or short, a line that is not UTF-8 is refused.
    let mut bad = vec![b'{'; 2 * 1024 * 1024];
    bad.extend_from_slice(b"\xff}\n");
    assert_eq!(
        refusal(&bad),
        (ErrorKind::Protocol, "ZCode wrote a line that is not UTF-8".to_string())
    );
}

#[test]
fn routes_by_the_members_it_needs_however_they_are_written() {
    let mut conn = AppServerConnection::new();
    let inbound = conn
        .push(
            concat!(
                "{\"params\" : { \"payload\": {\"delta\": \"x\"}, \"sessionId\" : \"s\\u0031\" }, \"method\":\"session/event\"}\n",
                "{\"method\":\"v4/conversation/frame\",\"params\":{\"topic\":7}}\n",
                "{\"method\":\"v4/conversation/frame\",\"params\":{\"topic\":\"conversation/\"}}\n",
                "{\"method\":\"v4/conversation/frame\",\"params\":null}\n",
                "{\"method\":\"startup/storageState\"}\n",
                // A null id is an id: the request is answered under it.
                "{\"id\":null,\"method\":\"mystery/thing\",\"params\":{\"sessionId\":null}}\n",
            )
            .as_bytes(),
        )
        .unwrap();
    let Inbound::Event(event) = &inbound[0] else { panic!("{:?}", inbound[0]) };
    assert_eq!(event.route, "session/s1");
    // The line as it came, for the session to read.
    assert!(event.payload.as_text().unwrap().starts_with("{\"params\" : { \"payload\""));
    for ignored in &inbound[1..4] {
        assert!(matches!(ignored, Inbound::Ignored(_)), "{ignored:?}");
    }
    assert_eq!(inbound[4], Inbound::Ignored("storage start-up: ".to_string()));
    assert_eq!(
        written(&inbound[5]),
        json!({"id": null, "error": {"code": -32601, "message": "zcode-acp does not serve mystery/thing"}})
    );
}

fn run(conn: &mut AppServerConnection, op: ConnectionOp, reply: Value) -> (Value, Step) {
    let Step::Wait(out) = conn.start(1, &op, 7) else { panic!() };
    assert_eq!(out.requests.len(), 1);
    assert_eq!(out.requests[0].id, 7);
    let sent: Value = serde_json::from_slice(&out.requests[0].bytes).unwrap();
    let body = match reply.get("error") {
        Some(error) => ReplyBody::Error(crate::wire::native_error(error)),
        None => ReplyBody::Ok(reply.to_string().into()),
    };
    (sent, conn.resume(1, Some(&NativeReply { id: 7, body }), 8))
}

#[test]
fn setup_reads_what_the_agent_reports_about_itself() {
    let mut conn = AppServerConnection::new();
    let (sent, step) = run(&mut conn, ConnectionOp::Setup, json!({"independentPlanState": true}));
    assert_eq!(sent, json!({"id": 7, "method": "runtime/capabilities", "params": {}}));
    assert!(matches!(step, Step::Done(Ok(_))));
    assert_eq!(conn.identity().as_deref(), Some(crate::contract::CURRENT_IDENTITY));

    let mut old = AppServerConnection::new();
    run(
        &mut old,
        ConnectionOp::Setup,
        json!({"error": {"code": -32601, "message": "Method not found: runtime/capabilities"}}),
    );
    assert_eq!(old.identity().as_deref(), Some("zcode-protocol/1"));
}

#[test]
fn lists_sessions_without_parameters_a_release_refuses() {
    let mut conn = AppServerConnection::new();
    let reply = json!({"sessions": [
        {"sessionId": "sess_1", "title": "Fix it", "updatedAt": 1_764_500_000_000_u64, "workspace": {"workspacePath": "/w", "workspaceKey": "/w"}},
        {"id": "sess_2", "title": "", "updatedAt": "2026-10-01T00:00:00Z"},
    ]});
    let (sent, step) =
        run(&mut conn, ConnectionOp::ListSessions(json!({"cwd": "/w"}).to_string()), reply);
    assert_eq!(
        sent["params"],
        json!({"limit": 51, "workspace": {"workspacePath": "/w", "workspaceKey": "/w"}})
    );
    assert!(sent["params"].get("includeArchived").is_none());
    let Step::Done(Ok(result)) = step else { panic!() };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    assert_eq!(
        response,
        json!({"sessions": [
            {"sessionId": "sess_1", "cwd": "/w", "title": "Fix it", "updatedAt": "2025-11-30T10:53:20.000Z"},
            {"sessionId": "sess_2", "cwd": "/w", "updatedAt": "2026-10-01T00:00:00Z"},
        ]})
    );
    let (_, failed) = run(
        &mut conn,
        ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace("/w")),
        json!({"error": {"code": -32602, "message": "Unrecognized key"}}),
    );
    assert!(
        matches!(failed, Step::Done(Err(e)) if e.kind == zcode_contract::ErrorKind::InvalidParams)
    );
}

#[test]
fn pages_the_list_with_a_cursor_and_refuses_a_bogus_one() {
    let entries: Vec<Value> = (0..120)
        .map(|i| json!({"sessionId": format!("sess_{i}"), "title": "", "updatedAt": 1}))
        .collect();
    let mut conn = AppServerConnection::new();
    let list = |cursor: Option<&str>| {
        let mut params = json!({"cwd": "/w"});
        if let Some(cursor) = cursor {
            params["cursor"] = json!(cursor);
        }
        ConnectionOp::ListSessions(params.to_string())
    };
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for expected_limit in [51, 101, 151] {
        // The Agent answers at most `limit` entries, newest first.
        let (sent, step) = run(&mut conn, list(cursor.as_deref()), json!({"sessions": entries}));
        assert_eq!(sent["params"]["limit"], expected_limit);
        let Step::Done(Ok(result)) = step else { panic!() };
        let page: Value = serde_json::from_str(&result.response).unwrap();
        seen.extend(page["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].clone()));
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen.len(), 120, "every session on exactly one page");
    assert_eq!(seen[50], "sess_50");
    let bogus = conn.start(2, &list(Some("bogus")), 9);
    assert!(
        matches!(bogus, Step::Done(Err(e)) if e.kind == zcode_contract::ErrorKind::InvalidParams)
    );
}

// ----- doctor's probe (crate::account::probe_answer) ----------------------------------------

/// Facts of a user signed in to zai whose settings select its individual Coding Plan; with
/// `key` the presence of that plan's key.
fn probe_facts(key: zcode_contract::Presence) -> Vec<(String, zcode_contract::FactValue)> {
    use zcode_contract::{FactValue, Presence};
    let json = |name: &str, value: Value| (name.to_string(), FactValue::Json(value.to_string()));
    vec![
        json(crate::account::TABLE_REVISION, json!(31)),
        json(crate::account::TABLE_PATH, json!("/z/resources/config/provider/zcode-builtin.json")),
        json(crate::account::FAMILY, json!("zai")),
        json(crate::account::SELECTIONS, json!({"zai": {"kind": "individual-coding-plan"}})),
        (format!("{}zai", crate::account::SIGNED_IN), FactValue::Presence(Presence::Present)),
        (format!("{}zai", crate::account::PLAN_KEY), FactValue::Presence(key)),
    ]
}

fn probe(facts: Vec<(String, zcode_contract::FactValue)>) -> Value {
    let mut conn = AppServerConnection::new();
    let request = zcode_contract::ProbeRequest { workspace: "/w".into(), facts };
    let (sent, step) = run(&mut conn, ConnectionOp::Probe(request), json!({"sessions": []}));
    assert_eq!(sent["method"], "session/list");
    let Step::Done(Ok(result)) = step else { panic!("{step:?}") };
    serde_json::from_str(&result.response).unwrap()
}

#[test]
fn the_probe_says_why_a_signed_in_user_without_a_plan_key_gets_no_plan_models() {
    let answer = probe(probe_facts(zcode_contract::Presence::Absent));
    assert_eq!(
        answer["unlistedAccountProviders"],
        json!([{
            "providerId": "account:zai-individual-coding-plan",
            "reason": crate::account::REASON_NO_KEY,
        }])
    );
    assert_eq!(
        answer["notes"],
        json!([format!(
            "Coding Plan models of account:zai-individual-coding-plan are not listed: {}",
            crate::account::REASON_NO_KEY
        )])
    );
}

#[test]
fn the_probe_says_nothing_when_the_plan_is_entitled_or_there_are_no_facts() {
    assert_eq!(probe(probe_facts(zcode_contract::Presence::Present)), json!({}));
    assert_eq!(probe(Vec::new()), json!({}));
}

/// The route members are read in the same pass as the envelope (issue 27), as they were read
/// from the raw parameters before: a member name written with escapes is the member, params
/// that are not an object have no members, and a member named twice refuses only a frame whose
/// members the connection reads.
#[test]
fn route_members_read_with_the_envelope_mean_what_they_meant() {
    let mut conn = AppServerConnection::new();
    let inbound = conn
        .push(
            concat!(
                "{\"method\":\"session/event\",\"params\":{\"session\\u0049d\":\"s2\",\"topic\":[1,{\"sessionId\":\"x\"}]}}\n",
                "{\"method\":\"v4/conversation/frame\",\"params\":[\"topic\",\"conversation/s3\"]}\n",
                "{\"method\":\"v4/conversation/frame\",\"params\":\"conversation/s3\"}\n",
                "{\"method\":\"state.updated\",\"params\":{\"sessionId\":\"a\",\"sessionId\":\"b\"}}\n",
                "{\"method\":\"session/event\",\"params\":{\"sessionId\":\"s4\",\"payload\":{\"sessionId\":\"no\"}}}\n",
            )
            .as_bytes(),
        )
        .unwrap();
    let Inbound::Event(event) = &inbound[0] else { panic!("{:?}", inbound[0]) };
    assert_eq!(event.route, "session/s2");
    for ignored in &inbound[1..4] {
        assert!(matches!(ignored, Inbound::Ignored(_)), "{ignored:?}");
    }
    let Inbound::Event(event) = &inbound[4] else { panic!("{:?}", inbound[4]) };
    assert_eq!(event.route, "session/s4", "a nested member is not the route");
    // A V4 frame is routed on its first topic, read no further: its session reads it whole and
    // refuses the second (`session::tests::one_pass`). So is one in a batch, whose end the
    // compact reader finds.
    let twice = r#"{"method":"v4/conversation/frame","params":{"topic":"conversation/a","topic":"conversation/b"}}"#;
    for line in [twice.to_string(), format!("[{twice}]")] {
        let inbound = AppServerConnection::new().push(format!("{line}\n").as_bytes()).unwrap();
        let [Inbound::Event(event)] = &inbound[..] else { panic!("{inbound:?}") };
        assert_eq!((event.route.as_str(), event.payload.as_text()), ("session/a", Some(twice)));
    }
}

/// A V4 line whose head is plainly a conversation frame is routed on its topic alone (its
/// session reads the rest); a line that opens any other way is read whole, as before. A line cut
/// short after its topic tells the two apart: only the whole read refuses it.
#[test]
fn a_v4_line_is_routed_on_its_head_and_anything_else_is_read_whole() {
    let routed = |line: &str| -> Result<String, String> {
        let inbound = AppServerConnection::new().push(format!("{line}\n").as_bytes());
        match inbound.map_err(|e| e.message)?.as_slice() {
            [Inbound::Event(event)] => Ok(event.route.clone()),
            other => Err(format!("{other:?}")),
        }
    };
    let cut = |head: &str| format!(r#"{head}"subscriptionId":"s","frame":{{"payload":"#);
    let zcode = r#"{"method":"v4/conversation/frame","params":{"wireVersion":3,"kind":"complete","deliveryKind":"online","logicalFrameId":"f","logicalFrameOrdinal":1,"topic":"conversation/a","#;
    // ZCode's order, with an escape in a member before the topic (read by name), or in
    // another order.
    let escaped = zcode.replace(r#""f""#, r#""f\"""#);
    let reordered = zcode.replace(
        r#""kind":"complete","deliveryKind":"online""#,
        r#""deliveryKind":"online","kind":"complete""#,
    );
    for head in [
        zcode,
        &escaped,
        &reordered,
        r#"{"method":"v4/conversation/frame","params":{"topic":"conversation/a","#,
    ] {
        assert_eq!(routed(&cut(head)), Ok("session/a".to_string()), "{head}");
    }
    // An escape in the topic itself gives ZCode's order to the general reader too.
    let refusal =
        routed(&cut(&zcode.replace("conversation/a", r"conversation/\u0061"))).unwrap_err();
    assert!(refusal.starts_with("ZCode wrote a non-JSON line: "), "{refusal}");
    let open = r#"{"method":"v4/conversation/frame","params":{"#;
    // The members before the topic are read as JSON, so an escape or a bracket in a string, or
    // a long one, hides nothing.
    for head in [
        format!(
            r#"{open}"logicalFrameId":"f\",\"topic\":\"conversation/b","topic":"conversation/a","#
        ),
        format!(r#"{open}"logicalFrameId":"f{{","topic":"conversation/a","#),
        format!(r#"{open}"logicalFrameId":"{}","topic":"conversation/a","#, "f".repeat(600)),
    ] {
        assert_eq!(routed(&cut(&head)), Ok("session/a".to_string()), "{head}");
    }
    for head in [
        // Whitespace, or an escape in a member's name or in the topic.
        r#"{ "method":"v4/conversation/frame","params":{"topic":"conversation/a","#.to_string(),
        format!(r#"{open}"logicalFr\u0061meId":"f","topic":"conversation/a","#),
        format!(r#"{open}"t\u006fpic":"conversation/b","topic":"conversation/a","#),
        format!(r#"{open}"topic":"conversation/\u0061","#),
        // An object before the topic: a nested topic is not the frame's.
        format!(r#"{open}"frame":{{"topic":"conversation/b"}},"topic":"conversation/a","#),
        // A value this reader does not read.
        format!(r#"{open}"logicalFrameOrdinal":-1,"topic":"conversation/a","#),
    ] {
        let refusal = routed(&cut(&head)).unwrap_err();
        assert!(refusal.starts_with("ZCode wrote a non-JSON line: "), "{refusal}: {head}");
    }
    // Whole lines read the general way are routed (or refused) as before.
    let tail = r#""subscriptionId":"s","frame":{"payload":{"deltas":[{"append":"x"}]}}}}"#;
    for (line, expected) in [
        (
            format!(
                r#"{open}"logicalFrameId":"f\",\"topic\":\"conversation/b","topic":"conversation/a",{tail}"#
            ),
            Ok("session/a"),
        ),
        (
            r#"{"method":"v4/conversation/frame","params":{"frame":{},"topic":"conversation/a"}}"#
                .to_string(),
            Ok("session/a"),
        ),
        (
            format!(
                r#"{{"id":"x","method":"v4/conversation/frame","params":{{"topic":"conversation/a",{tail}"#
            ),
            Err("[Write("),
        ),
        (
            format!(
                r#"{{"method":"session/event","params":{{"topic":"conversation/a","sessionId":"b",{tail}"#
            ),
            Ok("session/b"),
        ),
        (format!(r#"{open}"topic":"conversation/",{tail}"#), Err("[Ignored(")),
    ] {
        match (routed(&line), expected) {
            (Ok(route), Ok(expected)) => assert_eq!(route, expected, "{line}"),
            (Err(message), Err(start)) => assert!(message.starts_with(start), "{message}: {line}"),
            (got, _) => panic!("{got:?}: {line}"),
        }
    }
}

/// A batch is read in the pass that splits it (`wire::classify_batch`), and reads as the SDK's
/// split followed by each frame as a line of its own, whatever fails and in which order.
#[test]
fn a_batch_read_in_one_pass_reads_as_split_frames_read_line_by_line() {
    fn split_then_lines(line: &str) -> Result<Vec<String>, (ErrorKind, String)> {
        let fail = |e: zcode_contract::MapperError| (e.kind, e.message);
        let frames = zcode_mapper_sdk::framing::json_batch(line).map_err(fail)?.unwrap();
        let mut read = Vec::new();
        for frame in frames {
            // An element that is no object is refused as such, not read as a batch of its own.
            if !frame.starts_with('{') {
                return Err(fail(crate::wire::classify(frame).unwrap_err()));
            }
            let inbound = AppServerConnection::new().push(format!("{frame}\n").as_bytes());
            read.extend(inbound.map_err(fail)?.iter().map(|i| format!("{i:?}")));
        }
        Ok(read)
    }
    fn one_pass(line: &str) -> Result<Vec<String>, (ErrorKind, String)> {
        let inbound = AppServerConnection::new().push(format!("{line}\n").as_bytes());
        let inbound = inbound.map_err(|e| (e.kind, e.message))?;
        Ok(inbound.iter().map(|i| format!("{i:?}")).collect())
    }
    let event = r#"{"method":"session/event","params":{"sessionId":"s1","seq":1,"payload":{"text":"],[\"{"}}}"#;
    let reply = r#"{"id":2,"result":{"accepted":true}}"#;
    let no_session = r#"{"method":"session/event","params":{"seq":2}}"#;
    // V4 frames as ZCode writes them are found by the compact reader and routed on their head.
    let v4 = r#"{"method":"v4/conversation/frame","params":{"wireVersion":3,"kind":"complete","topic":"conversation/s1","frame":{"sentAt":1,"payload":{"kind":"deltas","deltas":[{"append":"]\"}"}]}}}}"#;
    let v4_topic_twice = r#"{"method":"v4/conversation/frame","params":{"topic":"conversation/s1","topic":"conversation/s2"}}"#;
    let v4_elsewhere =
        r#"{"method":"v4/conversation/frame","params":{"topic":"workspace-config/w","frame":{}}}"#;
    let v4_spaced =
        r#"{"method":"v4/conversation/frame","params":{"topic":"conversation/s1", "frame":{}}}"#;
    let lines = [
        format!("[{v4},{reply}]"),
        format!("[{reply},{v4_topic_twice}]"),
        format!("[{v4_elsewhere},{event}]"),
        format!("[{v4_spaced}]"),
        format!("[{event},{v4}"),
        format!("[{v4}x]"),
        format!("[{event},{reply}]"),
        format!("[ {event} ,\t{reply} ]"),
        "[]".to_string(),
        "[ ]".to_string(),
        format!("[{event},]"),
        format!("[{event} {reply}]"),
        format!("[{event}]x"),
        format!("[{event}"),
        "[1]".to_string(),
        format!("[{event},[{reply}]]"),
        format!(r#"[{event},{{"jsonrpc":"2.0","id":1,"result":{{}}}}]"#),
        r#"[{"id":1,"id":2,"result":{}}]"#.to_string(),
        format!(r#"[{no_session},{{"jsonrpc":"2.0","id":1,"result":{{}}}}]"#),
        format!(r#"[{no_session},{{"a":}}]"#),
        format!(
            r#"[{event},{{"method":"session/event","params":{{"sessionId":"s1","sessionId":"s2"}}}}]"#
        ),
    ];
    for line in &lines {
        assert_eq!(one_pass(line), split_then_lines(line), "{line}");
    }
}
