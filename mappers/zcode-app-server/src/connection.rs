//! One Agent process: framing, the answers the connection gives itself, and `setup`, `probe`
//! and `list-sessions`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use zcode_contract::{
    ConnectionOp, ErrorKind, Inbound, MapperError, NativeReply, NativeRequest, NativeWrite,
    OpResult, Outgoing, ReplyBody, Step,
};

use zcode_mapper_sdk::joined;
use zcode_mapper_sdk::json::{internal, protocol};
use zcode_mapper_sdk::time::iso8601_from_epoch_ms;
use zcode_v4::schema::native;

use crate::wire::{
    self, Frame, Lines, MemberNames, Members, acp_params, native_value, raw_str, raw_value,
};

/// The route of everything that belongs to native session `id`, but for [`carried_route`].
pub fn session_route(id: &str) -> String {
    [SESSION, id].concat()
}

const SESSION: &str = "session/";

/// The route of session `id`'s legacy events whose content the V4 conversation also carries
/// ([`events::carried_by_v4`]: every streamed delta among them). A session that subscribes to
/// V4 does not hold this route, so the core drops them before they cost a mapping call; a
/// session without V4 holds both.
pub fn carried_route(id: &str) -> String {
    [SESSION, id, CARRIED].concat()
}

const CARRIED: &str = "/v4-carried";

/// The Agent's answer to `session/requestRuntimePreferences`, which blocks `session/create` until
/// it comes. `askUserQuestionAutoResolutionEnabled` must be false, or ZCode answers questions
/// itself after a countdown; memory and search enhancements are Desktop features the user did not
/// turn on here.
pub fn runtime_preferences() -> Value {
    json!({
        "nativeSearchEnhancementsEnabled": false,
        "memoryEnabled": false,
        "askUserQuestionAutoResolutionEnabled": false,
    })
}

const SETUP_TIMEOUT_MS: u32 = 120_000;
const LIST_TIMEOUT_MS: u32 = 30_000;
/// Sessions per ACP `session/list` page. The Agent's list has a `limit` but no offset, so a page
/// asks for everything up to one past its end (newest first, a stable order) and keeps its part.
pub const PAGE_SIZE: usize = 50;
const CURSOR_PREFIX: &str = "zcode-sessions-from-";

enum PendingOp {
    Setup,
    /// `answer`: what the probe says once the Agent answered (`account::probe_answer`).
    Probe {
        answer: Value,
    },
    List {
        cwd: Option<String>,
        offset: usize,
    },
}

/// The page offset an ACP cursor names; `0` without one.
fn list_offset(params: &Value) -> Result<usize, MapperError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(0),
        Some(cursor) => cursor
            .as_str()
            .and_then(|c| c.strip_prefix(CURSOR_PREFIX))
            .and_then(|offset| offset.parse::<usize>().ok())
            .filter(|offset| *offset > 0 && offset.is_multiple_of(PAGE_SIZE))
            .ok_or_else(|| {
                MapperError::new(
                    ErrorKind::InvalidParams,
                    format!("Unknown session list cursor: {cursor}"),
                )
            }),
    }
}

#[derive(Default)]
pub struct AppServerConnection {
    lines: Lines,
    ops: BTreeMap<u64, PendingOp>,
    identity: Option<String>,
}

impl AppServerConnection {
    pub fn new() -> Self {
        Self::default()
    }

    fn start_op(&mut self, op_id: u64, op: &ConnectionOp, first: u64) -> Result<Step, MapperError> {
        let (pending, method, params, timeout) = match op {
            ConnectionOp::Setup => {
                (PendingOp::Setup, "runtime/capabilities", json!({}), SETUP_TIMEOUT_MS)
            }
            ConnectionOp::Probe(probe) => (
                PendingOp::Probe { answer: crate::account::probe_answer(&probe.facts) },
                "session/list",
                json!({"workspace": workspace_ref(&probe.workspace), "limit": 1}),
                LIST_TIMEOUT_MS,
            ),
            ConnectionOp::ListSessions(params) => {
                let params = acp_params(params)?;
                let cwd = params.get("cwd").and_then(Value::as_str).map(str::to_string);
                let offset = list_offset(&params)?;
                // `includeArchived` is never sent: it defaults to false on 0.16.9, and 0.17
                // refuses the key (reference RELEASES §3.1).
                let mut list = json!({"limit": offset + PAGE_SIZE + 1});
                if let Some(cwd) = &cwd {
                    list["workspace"] = workspace_ref(cwd);
                }
                (PendingOp::List { cwd, offset }, "session/list", list, LIST_TIMEOUT_MS)
            }
        };
        self.ops.insert(op_id, pending);
        Ok(Step::Wait(Outgoing {
            requests: vec![NativeRequest {
                id: first,
                bytes: wire::request(first, method, params),
                label: method.to_string(),
                timeout_ms: timeout,
            }],
            ..Outgoing::default()
        }))
    }

