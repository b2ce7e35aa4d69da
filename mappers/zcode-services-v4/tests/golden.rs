//! Golden traces (`traces/*.jsonl`) replayed through the native mapper.
//!
//! The line format is that of `docs/golden-traces.md` with the WIT 0.2 calls: `session.map`
//! (`inputs`: `{"event": <frame JSON>}` or `{"reply": <reply>}`), `session.issue`,
//! `connection.identity`, and `resume` with `"reply": null`. Binary input is written readably:
//! a `connection.push` may carry `messages` (`[header, body?]` pairs, encoded as ZCode's
//! channel IPC would) after its `bytes`; requests and writes the mapper makes are shown decoded
//! (`ipc: {header, body}`). Results are compared as JSON (key order and spacing never matter).
//!
//! `ZCODE_SERVICES_BLESS=1 cargo test --test golden` rewrites every `expect` with what the
//! mapper returns now; review the diff before committing it.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use zcode_contract::{
    Action, ConnectionOp, Effects, Inbound, InteractionRequest, Mapper, MapperConnection,
    MapperError, MapperFault, MapperSession, NativeData, NativeReply, NativeWrite, Outgoing,
    ReplyBody, SessionInit, SessionInput, SessionOp, Step, Terminal,
};
use zcode_services_v4::ServicesV4Mapper;
use zcode_services_v4::ipc::frame::FrameDecoder;
use zcode_services_v4::ipc::message::{Response, decode_request, encode_response};
use zcode_services_v4::ipc::value::IpcValue;
use zcode_services_v4::v4::checksum::{decode_base64, encode_base64};

fn traces() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("traces directory")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    paths.sort();
    paths
}

// ----- input ---------------------------------------------------------------------------------

/// JSON text fields may be written as JSON values.
fn json_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `[header, body?]`: a response message; a body absent is `undefined`, else JSON.
fn message(pair: &Value) -> Vec<u8> {
    let pair = pair.as_array().expect("a message is [header, body?]");
    let header: Vec<u64> =
        pair[0].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let body = pair.get(1).map_or(IpcValue::Undefined, |body| IpcValue::json(body.to_string()));
    let response = match header.as_slice() {
        [200] => Response::Initialize,
        [201, id] => Response::Success { id: *id, body },
        [202, id] => Response::Error { id: *id, body },
        [203, id] => Response::ErrorObj { id: *id, body },
        [204, id] => Response::Event { id: *id, body },
        other => panic!("unknown response header {other:?}"),
    };
    encode_response(&response)
}

fn bytes_of(line: &Map<String, Value>) -> Vec<u8> {
    let mut bytes = match line.get("bytes") {
        None => Vec::new(),
        Some(Value::String(text)) => text.clone().into_bytes(),
        Some(Value::Object(map)) => decode_base64(map["base64"].as_str().unwrap()).expect("base64"),
        Some(other) => other.to_string().into_bytes(),
    };
    for pair in line.get("messages").and_then(Value::as_array).into_iter().flatten() {
        bytes.extend(message(pair));
    }
    bytes
}

fn error_of(value: &Value) -> MapperError {
    serde_json::from_value(json!({
        "kind": value["kind"], "message": value["message"],
        "data": value.get("data").map(json_text),
    }))
    .expect("an error")
}

fn reply_of(value: &Value) -> Option<NativeReply> {
    if value.is_null() {
        return None;
    }
    let body = &value["body"];
    let body = if let Some(ok) = body.get("ok") {
        ReplyBody::Ok(NativeData::Text(json_text(ok)))
    } else if let Some(error) = body.get("error") {
        ReplyBody::Error(error_of(error))
    } else {
        ReplyBody::Lost(body["lost"].as_str().unwrap().to_string())
    };
    Some(NativeReply { id: value["id"].as_u64().unwrap(), body })
}

/// An op in its serde form, with JSON-text params written as values stringified.
fn op_of(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 => {
            let (key, inner) = map.iter().next().unwrap();
            let inner = match (key.as_str(), inner) {
                ("answer", Value::Object(answer)) => {
                    let mut answer = answer.clone();
                    if let Some(Value::Object(outcome)) = answer.get_mut("outcome") {
                        for field in outcome.values_mut() {
                            *field = json!(json_text(field));
                        }
                    }
                    Value::Object(answer)
                }
                (_, inner) => json!(json_text(inner)),
            };
            json!({key: inner})
        }
        other => other.clone(),
    }
}

