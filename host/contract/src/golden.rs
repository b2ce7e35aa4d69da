//! Golden traces: replay a JSON Lines trace through a [`Mapper`] and compare every result with
//! its expectation (format: `docs/golden-traces.md`).
//!
//! Results are compared in a readable canonical form: bytes as text (or base64), JSON text
//! fields as parsed JSON, native request lines as the JSON they carry. Expectations may be
//! written in any form the format allows; both sides are brought to the canonical form before
//! comparing, so key order and spacing never matter.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::{
    Action, ClientFeatures, ConnectionOp, ErrorKind, Inbound, Interaction, InteractionAnswer,
    InteractionOutcome, InteractionRequest, Mapper, MapperConnection, MapperError, MapperFault,
    MapperSession, NativeReply, NativeRequest, OpResult, Outgoing, PermissionRequest, ReplyBody,
    RoutedEvent, SessionInit, SessionOp, Step, StopReason, Terminal,
};

/// At most this many mismatches are printed.
const SHOWN_MISMATCHES: usize = 5;

/// The outcome of a replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Call lines performed.
    pub performed: usize,
    /// Lines with an expectation that matched.
    pub matched: usize,
    pub mismatches: Vec<Mismatch>,
    /// A line that could not be parsed or performed; the replay stopped there.
    pub error: Option<TraceError>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// 1-based line number in the trace.
    pub line: usize,
    pub call: String,
    /// Line-by-line diff of the expected (`-`) and actual (`+`) pretty-printed JSON.
    pub diff: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trace line {line}: {message}")]
pub struct TraceError {
    pub line: usize,
    pub message: String,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.mismatches.is_empty()
    }

    /// 0 when everything matched, 1 on mismatches, 2 when the trace itself is broken.
    pub fn exit_code(&self) -> i32 {
        match (&self.error, self.mismatches.is_empty()) {
            (Some(_), _) => 2,
            (None, false) => 1,
            (None, true) => 0,
        }
    }

    /// The report as `zcode-acp mapper test` prints it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for mismatch in self.mismatches.iter().take(SHOWN_MISMATCHES) {
            let _ = writeln!(out, "mismatch at trace line {}: {}", mismatch.line, mismatch.call);
            out.push_str(&mismatch.diff);
        }
        if self.mismatches.len() > SHOWN_MISMATCHES {
            let _ = writeln!(
                out,
                "... and {} more mismatching lines",
                self.mismatches.len() - SHOWN_MISMATCHES
            );
        }
        if let Some(error) = &self.error {
            let _ = writeln!(out, "golden ERROR: {error}");
        } else if self.mismatches.is_empty() {
            let _ = writeln!(out, "golden OK: {} lines match", self.matched);
        } else {
            let checked = self.matched + self.mismatches.len();
            let _ = writeln!(
                out,
                "golden FAILED: {} of {checked} checked lines differ",
                self.mismatches.len()
            );
        }
        out
    }
}

/// The traces (`*.jsonl`) in `dir`, sorted: a mapper crate's `traces/` folder.
pub fn trace_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// [`bless`]es every trace in `dir` in place, for the lines that already have an `expect`.
pub fn bless_files(mapper: &dyn Mapper, dir: &Path) -> Result<(), String> {
    for path in trace_files(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let text = std::fs::read_to_string(&path).map_err(|e| failed(&e))?;
        let blessed = bless(mapper, &text, BlessScope::Existing).map_err(|e| failed(&e))?;
        std::fs::write(&path, blessed).map_err(|e| failed(&e))?;
    }
    Ok(())
}

/// Replays `trace_text` through `mapper` and compares every `expect`.
pub fn replay(mapper: &dyn Mapper, trace_text: &str) -> Report {
    let mut report = Report::default();
    let mut replayer = Replayer::new(mapper);
    for (index, raw) in trace_text.lines().enumerate() {
        let number = index + 1;
        let Some(line) = parse_line(raw, number) else { continue };
        let result = line.and_then(|line| {
            let actual =
                replayer.perform(&line).map_err(|message| TraceError { line: number, message })?;
            let expected = match line.get("expect") {
                Some(expect) => {
                    Some(canonical_expectation(call_name(&line), expect).map_err(|message| {
                        TraceError { line: number, message: format!("bad expect: {message}") }
                    })?)
                }
                None => None,
            };
            Ok((line, actual, expected))
        });
        let (line, actual, expected) = match result {
            Ok(found) => found,
            Err(error) => {
                report.error = Some(error);
                return report;
            }
        };
        report.performed += 1;
        // Creating a resource has no result; its failure is a mismatch unless expected.
        let actual = actual.unwrap_or(Value::Null);
        let expected = match expected {
            Some(expected) => expected,
            None if line_creates(&line) && !actual.is_null() => Value::Null,
            None => continue,
        };
        if expected == actual {
            report.matched += 1;
        } else {
            report.mismatches.push(Mismatch {
                line: number,
                call: call_name(&line).to_string(),
                diff: diff(&pretty(&expected), &pretty(&actual)),
            });
        }
    }
    report
}

/// Which lines [`bless`] writes expectations for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlessScope {
    /// Every line that produces a result.
    All,
    /// Only lines that already have an `expect` (any value, `null` included): setup lines
    /// without one stay unchecked.
    Existing,
}

