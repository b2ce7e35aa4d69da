//! The connection: handshake, framing and connection operations.

use serde_json::{Value, json};
use zcode_contract::{ConnectionOp, ErrorKind, Inbound, NativeData, ReplyBody, RoutedEvent, Step};
use zcode_mapper_sdk::Connection as _;
use zcode_mapper_sdk::pieces::Joiner;

use super::support::*;
use crate::ServicesConnection;
use crate::ipc::frame::{MAX_MESSAGE, PIECES_FROM};
use crate::ipc::message::{Response, encode_response};
use crate::ipc::value::IpcValue;

fn stream() -> Vec<u8> {
    [
        hello_line(),
        initialize(),
        success(1, &json!({"kind": "hello"})),
        event(7, &json!({"wireVersion": 3})),
        encode_response(&Response::Error {
            id: 2,
            body: IpcValue::json(
                r#"{"message":"Unknown session","name":"Error","stack":[],"code":"E_NO"}"#,
            ),
        }),
        encode_response(&Response::Success { id: 3, body: IpcValue::Undefined }),
    ]
    .concat()
}

/// What the stream means, split anywhere.
fn inbound(chunks: &[&[u8]]) -> Vec<Inbound> {
    let mut connection = ServicesConnection::new();
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(connection.push(chunk).unwrap());
    }
    out.extend(connection.finish().unwrap());
    out
}