    fn finish_op(&mut self, op: PendingOp, reply: &NativeReply) -> Result<OpResult, MapperError> {
        match op {
            PendingOp::Setup => {
                self.identity = Some(identity(&reply.body)?);
                Ok(OpResult { response: "{}".to_string(), updates: Vec::new() })
            }
            PendingOp::Probe { answer } => {
                ok_body(&reply.body, "session/list")?;
                Ok(OpResult { response: answer.to_string(), updates: Vec::new() })
            }
            PendingOp::List { cwd, offset } => {
                let result = ok_body(&reply.body, "session/list")?;
                Ok(OpResult {
                    response: sessions(&result, cwd.as_deref(), offset)?.to_string(),
                    updates: Vec::new(),
                })
            }
        }
    }
}

/// Adds the frames of one complete line to `inbound`, in order: a line holding a JSON array is
/// a batch of frames (a real Agent writes notifications so, `json_batch`), each read as a line
/// of its own would be ([`wire::classify_batch`]). A frame for a session goes to it as the text
/// it came as: the session reads it itself. A read's frames for one session cross as one input
/// ([`joined::add_event`]), a V4 frame ahead of the session's carried events
/// ([`Routing::Frame`]). `scratch` is room for a V4 frame's route.
fn add_line(
    inbound: &mut Vec<Inbound>,
    scratch: &mut String,
    line: &str,
) -> Result<(), MapperError> {
    let batch = wire::classify_batch::<RouteParams<'_>>(line, |text, frame| match frame {
        Some(frame) => {
            route(frame)?.add_to(inbound, scratch, text);
            Ok(())
        }
        None => add_frame(inbound, scratch, text),
    })?;
    if batch {
        return Ok(());
    }
    add_frame(inbound, scratch, line)
}

/// Adds one frame, a line's or a batch's, read from `text`. A streamed delta's V4 frame goes to
/// its session on its topic alone; the session reads it whole (`wire::leading_frame_topic`).
fn add_frame(
    inbound: &mut Vec<Inbound>,
    scratch: &mut String,
    text: &str,
) -> Result<(), MapperError> {
    let routing = match wire::leading_frame_topic(text).and_then(conversation) {
        Some(session) => Routing::Frame(Cow::Borrowed(session)),
        None => route(wire::classify_as(text)?)?,
    };
    routing.add_to(inbound, scratch, text);
    Ok(())
}

/// Where a frame of the Agent goes: to the holder of a route ([`session_route`],
/// [`carried_route`]), or answered (or ignored) here.
enum Routing<'a> {
    Route(String),
    /// A V4 conversation frame of a session, to its route. It may go ahead of the session's
    /// carried events: a session with V4 subscribed drops them, and one without skips every V4
    /// frame, so neither sees their order. Where a delta comes as both (a legacy event and a
    /// V4 frame), a read's deltas still cross as one input, and their carried events as another.
    Frame(Cow<'a, str>),
    Here(Inbound),
}

impl Routing<'_> {
    /// Adds what the core is handed to `inbound`: the frame's `text` for a route, copied once,
    /// into the input that holds it. A V4 frame's route is written in `scratch`, since most
    /// join an input and need no route of their own.
    fn add_to(self, inbound: &mut Vec<Inbound>, scratch: &mut String, text: &str) {
        match self {
            Routing::Route(route) => joined::add_event(inbound, &route, text, |_, _| false),
            Routing::Frame(session) => {
                scratch.clear();
                scratch.extend([SESSION, &session]);
                joined::add_event(inbound, scratch, text, |earlier, route| {
                    matches!(earlier, Inbound::Event(e)
                        if e.route.strip_suffix(CARRIED) == Some(route))
                });
            }
            Routing::Here(frame) => inbound.push(frame),
        }
    }
}

fn route(frame: Frame<'_, RouteParams<'_>>) -> Result<Routing<'static>, MapperError> {
    match frame {
        Frame::Reply(reply) => Ok(Routing::Here(Inbound::Reply(reply))),
        Frame::Request { id, method, params } => request(id, &method, params),
        Frame::Notification { method, params } => notification(&method, params),
    }
}