/// Fills `expect` with what the mapper actually returns. The output must still be reviewed:
/// blessing records behaviour, it does not judge it.
pub fn bless(
    mapper: &dyn Mapper,
    trace_text: &str,
    scope: BlessScope,
) -> Result<String, TraceError> {
    let mut replayer = Replayer::new(mapper);
    let mut out = String::new();
    for (index, raw) in trace_text.lines().enumerate() {
        let number = index + 1;
        let Some(line) = parse_line(raw, number) else {
            out.push_str(raw);
            out.push('\n');
            continue;
        };
        let mut line = line?;
        let actual =
            replayer.perform(&line).map_err(|message| TraceError { line: number, message })?;
        let wanted = scope == BlessScope::All || line.contains_key("expect");
        match actual {
            Some(actual) if wanted && (!line_creates(&line) || !actual.is_null()) => {
                line.insert("expect".to_string(), actual);
            }
            _ => {}
        }
        out.push_str(&write_line(&line));
        out.push('\n');
    }
    Ok(out)
}

// ----- lines ---------------------------------------------------------------------------------

/// `None` for blank and comment lines.
fn parse_line(raw: &str, number: usize) -> Option<Result<Map<String, Value>, TraceError>> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    Some(match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(map)) if map.get("call").is_some_and(Value::is_string) => Ok(map),
        Ok(_) => Err(TraceError {
            line: number,
            message: "a line must be a JSON object with a string `call`".into(),
        }),
        Err(e) => Err(TraceError { line: number, message: format!("not JSON: {e}") }),
    })
}

fn call_name(line: &Map<String, Value>) -> &str {
    line.get("call").and_then(Value::as_str).unwrap_or_default()
}

fn line_creates(line: &Map<String, Value>) -> bool {
    matches!(call_name(line), "connection.new" | "session.new")
}

/// One trace line with a stable, readable field order.
fn write_line(line: &Map<String, Value>) -> String {
    const ORDER: [&str; 9] =
        ["call", "name", "opId", "init", "op", "reply", "payload", "bytes", "firstRequestId"];
    let mut keys: Vec<&String> = line.keys().filter(|k| k.as_str() != "expect").collect();
    keys.sort_by_key(|key| {
        (ORDER.iter().position(|o| o == key).unwrap_or(ORDER.len()), key.to_string())
    });
    let mut fields: Vec<String> = keys
        .iter()
        .map(|key| format!("{}:{}", Value::from(key.as_str()), compact(&line[key.as_str()])))
        .collect();
    if let Some(expect) = line.get("expect") {
        fields.push(format!("\"expect\":{}", compact(expect)));
    }
    format!("{{{}}}", fields.join(","))
}

// ----- performing calls ----------------------------------------------------------------------

struct Replayer<'a> {
    mapper: &'a dyn Mapper,
    connection: Option<Box<dyn MapperConnection>>,
    sessions: HashMap<String, Box<dyn MapperSession>>,
}

type Outcome = Result<Option<Value>, String>;

impl<'a> Replayer<'a> {
    fn new(mapper: &'a dyn Mapper) -> Self {
        Self { mapper, connection: None, sessions: HashMap::new() }
    }

    fn connection(&mut self) -> Result<&mut Box<dyn MapperConnection>, String> {
        if self.connection.is_none() {
            self.connection = Some(
                self.mapper
                    .connection()
                    .map_err(|fault| format!("connection.new failed: {fault}"))?,
            );
        }
        Ok(self.connection.as_mut().expect("just created"))
    }

    fn session(
        &mut self,
        line: &Map<String, Value>,
    ) -> Result<&mut Box<dyn MapperSession>, String> {
        let name = session_name(line)?;
        self.sessions
            .get_mut(&name)
            .ok_or_else(|| format!("no session named `{name}` (add a session.new line)"))
    }

    /// The result in canonical form (`None`: created a resource).
    fn perform(&mut self, line: &Map<String, Value>) -> Outcome {
        let field = |key: &str| line.get(key).ok_or_else(|| format!("missing field `{key}`"));
        let number = |key: &str| {
            field(key)?.as_u64().ok_or_else(|| format!("`{key}` must be a non-negative integer"))
        };
        match call_name(line) {
            "connection.new" => Ok(match self.mapper.connection() {
                Ok(connection) => {
                    self.connection = Some(connection);
                    None
                }
                Err(fault) => Some(fault_value(&fault)),
            }),
            "connection.push" => {
                let bytes = decode_bytes(field("bytes")?)?;
                Ok(Some(inbound_result(self.connection()?.push(&bytes))))
            }
            "connection.finish" => Ok(Some(inbound_result(self.connection()?.finish()))),
            "connection.start" => {
                let op = decode_connection_op(field("op")?)?;
                let (op_id, first) = (number("opId")?, number("firstRequestId")?);
                Ok(Some(step_result(self.connection()?.start(op_id, &op, first))))
            }
            "connection.resume" => {
                let reply = decode_reply(field("reply")?)?;
                let (op_id, first) = (number("opId")?, number("firstRequestId")?);
                Ok(Some(step_result(self.connection()?.resume(op_id, &reply, first))))
            }
            "session.new" => {
                let init = decode_init(field("init")?)?;
                let name = session_name(line)?;
                Ok(match self.mapper.session(&init) {
                    Ok(session) => {
                        self.sessions.insert(name, session);
                        None
                    }
                    Err(fault) => Some(fault_value(&fault)),
                })
            }
            "session.start" => {
                let op = decode_session_op(field("op")?)?;
                let (op_id, first) = (number("opId")?, number("firstRequestId")?);
                Ok(Some(step_result(self.session(line)?.start(op_id, &op, first))))
            }
            "session.resume" => {
                let reply = decode_reply(field("reply")?)?;
                let (op_id, first) = (number("opId")?, number("firstRequestId")?);
                Ok(Some(step_result(self.session(line)?.resume(op_id, &reply, first))))
            }
            "session.map-event" => {
                let payload = json_text(field("payload")?);
                Ok(Some(match self.session(line)?.map_event(&payload) {
                    Ok(actions) => Value::Array(actions.iter().map(encode_action).collect()),
                    Err(fault) => fault_value(&fault),
                }))
            }
            other => Err(format!("unknown call `{other}`")),
        }
    }
}

