//! The app-server NDJSON envelope (3.15.1 source `zcode-protocol/transport.ts`, `index.ts`):
//! one JSON object per line, no `jsonrpc` member, four strict message shapes told apart by
//! which of them accepts the line: request `{id, method, params?, trace?}`, notification
//! `{method, params?, trace?}`, response `{id, result}`, error `{id, error{code, message,
//! data?}}`. A line that is not JSON gets `{"id":"parse-error","error":{code:-32700}}`; JSON
//! that fits none of the shapes gets `{"id":"invalid-message","error":{code:-32600,
//! data:{issues}}}` — the `jsonrpc` member is the usual cause.

use serde_json::{Value, json};

use super::zod::{self, Schema};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_MESSAGE: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// `zcodeProtocolErrorCodes.sessionUnavailable`.
pub const SESSION_UNAVAILABLE: i64 = -32004;
/// Optimistic-concurrency failure on `expectedRevision`.
pub const REVISION_MISMATCH: i64 = -32009;
/// A prompt (or compact/goal) is already running.
pub const BUSY: i64 = -32010;
/// Server → client request errors (`PROTOCOL_CLIENT_REQUEST_ERROR_CODES`).
pub const CLIENT_REQUEST_NO_CLIENT: i64 = -32020;
pub const CLIENT_REQUEST_CANCELLED: i64 = -32021;
pub const CLIENT_REQUEST_TIMED_OUT: i64 = -32022;

/// One decoded stdin line.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Blank line: skipped.
    Blank,
    /// Not JSON.
    ParseError,
    /// JSON that fits no message shape; carries the union's issues.
    Invalid(Vec<Value>),
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Response {
        id: Value,
        result: Value,
    },
    ErrorResponse {
        id: Value,
        code: i64,
        message: String,
        data: Option<Value>,
    },
}

/// Decodes one line (without its newline). Lines are trimmed first, as the transport does.
pub fn decode(line: &[u8]) -> Incoming {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return Incoming::Blank;
    }
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Incoming::ParseError;
    };
    let issues = zod::check(&super::schemas::named("message"), Some(&value));
    if !issues.is_empty() {
        return Incoming::Invalid(issues);
    }
    let object = value.as_object().expect("the schema accepts objects only");
    let id = object.get("id").cloned();
    match (id, object.get("method").and_then(Value::as_str)) {
        (Some(id), Some(method)) => Incoming::Request {
            id,
            method: method.to_owned(),
            params: object.get("params").cloned(),
        },
        (None, Some(method)) => Incoming::Notification {
            method: method.to_owned(),
            params: object.get("params").cloned(),
        },
        (Some(id), None) => match object.get("error") {
            Some(error) => Incoming::ErrorResponse {
                id,
                code: error["code"].as_i64().unwrap_or(0),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
                data: error.get("data").cloned(),
            },
            None => Incoming::Response {
                id,
                result: object.get("result").cloned().unwrap_or(Value::Null),
            },
        },
        (None, None) => unreachable!("every message shape has an id or a method"),
    }
}

/// The transport's reply to a line that is not JSON.
pub fn parse_error_frame() -> Value {
    json!({"error": {"code": PARSE_ERROR, "message": "Parse error"}, "id": "parse-error"})
}

/// The transport's reply to JSON that is no ZCode Protocol message.
pub fn invalid_message_frame(issues: &[Value]) -> Value {
    json!({
        "error": {"code": INVALID_MESSAGE, "data": {"issues": issues},
                  "message": "Invalid ZCode Protocol message"},
        "id": "invalid-message",
    })
}

pub fn result_frame(id: &Value, result: Value) -> Value {
    json!({"id": id, "result": result})
}

/// A protocol error; `data` is omitted when absent (JSON.stringify drops `undefined`).
pub fn error_frame(id: &Value, error: &ProtocolError) -> Value {
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    json!({"error": body, "id": id})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"method": method, "params": params})
}

