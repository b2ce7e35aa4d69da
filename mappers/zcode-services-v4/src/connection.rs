//! One Services Server process: the hello and its acknowledgement, the `[200]` Initialize that
//! opens the binary phase, replies and events, and the connection operations (setup, the doctor
//! probe, session listing).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_contract::{
    ConnectionOp, ErrorKind, Inbound, MapperError, NativeData, NativeReply, NativeWrite, OpResult,
    Outgoing, ReplyBody, RoutedEvent, Step,
};

use crate::hello::{self, Hello};
use crate::ipc::frame::{FrameDecoder, Next};
use crate::ipc::message::{Response, decode_response, event_opening};
use crate::ipc::value::IpcValue;
use crate::rpc::{self, Call};
use crate::sessions;
use zcode_mapper_sdk::json::{error, internal, protocol};
use zcode_mapper_sdk::pieces;
use zcode_v4::schema::Fields;

/// The wire protocol version of V4 (`V4_WIRE_PROTOCOL_VERSION`, ZCode
/// `packages/shared/src/zcode-protocol-v4/core.ts`).
pub const V4_PROTOCOL: u64 = 3;

enum Phase {
    /// Waiting for the Server's hello line.
    Hello(Vec<u8>),
    /// The acknowledgement is out; the first message must be `[200]`.
    Initializing,
    Ready,
}

enum Stage {
    Hello,
    Initialize,
    Probe,
    ListInitialize { workspace: String, offset: usize },
    List { offset: usize },
}

struct PendingOp {
    /// Requests of this step still to be answered, with their labels.
    waiting: Vec<(u64, String)>,
    stage: Stage,
}

/// The connection resource.
pub struct ServicesConnection {
    phase: Phase,
    frames: FrameDecoder,
    /// The route of the large event being handed on in pieces.
    streaming: Option<String>,
    hello: Option<Hello>,
    ops: BTreeMap<u64, PendingOp>,
}

impl Default for ServicesConnection {
    fn default() -> Self {
        Self::new()
    }
}

fn done(response: Value) -> Step {
    Step::Done(Ok(OpResult { response: response.to_string(), updates: Vec::new() }))
}

fn framing(problem: impl std::fmt::Display) -> MapperError {
    protocol(format!("Services Server framing: {problem}"))
}

/// A `[202]` error payload (`{message, name, stack, code?, ...}`) or a `[203]` raw error.
fn native_error(body: IpcValue, flattened: bool) -> MapperError {
    let json = body.into_json_text().unwrap_or_else(|_| "null".into());
    let value: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
    let message = match &value {
        Value::Object(map) => map.get("message").and_then(Value::as_str).filter(|m| !m.is_empty()),
        Value::String(message) if !message.is_empty() => Some(message.as_str()),
        _ => None,
    }
    .unwrap_or("The ZCode Services Server reported an error")
    .to_string();
    let mut problem = error(ErrorKind::Native, message);
    let mut data = serde_json::Map::new();
    for key in ["name", "code", "kind", "status"] {
        if let Some(field) = value.get(key).filter(|v| v.is_string() || v.is_number()) {
            data.insert(format!("native{}{}", key[..1].to_uppercase(), &key[1..]), field.clone());
        }
    }
    if !flattened {
        data.insert("nativeErrorObject".into(), Value::Bool(true));
    }
    if !data.is_empty() {
        problem.data = Some(Value::Object(data).to_string());
    }
    problem
}

impl ServicesConnection {
    pub fn new() -> Self {
        Self {
            phase: Phase::Hello(Vec::new()),
            frames: FrameDecoder::default(),
            streaming: None,
            hello: None,
            ops: BTreeMap::new(),
        }
    }

    fn send(&mut self, op_id: u64, first: u64, stage: Stage, calls: Vec<Call>) -> Step {
        let requests: Vec<_> = calls
            .into_iter()
            .enumerate()
            .map(|(index, call)| call.into_request(first + index as u64))
            .collect();
        let waiting = requests.iter().map(|request| (request.id, request.label.clone())).collect();
        self.ops.insert(op_id, PendingOp { waiting, stage });
        Step::Wait(Outgoing { requests, ..Outgoing::default() })
    }

    fn inbound(&mut self, response: Response) -> Result<Inbound, MapperError> {
        if matches!(self.phase, Phase::Initializing) {
            return match response {
                Response::Initialize => {
                    self.phase = Phase::Ready;
                    Ok(Inbound::Ready)
                }
                _ => Err(protocol("The Services Server sent a message before its Initialize")),
            };
        }
        let text = |body: IpcValue| body.into_json_text().map_err(framing);
        Ok(match response {
            Response::Initialize => return Err(protocol("The Services Server initialized twice")),
            Response::Success { id, body } => Inbound::Reply(NativeReply {
                id,
                body: ReplyBody::Ok(NativeData::Text(text(body)?)),
            }),
            Response::Error { id, body } => {
                Inbound::Reply(NativeReply { id, body: ReplyBody::Error(native_error(body, true)) })
            }
            Response::ErrorObj { id, body } => Inbound::Reply(NativeReply {
                id,
                body: ReplyBody::Error(native_error(body, false)),
            }),
            Response::Event { id, body } => Inbound::Event(RoutedEvent {
                route: rpc::route(id),
                payload: NativeData::Text(text(body)?),
            }),
        })
    }
}