/// The members of a frame's `params` the connection routes by: only these are read (the rest,
/// a delta's text or a turn's whole message, is skipped, not built into a tree). A member that
/// is not a string counts as absent, as it did when read from a tree; `params` that are not an
/// object have none of the members.
///
/// They are read in the same pass as the envelope (`wire::classify_as`): the parameters of a
/// streamed delta are scanned once here, not twice. A member named twice is only an error where
/// the connection reads the members ([`route_members`]), as when they were read from the raw
/// parameters afterwards: a notification it ignores is not refused for it.
pub(crate) struct Route;

impl MemberNames for Route {
    const NAMES: &'static [&'static str] = &["sessionId", "topic", "type", "phase", "errorCode"];
}

pub(crate) type RouteParams<'a> = Members<'a, Route>;

/// The route members of `params` (none when there are none), refused when one is named twice.
fn route_members(params: Option<RouteParams<'_>>) -> Result<RouteParams<'_>, MapperError> {
    let params = params.unwrap_or_default();
    match params.twice() {
        Some(name) => Err(protocol(format!(
            "ZCode wrote parameters that cannot be read: duplicate field `{name}`"
        ))),
        None => Ok(params),
    }
}

/// The session a V4 topic names, if it is a conversation's.
fn conversation(topic: &str) -> Option<&str> {
    topic.strip_prefix("conversation/").filter(|session| !session.is_empty())
}

fn session_id<'a>(params: &RouteParams<'a>) -> Option<Cow<'a, str>> {
    raw_str(params.get("sessionId"))
}

fn request(
    id: &RawValue,
    method: &str,
    params: Option<RouteParams<'_>>,
) -> Result<Routing<'static>, MapperError> {
    let write =
        |label: &str, bytes| Ok(Routing::Here(Inbound::Write(NativeWrite::new(label, bytes))));
    let id = || raw_value(Some(id));
    match method {
        "session/requestRuntimePreferences" => {
            write("runtime preferences", wire::result(&id()?, runtime_preferences()))
        }
        // Official-plugin MCP servers ask the host for the user's ZCode identity headers;
        // zcode-acp has none to give, and says so in the Agent's own vocabulary.
        "interaction/requestOfficialMcpAuthHeaders" => write(
            "official MCP auth headers",
            wire::result(&id()?, json!({"ok": false, "reason": "official_auth_unavailable"})),
        ),
        "interaction/browserList" | "interaction/browserExecute" => write(
            "browser request",
            wire::error_reply(&id()?, -32601, "zcode-acp provides no browser to ZCode"),
        ),
        m if m.starts_with("automation/") => write(
            "automation request",
            wire::error_reply(&id()?, -32601, "zcode-acp does not run ZCode automations"),
        ),
        _ => match session_id(&route_members(params)?) {
            Some(session) => Ok(Routing::Route(session_route(&session))),
            None => write(
                "unknown request",
                wire::error_reply(&id()?, -32601, &format!("zcode-acp does not serve {method}")),
            ),
        },
    }
}

fn notification(
    method: &str,
    params: Option<RouteParams<'_>>,
) -> Result<Routing<'static>, MapperError> {
    let here = |inbound| Ok(Routing::Here(inbound));
    match method {
        "session/event" => {
            let params = route_members(params)?;
            let Some(session) = session_id(&params) else {
                return Err(protocol("ZCode sent a session/event without a sessionId"));
            };
            let kind = raw_str(params.get("type"));
            if kind.as_deref().is_some_and(crate::events::carried_by_v4) {
                Ok(Routing::Route(carried_route(&session)))
            } else {
                Ok(Routing::Route(session_route(&session)))
            }
        }
        "v4/conversation/frame" => {
            let topic = raw_str(route_members(params)?.get("topic"));
            match topic.as_deref().and_then(conversation) {
                Some(session) => Ok(Routing::Frame(Cow::Owned(session.to_string()))),
                None => here(Inbound::Ignored(
                    "v4 frame of a topic zcode-acp does not subscribe".to_string(),
                )),
            }
        }
        "startup/storageState" => {
            let params = route_members(params)?;
            let phase = raw_str(params.get("phase")).unwrap_or_default();
            if phase == "failed" {
                let code = raw_str(params.get("errorCode"));
                let code = code.as_deref().unwrap_or("unknown");
                return Err(native(format!("ZCode could not open its session database ({code})")));
            }
            here(Inbound::Ignored(format!("storage start-up: {phase}")))
        }
        // State and telemetry the session takes from its V4 frames, or that means nothing for
        // ACP; named so that an unlisted notification is reported as such in the logs.
        "state.updated"
        | "process/resourceSample"
        | "process/mcpTelemetry"
        | "process/mcpResourceSamples"
        | "process/toolExecResource"
        | "process/networkRequests"
        | "plugins/operationProgress"
        | "interaction/providerRuntimeHeadersCancelled"
        | "computer-use/operation-event"
        | "v4/telemetry/event"
        | "v4/telemetry/local-ttft"
        | "v4/cua/permission-observation" => here(Inbound::Ignored(method.to_string())),
        other => here(Inbound::Ignored(format!("unlisted notification {other}"))),
    }
}