// ----- output (readable) --------------------------------------------------------------------

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!(text))
}

fn readable(value: IpcValue) -> Value {
    match value {
        IpcValue::Undefined => Value::Null,
        IpcValue::String(text) => json!(text),
        IpcValue::Int(int) => json!(int),
        IpcValue::Json(text) => parsed(&text),
        IpcValue::Array(items) => Value::Array(items.into_iter().map(readable).collect()),
        IpcValue::Bytes { bytes, .. } => json!({"base64": encode_base64(&bytes)}),
    }
}

/// Bytes the mapper writes: IPC frames decoded, else text.
fn written(bytes: &[u8]) -> Value {
    let mut decoder = FrameDecoder::default();
    decoder.push(bytes);
    let mut messages = Vec::new();
    while let Ok(Some(message)) = decoder.next_message() {
        match decode_request(&message) {
            Ok((header, body)) => {
                messages.push(json!({"header": readable(header), "body": readable(body)}))
            }
            Err(_) => return json!({"base64": encode_base64(bytes)}),
        }
    }
    match (messages.len(), decoder.pending()) {
        (1, 0) => json!({"ipc": messages.pop().unwrap()}),
        (0, _) => match std::str::from_utf8(bytes) {
            // A JSON line compares as JSON: key order depends on serde_json's features.
            Ok(text) => match text.strip_suffix('\n').map(serde_json::from_str::<Value>) {
                Some(Ok(value)) if !text[..text.len() - 1].contains('\n') => {
                    json!({"jsonLine": value})
                }
                _ => json!({"text": text}),
            },
            Err(_) => json!({"base64": encode_base64(bytes)}),
        },
        _ => json!({"ipc": messages, "trailing": decoder.pending()}),
    }
}

fn error_value(error: &MapperError) -> Value {
    let mut value = json!({"kind": error.kind, "message": error.message});
    if let Some(data) = &error.data {
        value["data"] = parsed(data);
    }
    value
}

fn write_value(write: &NativeWrite) -> Value {
    let mut value = written(&write.bytes);
    value["label"] = json!(write.label);
    value
}

fn outgoing_value(outgoing: &Outgoing) -> Value {
    let mut value = Map::new();
    if !outgoing.updates.is_empty() {
        value.insert("updates".into(), outgoing.updates.iter().map(|u| parsed(u)).collect());
    }
    if !outgoing.routes_added.is_empty() {
        value.insert("routesAdded".into(), json!(outgoing.routes_added));
    }
    if !outgoing.routes_removed.is_empty() {
        value.insert("routesRemoved".into(), json!(outgoing.routes_removed));
    }
    if !outgoing.writes.is_empty() {
        value.insert("writes".into(), outgoing.writes.iter().map(write_value).collect());
    }
    if !outgoing.requests.is_empty() {
        let requests = outgoing
            .requests
            .iter()
            .map(|r| {
                let mut request = written(&r.bytes);
                request["id"] = json!(r.id);
                request["label"] = json!(r.label);
                request["timeoutMs"] = json!(r.timeout_ms);
                request
            })
            .collect();
        value.insert("requests".into(), requests);
    }
    Value::Object(value)
}

fn fault_value(fault: &MapperFault) -> Value {
    json!({"fault": fault.0})
}

fn step_value(step: Result<Step, MapperFault>) -> Value {
    match step {
        Ok(Step::Wait(outgoing)) => json!({"wait": outgoing_value(&outgoing)}),
        Ok(Step::Done(Ok(result))) => json!({"done": {
            "response": parsed(&result.response),
            "updates": result.updates.iter().map(|u| parsed(u)).collect::<Vec<_>>(),
        }}),
        Ok(Step::Done(Err(error))) => json!({"done": {"error": error_value(&error)}}),
        Err(fault) => fault_value(&fault),
    }
}

