//! A mapper that behaves, and exercises every shape of `zcode:mapper@0.4.0`, for the runtime's
//! tests (`tests/calls.rs`, `tests/budget.rs`). Its results describe its inputs, so a test can
//! check that every value crossed intact.
//!
//! - `contract()` uses every record of the identity contract; `launch-plan` echoes the install.
//! - connection `push` frames lines: `all-inbound` returns every inbound variant, `error` fails
//!   the push, a JSON line `{"route": .., "payload": ..}` becomes an event (parsed, so the work
//!   grows with the frame, however many pushes it took), any other line a binary event.
//! - connection `setup` writes a hello and asks for the identity, which the reply's text sets.
//! - session `prompt` with the text `stream` sends two pages of updates, resumed without a
//!   reply; any other prompt becomes one native request that carries its text (the work grows
//!   with the prompt). Other operations are described back with the session's init.
//! - session `map`: `all-actions` returns every action and a write with a secret fill,
//!   `announce:<n>` asks for `n` requests that `issue` hands out, a JSON event with a `delta`
//!   becomes an ACP message chunk, `hold:<text>` is kept with nothing made (a large event that
//!   comes in pieces), `release` makes what was kept one message chunk, and other inputs
//!   (binary data, replies) are described.

use std::cell::{Cell, RefCell};

use serde_json::{Value, json};

wit_bindgen::generate!({ world: "zcode-mapper", path: "../../../../../wit" });

use exports::zcode::mapper::mapper::{Guest, GuestConnection, GuestSession};
use zcode::mapper::types::*;

struct Conformance;

impl Guest for Conformance {
    type Connection = ConformanceConnection;
    type Session = ConformanceSession;

    fn contract() -> Contract {
        Contract {
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
                    data_files: vec![],
                },
                Release {
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
                    data_files: vec![],
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
            facts: vec![],
        }
    }

    fn launch_plan(install: VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        let kind = match install.kind {
            LayoutKind::Desktop => "desktop",
            LayoutKind::Runtime => "runtime",
        };
        let described = json!({
            "root": install.install_root,
            "kind": kind,
            "executable": install.executable,
            "cli": install.cli_entry,
            "archive": install.host_archive,
            "release": install.release_id,
            "versions": [install.app_version, install.cli_version],
        });
        Ok(LaunchPlan {
            args: vec![described.to_string()],
            env: install.files,
            env_remove: install.unpinned,
            cwd: install.home,
            stdin_preamble: vec![0, 1, 255],
            needs_handshake: install.kind == LayoutKind::Runtime,
        })
    }

    fn auth_plan(
        install: VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        match command {
            AuthCommand::Login => Ok(LaunchPlan {
                args: vec![install.cli_entry, "login".into()],
                env: vec![],
                env_remove: vec!["ZCODE_TOKEN".into()],
                cwd: install.install_root,
                stdin_preamble: vec![],
                needs_handshake: false,
            }),
            AuthCommand::Logout => Err(MapperError {
                kind: ErrorKind::Unsupported,
                message: "no logout".into(),
                data: Some("{\"why\":1}".into()),
            }),
        }
    }
}

// ----- connection ------------------------------------------------------------------------------

struct ConformanceConnection {
    /// Bytes of an unterminated line.
    partial: RefCell<Vec<u8>>,
    identity: RefCell<Option<String>>,
}

impl GuestConnection for ConformanceConnection {
    fn new() -> Self {
        ConformanceConnection { partial: RefCell::new(Vec::new()), identity: RefCell::new(None) }
    }

