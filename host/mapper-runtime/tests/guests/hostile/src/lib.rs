//! A mapper that misbehaves on request, for the runtime's sandbox tests.
//!
//! Behaviour is chosen by the input so that one component covers every case:
//! - `map-event` payloads: `echo:<text>`, `count`, `all-actions`, `error`, `spin`, `grow`,
//!   `panic`, `env`, `print`, `huge-string`, `string:<bytes>`, `log-flood`, `json:<event>` (a
//!   realistic JSON-to-ACP mapping used for measurements) and, with the `capabilities` feature,
//!   `fs`, `net`, `clock`.
//! - session `prompt` params: `ids:<n>`, `ids-out-of-order`, `ids-wrong-start`; every other
//!   operation is described back as JSON in the response so the host's conversions can be
//!   checked.
//! - a session whose workspace is `panic` panics in its constructor.
//! - connection `push` bytes: `spin`, `error`, `all-inbound`, anything else is echoed.
//! - `launch-plan` / `auth-plan` with artifact id `panic` or `error` misbehave accordingly.

use std::cell::Cell;

use serde_json::{Value, json};

wit_bindgen::generate!({ world: "zcode-mapper", path: "../../../../../wit" });

use exports::zcode::mapper::mapper::{Guest, GuestConnection, GuestSession};
use zcode::mapper::host::{LogLevel, log};
use zcode::mapper::types::*;

struct Hostile;

impl Guest for Hostile {
    type Connection = HostileConnection;
    type Session = HostileSession;

    fn contract() -> Contract {
        install_panic_hook();
        Contract {
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
        }
    }

    fn launch_plan(install: VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        install_panic_hook();
        misbehave_on_artifact(&install)?;
        Ok(LaunchPlan {
            program: install.executable,
            args: vec![install.cli_entry, "serve".into()],
            env: vec![("ZCODE_ARTIFACT".into(), install.artifact_id)],
            cwd: install.install_root,
            stdin_preamble: b"hello\n".to_vec(),
            needs_handshake: true,
        })
    }

    fn auth_plan(
        install: VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        install_panic_hook();
        misbehave_on_artifact(&install)?;
        let verb = match command {
            AuthCommand::Login => "login",
            AuthCommand::Logout => "logout",
        };
        Ok(LaunchPlan {
            program: install.executable,
            args: vec![install.cli_entry, verb.into()],
            env: vec![],
            cwd: install.install_root,
            stdin_preamble: vec![],
            needs_handshake: false,
        })
    }
}

fn misbehave_on_artifact(install: &VerifiedInstall) -> Result<(), MapperError> {
    match install.artifact_id.as_str() {
        "panic" => panic!("asked to panic"),
        "error" => Err(error(ErrorKind::Unsupported, "asked to fail")),
        _ => Ok(()),
    }
}

// ----- connection ------------------------------------------------------------------------------

struct HostileConnection;

impl GuestConnection for HostileConnection {
    fn new() -> Self {
        install_panic_hook();
        HostileConnection
    }

    fn push(&self, bytes: Vec<u8>) -> Result<Vec<Inbound>, MapperError> {
        match bytes.as_slice() {
            b"spin" => spin(),
            b"error" => Err(error(ErrorKind::Protocol, "bad frame")),
            b"all-inbound" => Ok(vec![
                Inbound::Reply(NativeReply { id: 7, body: ReplyBody::Ok("{\"x\":1}".into()) }),
                Inbound::Reply(NativeReply {
                    id: 8,
                    body: ReplyBody::Error(MapperError {
                        kind: ErrorKind::Native,
                        message: "native said no".into(),
                        data: Some("{\"code\":3}".into()),
                    }),
                }),
                Inbound::Reply(NativeReply { id: 9, body: ReplyBody::Lost("gone".into()) }),
                Inbound::Event(RoutedEvent { route: "r1".into(), payload: "{}".into() }),
                Inbound::Write(vec![0, 1, 2, 255]),
                Inbound::Ready,
                Inbound::Ignored("noise".into()),
            ]),
            other => Ok(vec![Inbound::Write(other.to_vec())]),
        }
    }

    fn finish(&self) -> Result<Vec<Inbound>, MapperError> {
        Ok(vec![Inbound::Ignored("eof".into())])
    }

    fn start(&self, _op_id: u64, op: ConnectionOp, first_request_id: u64) -> Step {
        match op {
            ConnectionOp::Setup => requests_step(first_request_id, 1),
            ConnectionOp::Probe(what) => match what.as_str() {
                "spin" => spin(),
                "ids-out-of-order" => out_of_order_step(first_request_id),
                _ => done(json!({ "probe": what }), vec![]),
            },
            ConnectionOp::ListSessions(params) => done(json!({ "list": params }), vec![]),
        }
    }

    fn resume(&self, _op_id: u64, reply: NativeReply, _first_request_id: u64) -> Step {
        done(describe_reply(&reply), vec![])
    }
}

// ----- session ---------------------------------------------------------------------------------

struct HostileSession {
    workspace: String,
    plan_operations: bool,
    events: Cell<u64>,
}

impl GuestSession for HostileSession {
    fn new(init: SessionInit) -> Self {
        install_panic_hook();
        if init.workspace == "panic" {
            panic!("asked to panic in the constructor");
        }
        HostileSession {
            workspace: init.workspace,
            plan_operations: init.client.plan_operations,
            events: Cell::new(0),
        }
    }

