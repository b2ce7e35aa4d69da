//! Every WIT value crosses the boundary intact in both directions, and the runtime enforces
//! the request-id rule and the map-event error rule of the contract.

mod support;

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use support::{init, load_hostile, runtime, session, within_bound};
use zcode_contract::*;
use zcode_mapper_runtime::WasmMapper;

fn mapper() -> Arc<WasmMapper> {
    static MAPPER: OnceLock<Arc<WasmMapper>> = OnceLock::new();
    MAPPER.get_or_init(|| load_hostile(&runtime())).clone()
}

fn error(kind: ErrorKind, message: &str, data: Option<&str>) -> MapperError {
    MapperError { kind, message: message.into(), data: data.map(Into::into) }
}

/// The JSON response of a `Done(Ok)` step.
fn done_response(step: Step) -> Value {
    match step {
        Step::Done(Ok(result)) => serde_json::from_str(&result.response).expect("JSON response"),
        other => panic!("expected a done step, got {other:?}"),
    }
}

#[test]
fn the_contract_is_read_at_load() {
    let mapper = mapper();
    let expected = Contract {
        protocol_id: "hostile-test".into(),
        description: "misbehaves on request".into(),
        layouts: vec![Layout {
            os: Os::Linux,
            executable: "bin/node".into(),
            cli_entry: "cli.js".into(),
            metadata: "meta.json".into(),
            host_archive: "host".into(),
        }],
        metadata: vec![("channel".into(), "test".into())],
        metadata_platform_key: "platform".into(),
        metadata_entry_key: "".into(),
        artifacts: vec![Artifact {
            id: "hostile-1".into(),
            app_version: "1.0.0".into(),
            cli_version: "1.0.0".into(),
            cli_sha256: "00".repeat(32),
            files: vec![FileCheck {
                role: "host-index".into(),
                path: "index.js".into(),
                sha256: "11".repeat(32),
                required_exports: vec!["a".into(), "b".into()],
            }],
            simulated: true,
        }],
        cli_version_probe: VersionProbe {
            args: vec!["{cli-entry}".into(), "--version".into()],
            env: vec![("NO_COLOR".into(), "1".into())],
        },
        credentials_file: ".hostile/creds".into(),
    };
    assert_eq!(mapper.contract(), &expected);
    assert_eq!(mapper.source(), "hostile");
}

fn install(artifact_id: &str) -> VerifiedInstall {
    VerifiedInstall {
        install_root: "/opt/zcode".into(),
        executable: "/opt/zcode/bin/node".into(),
        cli_entry: "/opt/zcode/cli.js".into(),
        host_archive: "/opt/zcode/host".into(),
        artifact_id: artifact_id.into(),
        app_version: "1.0.0".into(),
        cli_version: "1.0.0".into(),
        files: vec![],
    }
}

#[test]
fn launch_and_auth_plans_cross_intact() {
    let mapper = mapper();
    let plan = mapper.launch_plan(&install("hostile-1")).expect("plan");
    assert_eq!(
        plan,
        LaunchPlan {
            program: "/opt/zcode/bin/node".into(),
            args: vec!["/opt/zcode/cli.js".into(), "serve".into()],
            env: vec![("ZCODE_ARTIFACT".into(), "hostile-1".into())],
            cwd: "/opt/zcode".into(),
            stdin_preamble: b"hello\n".to_vec(),
            needs_handshake: true,
        }
    );
    let logout = mapper.auth_plan(&install("hostile-1"), AuthCommand::Logout).expect("plan");
    assert_eq!(logout.args, vec!["/opt/zcode/cli.js".to_string(), "logout".into()]);
    assert!(!logout.needs_handshake);
    assert_eq!(
        mapper.auth_plan(&install("error"), AuthCommand::Login),
        Err(error(ErrorKind::Unsupported, "asked to fail", None))
    );
}