    fn push(&self, bytes: Vec<u8>) -> Result<Vec<Inbound>, MapperError> {
        let mut partial = self.partial.borrow_mut();
        partial.extend_from_slice(&bytes);
        let Some(end) = partial.iter().rposition(|&b| b == b'\n') else { return Ok(vec![]) };
        let rest = partial.split_off(end + 1);
        let complete = std::mem::replace(&mut *partial, rest);
        let mut inbound = Vec::new();
        for line in complete.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            inbound.extend(frame(line)?);
        }
        Ok(inbound)
    }

    fn finish(&self) -> Result<Vec<Inbound>, MapperError> {
        let left = self.partial.borrow().len();
        Ok(vec![Inbound::Ignored(format!("{left} bytes unterminated"))])
    }

    fn start(&self, _op_id: u64, op: ConnectionOp, first_request_id: u64) -> Step {
        match op {
            ConnectionOp::Setup => Step::Wait(Outgoing {
                writes: vec![NativeWrite {
                    bytes: b"hello\n".to_vec(),
                    label: "hello".into(),
                    secret: None,
                }],
                requests: vec![NativeRequest {
                    id: first_request_id,
                    bytes: b"{\"identify\":true}\n".to_vec(),
                    label: "identify".into(),
                    timeout_ms: 5000,
                }],
                ..outgoing()
            }),
            ConnectionOp::Probe(probe) => {
                let facts: Vec<&str> = probe.facts.iter().map(|(name, _)| name.as_str()).collect();
                done(json!({ "probe": probe.workspace, "facts": facts }))
            }
            ConnectionOp::ListSessions(params) => done(json!({ "list": params })),
        }
    }

    fn resume(&self, _op_id: u64, reply: Option<NativeReply>, _first_request_id: u64) -> Step {
        let Some(reply) = reply else { return done(json!({ "resumed": null })) };
        if let ReplyBody::Ok(NativeData::Text(text)) = &reply.body {
            *self.identity.borrow_mut() = Some(text.clone());
        }
        done(describe_reply(&reply))
    }

    fn identity(&self) -> Option<String> {
        self.identity.borrow().clone()
    }
}

/// One line of host output.
fn frame(line: &[u8]) -> Result<Vec<Inbound>, MapperError> {
    match line {
        b"all-inbound" => return Ok(all_inbound()),
        b"error" => return Err(error(ErrorKind::Protocol, "bad frame")),
        _ => {}
    }
    if line.first() == Some(&b'{') {
        let value: Value = serde_json::from_slice(line)
            .map_err(|e| error(ErrorKind::Protocol, &format!("bad frame: {e}")))?;
        let route = value["route"].as_str().unwrap_or_default().to_string();
        let payload = NativeData::Text(value["payload"].to_string());
        return Ok(vec![Inbound::Event(RoutedEvent { route, payload })]);
    }
    Ok(vec![Inbound::Event(RoutedEvent {
        route: "raw".into(),
        payload: NativeData::Binary(line.to_vec()),
    })])
}

fn all_inbound() -> Vec<Inbound> {
    vec![
        Inbound::Reply(NativeReply { id: 7, body: ReplyBody::Ok(NativeData::Text("{}".into())) }),
        Inbound::Reply(NativeReply {
            id: 8,
            body: ReplyBody::Ok(NativeData::Binary(vec![0, 159, 255])),
        }),
        Inbound::Reply(NativeReply {
            id: 9,
            body: ReplyBody::Error(MapperError {
                kind: ErrorKind::Native,
                message: "native said no".into(),
                data: Some("{\"code\":3}".into()),
            }),
        }),
        Inbound::Reply(NativeReply { id: 10, body: ReplyBody::Lost("gone".into()) }),
        Inbound::Event(RoutedEvent {
            route: "r1".into(),
            payload: NativeData::Binary(vec![1, 2, 3]),
        }),
        Inbound::Write(secret_write()),
        Inbound::Ready,
        Inbound::Ignored("noise".into()),
    ]
}

// ----- session ---------------------------------------------------------------------------------

struct ConformanceSession {
    init: Value,
    /// Pages of updates a streaming operation has sent, while it streams.
    pages_sent: Cell<Option<u32>>,
    /// Requests the last `map` announced.
    announced: Cell<u32>,
    /// Text kept by `hold:` events until a `release`.
    held: RefCell<String>,
}

