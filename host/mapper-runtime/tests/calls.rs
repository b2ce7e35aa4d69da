//! Every WIT value crosses the boundary intact in both directions (the conformance guest), and
//! the runtime enforces the contract's request rules (the hostile guest).

mod support;

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use support::{event, load_conformance, load_hostile, map_one, runtime, session, within_bound};
use zcode_contract::*;
use zcode_mapper_runtime::WasmMapper;

fn mapper() -> Arc<WasmMapper> {
    static MAPPER: OnceLock<Arc<WasmMapper>> = OnceLock::new();
    MAPPER.get_or_init(|| load_conformance(&runtime())).clone()
}

fn hostile() -> Arc<WasmMapper> {
    static MAPPER: OnceLock<Arc<WasmMapper>> = OnceLock::new();
    MAPPER.get_or_init(|| load_hostile(&runtime())).clone()
}

fn error(kind: ErrorKind, message: &str, data: Option<&str>) -> MapperError {
    MapperError { kind, message: message.into(), data: data.map(Into::into) }
}

fn text(text: &str) -> NativeData {
    NativeData::Text(text.into())
}

/// The JSON response of a `Done(Ok)` step, after checking its updates.
fn done_response(step: Step) -> Value {
    match step {
        Step::Done(Ok(result)) => {
            assert_eq!(result.updates, vec!["{\"u\":1}".to_string()]);
            serde_json::from_str(&result.response).expect("JSON response")
        }
        other => panic!("expected a done step, got {other:?}"),
    }
}

fn secret_write() -> NativeWrite {
    NativeWrite {
        bytes: b"{\"key\":\"@@KEY@@\"}\n".to_vec(),
        label: "credential".into(),
        secret: Some(SecretFill {
            placeholder: "@@KEY@@".into(),
            source: "api-key".into(),
            args: vec![("provider".into(), "zai".into())],
            fallback: b"{\"error\":\"no key\"}\n".to_vec(),
        }),
    }
}

#[test]
fn the_contract_is_read_at_load() {
    let mapper = mapper();
    let expected = Contract {
        facts: Default::default(),
        protocol_id: "conformance-test".into(),
        description: "every shape of the contract".into(),
        layouts: vec![
            Layout::Desktop(DesktopLayout {
                os: Os::Macos,
                executable: "Contents/MacOS/ZCode".into(),
                cli_entry: "Contents/Resources/cli.cjs".into(),
                metadata: "Contents/Resources/meta.json".into(),
                metadata_pairs: vec![("channel".into(), "stable".into())],
                metadata_platform_key: "platform".into(),
                metadata_entry_key: "entry".into(),
                host_archive: "Contents/Resources/app.asar".into(),
            }),
            Layout::Runtime(RuntimeLayout {
                runtime_dir: ".".into(),
                package_file: "package.json".into(),
                package_pairs: vec![("name".into(), "zcode-runtime".into())],
                cli_entry: "dist/cli.js".into(),
                node_candidates: vec!["bin/node".into(), "node".into()],
                min_node_version: "20.10.0".into(),
            }),
        ],
        releases: vec![
            Release {
                data_files: Default::default(),
                id: "desktop-1".into(),
                kind: LayoutKind::Desktop,
                app_version: "1.2.3".into(),
                cli_version: "1.2.4".into(),
                files: vec![FilePin {
                    role: "host-index".into(),
                    path: "app.asar/out/index.js".into(),
                    sha256: Some("11".repeat(32)),
                    required_exports: vec!["a".into(), "b".into()],
                }],
                identity: None,
                simulated: false,
            },
            Release {
                data_files: Default::default(),
                id: "runtime-1".into(),
                kind: LayoutKind::Runtime,
                app_version: "2.0.0".into(),
                cli_version: "2.0.0".into(),
                files: vec![FilePin {
                    role: "cli".into(),
                    path: "dist/cli.js".into(),
                    sha256: None,
                    required_exports: vec![],
                }],
                identity: Some("zcode-runtime 2.0.0".into()),
                simulated: true,
            },
        ],
        cli_version_probe: VersionProbe {
            args: vec!["{cli-entry}".into(), "--version".into()],
            env: vec![("NO_COLOR".into(), "1".into())],
        },
        credentials_file: ".zcode/credentials.json".into(),
        credential_sources: vec![CredentialSource {
            name: "api-key".into(),
            file: ".zcode/keys.json".into(),
            key: "provider:{provider}".into(),
            lookups: vec![CredentialLookup {
                name: "provider".into(),
                key: "current".into(),
                field: "id".into(),
            }],
            encodings: vec![
                CredentialEncoding::Unreadable("dpapi:".into()),
                CredentialEncoding::AesGcm(AesGcmEncoding {
                    prefix: "enc:".into(),
                    key_env: "ZCODE_KEY".into(),
                    fallback_seed: "{platform}-{home}-{user}".into(),
                }),
                CredentialEncoding::Plain,
            ],
        }],
        offers: vec!["session/fork".into()],
    };
    assert_eq!(mapper.contract(), &expected);
    assert_eq!(mapper.source(), "conformance");
}

