//! Reads the session calls of a recording (`ZCODE_ACP_RECORD`, golden-trace format) back into
//! contract values, so a recorded turn can be replayed through any mapper at full speed.

use serde_json::Value;
use zcode_contract::{
    ClientFeatures, ErrorKind, InteractionAnswer, InteractionOutcome, MapperError, NativeReply,
    ReplyBody, SessionInit, SessionOp,
};

/// One recorded call on a mapper session.
pub enum SessionCall {
    New(SessionInit),
    Start { op_id: u64, op: SessionOp, first_request_id: u64 },
    Resume { op_id: u64, reply: NativeReply, first_request_id: u64 },
    MapEvent(String),
}

/// The calls of session `name`, in order.
pub fn session_calls(recording: &str, name: &str) -> Result<Vec<SessionCall>, String> {
    let mut calls = Vec::new();
    for (index, line) in recording.lines().enumerate() {
        if !line.starts_with('{') {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", index + 1))?;
        if value["name"] != name {
            continue;
        }
        let call = decode(&value).map_err(|e| format!("line {}: {e}", index + 1))?;
        calls.push(call);
    }
    Ok(calls)
}

fn decode(line: &Value) -> Result<SessionCall, String> {
    let number = |key: &str| line[key].as_u64().ok_or(format!("`{key}` is not a number"));
    Ok(match line["call"].as_str().unwrap_or_default() {
        "session.new" => {
            let init = &line["init"];
            let client: ClientFeatures =
                serde_json::from_value(init["client"].clone()).map_err(|e| e.to_string())?;
            let workspace = init["workspace"].as_str().ok_or("init without a workspace")?;
            SessionCall::New(SessionInit { workspace: workspace.to_string(), client })
        }
        "session.start" => SessionCall::Start {
            op_id: number("opId")?,
            op: session_op(&line["op"])?,
            first_request_id: number("firstRequestId")?,
        },
        "session.resume" => SessionCall::Resume {
            op_id: number("opId")?,
            reply: reply(&line["reply"])?,
            first_request_id: number("firstRequestId")?,
        },
        "session.map-event" => SessionCall::MapEvent(json_text(&line["payload"])),
        other => return Err(format!("unexpected call {other}")),
    })
}

/// JSON text: a string is the text, any other value its JSON.
fn json_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn single(value: &Value) -> Result<(&str, &Value), String> {
    match value.as_object() {
        Some(map) if map.len() == 1 => Ok(map.iter().next().map(|(k, v)| (k.as_str(), v)).unwrap()),
        _ => Err(format!("not a one-key variant: {value}")),
    }
}

fn session_op(value: &Value) -> Result<SessionOp, String> {
    if let Some(tag) = value.as_str() {
        return match tag {
            "cancel" => Ok(SessionOp::Cancel),
            "finish-turn" => Ok(SessionOp::FinishTurn),
            "close" => Ok(SessionOp::Close),
            other => Err(format!("unknown op {other}")),
        };
    }
    let (tag, inner) = single(value)?;
    Ok(match tag {
        "create" => SessionOp::Create(json_text(inner)),
        "load" => SessionOp::Load(json_text(inner)),
        "resume" => SessionOp::Resume(json_text(inner)),
        "prompt" => SessionOp::Prompt(json_text(inner)),
        "set-mode" => SessionOp::SetMode(json_text(inner)),
        "set-config-option" => SessionOp::SetConfigOption(json_text(inner)),
        "answer" => {
            let (outcome, choice) = single(&inner["outcome"])?;
            let text = || choice.as_str().map(str::to_string).ok_or("outcome is not a string");
            let outcome = match outcome {
                "selected" => InteractionOutcome::Selected(text()?),
                "elicited" => InteractionOutcome::Elicited(json_text(choice)),
                "unavailable" => InteractionOutcome::Unavailable(text()?),
                other => return Err(format!("unknown outcome {other}")),
            };
            let key = inner["key"].as_str().ok_or("answer without a key")?.to_string();
            SessionOp::Answer(InteractionAnswer { key, outcome })
        }
        other => return Err(format!("unknown op {other}")),
    })
}

fn reply(value: &Value) -> Result<NativeReply, String> {
    let id = value["id"].as_u64().ok_or("reply without an id")?;
    let (tag, inner) = single(&value["body"])?;
    let body = match tag {
        "ok" => ReplyBody::Ok(json_text(inner)),
        "lost" => ReplyBody::Lost(inner.as_str().unwrap_or_default().to_string()),
        "error" => {
            let kind: ErrorKind =
                serde_json::from_value(inner["kind"].clone()).map_err(|e| e.to_string())?;
            let message = inner["message"].as_str().unwrap_or_default().to_string();
            let data = inner.get("data").filter(|d| !d.is_null()).map(json_text);
            ReplyBody::Error(MapperError { kind, message, data })
        }
        other => return Err(format!("unknown reply body {other}")),
    };
    Ok(NativeReply { id, body })
}