fn session_name(line: &Map<String, Value>) -> Result<String, String> {
    match line.get("name") {
        None => Ok("main".to_string()),
        Some(Value::String(name)) => Ok(name.clone()),
        Some(_) => Err("`name` must be a string".to_string()),
    }
}

fn inbound_result(result: Result<Vec<Inbound>, MapperError>) -> Value {
    match result {
        Ok(items) => Value::Array(items.iter().map(encode_inbound).collect()),
        Err(error) => json!({"error": encode_error(&error)}),
    }
}

fn step_result(result: Result<Step, MapperFault>) -> Value {
    match result {
        Ok(step) => encode_step(&step),
        Err(fault) => fault_value(&fault),
    }
}

fn fault_value(fault: &MapperFault) -> Value {
    json!({"error": {"kind": "fault", "message": fault.0}})
}

// ----- canonical (readable) form of results ---------------------------------------------------

/// JSON text as the JSON it holds (text that is not JSON stays a string).
fn parsed_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn encode_bytes(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => Value::String(text.to_string()),
        Err(_) => json!({"base64": base64_encode(bytes)}),
    }
}

/// A request that is exactly one NDJSON line reads as the JSON it carries.
fn encode_request_bytes(bytes: &[u8]) -> Value {
    if let Some(line) = bytes.strip_suffix(b"\n")
        && !line.contains(&b'\n')
        && let Ok(value) = serde_json::from_slice::<Value>(line)
    {
        return value;
    }
    encode_bytes(bytes)
}

fn encode_error(error: &MapperError) -> Value {
    let mut value = json!({"kind": error.kind, "message": error.message});
    if let Some(data) = &error.data {
        value["data"] = parsed_text(data);
    }
    value
}

fn encode_inbound(inbound: &Inbound) -> Value {
    match inbound {
        Inbound::Reply(reply) => json!({"reply": encode_reply(reply)}),
        Inbound::Event(event) => {
            json!({"event": {"route": event.route, "payload": parsed_text(&event.payload)}})
        }
        Inbound::Write(bytes) => json!({"write": encode_bytes(bytes)}),
        Inbound::Ready => json!("ready"),
        Inbound::Ignored(reason) => json!({"ignored": reason}),
    }
}

fn encode_reply(reply: &NativeReply) -> Value {
    let body = match &reply.body {
        ReplyBody::Ok(text) => json!({"ok": parsed_text(text)}),
        ReplyBody::Error(error) => json!({"error": encode_error(error)}),
        ReplyBody::Lost(reason) => json!({"lost": reason}),
    };
    json!({"id": reply.id, "body": body})
}

fn encode_request(request: &NativeRequest) -> Value {
    json!({
        "id": request.id,
        "bytes": encode_request_bytes(&request.bytes),
        "label": request.label,
        "timeout_ms": request.timeout_ms,
    })
}

fn encode_step(step: &Step) -> Value {
    match step {
        Step::Wait(outgoing) => json!({"wait": {
            "routes_added": outgoing.routes_added,
            "routes_removed": outgoing.routes_removed,
            "requests": outgoing.requests.iter().map(encode_request).collect::<Vec<_>>(),
        }}),
        Step::Done(Ok(result)) => json!({"done": {"Ok": {
            "response": parsed_text(&result.response),
            "updates": result.updates.iter().map(|u| parsed_text(u)).collect::<Vec<_>>(),
        }}}),
        Step::Done(Err(error)) => json!({"done": {"Err": encode_error(error)}}),
    }
}

fn encode_action(action: &Action) -> Value {
    match action {
        Action::Update(update) => json!({"update": parsed_text(update)}),
        Action::Interaction(interaction) => {
            let request = match &interaction.request {
                InteractionRequest::Permission(p) => {
                    json!({"permission": {"request": parsed_text(&p.request), "deny_option": p.deny_option}})
                }
                InteractionRequest::Elicitation(e) => json!({"elicitation": parsed_text(e)}),
                InteractionRequest::Headless(why) => json!({"headless": why}),
            };
            json!({"interaction": {"key": interaction.key, "request": request}})
        }
        Action::Terminal(terminal) => json!({"terminal": match terminal {
            Terminal::Stop(reason) => json!({"stop": reason}),
            Terminal::Failed(error) => json!({"failed": encode_error(error)}),
            Terminal::Broken(error) => json!({"broken": encode_error(error)}),
        }}),
        Action::Ignore(name) => json!({"ignore": name}),
    }
}