fn inbound_value(result: Result<Vec<Inbound>, MapperError>) -> Value {
    match result {
        Ok(items) => items
            .iter()
            .map(|item| match item {
                Inbound::Write(write) => json!({"write": write_value(write)}),
                Inbound::Ready => json!("ready"),
                Inbound::Ignored(reason) => json!({"ignored": reason}),
                Inbound::Event(event) => json!({"event": {"route": event.route, "payload": match &event.payload {
                    NativeData::Text(text) => parsed(text),
                    NativeData::Binary(bytes) => json!({"base64": encode_base64(bytes)}),
                }}}),
                Inbound::Reply(reply) => json!({"reply": {"id": reply.id, "body": match &reply.body {
                    ReplyBody::Ok(NativeData::Text(text)) => json!({"ok": parsed(text)}),
                    ReplyBody::Ok(NativeData::Binary(bytes)) => json!({"ok": {"base64": encode_base64(bytes)}}),
                    ReplyBody::Error(error) => json!({"error": error_value(error)}),
                    ReplyBody::Lost(reason) => json!({"lost": reason}),
                }}}),
            })
            .collect(),
        Err(error) => json!({"error": error_value(&error)}),
    }
}

fn action_value(action: &Action) -> Value {
    match action {
        Action::Update(update) => json!({"update": parsed(update)}),
        Action::Ignore(name) => json!({"ignore": name}),
        Action::Terminal(Terminal::Stop(reason)) => json!({"terminal": {"stop": reason}}),
        Action::Terminal(Terminal::Failed(error)) => {
            json!({"terminal": {"failed": error_value(error)}})
        }
        Action::Terminal(Terminal::Broken(error)) => {
            json!({"terminal": {"broken": error_value(error)}})
        }
        Action::Interaction(interaction) => {
            let request = match &interaction.request {
                InteractionRequest::Permission(p) => {
                    json!({"permission": {"request": parsed(&p.request), "denyOption": p.deny_option}})
                }
                InteractionRequest::Elicitation(form) => json!({"elicitation": parsed(form)}),
                InteractionRequest::Headless(why) => json!({"headless": why}),
            };
            json!({"interaction": {"key": interaction.key, "request": request}})
        }
    }
}

fn effects_value(effects: Result<Effects, MapperFault>) -> Value {
    match effects {
        Ok(effects) => {
            let mut value =
                json!({"actions": effects.actions.iter().map(action_value).collect::<Vec<_>>()});
            if effects.requests > 0 {
                value["requests"] = json!(effects.requests);
            }
            if !effects.writes.is_empty() {
                value["writes"] = effects.writes.iter().map(write_value).collect();
            }
            value
        }
        Err(fault) => fault_value(&fault),
    }
}

// ----- replay --------------------------------------------------------------------------------

struct Replayer {
    mapper: ServicesV4Mapper,
    connection: Option<Box<dyn MapperConnection>>,
    sessions: Vec<(String, Box<dyn MapperSession>)>,
}

impl Replayer {
    fn session(&mut self, line: &Map<String, Value>) -> &mut Box<dyn MapperSession> {
        let name = line.get("name").and_then(Value::as_str).unwrap_or("main").to_string();
        &mut self
            .sessions
            .iter_mut()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no session `{name}`"))
            .1
    }

    fn connection(&mut self) -> &mut Box<dyn MapperConnection> {
        if self.connection.is_none() {
            self.connection = Some(self.mapper.connection().unwrap());
        }
        self.connection.as_mut().unwrap()
    }