/// What the Agent says about itself: the protocol generation, and the capabilities it reports.
fn identity(body: &ReplyBody) -> Result<String, MapperError> {
    match body {
        ReplyBody::Ok(data) => {
            let caps = native_value(data.as_text().unwrap_or(""), "runtime/capabilities")?;
            let mut names: Vec<&str> = caps
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(_, v)| v.as_bool() == Some(true))
                        .map(|(k, _)| k.as_str())
                        .collect()
                })
                .unwrap_or_default();
            names.sort_unstable();
            Ok(format!("zcode-protocol/1 capabilities:{}", names.join(",")))
        }
        // Before 3.15.1 the method does not exist: the Agent is still the ZCode Protocol.
        ReplyBody::Error(error) if error.kind == ErrorKind::Unsupported => {
            Ok("zcode-protocol/1".to_string())
        }
        ReplyBody::Error(error) => Err(error.clone()),
        ReplyBody::Lost(why) => {
            Err(native(format!("ZCode did not answer runtime/capabilities: {why}")))
        }
    }
}

pub fn ok_body(body: &ReplyBody, what: &str) -> Result<Value, MapperError> {
    match body {
        ReplyBody::Ok(data) => native_value(data.as_text().unwrap_or(""), what),
        ReplyBody::Error(error) => Err(error.clone()),
        ReplyBody::Lost(why) => Err(native(format!("ZCode did not answer {what}: {why}"))),
    }
}

/// Desktop keys a workspace by its path (the Agent's convention `workspaceIdentity || path`).
pub fn workspace_ref(path: &str) -> Value {
    json!({"workspacePath": path, "workspaceKey": path})
}

/// The ACP `session/list` page at `offset` of the Agent's list, with a cursor when more follow.
fn sessions(result: &Value, cwd: Option<&str>, offset: usize) -> Result<Value, MapperError> {
    let list = result
        .get("sessions")
        .and_then(Value::as_array)
        .ok_or_else(|| protocol("session/list result has no `sessions` list"))?;
    let mut out = Vec::new();
    for info in list {
        let Some(id) = info.get("sessionId").or_else(|| info.get("id")).and_then(Value::as_str)
        else {
            return Err(protocol("session/list entry has no session id"));
        };
        let path = info
            .pointer("/workspace/workspacePath")
            .and_then(Value::as_str)
            .or(cwd)
            .unwrap_or_default();
        let mut entry = json!({"sessionId": id, "cwd": path});
        if let Some(title) = info.get("title").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            entry["title"] = json!(title);
        }
        match info.get("updatedAt") {
            Some(Value::Number(n)) => {
                if let Some(at) = n.as_u64().and_then(|ms| iso8601_from_epoch_ms(ms as f64)) {
                    entry["updatedAt"] = json!(at);
                }
            }
            Some(Value::String(s)) => entry["updatedAt"] = json!(s),
            _ => {}
        }
        out.push(entry);
    }
    let more = out.len() > offset + PAGE_SIZE;
    let page: Vec<Value> = out.into_iter().skip(offset).take(PAGE_SIZE).collect();
    let mut response = json!({"sessions": page});
    if more {
        response["nextCursor"] = json!(format!("{CURSOR_PREFIX}{}", offset + PAGE_SIZE));
    }
    Ok(response)
}

impl zcode_mapper_sdk::Connection for AppServerConnection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        let (mut inbound, mut scratch) = (Vec::new(), String::new());
        self.lines.push(bytes, |line| add_line(&mut inbound, &mut scratch, line))?;
        Ok(inbound)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        let (mut inbound, mut scratch) = (Vec::new(), String::new());
        self.lines.finish(|line| add_line(&mut inbound, &mut scratch, line))?;
        Ok(inbound)
    }

    fn start(&mut self, op_id: u64, op: &ConnectionOp, first: u64) -> Step {
        self.start_op(op_id, op, first).unwrap_or_else(|e| Step::Done(Err(e)))
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, _first: u64) -> Step {
        let Some(op) = self.ops.remove(&op_id) else {
            return Step::Done(Err(internal(format!("no connection op {op_id}"))));
        };
        let Some(reply) = reply else {
            return Step::Done(Err(internal("connection op resumed without its reply")));
        };
        Step::Done(self.finish_op(op, reply))
    }

    fn identity(&self) -> Option<String> {
        self.identity.clone()
    }
}