fn install(kind: LayoutKind) -> VerifiedInstall {
    VerifiedInstall {
        facts: Default::default(),
        install_root: "/opt/zcode".into(),
        kind,
        executable: "/opt/zcode/bin/node".into(),
        cli_entry: "/opt/zcode/dist/cli.js".into(),
        host_archive: "/opt/zcode".into(),
        release_id: "runtime-1".into(),
        app_version: "2.0.0".into(),
        cli_version: "2.0.1".into(),
        files: vec![("cli".into(), "/opt/zcode/dist/cli.js".into())],
        unpinned: vec!["cli".into()],
        home: "/home/ada".into(),
    }
}

#[test]
fn launch_and_auth_plans_cross_intact() {
    let mapper = mapper();
    let plan = mapper.launch_plan(&install(LayoutKind::Runtime)).expect("plan");
    let described = json!({
        "root": "/opt/zcode",
        "kind": "runtime",
        "executable": "/opt/zcode/bin/node",
        "cli": "/opt/zcode/dist/cli.js",
        "archive": "/opt/zcode",
        "release": "runtime-1",
        "versions": ["2.0.0", "2.0.1"],
    });
    // The argument is JSON text the guest wrote: compared as JSON, since the key order of
    // `described` depends on serde_json features unified across the workspace.
    let argument: serde_json::Value = serde_json::from_str(&plan.args[0]).expect("JSON argument");
    assert_eq!(argument, described);
    assert_eq!(
        plan,
        LaunchPlan {
            args: plan.args.clone(),
            env: vec![("cli".into(), "/opt/zcode/dist/cli.js".into())],
            env_remove: vec!["cli".into()],
            cwd: "/home/ada".into(),
            stdin_preamble: vec![0, 1, 255],
            needs_handshake: true,
        }
    );
    let desktop = mapper.launch_plan(&install(LayoutKind::Desktop)).expect("plan");
    assert!(desktop.args[0].contains("\"kind\":\"desktop\"") && !desktop.needs_handshake);

    let login = mapper.auth_plan(&install(LayoutKind::Runtime), AuthCommand::Login);
    assert_eq!(
        login,
        Ok(LaunchPlan {
            args: vec!["/opt/zcode/dist/cli.js".into(), "login".into()],
            env: vec![],
            env_remove: vec!["ZCODE_TOKEN".into()],
            cwd: "/opt/zcode".into(),
            stdin_preamble: vec![],
            needs_handshake: false,
        })
    );
    assert_eq!(
        mapper.auth_plan(&install(LayoutKind::Runtime), AuthCommand::Logout),
        Err(error(ErrorKind::Unsupported, "no logout", Some("{\"why\":1}")))
    );
}

#[test]
fn every_inbound_variant_crosses_intact() {
    let mut connection = mapper().connection().expect("connection");
    let expected = vec![
        Inbound::Reply(NativeReply { id: 7, body: ReplyBody::Ok(text("{}")) }),
        Inbound::Reply(NativeReply {
            id: 8,
            body: ReplyBody::Ok(NativeData::Binary(vec![0, 159, 255])),
        }),
        Inbound::Reply(NativeReply {
            id: 9,
            body: ReplyBody::Error(error(
                ErrorKind::Native,
                "native said no",
                Some("{\"code\":3}"),
            )),
        }),
        Inbound::Reply(NativeReply { id: 10, body: ReplyBody::Lost("gone".into()) }),
        Inbound::Event(RoutedEvent {
            route: "r1".into(),
            payload: NativeData::Binary(vec![1, 2, 3]),
        }),
        Inbound::Write(secret_write()),
        Inbound::Ready,
        Inbound::Ignored("noise".into()),
    ];
    assert_eq!(connection.push(b"all-inbound\n"), Ok(expected));
    // Bytes cross as they are, split anywhere.
    assert_eq!(connection.push(&[0xff, 0x00]), Ok(vec![]));
    let raw = RoutedEvent { route: "raw".into(), payload: NativeData::Binary(vec![0xff, 0, 7]) };
    assert_eq!(connection.push(&[7, b'\n']), Ok(vec![Inbound::Event(raw)]));
    let routed = RoutedEvent { route: "s1".into(), payload: text("{\"n\":1}") };
    let frame = b"{\"route\":\"s1\",\"payload\":{\"n\":1}}\n";
    assert_eq!(connection.push(frame), Ok(vec![Inbound::Event(routed)]));
    assert_eq!(connection.push(b"error\n"), Err(error(ErrorKind::Protocol, "bad frame", None)));
    assert_eq!(connection.push(b"tail"), Ok(vec![]));
    assert_eq!(connection.finish(), Ok(vec![Inbound::Ignored("4 bytes unterminated".into())]));
}

