//! Replays `traces/*.jsonl` (format: `docs/golden-traces.md`) through the native mapper.
//!
//! A stand-in for `zcode_contract::golden` until that module is on WIT 0.2: the same lines and
//! the same readability rules (bytes that are one JSON line, and JSON-text fields, compare as
//! parsed JSON). Re-bless after reviewing a change with `ZCODE_BLESS=1 cargo test --test golden`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use zcode_app_server::AppServerMapper;
use zcode_contract::{
    ConnectionOp, Mapper, MapperConnection, MapperSession, NativeReply, SessionInit, SessionInput,
    SessionOp,
};

const JSON_TEXT: [&str; 6] = ["updates", "response", "request", "elicitation", "update", "payload"];
const BYTES: [&str; 2] = ["bytes", "fallback"];

/// The readable canonical form: JSON text parsed, bytes as the JSON line or text they hold.
fn canonical(value: Value, key: Option<&str>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = canonical(v, Some(&k));
                    (k, v)
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items)
            if key.is_some_and(|k| BYTES.contains(&k)) && items.iter().all(Value::is_u64) =>
        {
            let bytes: Vec<u8> = items.iter().filter_map(Value::as_u64).map(|b| b as u8).collect();
            match String::from_utf8(bytes) {
                Ok(text) => serde_json::from_str(text.trim_end()).unwrap_or(Value::String(text)),
                Err(e) => json!({"binary": e.into_bytes()}),
            }
        }
        Value::Array(items) => Value::Array(items.into_iter().map(|v| canonical(v, key)).collect()),
        Value::String(text)
            if key.is_some_and(|k| {
                JSON_TEXT.contains(&k) || BYTES.contains(&k) || k == "ok" || k == "elicited"
            }) =>
        {
            serde_json::from_str(text.trim_end())
                .map(|v| canonical(v, None))
                .unwrap_or(Value::String(text))
        }
        other => other,
    }
}

struct Replayer {
    mapper: AppServerMapper,
    connection: Option<Box<dyn MapperConnection>>,
    sessions: BTreeMap<String, Box<dyn MapperSession>>,
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn reply(line: &Map<String, Value>) -> Option<NativeReply> {
    let mut reply = line.get("reply")?.clone();
    if let Some(ok) = reply.pointer_mut("/body/ok") {
        *ok = json!({"text": text_of(ok)});
    }
    Some(serde_json::from_value(reply).expect("reply"))
}

impl Replayer {
    fn connection(&mut self) -> &mut Box<dyn MapperConnection> {
        self.connection.get_or_insert_with(|| self.mapper.connection().unwrap())
    }

    fn perform(&mut self, line: &Map<String, Value>) -> Option<Value> {
        let n = |k: &str| line.get(k).and_then(Value::as_u64).unwrap_or(0);
        let name = line.get("name").and_then(Value::as_str).unwrap_or("main").to_string();
        let json = |r: Result<Value, String>| r.unwrap_or_else(|e| json!({"error": e}));
        Some(match line["call"].as_str().unwrap() {
            "connection.push" => {
                let mut bytes = text_of(&line["bytes"]).into_bytes();
                if !bytes.ends_with(b"\n") && !line["bytes"].is_string() {
                    bytes.push(b'\n');
                }
                json(
                    self.connection()
                        .push(&bytes)
                        .map(|v| serde_json::to_value(v).unwrap())
                        .map_err(|e| e.message),
                )
            }
            "connection.start" => {
                let mut op = line["op"].clone();
                if let Some(params) = op.as_object_mut().and_then(|m| m.values_mut().next()) {
                    *params = Value::String(text_of(params));
                }
                let op: ConnectionOp = serde_json::from_value(op).expect("op");
                serde_json::to_value(
                    self.connection().start(n("opId"), &op, n("firstRequestId")).unwrap(),
                )
                .unwrap()
            }
            "connection.resume" => serde_json::to_value(
                self.connection()
                    .resume(n("opId"), reply(line).as_ref(), n("firstRequestId"))
                    .unwrap(),
            )
            .unwrap(),
            "session.new" => {
                let init: SessionInit = serde_json::from_value(line["init"].clone()).expect("init");
                self.sessions.insert(name, self.mapper.session(&init).unwrap());
                return None;
            }
            "session.start" => {
                let mut op = line["op"].clone();
                if let Some(map) = op.as_object_mut()
                    && let Some((key, params)) = map.iter_mut().next()
                    && key != "answer"
                {
                    *params = Value::String(text_of(params));
                } else if let Some(outcome) = op.pointer_mut("/answer/outcome/elicited") {
                    *outcome = Value::String(text_of(outcome));
                }
                let op: SessionOp = serde_json::from_value(op).expect("op");
                let session = self.sessions.get_mut(&name).expect("session");
                serde_json::to_value(session.start(n("opId"), &op, n("firstRequestId")).unwrap())
                    .unwrap()
            }
            "session.resume" => {
                let session = self.sessions.get_mut(&name).expect("session");
                serde_json::to_value(
                    session.resume(n("opId"), reply(line).as_ref(), n("firstRequestId")).unwrap(),
                )
                .unwrap()
            }
            "session.map-event" => {
                let session = self.sessions.get_mut(&name).expect("session");
                let effects =
                    session.map(&[SessionInput::Event(text_of(&line["payload"]).into())]).unwrap();
                serde_json::to_value(effects).unwrap()
            }
            other => panic!("unknown call {other}"),
        })
    }
}

#[test]
fn traces_replay_as_recorded() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let bless = std::env::var_os("ZCODE_BLESS").is_some();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in files {
        let mut replayer = Replayer {
            mapper: AppServerMapper::default(),
            connection: None,
            sessions: BTreeMap::new(),
        };
        let mut out = String::new();
        for (index, raw) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
            if raw.trim().is_empty() || raw.starts_with('#') {
                out.push_str(raw);
                out.push('\n');
                continue;
            }
            let mut line: Map<String, Value> = serde_json::from_str(raw)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), index + 1));
            let actual = replayer.perform(&line).map(|v| canonical(v, None));
            if let (Some(actual), Some(expected)) = (&actual, line.get("expect")) {
                checked += 1;
                if canonical(expected.clone(), None) != *actual {
                    failures.push(format!(
                        "{}:{}\n  expected {}\n  actual   {}",
                        file.display(),
                        index + 1,
                        canonical(expected.clone(), None),
                        actual
                    ));
                }
            }
            if bless && let Some(actual) = actual {
                line.insert("expect".to_string(), actual);
            }
            out.push_str(&Value::Object(line).to_string());
            out.push('\n');
        }
        if bless {
            std::fs::write(&file, out).unwrap();
        }
    }
    assert!(
        bless || failures.is_empty(),
        "{} of {checked} lines differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