/// A piece of a large event for its session, which joins them (`zcode_mapper_sdk::pieces`):
/// neither this connection nor the core holds such an event whole (issue 27).
fn piece_event(route: String, piece: Vec<u8>) -> Inbound {
    Inbound::Event(RoutedEvent { route, payload: NativeData::Binary(piece) })
}

impl zcode_mapper_sdk::Connection for ServicesConnection {
    /// What the hello said: the Server's version, compared with the release's identity.
    fn identity(&self) -> Option<String> {
        self.hello.as_ref().map(|hello| hello.version.clone())
    }

    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        let mut out = Vec::new();
        let mut bytes = bytes;
        if let Phase::Hello(line) = &mut self.phase {
            let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
                if line.len() + bytes.len() > hello::MAX_HELLO {
                    return Err(protocol("The Services Server hello line exceeds 64 KiB"));
                }
                line.extend_from_slice(bytes);
                return Ok(out);
            };
            line.extend_from_slice(&bytes[..end]);
            if line.len() > hello::MAX_HELLO {
                return Err(protocol("The Services Server hello line exceeds 64 KiB"));
            }
            self.hello = Some(hello::parse(line)?);
            out.push(Inbound::Write(NativeWrite::new("zcode-hello-ack", hello::ack())));
            self.phase = Phase::Initializing;
            bytes = &bytes[end + 1..];
        }
        self.frames.push(bytes);
        while let Some(next) = self.frames.next_part().map_err(framing)? {
            match next {
                Next::Message(message) => {
                    let response = decode_response(message).map_err(framing)?;
                    out.push(self.inbound(response)?);
                }
                Next::Opening { len, head } => {
                    let ready = matches!(self.phase, Phase::Ready);
                    let Some(opening) = event_opening(head, len).filter(|_| ready) else {
                        self.frames.hold();
                        continue;
                    };
                    let text_len = u32::try_from(opening.text_len).expect("below MAX_MESSAGE");
                    let piece = pieces::first(text_len, &head[opening.text_at..]);
                    let whole = head.len() == len;
                    self.frames.stream();
                    let route = rpc::route(opening.id);
                    self.streaming = (!whole).then(|| route.clone());
                    out.push(piece_event(route, piece));
                }
                Next::Piece { bytes, rest } => {
                    let piece = pieces::more(bytes);
                    let route = match rest {
                        0 => self.streaming.take(),
                        _ => self.streaming.clone(),
                    };
                    out.push(piece_event(route.expect("a message is being streamed"), piece));
                }
            }
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        match self.phase {
            Phase::Hello(_) => Err(protocol("The Services Server exited before its hello")),
            _ if self.frames.pending() > 0 => {
                Err(protocol("The Services Server output ends inside a frame"))
            }
            _ => Ok(Vec::new()),
        }
    }

    fn start(&mut self, op_id: u64, op: &ConnectionOp, first: u64) -> Step {
        if self.ops.contains_key(&op_id) {
            return Step::Done(Err(internal(format!("Operation {op_id} is already running"))));
        }
        match op {
            ConnectionOp::Setup => {
                let call = Call::agent0("helloConversationV4").timeout(rpc::HELLO_TIMEOUT_MS);
                self.send(op_id, first, Stage::Hello, vec![call])
            }
            // The probe's facts say nothing to this generation: only the app-server mapper
            // declares facts (the Coding Plan account push).
            ConnectionOp::Probe(probe) => {
                self.send(op_id, first, Stage::Probe, vec![initialize(&probe.workspace)])
            }
            ConnectionOp::ListSessions(params) => match sessions::list_params(params) {
                Ok((workspace, offset)) => {
                    let call = initialize(&workspace);
                    self.send(op_id, first, Stage::ListInitialize { workspace, offset }, vec![call])
                }
                Err(problem) => Step::Done(Err(problem)),
            },
        }
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first: u64) -> Step {
        let Some(mut op) = self.ops.remove(&op_id) else {
            return Step::Done(Err(internal(format!(
                "Operation {op_id} is not waiting for a reply"
            ))));
        };
        let Some(reply) = reply else {
            return Step::Done(Err(internal(format!(
                "Operation {op_id} resumed without its reply"
            ))));
        };
        let Some(index) = op.waiting.iter().position(|(id, _)| *id == reply.id) else {
            return Step::Done(Err(internal(format!(
                "Reply {} is not for operation {op_id}",
                reply.id
            ))));
        };
        let (_, label) = op.waiting.remove(index);
        let result = match rpc::reply_value(reply, &label) {
            Ok(result) => result,
            Err(problem) => return Step::Done(Err(problem)),
        };
        let next = match op.stage {
            Stage::Hello => check_v4_hello(&result).map(|()| {
                let client_hello = json!({
                    "kind": "clientHello",
                    "protocolVersion": V4_PROTOCOL,
                    "clientId": hello::CLIENT_ID,
                    "appVersion": env!("CARGO_PKG_VERSION"),
                });
                let calls = vec![
                    Call::agent("initializeConversationV4", client_hello)
                        .timeout(rpc::HELLO_TIMEOUT_MS),
                    // Off: an AskUserQuestion must wait for the ACP client, not time out natively.
                    Call::agent(
                        "syncAppRuntimePreferences",
                        json!({"askUserQuestionAutoResolutionEnabled": false}),
                    ),
                ];
                self.send(op_id, first, Stage::Initialize, calls)
            }),
            Stage::Initialize if !op.waiting.is_empty() => {
                // Both results are `undefined`; the second reply ends the setup.
                self.ops.insert(op_id, op);
                return Step::Wait(Outgoing::default());
            }
            Stage::Initialize => Ok(done(json!({}))),
            Stage::Probe => check_initialized(&result).map(|()| done(result)),
            Stage::ListInitialize { workspace, offset } => check_initialized(&result).map(|()| {
                self.send(
                    op_id,
                    first,
                    Stage::List { offset },
                    vec![sessions::list_call(&workspace)],
                )
            }),
            Stage::List { offset } => sessions::page(&result, offset).map(done),
        };
        next.unwrap_or_else(|problem| Step::Done(Err(problem)))
    }
}