#[test]
fn every_inbound_variant_crosses_intact() {
    let mut connection = mapper().connection().expect("connection");
    let expected = vec![
        Inbound::Reply(NativeReply { id: 7, body: ReplyBody::Ok("{\"x\":1}".into()) }),
        Inbound::Reply(NativeReply {
            id: 8,
            body: ReplyBody::Error(error(
                ErrorKind::Native,
                "native said no",
                Some("{\"code\":3}"),
            )),
        }),
        Inbound::Reply(NativeReply { id: 9, body: ReplyBody::Lost("gone".into()) }),
        Inbound::Event(RoutedEvent { route: "r1".into(), payload: "{}".into() }),
        Inbound::Write(vec![0, 1, 2, 255]),
        Inbound::Ready,
        Inbound::Ignored("noise".into()),
    ];
    assert_eq!(connection.push(b"all-inbound"), Ok(expected));
    assert_eq!(connection.push(&[0xff, 0x00, b'\n']), Ok(vec![Inbound::Write(vec![0xff, 0, 10])]));
    assert_eq!(connection.push(b"error"), Err(error(ErrorKind::Protocol, "bad frame", None)));
    assert_eq!(connection.finish(), Ok(vec![Inbound::Ignored("eof".into())]));
}

#[test]
fn connection_operations_and_replies_cross_intact() {
    let mut connection = mapper().connection().expect("connection");
    let step = connection.start(1, &ConnectionOp::ListSessions("{\"cwd\":\"/w\"}".into()), 40);
    assert_eq!(done_response(step.unwrap()), json!({ "list": "{\"cwd\":\"/w\"}" }));
    let step = connection.start(2, &ConnectionOp::Probe("/w".into()), 40);
    assert_eq!(done_response(step.unwrap()), json!({ "probe": "/w" }));

    let Step::Wait(outgoing) = connection.start(3, &ConnectionOp::Setup, 40).unwrap() else {
        panic!("setup waits");
    };
    assert_eq!(
        outgoing,
        Outgoing {
            routes_added: vec!["route-a".into()],
            routes_removed: vec!["route-b".into()],
            requests: vec![NativeRequest {
                id: 40,
                bytes: b"request 0\n".to_vec(),
                label: "req-0".into(),
                timeout_ms: 1000,
            }],
        }
    );
    let replies = [
        (ReplyBody::Ok("{\"ok\":true}".into()), json!({ "ok": "{\"ok\":true}" })),
        (ReplyBody::Lost("timeout".into()), json!({ "lost": "timeout" })),
        (
            ReplyBody::Error(error(ErrorKind::AuthRequired, "log in", Some("{}"))),
            json!({ "error": { "kind": "auth-required", "message": "log in", "data": "{}" } }),
        ),
    ];
    for (body, described) in replies {
        let step = connection.resume(3, &NativeReply { id: 40, body }, 41).unwrap();
        assert_eq!(done_response(step), json!({ "id": 40, "body": described }));
    }
}

#[test]
fn session_operations_cross_intact() {
    let mut session = mapper().session(&init("/work/space")).expect("session");
    let answer = |outcome| SessionOp::Answer(InteractionAnswer { key: "perm-1".into(), outcome });
    let cases = [
        (SessionOp::Create("{\"cwd\":\"/w\"}".into()), json!({ "create": "{\"cwd\":\"/w\"}" })),
        (SessionOp::Load("l".into()), json!({ "load": "l" })),
        (SessionOp::Resume("r".into()), json!({ "resume": "r" })),
        (SessionOp::Prompt("{\"prompt\":[]}".into()), json!({ "prompt": "{\"prompt\":[]}" })),
        (SessionOp::Cancel, json!("cancel")),
        (SessionOp::FinishTurn, json!("finish-turn")),
        (SessionOp::SetMode("m".into()), json!({ "set-mode": "m" })),
        (SessionOp::SetConfigOption("c".into()), json!({ "set-config-option": "c" })),
        (
            answer(InteractionOutcome::Selected("allow-once".into())),
            json!({ "answer": { "key": "perm-1", "outcome": { "selected": "allow-once" } } }),
        ),
        (
            answer(InteractionOutcome::Elicited("{\"action\":\"accept\"}".into())),
            json!({
                "answer": { "key": "perm-1", "outcome": { "elicited": "{\"action\":\"accept\"}" } }
            }),
        ),
        (
            answer(InteractionOutcome::Unavailable("client gone".into())),
            json!({ "answer": { "key": "perm-1", "outcome": { "unavailable": "client gone" } } }),
        ),
        (SessionOp::Close, json!("close")),
    ];
    for (op_id, (op, described)) in (1..).zip(cases) {
        let Step::Done(Ok(result)) = session.start(op_id, &op, 100).unwrap() else {
            panic!("{} is done at once", op.name());
        };
        assert_eq!(result.updates, vec!["{\"u\":1}".to_string()]);
        let response: Value = serde_json::from_str(&result.response).unwrap();
        let init = json!({ "workspace": "/work/space", "plan": true });
        assert_eq!(response, json!({ "op": described, "init": init }), "{}", op.name());
    }
}

