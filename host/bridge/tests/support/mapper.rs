//! A hand-written NDJSON mapper for the fake host.
//!
//! Framing: one JSON object per line. `{"id":N,"result":R}` is a reply, `{"id":N,"error":{..}}`
//! an error reply, `{"route":R,"event":E}` an event, `{"hello":1}` asks for a `{"hello_ack":1}`
//! write-back, `{"ready":true}` completes the handshake. Anything else fails the transport.
//!
//! Operations are scripted: the op's parameter string is a [`Script`] saying which requests to
//! send (round by round), which routes to add or remove, what to write untracked or stream as
//! updates, or how to misbehave. The response lists every reply the op received:
//! `{"replies":[{"id":N,"ok":R}|{"id":N,"error":M}|{"id":N,"lost":W}]}`.
//!
//! Events map to one update each (the event itself). An event `{"ask":M}` makes the session
//! issue a request `M` while mapping (with `"arg"` and `"timeoutMs"` if given, else `""` and
//! 30 s); its reply maps to the update `{"reply":N,"ok":R}` (or `"lost"`). An event `{"write":T}` writes the line `T` untracked.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};
use zcode_contract::{
    Action, ConnectionOp, Effects, ErrorKind, Inbound, MapperConnection, MapperError, MapperFault,
    MapperSession, NativeData, NativeReply, NativeRequest, NativeWrite, OpResult, Operations,
    Outgoing, ReplyBody, RoutedEvent, SessionInput, SessionOp, Step, Terminal,
};

/// Builder of an operation script.
#[derive(Clone, Debug, Default)]
pub struct Script(serde_json::Map<String, Value>);

impl Script {
    /// A round with one request.
    pub fn request(method: &str, arg: &str) -> Self {
        Self::default().and(method, arg)
    }

    /// Adds a request to the script's (only) round.
    pub fn and(mut self, method: &str, arg: &str) -> Self {
        let requests = self.0.entry("requests").or_insert_with(|| json!([]));
        requests
            .as_array_mut()
            .unwrap()
            .push(json!({"method": method, "arg": arg, "timeout_ms": 30_000}));
        self
    }

    /// Sets the mapper-given timeout of the last request added.
    pub fn timeout_ms(mut self, timeout_ms: u32) -> Self {
        let requests = self.0.get_mut("requests").unwrap().as_array_mut().unwrap();
        requests.last_mut().unwrap()["timeout_ms"] = json!(timeout_ms);
        self
    }

    pub fn add_routes(mut self, routes: &[&str]) -> Self {
        self.0.insert("routes_added".into(), json!(routes));
        self
    }

    pub fn remove_routes(mut self, routes: &[&str]) -> Self {
        self.0.insert("routes_removed".into(), json!(routes));
        self
    }

    /// A further round, sent once every reply of this round arrived.
    pub fn then(mut self, next: Script) -> Self {
        self.0.insert("then".into(), Value::Object(next.0));
        self
    }

    /// The op finishes at once with a native mapper error.
    pub fn fail(message: &str) -> Self {
        Self(json!({"fail": message}).as_object().unwrap().clone())
    }

    /// The mapper itself breaks on `start`.
    pub fn fault(message: &str) -> Self {
        Self(json!({"fault": message}).as_object().unwrap().clone())
    }

    /// The requests use ids other than the ones handed out.
    pub fn with_wrong_ids(mut self) -> Self {
        self.0.insert("wrong_ids".into(), json!(true));
        self
    }

    /// `Wait` with nothing in it, again on every resume: a mapper that yields forever.
    pub fn empty_wait() -> Self {
        Self(json!({"empty_wait": true}).as_object().unwrap().clone())
    }

    /// Untracked lines written with this round (before its requests).
    pub fn write(mut self, line: &str) -> Self {
        let writes = self.0.entry("writes").or_insert_with(|| json!([]));
        writes.as_array_mut().unwrap().push(json!(line));
        self
    }

    /// Updates streamed with this round, before its requests are written.
    pub fn stream(mut self, updates: &[&str]) -> Self {
        self.0.insert("stream".into(), json!(updates));
        self
    }

    pub fn text(&self) -> String {
        Value::Object(self.0.clone()).to_string()
    }
}

/// Operation state shared by the connection and session halves.
#[derive(Default)]
struct Ops {
    running: HashMap<u64, RunningOp>,
}

struct RunningOp {
    /// `empty_wait`: yield on every resume.
    forever: bool,
    waiting: BTreeSet<u64>,
    replies: Vec<Value>,
    then: Option<Value>,
}

impl Ops {
    fn start(&mut self, op_id: u64, script: &str, first: u64) -> Result<Step, MapperFault> {
        let script: Value = serde_json::from_str(script).expect("test scripts are JSON");
        if let Some(message) = script["fault"].as_str() {
            return Err(MapperFault(message.into()));
        }
        if let Some(message) = script["fail"].as_str() {
            return Ok(Step::Done(Err(MapperError::new(ErrorKind::Native, message))));
        }
        let forever = script["empty_wait"] == json!(true);
        let op = RunningOp { forever, waiting: BTreeSet::new(), replies: Vec::new(), then: None };
        self.running.insert(op_id, op);
        Ok(self.round(op_id, &script, first))
    }

