//! The 3.11.2 connection: the doctor probe and session listing after `readWorkspaceState`.

use serde_json::{Value, json};
use zcode_mapper_sdk::Connection as _;
use zcode_mapper_sdk::acp_check;
use zcode_mapper_sdk::contract::{
    ConnectionOp, ErrorKind, MapperError, NativeReply, ReplyBody, Step,
};

use crate::TaskV1Connection;

fn ok(id: u64, value: Value) -> NativeReply {
    NativeReply { id, body: ReplyBody::Ok(value.to_string().into()) }
}

fn request_json(step: &Step) -> Value {
    match step {
        Step::Wait(outgoing) => serde_json::from_slice(&outgoing.requests[0].bytes).unwrap(),
        other => panic!("expected a request, got {other:?}"),
    }
}

fn response(step: Step) -> Value {
    match step {
        Step::Done(Ok(result)) => serde_json::from_str(&result.response).unwrap(),
        other => panic!("expected a response, got {other:?}"),
    }
}

fn failure(step: Step) -> MapperError {
    match step {
        Step::Done(Err(problem)) => problem,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn sessions(count: usize) -> Value {
    Value::Array(
        (0..count)
            .map(|i| json!({"sessionId": format!("s{i}"), "workspace": {"workspacePath": "/w"}}))
            .collect(),
    )
}

fn list(connection: &mut TaskV1Connection, params: Value, count: usize) -> Value {
    let step = connection.start(1, &ConnectionOp::ListSessions(params.to_string()), 10);
    assert_eq!(request_json(&step)["params"]["method"], "initialize");
    let step = connection.resume(1, Some(&ok(10, json!({"available": true}))), 11);
    assert_eq!(request_json(&step)["params"]["method"], "readWorkspaceState");
    let step =
        connection.resume(1, Some(&ok(11, json!({"modelCatalog": {"providers": [{}]}}))), 12);
    assert_eq!(
        request_json(&step)["params"]["params"],
        json!({"workspacePath": "/w", "includeArchived": false})
    );
    response(connection.resume(1, Some(&ok(12, sessions(count))), 13))
}

#[test]
fn sets_up_immediately() {
    assert_eq!(response(TaskV1Connection::default().start(1, &ConnectionOp::Setup, 1)), json!({}));
}

#[test]
fn probes_with_initialize() {
    let mut connection = TaskV1Connection::default();
    let step = connection.start(
        3,
        &ConnectionOp::Probe(zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")),
        7,
    );
    assert_eq!(
        request_json(&step)["params"],
        json!({"service": "agent", "method": "initialize", "params": {"workspacePath": "/w"}})
    );
    let result = json!({"available": true, "protocolVersion": 1});
    assert_eq!(response(connection.resume(3, Some(&ok(7, result.clone())), 8)), result);
    connection.start(
        4,
        &ConnectionOp::Probe(zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")),
        9,
    );
    let problem = failure(connection.resume(
        4,
        Some(&ok(9, json!({"available": false, "reasonCode": "provider_not_ready"}))),
        10,
    ));
    assert_eq!(problem.kind, ErrorKind::AuthRequired);
}

#[test]
fn pages_session_lists() {
    let mut connection = TaskV1Connection::default();
    let first = list(&mut connection, json!({"cwd": "/w"}), 120);
    assert_eq!(first["sessions"].as_array().unwrap().len(), 50);
    assert_eq!(first["sessions"][0], json!({"sessionId": "s0", "cwd": "/w"}));
    assert_eq!(first["nextCursor"], "zcode-sessions-from-50");
    acp_check::list_sessions_response(&first);
    let second =
        list(&mut connection, json!({"cwd": "/w", "cursor": "zcode-sessions-from-100"}), 120);
    assert_eq!(second["sessions"].as_array().unwrap().len(), 20);
    assert_eq!(second["sessions"][0]["sessionId"], "s100");
    assert!(second.get("nextCursor").is_none());
    let exact = list(&mut connection, json!({"cwd": "/w"}), 50);
    assert!(exact.get("nextCursor").is_none());
    let shrunk = list(&mut connection, json!({"cwd": "/w", "cursor": "zcode-sessions-from-50"}), 3);
    assert_eq!(shrunk, json!({"sessions": []}));
}

#[test]
fn refuses_bad_list_params_before_any_request() {
    let mut connection = TaskV1Connection::default();
    for (params, message) in [
        (json!({}), "ZCode requires cwd when listing sessions"),
        (json!({"cwd": "/w", "cursor": "abc"}), "Unknown session list cursor: abc"),
        (
            json!({"cwd": "/w", "cursor": "zcode-sessions-from-7"}),
            "Unknown session list cursor: zcode-sessions-from-7",
        ),
        (
            json!({"cwd": "/w", "cursor": "zcode-sessions-from-0"}),
            "Unknown session list cursor: zcode-sessions-from-0",
        ),
    ] {
        let problem =
            failure(connection.start(1, &ConnectionOp::ListSessions(params.to_string()), 1));
        assert_eq!((problem.kind, problem.message.as_str()), (ErrorKind::InvalidParams, message));
    }
    let problem = failure(connection.start(1, &ConnectionOp::ListSessions("{".into()), 1));
    assert_eq!(problem.message, "session/list params is not valid JSON");
}

#[test]
fn requires_a_provider_before_listing() {
    let mut connection = TaskV1Connection::default();
    connection.start(1, &ConnectionOp::ListSessions(json!({"cwd": "/w"}).to_string()), 1);
    connection.resume(1, Some(&ok(1, json!({"available": true}))), 2);
    let problem =
        failure(connection.resume(1, Some(&ok(2, json!({"modelCatalog": {"providers": []}}))), 3));
    assert_eq!(problem.kind, ErrorKind::AuthRequired);
}

#[test]
fn reports_native_errors_and_unknown_replies() {
    let mut connection = TaskV1Connection::default();
    connection.start(
        1,
        &ConnectionOp::Probe(zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")),
        1,
    );
    let native = MapperError::new(ErrorKind::Native, "host exploded");
    let problem = failure(connection.resume(
        1,
        Some(&NativeReply { id: 1, body: ReplyBody::Error(native.clone()) }),
        2,
    ));
    assert_eq!(problem, native);
    let problem = failure(connection.resume(1, Some(&ok(1, json!({}))), 2));
    assert_eq!(problem.message, "Operation 1 is not waiting");
    connection.start(
        2,
        &ConnectionOp::Probe(zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")),
        5,
    );
    let problem = failure(connection.resume(2, Some(&ok(6, json!({}))), 7));
    assert_eq!(problem.message, "Reply 6 does not answer request 5 of operation 2");
}