    /// The result of one line (`None`: a line that creates a resource).
    fn perform(&mut self, line: &Map<String, Value>) -> Option<Value> {
        let number =
            |key: &str| line[key].as_u64().unwrap_or_else(|| panic!("`{key}` must be a number"));
        Some(match line["call"].as_str().unwrap() {
            "connection.new" => {
                self.connection = Some(self.mapper.connection().unwrap());
                return None;
            }
            "connection.push" => {
                let bytes = bytes_of(line);
                inbound_value(self.connection().push(&bytes))
            }
            "connection.finish" => inbound_value(self.connection().finish()),
            "connection.identity" => match self.connection().identity() {
                Ok(identity) => json!(identity),
                Err(fault) => fault_value(&fault),
            },
            "connection.start" => {
                let op: ConnectionOp =
                    serde_json::from_value(op_of(&line["op"])).expect("a connection op");
                step_value(self.connection().start(number("opId"), &op, number("firstRequestId")))
            }
            "connection.resume" => {
                let reply = reply_of(&line["reply"]);
                step_value(self.connection().resume(
                    number("opId"),
                    reply.as_ref(),
                    number("firstRequestId"),
                ))
            }
            "session.new" => {
                let init: SessionInit = serde_json::from_value(line["init"].clone()).expect("init");
                let name = line.get("name").and_then(Value::as_str).unwrap_or("main").to_string();
                self.sessions.retain(|(n, _)| *n != name);
                self.sessions.push((name, self.mapper.session(&init).unwrap()));
                return None;
            }
            "session.start" => {
                let op: SessionOp =
                    serde_json::from_value(op_of(&line["op"])).expect("a session op");
                let (op_id, first) = (number("opId"), number("firstRequestId"));
                step_value(self.session(line).start(op_id, &op, first))
            }
            "session.resume" => {
                let reply = reply_of(&line["reply"]);
                let (op_id, first) = (number("opId"), number("firstRequestId"));
                step_value(self.session(line).resume(op_id, reply.as_ref(), first))
            }
            "session.map" => {
                let inputs: Vec<SessionInput> = line["inputs"]
                    .as_array()
                    .expect("inputs")
                    .iter()
                    .map(|input| match (input.get("event"), input.get("reply")) {
                        (Some(event), _) => SessionInput::Event(NativeData::Text(json_text(event))),
                        (_, Some(reply)) => SessionInput::Reply(reply_of(reply).expect("a reply")),
                        _ => panic!("an input is an event or a reply"),
                    })
                    .collect();
                effects_value(self.session(line).map(&inputs))
            }
            "session.issue" => {
                let first = number("firstRequestId");
                match self.session(line).issue(first) {
                    Ok(outgoing) => outgoing_value(&outgoing),
                    Err(fault) => fault_value(&fault),
                }
            }
            other => panic!("unknown call `{other}`"),
        })
    }
}

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

/// Replays a trace: `(mismatches, checked lines, blessed text)`.
fn replay(text: &str) -> (Vec<String>, usize, String) {
    let mut replayer =
        Replayer { mapper: ServicesV4Mapper::new(), connection: None, sessions: Vec::new() };
    let (mut mismatches, mut checked, mut blessed) = (Vec::new(), 0, String::new());
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            blessed.push_str(raw);
            blessed.push('\n');
            continue;
        }
        let mut line: Map<String, Value> = serde_json::from_str(trimmed)
            .unwrap_or_else(|e| panic!("trace line {}: not JSON: {e}", index + 1));
        let Some(actual) = replayer.perform(&line) else {
            blessed.push_str(raw);
            blessed.push('\n');
            continue;
        };
        if let Some(expected) = line.get("expect") {
            checked += 1;
            if sorted(expected) != sorted(&actual) {
                mismatches.push(format!(
                    "line {} ({}):\n  expected {}\n  actual   {}",
                    index + 1,
                    line["call"],
                    sorted(expected),
                    sorted(&actual)
                ));
            }
        }
        line.remove("expect");
        let mut out = serde_json::to_string(&Value::Object(line)).unwrap();
        out.pop();
        out.push_str(&format!(",\"expect\":{}}}\n", sorted(&actual)));
        blessed.push_str(&out);
    }
    (mismatches, checked, blessed)
}

#[test]
fn every_trace_replays() {
    let bless = std::env::var_os("ZCODE_SERVICES_BLESS").is_some();
    let paths = traces();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let (mismatches, checked, blessed) = replay(&text);
        if bless {
            std::fs::write(path, blessed).unwrap();
            continue;
        }
        assert!(mismatches.is_empty(), "{}:\n{}", path.display(), mismatches.join("\n"));
        assert!(checked > 0, "{} checks nothing", path.display());
    }
    assert!(paths.len() >= 10, "expected the full trace set, found {}", paths.len());
}

#[test]
fn a_changed_expectation_is_a_mismatch() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/turn-text.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let original = r#""stop":"end_turn""#;
    assert_eq!(text.matches(original).count(), 1, "the trace ends its turn once");
    let (mismatches, _, _) = replay(&text.replace(original, r#""stop":"cancelled""#));
    assert_eq!(mismatches.len(), 1);
    assert!(mismatches[0].contains("end_turn"));
}
