//! Mapper calls and results in the golden-trace form (`docs/golden-traces.md`): bytes as text
//! (or base64), JSON text as the JSON it holds, variants externally tagged.
//!
//! Inputs must replay as exactly the values the mapper saw: JSON text is written as a JSON
//! value only when the replayer's re-serialization gives the same text back, else as a string.

use serde_json::{Map, Value, json};
use zcode_contract::{
    Action, ClientFeatures, ConnectionOp, Inbound, InteractionOutcome, InteractionRequest,
    MapperError, MapperFault, NativeReply, NativeRequest, ReplyBody, SessionInit, SessionOp, Step,
    Terminal,
};

// ----- inputs ----------------------------------------------------------------------------------

pub fn bytes(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => Value::String(text.to_string()),
        Err(_) => json!({ "base64": base64(bytes) }),
    }
}

/// JSON text as a JSON value when that reads back as the same text, else the text itself. A
/// JSON string stays text: the replayer reads a string value as the text, not as JSON.
pub fn json_text(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        // (Not `value == text`: that compares a JSON string value with the text.)
        Ok(value) if !value.is_string() && reads_back_as(&value, text) => value,
        _ => Value::String(text.to_string()),
    }
}

fn reads_back_as(value: &Value, text: &str) -> bool {
    let serialized = value.to_string();
    serialized == text
}

pub fn init(init: &SessionInit) -> Value {
    let ClientFeatures { plan_operations, form_elicitation } = init.client;
    json!({
        "workspace": init.workspace,
        "client": {"plan_operations": plan_operations, "form_elicitation": form_elicitation},
    })
}

pub fn connection_op(op: &ConnectionOp) -> Value {
    match op {
        ConnectionOp::Setup => json!("setup"),
        ConnectionOp::Probe(path) => json!({ "probe": path }),
        ConnectionOp::ListSessions(params) => json!({ "list-sessions": json_text(params) }),
    }
}

pub fn session_op(op: &SessionOp) -> Value {
    let with = |tag: &str, params: &str| json!({ tag: json_text(params) });
    match op {
        SessionOp::Create(params) => with("create", params),
        SessionOp::Load(params) => with("load", params),
        SessionOp::Resume(params) => with("resume", params),
        SessionOp::Prompt(params) => with("prompt", params),
        SessionOp::SetMode(params) => with("set-mode", params),
        SessionOp::SetConfigOption(params) => with("set-config-option", params),
        SessionOp::Cancel => json!("cancel"),
        SessionOp::FinishTurn => json!("finish-turn"),
        SessionOp::Close => json!("close"),
        SessionOp::Answer(answer) => {
            let outcome = match &answer.outcome {
                InteractionOutcome::Selected(option) => json!({ "selected": option }),
                InteractionOutcome::Elicited(response) => {
                    json!({ "elicited": json_text(response) })
                }
                InteractionOutcome::Unavailable(why) => json!({ "unavailable": why }),
            };
            json!({ "answer": { "key": answer.key, "outcome": outcome } })
        }
    }
}

pub fn reply(reply: &NativeReply) -> Value {
    let body = match &reply.body {
        ReplyBody::Ok(text) => json!({ "ok": json_text(text) }),
        ReplyBody::Error(error) => json!({ "error": error_input(error) }),
        ReplyBody::Lost(reason) => json!({ "lost": reason }),
    };
    json!({ "id": reply.id, "body": body })
}

fn error_input(error: &MapperError) -> Value {
    let mut value = json!({ "kind": error.kind, "message": error.message });
    if let Some(data) = &error.data {
        value["data"] = json_text(data);
    }
    value
}

// ----- results (`expect`) ----------------------------------------------------------------------

pub fn inbound_result(result: &Result<Vec<Inbound>, MapperError>) -> Value {
    match result {
        Ok(items) => Value::Array(items.iter().map(inbound).collect()),
        Err(error) => json!({ "error": error_result(error) }),
    }
}

pub fn step_result(result: &Result<Step, MapperFault>) -> Value {
    match result {
        Ok(step) => self::step(step),
        Err(error) => fault(error),
    }
}

pub fn actions_result(result: &Result<Vec<Action>, MapperFault>) -> Value {
    match result {
        Ok(actions) => Value::Array(actions.iter().map(action).collect()),
        Err(error) => fault(error),
    }
}

pub fn fault(fault: &MapperFault) -> Value {
    json!({ "error": { "kind": "fault", "message": fault.0 } })
}

/// Output JSON text, read for comparison (the replayer compares parsed JSON).
fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn error_result(error: &MapperError) -> Value {
    let mut value = json!({ "kind": error.kind, "message": error.message });
    if let Some(data) = &error.data {
        value["data"] = parsed(data);
    }
    value
}

fn inbound(item: &Inbound) -> Value {
    match item {
        Inbound::Reply(reply) => {
            let body = match &reply.body {
                ReplyBody::Ok(text) => json!({ "ok": parsed(text) }),
                ReplyBody::Error(error) => json!({ "error": error_result(error) }),
                ReplyBody::Lost(reason) => json!({ "lost": reason }),
            };
            json!({ "reply": { "id": reply.id, "body": body } })
        }
        Inbound::Event(event) => {
            json!({ "event": { "route": event.route, "payload": parsed(&event.payload) } })
        }
        Inbound::Write(written) => json!({ "write": bytes(written) }),
        Inbound::Ready => json!("ready"),
        Inbound::Ignored(reason) => json!({ "ignored": reason }),
    }
}