impl GuestSession for ConformanceSession {
    fn new(init: SessionInit) -> Self {
        let init = json!({
            "workspace": init.workspace,
            "plan": init.client.plan_operations,
            "forms": init.client.form_elicitation,
        });
        ConformanceSession {
            init,
            pages_sent: Cell::new(None),
            announced: Cell::new(0),
            held: RefCell::new(String::new()),
        }
    }

    fn start(&self, _op_id: u64, op: SessionOp, first_request_id: u64) -> Step {
        if let SessionOp::Prompt(params) = &op
            && let Ok(params) = serde_json::from_str::<Value>(params)
        {
            let text = params.pointer("/prompt/0/text").and_then(Value::as_str).unwrap_or("");
            if text == "stream" {
                self.pages_sent.set(Some(0));
                return self.next_page();
            }
            return Step::Wait(Outgoing {
                requests: vec![prompt_request(first_request_id, text)],
                ..outgoing()
            });
        }
        done(json!({ "op": describe_op(&op), "init": self.init }))
    }

    fn resume(&self, _op_id: u64, reply: Option<NativeReply>, _first_request_id: u64) -> Step {
        match reply {
            None if self.pages_sent.get().is_some() => self.next_page(),
            None => done(json!({ "resumed": null })),
            Some(reply) => done(describe_reply(&reply)),
        }
    }

    fn map(&self, inputs: Vec<SessionInput>) -> Effects {
        let mut effects = Effects { actions: vec![], writes: vec![], requests: 0 };
        for input in inputs {
            match input {
                SessionInput::Event(NativeData::Text(text)) => self.map_text(&text, &mut effects),
                SessionInput::Event(NativeData::Binary(bytes)) => {
                    effects.actions.push(Action::Update(json!({ "binary": bytes }).to_string()))
                }
                SessionInput::Reply(reply) => {
                    effects.actions.push(Action::Update(describe_reply(&reply).to_string()))
                }
            }
        }
        self.announced.set(effects.requests);
        effects
    }

    fn issue(&self, first_request_id: u64) -> Outgoing {
        let count = self.announced.replace(0);
        let requests = (0..u64::from(count))
            .map(|i| NativeRequest {
                id: first_request_id + i,
                bytes: format!("{{\"resync\":{i}}}\n").into_bytes(),
                label: "resync".into(),
                timeout_ms: if i == 0 { 3000 } else { 0 },
            })
            .collect();
        Outgoing {
            updates: vec![json!({ "issued": count }).to_string()],
            routes_added: vec!["resync".into()],
            requests,
            ..outgoing()
        }
    }
}

impl ConformanceSession {
    /// Two pages of updates, each awaiting nothing, then done.
    fn next_page(&self) -> Step {
        let sent = self.pages_sent.get().unwrap_or(0);
        if sent == 2 {
            self.pages_sent.set(None);
            return done(json!({ "pages": sent }));
        }
        self.pages_sent.set(Some(sent + 1));
        let page = json!({ "page": sent + 1 });
        Step::Wait(Outgoing { updates: vec![page.to_string()], ..outgoing() })
    }

    fn map_text(&self, text: &str, effects: &mut Effects) {
        if text == "all-actions" {
            effects.actions.extend(all_actions());
            effects.writes.push(secret_write());
            return;
        }
        if let Some(n) = text.strip_prefix("announce:") {
            effects.requests += n.parse::<u32>().unwrap_or(1);
            return;
        }
        if let Some(piece) = text.strip_prefix("hold:") {
            self.held.borrow_mut().push_str(piece);
            return;
        }
        if text == "release" {
            let held = self.held.take();
            let update = json!({
                "sessionUpdate": "agent_message_chunk",
                "content": { "type": "text", "text": held },
            });
            effects.actions.push(Action::Update(update.to_string()));
            return;
        }
        // The delta is moved out of the parsed event, not copied.
        let delta = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|mut event| event.get_mut("delta").map(Value::take))
            .filter(Value::is_string);
        let update = match delta {
            Some(delta) => json!({
                "sessionUpdate": "agent_message_chunk",
                "content": { "type": "text", "text": delta },
            }),
            None => json!({ "text": text }),
        };
        effects.actions.push(Action::Update(update.to_string()));
    }
}