// ----- reading trace values -------------------------------------------------------------------

/// A JSON text field: a string is the text itself, any other value is its JSON.
fn json_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn object<'v>(value: &'v Value, what: &str) -> Result<&'v Map<String, Value>, String> {
    value.as_object().ok_or_else(|| format!("{what} must be an object"))
}

fn string(map: &Map<String, Value>, key: &str, what: &str) -> Result<String, String> {
    map.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("{what}: `{key}` must be a string"))
}

/// An externally tagged variant: `"name"` or `{"name": value}`.
fn variant<'v>(value: &'v Value, what: &str) -> Result<(&'v str, Option<&'v Value>), String> {
    match value {
        Value::String(tag) => Ok((tag, None)),
        Value::Object(map) if map.len() == 1 => {
            let (tag, inner) = map.iter().next().expect("one entry");
            Ok((tag, Some(inner)))
        }
        _ => Err(format!("{what} must be a variant name or a one-key object")),
    }
}

fn payload<'v>(inner: Option<&'v Value>, tag: &str) -> Result<&'v Value, String> {
    inner.ok_or_else(|| format!("variant `{tag}` needs a value"))
}

/// Bytes: text, `{"base64": ...}`, a serde byte array, or any other JSON value meaning that
/// value as one NDJSON line.
fn decode_bytes(value: &Value) -> Result<Vec<u8>, String> {
    match value {
        Value::String(text) => Ok(text.as_bytes().to_vec()),
        Value::Object(map) if map.len() == 1 && map.contains_key("base64") => {
            let text = map["base64"].as_str().ok_or("`base64` must be a string")?;
            base64_decode(text).ok_or_else(|| "invalid base64".to_string())
        }
        Value::Array(items)
            if !items.is_empty() && items.iter().all(|i| i.as_u64().is_some_and(|n| n < 256)) =>
        {
            Ok(items.iter().map(|i| i.as_u64().unwrap_or_default() as u8).collect())
        }
        other => Ok(format!("{other}\n").into_bytes()),
    }
}

fn decode_error(value: &Value) -> Result<MapperError, String> {
    let map = object(value, "an error")?;
    let kind: ErrorKind = serde_json::from_value(map.get("kind").cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("error kind: {e}"))?;
    let data = match map.get("data") {
        None | Some(Value::Null) => None,
        Some(data) => Some(json_text(data)),
    };
    Ok(MapperError { kind, message: string(map, "message", "an error")?, data })
}

fn decode_reply(value: &Value) -> Result<NativeReply, String> {
    let map = object(value, "reply")?;
    let id = map
        .get("id")
        .and_then(Value::as_u64)
        .ok_or("reply: `id` must be a non-negative integer")?;
    let (tag, inner) = variant(map.get("body").ok_or("reply: missing `body`")?, "reply body")?;
    let body = match tag {
        "ok" => ReplyBody::Ok(json_text(payload(inner, tag)?)),
        "error" => ReplyBody::Error(decode_error(payload(inner, tag)?)?),
        "lost" => ReplyBody::Lost(
            payload(inner, tag)?.as_str().ok_or("`lost` must be a string")?.to_string(),
        ),
        other => return Err(format!("unknown reply body `{other}`")),
    };
    Ok(NativeReply { id, body })
}

fn decode_connection_op(value: &Value) -> Result<ConnectionOp, String> {
    let (tag, inner) = variant(value, "op")?;
    match tag {
        "setup" => Ok(ConnectionOp::Setup),
        "probe" => Ok(ConnectionOp::Probe(
            payload(inner, tag)?.as_str().ok_or("`probe` takes a path")?.to_string(),
        )),
        "list-sessions" => Ok(ConnectionOp::ListSessions(json_text(payload(inner, tag)?))),
        other => Err(format!("unknown connection op `{other}`")),
    }
}

fn decode_session_op(value: &Value) -> Result<SessionOp, String> {
    let (tag, inner) = variant(value, "op")?;
    let text = || payload(inner, tag).map(json_text);
    Ok(match tag {
        "create" => SessionOp::Create(text()?),
        "load" => SessionOp::Load(text()?),
        "resume" => SessionOp::Resume(text()?),
        "prompt" => SessionOp::Prompt(text()?),
        "set-mode" => SessionOp::SetMode(text()?),
        "set-config-option" => SessionOp::SetConfigOption(text()?),
        "cancel" => SessionOp::Cancel,
        "finish-turn" => SessionOp::FinishTurn,
        "close" => SessionOp::Close,
        "answer" => {
            let map = object(payload(inner, tag)?, "answer")?;
            let (outcome_tag, outcome) =
                variant(map.get("outcome").ok_or("answer: missing `outcome`")?, "outcome")?;
            let outcome_value = payload(outcome, outcome_tag)?;
            let plain = || {
                outcome_value
                    .as_str()
                    .map(str::to_string)
                    .ok_or(format!("`{outcome_tag}` takes a string"))
            };
            let outcome = match outcome_tag {
                "selected" => InteractionOutcome::Selected(plain()?),
                "elicited" => InteractionOutcome::Elicited(json_text(outcome_value)),
                "unavailable" => InteractionOutcome::Unavailable(plain()?),
                other => return Err(format!("unknown interaction outcome `{other}`")),
            };
            SessionOp::Answer(InteractionAnswer { key: string(map, "key", "answer")?, outcome })
        }
        other => return Err(format!("unknown session op `{other}`")),
    })
}

