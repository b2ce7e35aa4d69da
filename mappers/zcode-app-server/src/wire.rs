//! The Agent's envelope: one JSON object a line, no `jsonrpc`; a frame with `id` and `method` is
//! a request (the Agent's own ids are strings, `server-<n>`), `id` with `result`/`error` a
//! response, `method` alone a notification (`packages/shared/src/zcode-protocol/index.ts`).

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError, NativeReply, ReplyBody};

use crate::json::{line, protocol};

/// What one line of Agent output is.
#[derive(Debug)]
pub enum Frame {
    /// The answer to one of our requests (our ids are the core's numbers).
    Reply(NativeReply),
    /// A request of the Agent to us.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

/// Splits and classifies one complete line.
pub fn classify(text: &str) -> Result<Frame, MapperError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| protocol(format!("ZCode wrote a non-JSON line: {e}")))?;
    let Value::Object(map) = &value else {
        return Err(protocol("ZCode wrote a line that is not a JSON object"));
    };
    if map.contains_key("jsonrpc") {
        return Err(protocol(
            "ZCode wrote a JSON-RPC 2.0 frame; the Agent speaks NDJSON without it",
        ));
    }
    let method = map.get("method").and_then(Value::as_str).map(str::to_string);
    let params = map.get("params").cloned().unwrap_or(Value::Null);
    match (map.get("id"), method) {
        (Some(id), Some(method)) => Ok(Frame::Request { id: id.clone(), method, params }),
        (None, Some(method)) => Ok(Frame::Notification { method, params }),
        (Some(id), None) => reply(id, map),
        (None, None) => Err(protocol("ZCode wrote a frame with neither `id` nor `method`")),
    }
}

fn reply(id: &Value, map: &serde_json::Map<String, Value>) -> Result<Frame, MapperError> {
    let Some(number) = id.as_u64() else {
        // `parse-error` / `invalid-message`: the Agent refused a frame of ours and cannot say
        // which one. Nothing can be matched, so the transport fails closed.
        let message = map
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return Err(protocol(format!(
            "ZCode refused a frame it could not attribute ({id}): {message}"
        )));
    };
    let body = match (map.get("result"), map.get("error")) {
        (Some(result), None) => ReplyBody::Ok(result.to_string().into()),
        (None, Some(error)) => ReplyBody::Error(native_error(error)),
        _ => return Err(protocol(format!("ZCode reply {number} has neither result nor error"))),
    };
    Ok(Frame::Reply(NativeReply { id: number, body }))
}

/// A native error object as a mapper error: the message, and the code (and the Agent's `data`
/// when it is an object) as non-secret details.
pub fn native_error(error: &Value) -> MapperError {
    let code = error.get("code").and_then(Value::as_i64);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("ZCode reported an error");
    let kind = match code {
        Some(-32602) => ErrorKind::InvalidParams,
        Some(-32004) => ErrorKind::NotFound,
        Some(-32601) => ErrorKind::Unsupported,
        _ => ErrorKind::Native,
    };
    let mut data = json!({ "nativeCode": code });
    if let Some(Value::Object(detail)) = error.get("data")
        && let Some(reason) = detail.get("code").and_then(Value::as_str)
    {
        data["nativeReason"] = json!(reason);
    }
    MapperError { kind, message: message.to_string(), data: Some(data.to_string()) }
}

pub fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    line(&json!({"id": id, "method": method, "params": params}))
}

/// The answer to a request of the Agent (its own id, echoed).
pub fn result(id: &Value, result: Value) -> Vec<u8> {
    line(&json!({"id": id, "result": result}))
}

pub fn error_reply(id: &Value, code: i64, message: &str) -> Vec<u8> {
    line(&json!({"id": id, "error": {"code": code, "message": message}}))
}

/// Lines of a byte stream, keeping an incomplete tail for the next push.
#[derive(Default)]
pub struct Lines {
    buffer: Vec<u8>,
}

/// A line longer than this without a newline is not a frame the Agent writes.
const MAX_LINE: usize = 64 * 1024 * 1024;

impl Lines {
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, MapperError> {
        self.buffer.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let raw: Vec<u8> = self.buffer.drain(..=end).collect();
            let text = std::str::from_utf8(&raw[..raw.len() - 1])
                .map_err(|_| protocol("ZCode wrote a line that is not UTF-8"))?
                .trim();
            if !text.is_empty() {
                lines.push(text.to_string());
            }
        }
        if self.buffer.len() > MAX_LINE {
            return Err(protocol("ZCode wrote a line longer than 64 MiB"));
        }
        Ok(lines)
    }

    /// At end of file: a last line without its newline is still a line (the Agent's transport
    /// reads one the same way), anything else is fine.
    pub fn finish(&mut self) -> Result<Vec<String>, MapperError> {
        if self.buffer.is_empty() {
            return Ok(Vec::new());
        }
        self.buffer.push(b'\n');
        self.push(&[])
    }
}