/// An error a method answers with: `{code, message, data?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ProtocolError {
    pub fn new(code: i64, message: impl Into<String>) -> ProtocolError {
        ProtocolError { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> ProtocolError {
        self.data = Some(data);
        self
    }

    /// `parseParams` failure: `-32602` with the summary message and the ZodError as data.
    pub fn invalid_params(issues: &[Value]) -> ProtocolError {
        ProtocolError::new(INVALID_PARAMS, zod::invalid_params_message(issues))
            .with_data(zod::error_data(issues))
    }

    pub fn method_not_found(method: &str) -> ProtocolError {
        ProtocolError::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// `requireSession`: the session has no resident runtime in this process.
    pub fn not_active(session_id: &str) -> ProtocolError {
        ProtocolError::new(SESSION_UNAVAILABLE, format!("Session is not active: {session_id}"))
    }

    /// A business error: a plain `Error` with a stable `data.code`.
    pub fn business(message: impl Into<String>, code: &str) -> ProtocolError {
        ProtocolError::internal("Error", message, Some(code))
    }

    /// A plain `Error` thrown inside a handler (`toProtocolError`): `-32603`, with the error's
    /// `name` and, for business errors, its stable `code` in `data`.
    pub fn internal(name: &str, message: impl Into<String>, code: Option<&str>) -> ProtocolError {
        let mut data = json!({"name": name});
        if let Some(code) = code {
            data["code"] = json!(code);
        }
        ProtocolError::new(INTERNAL_ERROR, message).with_data(data)
    }
}

/// Validates params against `schema`; a failure is the `-32602` error the Agent answers.
pub fn parse_params(schema: &Schema, params: Option<&Value>) -> Result<Value, ProtocolError> {
    let issues = zod::check(schema, params);
    if issues.is_empty() {
        Ok(params.cloned().unwrap_or(Value::Null))
    } else {
        Err(ProtocolError::invalid_params(&issues))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_four_shapes() {
        assert_eq!(
            decode(br#" {"id":7,"method":"session/list","params":{}} "#),
            Incoming::Request {
                id: json!(7),
                method: "session/list".into(),
                params: Some(json!({}))
            }
        );
        assert!(matches!(decode(br#"{"method":"x"}"#), Incoming::Notification { .. }));
        assert_eq!(
            decode(br#"{"id":"a","result":{"ok":true}}"#),
            Incoming::Response { id: json!("a"), result: json!({"ok": true}) }
        );
        assert!(matches!(
            decode(br#"{"id":"a","error":{"code":-32601,"message":"no"}}"#),
            Incoming::ErrorResponse { code: -32601, .. }
        ));
        assert_eq!(decode(b"   "), Incoming::Blank);
    }

    #[test]
    fn rejects_jsonrpc_members_bad_ids_and_non_json() {
        assert_eq!(decode(b"{not json"), Incoming::ParseError);
        let Incoming::Invalid(issues) = decode(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#) else {
            panic!("a jsonrpc member is no ZCode Protocol message");
        };
        assert_eq!(issues[0]["code"], "invalid_union");
        // The four branches report what a live Agent reported (tests/recorded/app-server).
        let branches = issues[0]["errors"].as_array().unwrap();
        assert_eq!(branches[0][0]["keys"], json!(["jsonrpc"]));
        // The order of the keys depends on serde_json's `preserve_order`, which a workspace
        // build turns on: compare them as a set.
        assert_eq!(sorted_strings(&branches[1][0]["keys"]), ["id", "jsonrpc"]);
        assert_eq!(branches[2][0]["expected"], "nonoptional");
        assert_eq!(branches[2][0]["path"], json!(["result"]));
        assert_eq!(sorted_strings(&branches[2][1]["keys"]), ["jsonrpc", "method"]);
        assert_eq!(branches[3][0]["path"], json!(["error"]));
        assert!(matches!(decode(br#"{"id":1.5,"method":"x"}"#), Incoming::Invalid(_)));
        assert!(matches!(decode(br#"{"id":1,"method":""}"#), Incoming::Invalid(_)));
        assert!(matches!(decode(b"[1,2]"), Incoming::Invalid(_)));
        let frame = invalid_message_frame(&issues);
        assert_eq!(frame["id"], "invalid-message");
        assert_eq!(frame["error"]["code"], -32600);
    }

    #[test]
    fn errors_omit_absent_data() {
        let frame = error_frame(&json!(1), &ProtocolError::method_not_found("a/b"));
        assert_eq!(
            frame,
            json!({"error": {"code": -32601, "message": "Method not found: a/b"}, "id": 1})
        );
    }

    fn sorted_strings(value: &serde_json::Value) -> Vec<String> {
        let mut strings: Vec<String> =
            value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        strings.sort();
        strings
    }
}