/// `initialize{workspacePath}`: is the workspace servable (a model provider ready)?
pub fn initialize(workspace: &str) -> Call {
    Call::agent("initialize", json!({"workspacePath": workspace})).timeout(rpc::OPEN_TIMEOUT_MS)
}

/// `{available, reason?, reasonCode?, ...}`; `provider_not_ready` means no usable provider:
/// the user must sign in (V4S §3.1).
pub fn check_initialized(result: &Value) -> Result<(), MapperError> {
    let fields = Fields::native(result, "initialize result")
        .map_err(|e| rpc::invalid_result("zcode-agent.initialize", &e))?;
    let available =
        fields.bool("available").map_err(|e| rpc::invalid_result("zcode-agent.initialize", &e))?;
    if available {
        return Ok(());
    }
    let reason = fields
        .opt_str("reason")
        .ok()
        .flatten()
        .unwrap_or("The ZCode Services Server cannot serve this workspace");
    match fields.opt_str("reasonCode").ok().flatten() {
        Some("provider_not_ready") => Err(error(
            ErrorKind::AuthRequired,
            format!(
                "{reason}. No usable ZCode model provider is configured: run zcode-acp login, then retry."
            ),
        )),
        _ => Err(error(ErrorKind::Native, reason)),
    }
}

/// The V4 hello: protocol 3, the continuous desktop profile, and the independent plan state
/// this mapper relies on (the plugin requires the same, V4S §2.3).
fn check_v4_hello(result: &Value) -> Result<(), MapperError> {
    let label = "zcode-agent.helloConversationV4";
    let read = || -> Result<(), MapperError> {
        let fields = Fields::native(result, "V4 hello")?;
        if fields.str("kind")? != "hello" {
            return Err(protocol("V4 hello: `kind` is not `hello`"));
        }
        let version = fields.u64("protocolVersion")?;
        if version != V4_PROTOCOL {
            return Err(error(
                ErrorKind::Unsupported,
                format!(
                    "The Services Server speaks V4 wire protocol {version}; this mapper speaks {V4_PROTOCOL}"
                ),
            ));
        }
        if fields.str("clientMode")? != "desktop-continuous"
            || fields.str("deliveryProfile")? != "continuous"
        {
            return Err(error(
                ErrorKind::Unsupported,
                "The Services Server offers no continuous desktop profile",
            ));
        }
        let capabilities = fields.object("capabilities", "V4 hello capabilities")?;
        if capabilities.opt_bool("independentPlanState")? != Some(true) {
            return Err(error(
                ErrorKind::Unsupported,
                "The Services Server has no independent plan state",
            ));
        }
        Ok(())
    };
    read().map_err(|problem| match problem.kind {
        ErrorKind::Unsupported => problem,
        _ => rpc::invalid_result(label, &problem),
    })
}