#[test]
fn acknowledges_the_hello_then_reads_replies_and_events_split_at_every_byte() {
    let stream = stream();
    let whole = inbound(&[&stream]);
    assert_eq!(whole.len(), 6, "{whole:?}");
    let Inbound::Write(ack) = &whole[0] else { panic!("{:?}", whole[0]) };
    assert_eq!(ack.label, "zcode-hello-ack");
    let ack: Value = serde_json::from_slice(&ack.bytes).unwrap();
    assert_eq!(
        (ack["type"].as_str(), ack["clientId"].as_str()),
        (Some("zcode-hello-ack"), Some("zcode-acp"))
    );
    assert_eq!(whole[1], Inbound::Ready);
    let Inbound::Reply(reply) = &whole[2] else { panic!() };
    assert_eq!(reply.body, ReplyBody::Ok(NativeData::Text(r#"{"kind":"hello"}"#.into())));
    let Inbound::Event(event) = &whole[3] else { panic!() };
    assert_eq!(event.route, "7");
    let Inbound::Reply(error) = &whole[4] else { panic!() };
    let ReplyBody::Error(error) = &error.body else { panic!() };
    assert_eq!((error.kind, error.message.as_str()), (ErrorKind::Native, "Unknown session"));
    let data: Value = serde_json::from_str(error.data.as_deref().unwrap()).unwrap();
    assert_eq!(data, json!({"nativeCode": "E_NO", "nativeName": "Error"}));
    let Inbound::Reply(undefined) = &whole[5] else { panic!() };
    assert_eq!(undefined.body, ReplyBody::Ok(NativeData::Text("null".into())));
    for split in 0..=stream.len() {
        assert_eq!(inbound(&[&stream[..split], &stream[split..]]), whole, "split at {split}");
    }
    // And byte by byte.
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(inbound(&bytes), whole);
}

#[test]
fn identifies_the_server_by_its_hello() {
    let mut connection = ServicesConnection::new();
    assert_eq!(connection.identity(), None);
    connection.push(&hello_line()).unwrap();
    assert_eq!(connection.identity().as_deref(), Some("3.14.3"));
}

#[test]
fn fails_closed_on_a_broken_stream() {
    let push = |bytes: &[u8]| ServicesConnection::new().push(bytes).err().map(|e| e.message);
    assert_eq!(
        push(b"Welcome to the server\n").unwrap(),
        "The Services Server did not start with its JSON hello line"
    );
    let mut before_init = hello_line();
    before_init.extend(success(1, &json!({})));
    assert_eq!(
        push(&before_init).unwrap(),
        "The Services Server sent a message before its Initialize"
    );
    let mut twice = hello_line();
    twice.extend(initialize());
    twice.extend(initialize());
    assert_eq!(push(&twice).unwrap(), "The Services Server initialized twice");
    let mut keepalive = hello_line();
    keepalive.extend([9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(push(&keepalive).unwrap().contains("type 9"));
    assert!(push(&vec![b'x'; 70 * 1024]).unwrap().contains("64 KiB"));
    let mut cut = ServicesConnection::new();
    cut.push(&hello_line()).unwrap();
    cut.push(&initialize()[..5]).unwrap();
    assert_eq!(cut.finish().unwrap_err().message, "The Services Server output ends inside a frame");
    assert_eq!(
        ServicesConnection::new().finish().unwrap_err().message,
        "The Services Server exited before its hello"
    );
}

#[test]
fn sets_up_v4_with_hello_client_hello_and_preferences() {
    let mut connection = ServicesConnection::new();
    let first = wait(connection.start(1, &ConnectionOp::Setup, 10));
    assert_eq!(first.requests.len(), 1);
    assert_eq!(call(&first.requests[0]), ("helloConversationV4".into(), Value::Null));
    assert_eq!(first.requests[0].timeout_ms, 10_000);
    let hello = json!({"kind": "hello", "protocolVersion": 3, "connectionId": "c", "clientMode": "desktop-continuous", "deliveryProfile": "continuous",
                       "serverTime": 1, "capabilities": {"nativeDialogs": true, "localTerminal": true, "binaryFrames": false, "compression": "none", "independentPlanState": true}, "auth": {}});
    let second = wait(connection.resume(1, Some(&reply(10, hello.clone())), 11));
    let calls: Vec<_> = second.requests.iter().map(call).collect();
    assert_eq!(calls[0].0, "initializeConversationV4");
    assert_eq!(calls[0].1["kind"], "clientHello");
    assert_eq!(calls[0].1["protocolVersion"], 3);
    assert_eq!(calls[0].1["clientId"], "zcode-acp");
    assert_eq!(
        calls[1],
        (
            "syncAppRuntimePreferences".into(),
            json!({"askUserQuestionAutoResolutionEnabled": false})
        )
    );
    assert_eq!(second.requests.iter().map(|r| r.id).collect::<Vec<_>>(), [11, 12]);
    assert!(wait(connection.resume(1, Some(&reply(12, Value::Null)), 13)).requests.is_empty());
    assert_eq!(done(connection.resume(1, Some(&reply(11, Value::Null)), 13)).0, json!({}));

    let mut old = ServicesConnection::new();
    wait(old.start(1, &ConnectionOp::Setup, 1));
    let mut no_plan = hello.clone();
    no_plan["capabilities"]["independentPlanState"] = json!(false);
    let Step::Done(Err(problem)) = old.resume(1, Some(&reply(1, no_plan)), 2) else { panic!() };
    assert_eq!(
        (problem.kind, problem.message.as_str()),
        (ErrorKind::Unsupported, "The Services Server has no independent plan state")
    );
}

#[test]
fn probes_and_lists_after_checking_the_workspace() {
    let mut connection = ServicesConnection::new();
    let probe = wait(connection.start(
        2,
        &ConnectionOp::Probe(zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")),
        1,
    ));
    assert_eq!(call(&probe.requests[0]), ("initialize".into(), json!({"workspacePath": "/w"})));
    let Step::Done(Err(problem)) =
        connection.resume(2, Some(&reply(1, json!({"available": false, "reasonCode": "provider_not_ready", "reason": "No provider"}))), 2)
    else {
        panic!()
    };
    assert_eq!(problem.kind, ErrorKind::AuthRequired);
    assert!(problem.message.starts_with("No provider."));

    let list = wait(connection.start(3, &ConnectionOp::ListSessions(r#"{"cwd":"/w"}"#.into()), 5));
    assert_eq!(call(&list.requests[0]).0, "initialize");
    let sessions = wait(connection.resume(
        3,
        Some(&reply(5, json!({"available": true, "workspaceKey": "/w"}))),
        6,
    ));
    assert_eq!(
        call(&sessions.requests[0]),
        ("listSessions".into(), json!({"workspacePath": "/w"}))
    );
    let listed = json!([{"sessionId": "s1", "workspace": {"workspacePath": "/w"}, "title": "First", "updatedAt": 1_760_000_000_000u64}]);
    let (response, _) = done(connection.resume(3, Some(&reply(6, listed)), 7));
    assert_eq!(
        response,
        json!({"sessions": [{"sessionId": "s1", "cwd": "/w", "title": "First", "updatedAt": "2025-10-09T08:53:20.000Z"}]})
    );
}

/// What a connection made of a stream, with the pieces of each large event joined as its
/// session joins them: (inbound, whether the event came in pieces).
fn joined(inbound: Vec<Inbound>) -> Vec<(Inbound, bool)> {
    let mut joiner = Joiner::default();
    let mut out = Vec::new();
    for item in inbound {
        match item {
            Inbound::Event(RoutedEvent { route, payload: NativeData::Binary(piece) }) => {
                if let Some(text) = joiner.push(&piece, MAX_MESSAGE).unwrap() {
                    let event = RoutedEvent { route, payload: NativeData::Text(text) };
                    out.push((Inbound::Event(event), true));
                }
            }
            other => out.push((other, false)),
        }
    }
    assert!(!joiner.in_progress(), "every large event ends");
    out
}

#[test]
fn a_large_event_is_handed_on_in_pieces_as_it_arrives_and_a_large_reply_whole() {
    let large_event = json!({"wireVersion": 3, "dataBase64": "QUJD".repeat(PIECES_FROM / 4)});
    let large_reply = json!({"rows": "r".repeat(PIECES_FROM)});
    let (small, after) = (json!({"wireVersion": 3, "small": true}), json!({"after": "é"}));
    let before = [hello_line(), initialize(), event(7, &small)].concat();
    let stream =
        [before.clone(), event(7, &large_event), success(4, &large_reply), event(8, &after)]
            .concat();
    let text_event = |route: &str, body: &Value| {
        Inbound::Event(RoutedEvent {
            route: route.into(),
            payload: NativeData::Text(body.to_string()),
        })
    };
    let reply = ReplyBody::Ok(NativeData::Text(large_reply.to_string()));
    let expected = vec![
        (text_event("7", &small), false),
        (text_event("7", &large_event), true),
        (Inbound::Reply(zcode_contract::NativeReply { id: 4, body: reply }), false),
        (text_event("8", &after), false),
    ];
    let large_at = stream.len() - stream.windows(4).rev().position(|w| w == b"QUJD").unwrap();
    // Cut anywhere near where the large event opens and ends, and where the core's reads fall.
    let mut splits: Vec<usize> = (before.len()..before.len() + 100).collect();
    splits.extend(large_at - 50..large_at + 50);
    for split in splits {
        let out = inbound(&[&stream[..split], &stream[split..]]);
        assert_eq!(joined(out)[2..], expected, "split at {split}");
    }
    let reads: Vec<&[u8]> = stream.chunks(64 * 1024).collect();
    let out = inbound(&reads);
    let pieces = out
        .iter()
        .filter(|i| matches!(i, Inbound::Event(RoutedEvent { payload: NativeData::Binary(_), .. })))
        .count();
    assert!(pieces >= large_event.to_string().len() / (64 * 1024), "{pieces} pieces");
    assert_eq!(joined(out)[2..], expected);
    let bytes: Vec<&[u8]> = stream.chunks(997).collect();
    assert_eq!(joined(inbound(&bytes))[2..], expected);
}

#[test]
fn a_large_event_that_is_cut_off_or_comes_too_early_fails_the_connection() {
    let large = event(7, &json!({"dataBase64": "QUJD".repeat(PIECES_FROM / 4)}));
    let mut connection = ServicesConnection::new();
    connection.push(&[hello_line(), initialize()].concat()).unwrap();
    let out = connection.push(&large[..large.len() - 1]).unwrap();
    assert!(!out.is_empty(), "the pieces so far are handed on");
    assert_eq!(
        connection.finish().unwrap_err().message,
        "The Services Server output ends inside a frame"
    );
    let mut early = ServicesConnection::new();
    early.push(&hello_line()).unwrap();
    assert_eq!(
        early.push(&large).unwrap_err().message,
        "The Services Server sent a message before its Initialize"
    );
}