    fn round(&mut self, op_id: u64, script: &Value, first: u64) -> Step {
        if script["empty_wait"] == json!(true) {
            return Step::Wait(Outgoing::default());
        }
        let writes = strings(&script["writes"])
            .into_iter()
            .map(|line| NativeWrite::new("test write", format!("{line}\n").into_bytes()))
            .collect();
        let id_offset = if script["wrong_ids"] == json!(true) { 5 } else { 0 };
        let op = self.running.get_mut(&op_id).unwrap();
        let mut requests = Vec::new();
        for (index, request) in script["requests"].as_array().into_iter().flatten().enumerate() {
            let id = first + index as u64 + id_offset;
            let method = request["method"].as_str().unwrap();
            let frame = json!({"id": id, "method": method, "arg": request["arg"]});
            let timeout_ms = request["timeout_ms"].as_u64().unwrap() as u32;
            requests.push(NativeRequest {
                id,
                bytes: format!("{frame}\n").into_bytes(),
                label: method.to_owned(),
                timeout_ms,
            });
            // A zero timeout expects no reply.
            if timeout_ms != 0 {
                op.waiting.insert(id);
            }
        }
        op.then = script.get("then").cloned();
        Step::Wait(Outgoing {
            updates: strings(&script["stream"]),
            routes_added: strings(&script["routes_added"]),
            routes_removed: strings(&script["routes_removed"]),
            writes,
            requests,
        })
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperFault> {
        let op = self.running.get_mut(&op_id).expect("resume of a running op");
        if op.forever {
            return Ok(Step::Wait(Outgoing::default()));
        }
        let Some(reply) = reply else {
            // A round that awaited nothing: go on with the next, or finish.
            assert!(op.waiting.is_empty(), "resumed without a reply while waiting");
            return Ok(self.next_round(op_id, first));
        };
        assert!(op.waiting.remove(&reply.id), "reply {} was not asked for by op {op_id}", reply.id);
        op.replies.push(reply_json(reply));
        if !op.waiting.is_empty() {
            return Ok(Step::Wait(Outgoing::default()));
        }
        Ok(self.next_round(op_id, first))
    }

    fn next_round(&mut self, op_id: u64, first: u64) -> Step {
        let op = self.running.get_mut(&op_id).unwrap();
        if let Some(next) = op.then.take() {
            return self.round(op_id, &next, first);
        }
        let op = self.running.remove(&op_id).unwrap();
        let response = json!({"replies": op.replies}).to_string();
        Step::Done(Ok(OpResult { response, updates: vec![] }))
    }
}

fn reply_json(reply: &NativeReply) -> Value {
    match &reply.body {
        ReplyBody::Ok(NativeData::Text(result)) => {
            json!({"id": reply.id, "ok": serde_json::from_str::<Value>(result).unwrap()})
        }
        ReplyBody::Ok(NativeData::Binary(bytes)) => json!({"id": reply.id, "ok_bytes": bytes}),
        ReplyBody::Error(error) => json!({"id": reply.id, "error": error.message}),
        ReplyBody::Lost(reason) => json!({"id": reply.id, "lost": reason}),
    }
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().map(|v| v.as_str().unwrap().to_owned()).collect()
}

pub struct TestConnection {
    buffer: Vec<u8>,
    /// Longest accepted line; `None` never refuses (for the bridge's own buffer cap).
    max_frame: Option<usize>,
    setup: Script,
    /// What the connection says the host reported about itself.
    identity: Option<String>,
    ops: Ops,
}

impl Default for TestConnection {
    fn default() -> Self {
        Self {
            buffer: Vec::new(),
            max_frame: Some(16 * 1024),
            setup: Script::request("setup", ""),
            identity: None,
            ops: Ops::default(),
        }
    }
}

impl TestConnection {
    pub fn with_setup(mut self, setup: Script) -> Self {
        self.setup = setup;
        self
    }

    pub fn reporting(mut self, identity: &str) -> Self {
        self.identity = Some(identity.to_string());
        self
    }

    pub fn without_frame_limit(mut self) -> Self {
        self.max_frame = None;
        self
    }

    fn frame(&self, line: &[u8]) -> Result<Inbound, MapperError> {
        let protocol = |message: &str| MapperError::new(ErrorKind::Protocol, message);
        let text = std::str::from_utf8(line).map_err(|_| protocol("invalid UTF-8"))?;
        let value: Value = serde_json::from_str(text).map_err(|_| protocol("non-JSON frame"))?;
        if value.get("hello").is_some() {
            return Ok(Inbound::Write(NativeWrite::new(
                "hello ack",
                b"{\"hello_ack\":1}\n".to_vec(),
            )));
        }
        if value.get("ready").is_some() {
            return Ok(Inbound::Ready);
        }
        if let (Some(route), Some(event)) = (value["route"].as_str(), value.get("event")) {
            let event = RoutedEvent { route: route.to_owned(), payload: event.to_string().into() };
            return Ok(Inbound::Event(event));
        }
        let id = value["id"].as_u64().ok_or_else(|| protocol("frame without an id"))?;
        let body = match (value.get("result"), value.get("error")) {
            (Some(result), None) => ReplyBody::Ok(result.to_string().into()),
            (None, Some(error)) => ReplyBody::Error(MapperError::new(
                ErrorKind::Native,
                error["message"].as_str().unwrap_or("native error"),
            )),
            _ => return Err(protocol("unknown frame")),
        };
        Ok(Inbound::Reply(NativeReply { id, body }))
    }