fn decode_init(value: &Value) -> Result<SessionInit, String> {
    let map = object(value, "init")?;
    let client = match map.get("client") {
        None => ClientFeatures::default(),
        Some(client) => {
            serde_json::from_value(client.clone()).map_err(|e| format!("init.client: {e}"))?
        }
    };
    Ok(SessionInit { workspace: string(map, "workspace", "init")?, client })
}

fn decode_inbound(value: &Value) -> Result<Inbound, String> {
    let (tag, inner) = variant(value, "inbound")?;
    Ok(match tag {
        "reply" => Inbound::Reply(decode_reply(payload(inner, tag)?)?),
        "event" => {
            let map = object(payload(inner, tag)?, "event")?;
            let payload = json_text(map.get("payload").ok_or("event: missing `payload`")?);
            Inbound::Event(RoutedEvent { route: string(map, "route", "event")?, payload })
        }
        "write" => Inbound::Write(decode_bytes(payload(inner, tag)?)?),
        "ready" => Inbound::Ready,
        "ignored" => Inbound::Ignored(
            payload(inner, tag)?.as_str().ok_or("`ignored` takes a string")?.to_string(),
        ),
        other => return Err(format!("unknown inbound `{other}`")),
    })
}

fn decode_step(value: &Value) -> Result<Step, String> {
    let (tag, inner) = variant(value, "step")?;
    match tag {
        "wait" => {
            let map = object(payload(inner, tag)?, "wait")?;
            let strings = |key: &str| -> Result<Vec<String>, String> {
                match map.get(key) {
                    None => Ok(Vec::new()),
                    Some(v) => {
                        serde_json::from_value(v.clone()).map_err(|e| format!("wait.{key}: {e}"))
                    }
                }
            };
            let requests = match map.get("requests") {
                None => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| {
                        let r = object(item, "request")?;
                        let number = |key: &str| {
                            r.get(key)
                                .and_then(Value::as_u64)
                                .ok_or(format!("request: `{key}` must be a number"))
                        };
                        Ok(NativeRequest {
                            id: number("id")?,
                            bytes: decode_bytes(r.get("bytes").ok_or("request: missing `bytes`")?)?,
                            label: string(r, "label", "request")?,
                            timeout_ms: u32::try_from(number("timeout_ms")?)
                                .map_err(|_| "timeout_ms too large")?,
                        })
                    })
                    .collect::<Result<_, String>>()?,
                Some(_) => return Err("wait.requests must be an array".to_string()),
            };
            Ok(Step::Wait(Outgoing {
                routes_added: strings("routes_added")?,
                routes_removed: strings("routes_removed")?,
                requests,
            }))
        }
        "done" => {
            let (result_tag, result) = variant(payload(inner, tag)?, "done")?;
            let result = payload(result, result_tag)?;
            match result_tag {
                "Ok" => {
                    let map = object(result, "done.Ok")?;
                    let updates = match map.get("updates") {
                        None => Vec::new(),
                        Some(Value::Array(items)) => items.iter().map(json_text).collect(),
                        Some(_) => return Err("done.Ok.updates must be an array".to_string()),
                    };
                    let response =
                        json_text(map.get("response").ok_or("done.Ok: missing `response`")?);
                    Ok(Step::Done(Ok(OpResult { response, updates })))
                }
                "Err" => Ok(Step::Done(Err(decode_error(result)?))),
                other => Err(format!("unknown done result `{other}`")),
            }
        }
        other => Err(format!("unknown step `{other}`")),
    }
}

fn decode_action(value: &Value) -> Result<Action, String> {
    let (tag, inner) = variant(value, "action")?;
    let inner = payload(inner, tag)?;
    Ok(match tag {
        "update" => Action::Update(json_text(inner)),
        "ignore" => Action::Ignore(inner.as_str().ok_or("`ignore` takes a string")?.to_string()),
        "interaction" => {
            let map = object(inner, "interaction")?;
            let (request_tag, request) =
                variant(map.get("request").ok_or("interaction: missing `request`")?, "request")?;
            let request = payload(request, request_tag)?;
            let request = match request_tag {
                "permission" => {
                    let p = object(request, "permission")?;
                    InteractionRequest::Permission(PermissionRequest {
                        request: json_text(
                            p.get("request").ok_or("permission: missing `request`")?,
                        ),
                        deny_option: string(p, "deny_option", "permission")?,
                    })
                }
                "elicitation" => InteractionRequest::Elicitation(json_text(request)),
                "headless" => InteractionRequest::Headless(
                    request.as_str().ok_or("`headless` takes a string")?.to_string(),
                ),
                other => return Err(format!("unknown interaction request `{other}`")),
            };
            Action::Interaction(Interaction { key: string(map, "key", "interaction")?, request })
        }
        "terminal" => {
            let (terminal_tag, terminal) = variant(inner, "terminal")?;
            let terminal = payload(terminal, terminal_tag)?;
            Action::Terminal(match terminal_tag {
                "stop" => Terminal::Stop(
                    serde_json::from_value::<StopReason>(terminal.clone())
                        .map_err(|e| format!("stop reason: {e}"))?,
                ),
                "failed" => Terminal::Failed(decode_error(terminal)?),
                "broken" => Terminal::Broken(decode_error(terminal)?),
                other => return Err(format!("unknown terminal `{other}`")),
            })
        }
        other => return Err(format!("unknown action `{other}`")),
    })
}