#[test]
fn connection_operations_replies_and_identity_cross_intact() {
    let mut connection = mapper().connection().expect("connection");
    assert_eq!(connection.identity(), Ok(None), "no identity before setup");
    let step = connection.start(1, &ConnectionOp::ListSessions("{\"cwd\":\"/w\"}".into()), 40);
    assert_eq!(done_response(step.unwrap()), json!({ "list": "{\"cwd\":\"/w\"}" }));
    let probe = ProbeRequest {
        workspace: "/w".into(),
        facts: vec![("signed-in".into(), FactValue::Presence(Presence::Absent))],
    };
    let step = connection.start(2, &ConnectionOp::Probe(probe), 40);
    assert_eq!(done_response(step.unwrap()), json!({ "probe": "/w", "facts": ["signed-in"] }));

    let Step::Wait(outgoing) = connection.start(3, &ConnectionOp::Setup, 40).unwrap() else {
        panic!("setup waits");
    };
    assert_eq!(
        outgoing,
        Outgoing {
            writes: vec![NativeWrite::new("hello", b"hello\n".to_vec())],
            requests: vec![NativeRequest {
                id: 40,
                bytes: b"{\"identify\":true}\n".to_vec(),
                label: "identify".into(),
                timeout_ms: 5000,
            }],
            ..Outgoing::default()
        }
    );
    let replies = [
        (ReplyBody::Lost("timeout".into()), json!({ "lost": "timeout" })),
        (
            ReplyBody::Error(error(ErrorKind::AuthRequired, "log in", Some("{}"))),
            json!({ "error": { "kind": "auth-required", "message": "log in", "data": "{}" } }),
        ),
        (ReplyBody::Ok(NativeData::Binary(vec![1, 254])), json!({ "ok": { "binary": [1, 254] } })),
        (
            ReplyBody::Ok(text("zcode-runtime 2.0.0")),
            json!({ "ok": { "text": "zcode-runtime 2.0.0" } }),
        ),
    ];
    for (body, described) in replies {
        let step = connection.resume(3, Some(&NativeReply { id: 40, body }), 41).unwrap();
        assert_eq!(done_response(step), json!({ "id": 40, "body": described }));
    }
    assert_eq!(connection.identity(), Ok(Some("zcode-runtime 2.0.0".into())));
    let step = connection.resume(3, None, 41).unwrap();
    assert_eq!(done_response(step), json!({ "resumed": null }));
}