    fn too_long(&self, length: usize) -> bool {
        self.max_frame.is_some_and(|max| length > max)
    }
}

impl MapperConnection for TestConnection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.buffer.extend_from_slice(bytes);
        let mut inbound = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = &line[..line.len() - 1];
            if self.too_long(line.len()) {
                return Err(MapperError::new(ErrorKind::Protocol, "frame too long"));
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                inbound.push(self.frame(line)?);
            }
        }
        if self.too_long(self.buffer.len()) {
            return Err(MapperError::new(ErrorKind::Protocol, "frame too long"));
        }
        Ok(inbound)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        if self.buffer.iter().all(u8::is_ascii_whitespace) {
            return Ok(Vec::new());
        }
        let line = std::mem::take(&mut self.buffer);
        Ok(vec![self.frame(&line)?])
    }

    fn identity(&mut self) -> Result<Option<String>, MapperFault> {
        Ok(self.identity.clone())
    }
}

impl Operations<ConnectionOp> for TestConnection {
    fn start(&mut self, op_id: u64, op: &ConnectionOp, first: u64) -> Result<Step, MapperFault> {
        let script = match op {
            ConnectionOp::Setup => self.setup.text(),
            ConnectionOp::Probe(probe) => probe.workspace.clone(),
            ConnectionOp::ListSessions(script) => script.clone(),
        };
        self.ops.start(op_id, &script, first)
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperFault> {
        self.ops.resume(op_id, reply, first)
    }
}

#[derive(Default)]
pub struct TestSession {
    ops: Ops,
    /// Requests announced by the last `map`, issued by `issue`: method, arg, timeout in ms.
    asked: Vec<(String, String, u32)>,
}

impl Operations<SessionOp> for TestSession {
    fn start(&mut self, op_id: u64, op: &SessionOp, first: u64) -> Result<Step, MapperFault> {
        let script = match op {
            SessionOp::Create(script)
            | SessionOp::Load(script)
            | SessionOp::Resume(script)
            | SessionOp::Prompt(script)
            | SessionOp::SetMode(script)
            | SessionOp::SetConfigOption(script) => script.clone(),
            other => Script::request("echo", other.name()).text(),
        };
        self.ops.start(op_id, &script, first)
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperFault> {
        self.ops.resume(op_id, reply, first)
    }
}

impl MapperSession for TestSession {
    fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault> {
        let mut effects = Effects::default();
        for input in &inputs {
            let payload = match input {
                SessionInput::Reply(reply) => {
                    let mut update = reply_json(reply);
                    let id = update.as_object_mut().unwrap().remove("id").unwrap();
                    update["reply"] = id;
                    effects.actions.push(Action::Update(update.to_string()));
                    continue;
                }
                SessionInput::Event(NativeData::Text(text)) => text.clone(),
                SessionInput::Event(NativeData::Binary(_)) => {
                    let error = MapperError::new(ErrorKind::Protocol, "binary event");
                    effects.actions.push(Action::Terminal(Terminal::Broken(error)));
                    continue;
                }
            };
            if payload.contains("mapper-fault") {
                return Err(MapperFault("cannot map this event".into()));
            }
            let event: Value = serde_json::from_str(&payload).unwrap_or(Value::Null);
            if let Some(method) = event["ask"].as_str() {
                let arg = event["arg"].as_str().unwrap_or_default().to_owned();
                let timeout_ms = event["timeoutMs"].as_u64().map_or(30_000, |ms| ms as u32);
                self.asked.push((method.to_owned(), arg, timeout_ms));
            }
            if let Some(line) = event["write"].as_str() {
                effects
                    .writes
                    .push(NativeWrite::new("test write", format!("{line}\n").into_bytes()));
            }
            effects.actions.push(Action::Update(payload));
        }
        effects.requests = self.asked.len() as u32;
        Ok(effects)
    }

    fn issue(&mut self, first: u64) -> Result<Outgoing, MapperFault> {
        let requests = std::mem::take(&mut self.asked)
            .into_iter()
            .enumerate()
            .map(|(index, (method, arg, timeout_ms))| {
                let id = first + index as u64;
                let frame = json!({"id": id, "method": method, "arg": arg});
                NativeRequest {
                    id,
                    bytes: format!("{frame}\n").into_bytes(),
                    label: method,
                    timeout_ms,
                }
            })
            .collect();
        Ok(Outgoing { requests, ..Outgoing::default() })
    }
}