/// An `{"error": {...}}` expectation in canonical form (mapper errors and faults alike).
fn canonical_error(value: &Value) -> Result<Value, String> {
    let map = object(value, "error")?;
    let mut canonical =
        json!({"kind": string(map, "kind", "error")?, "message": string(map, "message", "error")?});
    if let Some(data) = map.get("data").filter(|d| !d.is_null()) {
        canonical["data"] = parsed_text(&json_text(data));
    }
    Ok(json!({"error": canonical}))
}

fn list<T>(
    value: &Value,
    decode: fn(&Value) -> Result<T, String>,
    encode: fn(&T) -> Value,
) -> Result<Value, String> {
    let items = value.as_array().ok_or("expected a list")?;
    items
        .iter()
        .map(|item| decode(item).map(|typed| encode(&typed)))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// The expectation of a call in canonical form.
fn canonical_expectation(call: &str, expect: &Value) -> Result<Value, String> {
    if let Some(error) = expect.as_object().filter(|m| m.len() == 1).and_then(|m| m.get("error")) {
        return canonical_error(error);
    }
    match call {
        "connection.push" | "connection.finish" => list(expect, decode_inbound, encode_inbound),
        "connection.start" | "connection.resume" | "session.start" | "session.resume" => {
            decode_step(expect).map(|step| encode_step(&step))
        }
        "session.map-event" => list(expect, decode_action, encode_action),
        "connection.new" | "session.new" => Ok(expect.clone()),
        other => Err(format!("unknown call `{other}`")),
    }
}

// ----- output helpers -------------------------------------------------------------------------

/// Keys sorted at every level, so printed JSON is stable whatever the map implementation.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(&sorted(value)).unwrap_or_default()
}

fn compact(value: &Value) -> String {
    sorted(value).to_string()
}

/// A line diff (longest common subsequence): `  ` same, `- ` expected only, `+ ` actual only.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // lengths[i][j]: LCS length of a[i..] and b[j..].
    let mut lengths = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lengths[i][j] = if a[i] == b[j] {
                lengths[i + 1][j + 1] + 1
            } else {
                lengths[i + 1][j].max(lengths[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lengths[i + 1][j] >= lengths[i][j + 1]) {
            // Deletions before insertions: expected lines first, as diffs usually read.
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in text.bytes() {
        let value = BASE64.iter().position(|&c| c == byte)? as u32;
        buffer = buffer << 6 | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{Contract, LaunchPlan, VerifiedInstall, VersionProbe};

    /// A tiny mapper: echoes pushes as ignored frames, answers ops in one request, and maps
    /// events to an update (or a fault for `"trap"`).
    struct Echo {
        contract: Contract,
    }

    impl Echo {
        fn new() -> Self {
            let contract = Contract {
                protocol_id: "echo".into(),
                description: String::new(),
                layouts: vec![],
                metadata: vec![],
                metadata_platform_key: String::new(),
                metadata_entry_key: String::new(),
                artifacts: vec![],
                cli_version_probe: VersionProbe { args: vec![], env: vec![] },
                credentials_file: String::new(),
            };
            Self { contract }
        }
    }

    struct EchoConnection;
    struct EchoSession(Mutex<Vec<String>>);

    impl Mapper for Echo {
        fn source(&self) -> &str {
            "test"
        }
        fn contract(&self) -> &Contract {
            &self.contract
        }
        fn launch_plan(&self, _: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
            Err(MapperError::new(ErrorKind::Unsupported, "no"))
        }
        fn auth_plan(
            &self,
            _: &VerifiedInstall,
            _: crate::AuthCommand,
        ) -> Result<LaunchPlan, MapperError> {
            Err(MapperError::new(ErrorKind::Unsupported, "no"))
        }
        fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
            Ok(Box::new(EchoConnection))
        }
        fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
            if init.workspace == "/fail" {
                return Err(MapperFault("no sessions here".into()));
            }
            Ok(Box::new(EchoSession(Mutex::new(vec![]))))
        }
    }

    impl MapperConnection for EchoConnection {
        fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
            if bytes == b"bad" {
                return Err(MapperError::new(ErrorKind::Protocol, "bad frame"));
            }
            Ok(vec![
                Inbound::Ignored(format!("{} bytes", bytes.len())),
                Inbound::Write(vec![0xff, b'a']),
            ])
        }
        fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
            Ok(vec![Inbound::Ready])
        }
        fn start(&mut self, _: u64, op: &ConnectionOp, first: u64) -> Result<Step, MapperFault> {
            Ok(match op {
                ConnectionOp::Setup => {
                    Step::Done(Ok(OpResult { response: "{}".into(), updates: vec![] }))
                }
                _ => Step::Wait(Outgoing {
                    requests: vec![NativeRequest {
                        id: first,
                        bytes: format!("{{\"id\":{first}}}\n").into_bytes(),
                        label: "x".into(),
                        timeout_ms: 5,
                    }],
                    ..Outgoing::default()
                }),
            })
        }
        fn resume(&mut self, _: u64, reply: &NativeReply, _: u64) -> Result<Step, MapperFault> {
            Ok(Step::Done(match &reply.body {
                ReplyBody::Ok(text) => Ok(OpResult {
                    response: text.clone(),
                    updates: vec!["{\"b\":1,\"a\":2}".into()],
                }),
                ReplyBody::Error(error) => Err(error.clone()),
                ReplyBody::Lost(reason) => Err(MapperError::new(ErrorKind::Native, reason.clone())),
            }))
        }
    }

    impl MapperSession for EchoSession {
        fn start(&mut self, _: u64, op: &SessionOp, _: u64) -> Result<Step, MapperFault> {
            self.0.lock().unwrap().push(op.name().to_string());
            Ok(Step::Done(Ok(OpResult {
                response: format!("{{\"op\":\"{}\"}}", op.name()),
                updates: vec![],
            })))
        }
        fn resume(&mut self, _: u64, _: &NativeReply, _: u64) -> Result<Step, MapperFault> {
            Err(MapperFault("nothing to resume".into()))
        }
        fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperFault> {
            if payload == "trap" {
                return Err(MapperFault("trapped".into()));
            }
            Ok(vec![
                Action::Update(payload.to_string()),
                Action::Terminal(Terminal::Stop(StopReason::EndTurn)),
                Action::Interaction(Interaction {
                    key: "k".into(),
                    request: InteractionRequest::Permission(PermissionRequest {
                        request: "{\"x\":[1]}".into(),
                        deny_option: "no".into(),
                    }),
                }),
            ])
        }
    }

    const TRACE: &str = r#"