#[test]
fn session_operations_cross_intact() {
    let init = SessionInit {
        facts: Default::default(),
        workspace: "/work/space".into(),
        client: ClientFeatures { plan_operations: true, form_elicitation: true },
    };
    let mut session = mapper().session(&init).expect("session");
    let answer = |outcome| SessionOp::Answer(InteractionAnswer { key: "perm-1".into(), outcome });
    let cases = [
        (SessionOp::Create("{\"cwd\":\"/w\"}".into()), json!({ "create": "{\"cwd\":\"/w\"}" })),
        (SessionOp::Load("l".into()), json!({ "load": "l" })),
        (SessionOp::Resume("r".into()), json!({ "resume": "r" })),
        (SessionOp::Prompt("not json".into()), json!({ "prompt": "not json" })),
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
    let init = json!({ "workspace": "/work/space", "plan": true, "forms": true });
    for (op_id, (op, described)) in (1..).zip(cases) {
        let step = session.start(op_id, &op, 100).unwrap();
        assert_eq!(done_response(step), json!({ "op": described, "init": init }), "{}", op.name());
    }
}

#[test]
fn an_operation_streams_updates_and_resumes_without_a_reply() {
    let mut session = session(&mapper());
    let prompt =
        SessionOp::Prompt(json!({ "prompt": [{ "type": "text", "text": "stream" }] }).to_string());
    let page = |n: u32| {
        Step::Wait(Outgoing { updates: vec![format!("{{\"page\":{n}}}")], ..Outgoing::default() })
    };
    assert_eq!(session.start(1, &prompt, 10), Ok(page(1)));
    assert_eq!(session.resume(1, None, 10), Ok(page(2)));
    assert_eq!(done_response(session.resume(1, None, 10).unwrap()), json!({ "pages": 2 }));
}

#[test]
fn every_action_and_a_secret_fill_cross_intact() {
    let mut session = session(&mapper());
    let expected = Effects {
        actions: vec![
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
        ],
        writes: vec![secret_write()],
        requests: 0,
    };
    assert_eq!(map_one(session.as_mut(), "all-actions"), Ok(expected));
}

#[test]
fn a_batch_maps_events_and_replies_in_order() {
    let mut session = session(&mapper());
    let reply = NativeReply { id: 3, body: ReplyBody::Ok(NativeData::Binary(vec![9])) };
    let batch = [
        event("{\"delta\":\"hi\"}"),
        SessionInput::Event(NativeData::Binary(vec![0, 128, 255])),
        SessionInput::Reply(reply),
        event("plain \u{0}é😀"),
    ];
    let chunk = json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "hi" } });
    let expected = [
        chunk,
        json!({ "binary": [0, 128, 255] }),
        json!({ "id": 3, "body": { "ok": { "binary": [9] } } }),
        json!({ "text": "plain \u{0}é😀" }),
    ];
    let effects = session.map(batch.to_vec()).unwrap();
    let updates: Vec<Value> = effects
        .actions
        .iter()
        .map(|action| match action {
            Action::Update(update) => serde_json::from_str(update).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(updates, expected);
    assert_eq!(session.map(vec![]), Ok(Effects::default()), "an empty batch maps to nothing");
}

#[test]
fn requests_announced_by_map_are_issued_with_the_ids_handed_out() {
    let mut session = session(&mapper());
    let effects = session.map(vec![event("announce:1"), event("announce:2")]).unwrap();
    assert_eq!(effects, Effects { requests: 3, ..Effects::default() });
    let outgoing = session.issue(20).unwrap();
    let request = |id: u64, i: u64, timeout_ms| NativeRequest {
        id,
        bytes: format!("{{\"resync\":{i}}}\n").into_bytes(),
        label: "resync".into(),
        timeout_ms,
    };
    assert_eq!(
        outgoing,
        Outgoing {
            updates: vec!["{\"issued\":3}".into()],
            routes_added: vec!["resync".into()],
            requests: vec![request(20, 0, 3000), request(21, 1, 0), request(22, 2, 0)],
            ..Outgoing::default()
        }
    );
}

#[test]
fn text_is_passed_through_unvalidated_and_intact() {
    let mapper = hostile();
    let mut session = session(&mapper);
    for text in ["{\"sessionUpdate\": [1, 2", "not json", "", "{\"t\":\"\u{0}é😀\\u0000\"}"] {
        let mapped = map_one(session.as_mut(), &format!("echo:{text}")).unwrap();
        assert_eq!(mapped.actions, vec![Action::Update(text.into())]);
    }
}

#[test]
fn a_broken_stream_is_an_action_and_the_session_stays_usable() {
    let mapper = hostile();
    let mut session = session(&mapper);
    let broken = error(ErrorKind::Protocol, "unknown native event", None);
    let effects = map_one(session.as_mut(), "error").unwrap();
    assert_eq!(effects.actions, vec![Action::Terminal(Terminal::Broken(broken))]);
    assert_eq!(
        map_one(session.as_mut(), "count").unwrap().actions,
        vec![Action::Update("2".into())]
    );
}

#[test]
fn requests_must_use_the_ids_handed_out_in_order() {
    let mapper = hostile();
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
    let fault =
        connection.start(1, &ConnectionOp::Probe(ProbeRequest::workspace("ids-out-of-order")), 5);
    assert_eq!(fault.unwrap_err().0, "mapper used request id 6, expected 5");
}

#[test]
fn issue_must_hand_out_exactly_the_announced_requests_with_their_ids() {
    let mapper = hostile();
    let mut session = session(&mapper);
    assert_eq!(map_one(session.as_mut(), "announce:2").unwrap().requests, 2);
    let ids: Vec<u64> = session.issue(7).unwrap().requests.iter().map(|r| r.id).collect();
    assert_eq!(ids, [7, 8]);

    for (behaviour, message) in [
        ("announce-more", "mapper issued 2 requests, but its last map announced 1"),
        ("announce-bad-ids", "mapper used request id 8, expected 7"),
    ] {
        let mut session = support::session(&mapper);
        assert_eq!(map_one(session.as_mut(), behaviour).unwrap().requests, 1);
        assert_eq!(session.issue(7).unwrap_err().0, message);
        let refused = map_one(session.as_mut(), "count").unwrap_err();
        assert!(refused.0.contains("failed earlier"), "{refused}");
    }
}

#[test]
fn sessions_can_be_driven_from_another_thread() {
    let mut session = support::session(&hostile());
    let moved = within_bound(move || {
        assert_eq!(
            map_one(session.as_mut(), "count").unwrap().actions,
            vec![Action::Update("1".into())]
        );
        session
    });
    let mut session = moved;
    assert_eq!(
        map_one(session.as_mut(), "count").unwrap().actions,
        vec![Action::Update("2".into())]
    );
}