    fn start(&self, _op_id: u64, op: SessionOp, first_request_id: u64) -> Step {
        if let SessionOp::Prompt(params) = &op {
            if let Some(n) = params.strip_prefix("ids:") {
                return requests_step(first_request_id, n.parse().unwrap_or(1));
            }
            match params.as_str() {
                "ids-out-of-order" => return out_of_order_step(first_request_id),
                "ids-wrong-start" => return requests_step(first_request_id + 5, 1),
                _ => {}
            }
        }
        let described = describe_op(&op);
        let init = json!({ "workspace": self.workspace, "plan": self.plan_operations });
        done(json!({ "op": described, "init": init }), vec!["{\"u\":1}".into()])
    }

    fn resume(&self, _op_id: u64, reply: NativeReply, _first_request_id: u64) -> Step {
        done(describe_reply(&reply), vec![])
    }

    fn map_event(&self, payload: String) -> Result<Vec<Action>, MapperError> {
        self.events.set(self.events.get() + 1);
        if let Some(text) = payload.strip_prefix("echo:") {
            return Ok(vec![Action::Update(text.to_string())]);
        }
        if let Some(event) = payload.strip_prefix("json:") {
            return map_json_event(event);
        }
        if let Some(n) = payload.strip_prefix("string:") {
            return Ok(vec![Action::Update("x".repeat(n.parse().unwrap_or(0)))]);
        }
        match payload.as_str() {
            "count" => Ok(vec![Action::Update(self.events.get().to_string())]),
            "all-actions" => Ok(all_actions()),
            "error" => Err(error(ErrorKind::Protocol, "unknown native event")),
            "spin" => spin(),
            "grow" => grow(),
            "panic" => panic!("asked to panic"),
            "env" => Ok(vec![Action::Update(std::env::var("HOME").unwrap_or_default())]),
            "print" => {
                println!("hello from the mapper");
                Ok(vec![])
            }
            "huge-string" => Ok(vec![Action::Update("x".repeat(100_000_000))]),
            "log-flood" => {
                let line = "y".repeat(5000);
                for _ in 0..1000 {
                    log(LogLevel::Info, &line);
                }
                Ok(vec![])
            }
            #[cfg(feature = "capabilities")]
            "fs" | "net" | "clock" => capabilities::use_one(&payload),
            _ => Err(error(ErrorKind::Internal, "unknown test behaviour")),
        }
    }
}

// ----- behaviours ------------------------------------------------------------------------------

fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// Reserves linear memory in 4 MiB steps, never giving it back.
fn grow() -> ! {
    let mut kept: Vec<Vec<u8>> = Vec::new();
    loop {
        kept.push(Vec::with_capacity(4 << 20));
        std::hint::black_box(&kept);
    }
}

/// A realistic event: a JSON text delta becomes an ACP `agent_message_chunk` update.
fn map_json_event(event: &str) -> Result<Vec<Action>, MapperError> {
    let value: Value = serde_json::from_str(event)
        .map_err(|e| error(ErrorKind::Protocol, &format!("bad event JSON: {e}")))?;
    let text = value
        .pointer("/delta/text")
        .and_then(Value::as_str)
        .ok_or_else(|| error(ErrorKind::Protocol, "event without delta.text"))?;
    let update = json!({
        "sessionUpdate": "agent_message_chunk",
        "content": { "type": "text", "text": text },
    });
    Ok(vec![Action::Update(update.to_string())])
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

fn requests_step(first_request_id: u64, count: u64) -> Step {
    let requests = (0..count)
        .map(|i| NativeRequest {
            id: first_request_id + i,
            bytes: format!("request {i}\n").into_bytes(),
            label: format!("req-{i}"),
            timeout_ms: 1000 + i as u32,
        })
        .collect();
    Step::Wait(Outgoing {
        routes_added: vec!["route-a".into()],
        routes_removed: vec!["route-b".into()],
        requests,
    })
}

fn out_of_order_step(first_request_id: u64) -> Step {
    let mut step = requests_step(first_request_id, 2);
    if let Step::Wait(outgoing) = &mut step {
        outgoing.requests.swap(0, 1);
    }
    step
}

fn done(response: Value, updates: Vec<String>) -> Step {
    Step::Done(Ok(OpResult { response: response.to_string(), updates }))
}

fn describe_op(op: &SessionOp) -> Value {
    match op {
        SessionOp::Create(p) => json!({ "create": p }),
        SessionOp::Load(p) => json!({ "load": p }),
        SessionOp::Resume(p) => json!({ "resume": p }),
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

fn describe_reply(reply: &NativeReply) -> Value {
    let body = match &reply.body {
        ReplyBody::Ok(text) => json!({ "ok": text }),
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

/// Sends panic messages to the host log: with `panic = "abort"` the trap itself carries none.
fn install_panic_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        std::panic::set_hook(Box::new(|info| log(LogLevel::Error, &info.to_string())));
    });
}

#[cfg(feature = "capabilities")]
mod capabilities {
    use super::*;

    /// Code that needs WASI filesystem, sockets and clocks; its mere presence adds those imports.
    pub fn use_one(what: &str) -> Result<Vec<Action>, MapperError> {
        let found = match what {
            "fs" => std::fs::read("/etc/hostname").map(|b| b.len().to_string()),
            "net" => std::net::TcpStream::connect("127.0.0.1:9").map(|_| "connected".into()),
            _ => Ok(format!("{:?}", std::time::SystemTime::now())),
        };
        let text = found.unwrap_or_else(|e| e.to_string());
        Ok(vec![Action::Update(text)])
    }
}

export!(Hostile);