# a comment, then a blank line

{"call":"connection.push","bytes":"abc","expect":[{"ignored":"3 bytes"},{"write":{"base64":"/2E="}}]}
{"call":"connection.push","bytes":{"id":1},"expect":[{"ignored":"9 bytes"},{"write":{"base64":"/2E="}}]}
{"call":"connection.push","bytes":"bad","expect":{"error":{"kind":"protocol","message":"bad frame"}}}
{"call":"connection.finish","expect":["ready"]}
{"call":"connection.start","opId":1,"op":{"probe":"/w"},"firstRequestId":4,"expect":{"wait":{"routes_added":[],"routes_removed":[],"requests":[{"id":4,"bytes":{"id":4},"label":"x","timeout_ms":5}]}}}
{"call":"connection.resume","opId":1,"reply":{"id":4,"body":{"ok":{"z":[1,2]}}},"firstRequestId":5,"expect":{"done":{"Ok":{"response":"{\"z\": [1, 2]}","updates":[{"a":2,"b":1}]}}}}
{"call":"connection.resume","opId":1,"reply":{"id":4,"body":{"error":{"kind":"native","message":"m","data":{"nativeCode":1}}}},"firstRequestId":5,"expect":{"done":{"Err":{"kind":"native","message":"m","data":"{\"nativeCode\":1}"}}}}
{"call":"session.new","init":{"workspace":"/w","client":{"plan_operations":true,"form_elicitation":false}}}
{"call":"session.start","opId":2,"op":{"prompt":{"prompt":[]}},"firstRequestId":1,"expect":{"done":{"Ok":{"response":{"op":"prompt"},"updates":[]}}}}
{"call":"session.start","opId":3,"op":"cancel","firstRequestId":1}
{"call":"session.start","opId":4,"op":{"answer":{"key":"k","outcome":{"elicited":{"action":"decline"}}}},"firstRequestId":1,"expect":{"done":{"Ok":{"response":{"op":"answer"},"updates":[]}}}}
{"call":"session.resume","opId":4,"reply":{"id":1,"body":{"lost":"timeout"}},"firstRequestId":2,"expect":{"error":{"kind":"fault","message":"nothing to resume"}}}
{"call":"session.map-event","payload":{"sessionUpdate":"x"},"expect":[{"update":{"sessionUpdate":"x"}},{"terminal":{"stop":"end_turn"}},{"interaction":{"key":"k","request":{"permission":{"request":{"x":[1]},"deny_option":"no"}}}}]}
{"call":"session.map-event","payload":"trap","expect":{"error":{"kind":"fault","message":"trapped"}}}
"#;

    #[test]
    fn replays_a_matching_trace() {
        let report = replay(&Echo::new(), TRACE);
        assert_eq!(report.error, None);
        assert_eq!(report.mismatches, vec![]);
        assert_eq!((report.performed, report.matched), (14, 12));
        assert_eq!(report.render(), "golden OK: 12 lines match\n");
        assert_eq!(report.exit_code(), 0);
    }

    #[test]
    fn shows_a_line_diff_for_a_mismatch() {
        let trace = TRACE
            .replace(r#"{"terminal":{"stop":"end_turn"}}"#, r#"{"terminal":{"stop":"cancelled"}}"#);
        let report = replay(&Echo::new(), &trace);
        assert_eq!(report.mismatches.len(), 1);
        let mismatch = &report.mismatches[0];
        assert_eq!((mismatch.line, mismatch.call.as_str()), (16, "session.map-event"));
        assert!(mismatch.diff.contains("-       \"stop\": \"cancelled\""), "{}", mismatch.diff);
        assert!(mismatch.diff.contains("+       \"stop\": \"end_turn\""), "{}", mismatch.diff);
        assert!(mismatch.diff.contains("   {\n"), "unchanged lines are kept: {}", mismatch.diff);
        assert_eq!(report.exit_code(), 1);
        assert!(report.render().starts_with("mismatch at trace line 16: session.map-event\n"));
        assert!(report.render().ends_with("golden FAILED: 1 of 12 checked lines differ\n"));
    }

    #[test]
    fn compares_request_bytes_as_json_lines() {
        // Same JSON, other spacing: equal. Without the newline: different.
        let spaced = TRACE.replace(r#""bytes":{"id":4}"#, r#""bytes":"{ \"id\" : 4 }\n""#);
        assert!(replay(&Echo::new(), &spaced).passed());
        let unterminated = TRACE.replace(r#""bytes":{"id":4}"#, r#""bytes":"{\"id\":4}""#);
        assert_eq!(replay(&Echo::new(), &unterminated).mismatches.len(), 1);
    }

    #[test]
    fn stops_at_a_broken_line() {
        let report = replay(&Echo::new(), "{\"call\":\"connection.finish\"}\nnot json\n");
        assert_eq!(report.error.as_ref().map(|e| e.line), Some(2));
        assert_eq!(report.exit_code(), 2);
        let report = replay(
            &Echo::new(),
            "{\"call\":\"session.start\",\"opId\":1,\"op\":\"cancel\",\"firstRequestId\":1}\n",
        );
        assert_eq!(
            report.error.unwrap().message,
            "no session named `main` (add a session.new line)"
        );
        let report = replay(
            &Echo::new(),
            "{\"call\":\"connection.finish\",\"expect\":[{\"teleport\":1}]}\n",
        );
        assert_eq!(report.error.unwrap().message, "bad expect: unknown inbound `teleport`");
        let report = replay(&Echo::new(), "{\"call\":\"dance\"}\n");
        assert_eq!(report.error.unwrap().message, "unknown call `dance`");
    }

    #[test]
    fn reports_failed_session_creation() {
        let init = r#"{"call":"session.new","name":"x","init":{"workspace":"/fail"}}"#;
        let report = replay(&Echo::new(), init);
        assert_eq!(report.mismatches.len(), 1);
        let expected = format!(
            "{}\n",
            init.replace(
                "}}",
                r#"},"expect":{"error":{"kind":"fault","message":"no sessions here"}}}"#
            )
        );
        assert!(replay(&Echo::new(), &expected).passed());
    }

    #[test]
    fn blesses_traces_with_actual_results() {
        let stripped: String = TRACE
            .lines()
            .map(|line| match line.find(",\"expect\"") {
                Some(at) => format!("{}}}\n", &line[..at]),
                None => format!("{line}\n"),
            })
            .collect();
        let blessed = bless(&Echo::new(), &stripped, BlessScope::All).unwrap();
        assert!(blessed.starts_with("\n# a comment, then a blank line\n\n"));
        let report = replay(&Echo::new(), &blessed);
        assert!(report.passed(), "{}", report.render());
        // Every result-producing line now has an expectation (the cancel line too).
        assert_eq!(report.matched, 13);
        let cancel = blessed.lines().find(|l| l.contains("\"cancel\"")).unwrap();
        assert!(cancel.starts_with("{\"call\":\"session.start\",\"opId\":3,\"op\":\"cancel\",\"firstRequestId\":1,\"expect\":"), "{cancel}");
        // Only marked lines: the unmarked cancel line stays unchecked.
        let marked = stripped.replace(r#""bytes":"abc"}"#, r#""bytes":"abc","expect":null}"#);
        let blessed = bless(&Echo::new(), &marked, BlessScope::Existing).unwrap();
        let report = replay(&Echo::new(), &blessed);
        assert!(report.passed(), "{}", report.render());
        assert_eq!(report.matched, 1);
        assert!(
            blessed.contains(
                r#""bytes":"abc","expect":[{"ignored":"3 bytes"},{"write":{"base64":"/2E="}}]}"#
            ),
            "{blessed}"
        );
    }

    #[test]
    fn diffs_lines_by_longest_common_subsequence() {
        assert_eq!(diff("a\nb\nc", "a\nx\nc"), "  a\n- b\n+ x\n  c\n");
        assert_eq!(diff("", "a"), "+ a\n");
        assert_eq!(diff("a\nb", "b"), "- a\n  b\n");
    }

    #[test]
    fn round_trips_base64() {
        for bytes in [&b""[..], b"f", b"fo", b"foo", b"foob", &[0xff, 0x00, 0x10]] {
            assert_eq!(base64_decode(&base64_encode(bytes)).unwrap(), bytes);
        }
        assert_eq!(base64_encode(b"hi"), "aGk=");
        assert_eq!(base64_decode("!!"), None);
    }
}