/// A native request line that carries the prompt text, as real mappers send it. The text is
/// escaped straight into the request's bytes: one copy, so a 12 MiB prompt fits the memory cap.
fn prompt_request(id: u64, text: &str) -> NativeRequest {
    let mut bytes = Vec::with_capacity(text.len() + text.len() / 4 + 64);
    bytes.extend_from_slice(
        format!("{{\"id\":{id},\"method\":\"prompt\",\"params\":{{\"content\":").as_bytes(),
    );
    serde_json::to_writer(&mut bytes, text).expect("a string serializes");
    bytes.extend_from_slice(b"}}\n");
    NativeRequest { id, bytes, label: "prompt".into(), timeout_ms: 60_000 }
}

fn all_actions() -> Vec<Action> {
    vec![
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
        Action::Terminal(Terminal::Failed(error(ErrorKind::AuthRequired, "sign in"))),
        Action::Terminal(Terminal::Broken(MapperError {
            kind: ErrorKind::NotFound,
            message: "gone".into(),
            data: Some("{}".into()),
        })),
        Action::Ignore("heartbeat".into()),
    ]
}

/// An answer that needs a credential: the core fills it in; the mapper never sees it.
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

fn outgoing() -> Outgoing {
    Outgoing {
        updates: vec![],
        routes_added: vec![],
        routes_removed: vec![],
        writes: vec![],
        requests: vec![],
    }
}

fn done(response: Value) -> Step {
    Step::Done(Ok(OpResult { response: response.to_string(), updates: vec!["{\"u\":1}".into()] }))
}

fn describe_op(op: &SessionOp) -> Value {
    match op {
        SessionOp::Create(p) => json!({ "create": p }),
        SessionOp::Load(p) => json!({ "load": p }),
        SessionOp::Resume(p) => json!({ "resume": p }),
        SessionOp::Fork(p) => json!({ "fork": p }),
        SessionOp::Prompt(p) => json!({ "prompt": p }),
        SessionOp::Cancel => json!("cancel"),
        SessionOp::FinishTurn => json!("finish-turn"),
        SessionOp::SetMode(p) => json!({ "set-mode": p }),
        SessionOp::SetConfigOption(p) => json!({ "set-config-option": p }),
        SessionOp::Answer(answer) => {
            let outcome = match &answer.outcome {
                InteractionOutcome::Selected(s) => json!({ "selected": s }),
                InteractionOutcome::Elicited(s) => json!({ "elicited": s }),
                InteractionOutcome::Unavailable(s) => json!({ "unavailable": s }),
            };
            json!({ "answer": { "key": answer.key, "outcome": outcome } })
        }
        SessionOp::Close => json!("close"),
    }
}

fn describe_data(data: &NativeData) -> Value {
    match data {
        NativeData::Text(text) => json!({ "text": text }),
        NativeData::Binary(bytes) => json!({ "binary": bytes }),
    }
}

fn describe_reply(reply: &NativeReply) -> Value {
    let body = match &reply.body {
        ReplyBody::Ok(data) => json!({ "ok": describe_data(data) }),
        ReplyBody::Error(e) => json!({ "error": describe_error(e) }),
        ReplyBody::Lost(why) => json!({ "lost": why }),
    };
    json!({ "id": reply.id, "body": body })
}

fn describe_error(e: &MapperError) -> Value {
    let kind = match e.kind {
        ErrorKind::InvalidParams => "invalid-params",
        ErrorKind::AuthRequired => "auth-required",
        ErrorKind::NotFound => "not-found",
        ErrorKind::Unsupported => "unsupported",
        ErrorKind::Protocol => "protocol",
        ErrorKind::Native => "native",
        ErrorKind::Internal => "internal",
    };
    json!({ "kind": kind, "message": e.message, "data": e.data })
}

fn error(kind: ErrorKind, message: &str) -> MapperError {
    MapperError { kind, message: message.into(), data: None }
}

export!(Conformance);