#[test]
fn every_action_variant_crosses_intact() {
    let mut session = session(&mapper());
    let expected = vec![
        Action::Update("{\"sessionUpdate\":\"x\"}".into()),
        Action::Interaction(Interaction {
            key: "perm-1".into(),
            request: InteractionRequest::Permission(PermissionRequest {
                request: "{\"options\":[]}".into(),
                deny_option: "reject".into(),
            }),
        }),
        Action::Interaction(Interaction {
            key: "form-1".into(),
            request: InteractionRequest::Elicitation("{\"mode\":\"form\"}".into()),
        }),
        Action::Interaction(Interaction {
            key: "hl-1".into(),
            request: InteractionRequest::Headless("cannot show".into()),
        }),
        Action::Terminal(Terminal::Stop(StopReason::MaxTurnRequests)),
        Action::Terminal(Terminal::Failed(error(ErrorKind::AuthRequired, "sign in", None))),
        Action::Terminal(Terminal::Broken(error(ErrorKind::NotFound, "gone", Some("{}")))),
        Action::Ignore("heartbeat".into()),
    ];
    assert_eq!(session.map_event("all-actions"), Ok(expected));
}

#[test]
fn a_mapper_error_from_map_event_is_a_broken_stream() {
    let mut session = session(&mapper());
    let broken = error(ErrorKind::Protocol, "unknown native event", None);
    assert_eq!(session.map_event("error"), Ok(vec![Action::Terminal(Terminal::Broken(broken))]));
    assert_eq!(session.map_event("count"), Ok(vec![Action::Update("2".into())]), "still usable");
}

#[test]
fn json_text_is_passed_through_unvalidated_and_intact() {
    let mut session = session(&mapper());
    for text in ["{\"sessionUpdate\": [1, 2", "not json", "", "{\"t\":\"\u{0}é😀\\u0000\"}"] {
        let payload = format!("echo:{text}");
        assert_eq!(session.map_event(&payload), Ok(vec![Action::Update(text.into())]));
    }
}

#[test]
fn requests_must_use_the_ids_handed_out_in_order() {
    let mapper = mapper();
    let mut session = session(&mapper);
    let Step::Wait(outgoing) = session.start(1, &SessionOp::Prompt("ids:3".into()), 10).unwrap()
    else {
        panic!("waits");
    };
    let ids: Vec<u64> = outgoing.requests.iter().map(|r| r.id).collect();
    assert_eq!(ids, [10, 11, 12]);

    for (params, message) in [
        ("ids-out-of-order", "mapper used request id 11, expected 10"),
        ("ids-wrong-start", "mapper used request id 15, expected 10"),
    ] {
        let mut session = support::session(&mapper);
        let fault = session.start(1, &SessionOp::Prompt(params.into()), 10).unwrap_err();
        assert_eq!(fault.0, message);
        let refused = session.start(2, &SessionOp::Cancel, 20).unwrap_err();
        assert!(refused.0.contains("failed earlier"), "{refused}");
    }

    let mut connection = mapper.connection().unwrap();
    let fault = connection.start(1, &ConnectionOp::Probe("ids-out-of-order".into()), 5);
    assert_eq!(fault.unwrap_err().0, "mapper used request id 6, expected 5");
}

#[test]
fn sessions_can_be_driven_from_another_thread() {
    let mut session = session(&mapper());
    let moved = within_bound(move || {
        assert_eq!(session.map_event("count"), Ok(vec![Action::Update("1".into())]));
        session
    });
    let mut session = moved;
    assert_eq!(session.map_event("count"), Ok(vec![Action::Update("2".into())]));
}