fn request(request: &NativeRequest) -> Value {
    // A request that is one NDJSON line reads as its JSON; the replayer compares it so.
    let line = request.bytes.strip_suffix(b"\n").filter(|line| !line.contains(&b'\n'));
    let shown = line
        .and_then(|line| serde_json::from_slice::<Value>(line).ok())
        .unwrap_or_else(|| bytes(&request.bytes));
    json!({
        "id": request.id,
        "bytes": shown,
        "label": request.label,
        "timeout_ms": request.timeout_ms,
    })
}

fn step(step: &Step) -> Value {
    match step {
        Step::Wait(outgoing) => json!({ "wait": {
            "routes_added": outgoing.routes_added,
            "routes_removed": outgoing.routes_removed,
            "requests": outgoing.requests.iter().map(request).collect::<Vec<_>>(),
        }}),
        Step::Done(Ok(result)) => json!({ "done": { "Ok": {
            "response": parsed(&result.response),
            "updates": result.updates.iter().map(|u| parsed(u)).collect::<Vec<_>>(),
        }}}),
        Step::Done(Err(error)) => json!({ "done": { "Err": error_result(error) } }),
    }
}

fn action(action: &Action) -> Value {
    match action {
        Action::Update(update) => json!({ "update": parsed(update) }),
        Action::Interaction(interaction) => {
            let request = match &interaction.request {
                InteractionRequest::Permission(asked) => json!({ "permission": {
                    "request": parsed(&asked.request),
                    "deny_option": asked.deny_option,
                }}),
                InteractionRequest::Elicitation(schema) => json!({ "elicitation": parsed(schema) }),
                InteractionRequest::Headless(why) => json!({ "headless": why }),
            };
            json!({ "interaction": { "key": interaction.key, "request": request } })
        }
        Action::Terminal(terminal) => {
            let terminal = match terminal {
                Terminal::Stop(reason) => json!({ "stop": reason }),
                Terminal::Failed(error) => json!({ "failed": error_result(error) }),
                Terminal::Broken(error) => json!({ "broken": error_result(error) }),
            };
            json!({ "terminal": terminal })
        }
        Action::Ignore(name) => json!({ "ignore": name }),
    }
}

// ----- lines -----------------------------------------------------------------------------------

/// One trace line with its fields in the order given (`call` first, `expect` last).
pub fn line(fields: &[(&str, Value)]) -> String {
    let fields: Vec<String> =
        fields.iter().map(|(key, value)| format!("{}:{value}", Value::from(*key))).collect();
    format!("{{{}}}\n", fields.join(","))
}

/// The shape of a result: its structure with every string and number blanked and
/// content-like keys merged. Redaction may change text but should not change shape; where it
/// does, the recording says so.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::String(_) => Value::from("s"),
        Value::Number(_) => Value::from(0),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::Object(map) => {
            let mut shaped = Map::new();
            // Content keys (question texts, redacted keys) are interchangeable: compare their
            // values as a sorted list.
            let mut content: Vec<Value> = Vec::new();
            for (key, item) in map {
                let is_content = key.starts_with("redacted-")
                    || !key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
                if is_content {
                    content.push(shape(item));
                } else {
                    shaped.insert(key.clone(), shape(item));
                }
            }
            if !content.is_empty() {
                content.sort_by_key(Value::to_string);
                shaped.insert("*".to_string(), Value::Array(content));
            }
            Value::Object(shaped)
        }
        Value::Bool(_) | Value::Null => value.clone(),
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub(crate) fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                BASE64[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_reads_back_as_the_same_text() {
        assert_eq!(json_text(r#"{"a":1,"b":[true]}"#), json!({"a": 1, "b": [true]}));
        // Spacing or key order the replayer would not reproduce: kept as text.
        assert_eq!(json_text(r#"{ "a": 1 }"#), json!(r#"{ "a": 1 }"#));
        // A JSON string value would be read as the bare text.
        assert_eq!(json_text(r#""quoted""#), json!(r#""quoted""#));
        assert_eq!(json_text("not json"), json!("not json"));
    }

    #[test]
    fn bytes_are_text_or_base64() {
        assert_eq!(bytes(b"hi\n"), json!("hi\n"));
        assert_eq!(bytes(&[0xff, b'a']), json!({"base64": "/2E="}));
        assert_eq!(base64(b"hi"), "aGk=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }

    #[test]
    fn lines_keep_the_given_field_order() {
        let text = line(&[("call", json!("session.new")), ("name", json!("s1"))]);
        assert_eq!(text, "{\"call\":\"session.new\",\"name\":\"s1\"}\n");
    }

    #[test]
    fn shapes_ignore_text_but_not_structure() {
        let a = json!([{"update": {"text": "one", "n": 1, "ok": true}}]);
        let b = json!([{"update": {"text": "two", "n": 2, "ok": true}}]);
        let c = json!([{"update": {"text": {"parsed": 1}, "n": 2, "ok": true}}]);
        assert_eq!(shape(&a), shape(&b));
        assert_ne!(shape(&a), shape(&c));
        assert_eq!(shape(&json!({"a b": 1})), shape(&json!({"redacted-1": 2})));
        let live = json!({"Which crates?": ["a", "b"], "Which runner?": ["c"]});
        let redacted = json!({"redacted-1": ["c"], "redacted-2": ["a", "b"]});
        assert_eq!(shape(&live), shape(&redacted));
    }
}
