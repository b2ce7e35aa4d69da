//! Channel messages: a header array then a body value, both in the RPC value encoding.
//! Requests `[100, id, channel, name]` + positional arguments, `[101, id]` cancel,
//! `[102, id, channel, event]` + the listen argument itself, `[103, id]` dispose. Responses
//! `[200]` initialize, `[201, id]` result, `[202, id]` error, `[203, id]` error object,
//! `[204, id]` event.

use serde_json::Value;

use super::value::{DecodeError, RpcValue};

pub const PROMISE: i32 = 100;
pub const PROMISE_CANCEL: i32 = 101;
pub const EVENT_LISTEN: i32 = 102;
pub const EVENT_DISPOSE: i32 = 103;
pub const INITIALIZE: i32 = 200;
pub const PROMISE_SUCCESS: i32 = 201;
pub const PROMISE_ERROR: i32 = 202;
pub const EVENT_FIRE: i32 = 204;

/// A decoded client message.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Call { id: i64, channel: String, method: String, args: Vec<Option<Value>> },
    Cancel { id: i64 },
    Listen { id: i64, channel: String, event: String, arg: Option<Value> },
    Dispose { id: i64 },
}

/// Decodes a message body. Types the server does not know are `Ok(None)`, as the real
/// channel server ignores them.
pub fn decode_request(body: &[u8]) -> Result<Option<Request>, DecodeError> {
    let (header, used) = RpcValue::decode(body)?;
    let (payload, _) = RpcValue::decode(&body[used..])?;
    let RpcValue::Array(header) = header else {
        return Err(DecodeError("message header is not an array".into()));
    };
    let kind = match header.first() {
        Some(RpcValue::Int(kind)) => *kind,
        _ => return Err(DecodeError("message header has no type".into())),
    };
    let id = || match header.get(1) {
        Some(RpcValue::Int(id)) => Ok(i64::from(*id)),
        // Ids past 2^31 travel as JSON numbers.
        Some(RpcValue::Object(Value::Number(id))) if id.is_i64() => Ok(id.as_i64().unwrap_or(0)),
        _ => Err(DecodeError("message header has no id".into())),
    };
    let text = |index: usize, what: &str| match header.get(index) {
        Some(RpcValue::String(text)) => Ok(text.clone()),
        _ => Err(DecodeError(format!("message header has no {what}"))),
    };
    let request = match kind {
        PROMISE => {
            // Arguments are applied positionally; a body that is not an array gives none.
            let args = match payload {
                RpcValue::Array(items) => items.iter().map(argument).collect(),
                _ => Vec::new(),
            };
            Request::Call {
                id: id()?,
                channel: text(2, "channel")?,
                method: text(3, "method")?,
                args,
            }
        }
        PROMISE_CANCEL => Request::Cancel { id: id()? },
        EVENT_LISTEN => Request::Listen {
            id: id()?,
            channel: text(2, "channel")?,
            event: text(3, "event")?,
            arg: argument(&payload),
        },
        EVENT_DISPOSE => Request::Dispose { id: id()? },
        _ => return Ok(None),
    };
    Ok(Some(request))
}

fn argument(value: &RpcValue) -> Option<Value> {
    match value {
        RpcValue::Undefined => None,
        other => Some(other.to_json()),
    }
}

/// A server message: header ints, then the body.
pub fn encode_response(kind: i32, id: Option<i64>, body: &RpcValue) -> Vec<u8> {
    let mut header = vec![RpcValue::Int(kind)];
    if let Some(id) = id {
        header.push(match i32::try_from(id) {
            Ok(id) => RpcValue::Int(id),
            Err(_) => RpcValue::Object(Value::from(id)),
        });
    }
    let mut bytes = Vec::new();
    RpcValue::Array(header).encode(&mut bytes);
    body.encode(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(header: Vec<RpcValue>, body: RpcValue) -> Vec<u8> {
        let mut bytes = Vec::new();
        RpcValue::Array(header).encode(&mut bytes);
        body.encode(&mut bytes);
        bytes
    }

    #[test]
    fn decodes_calls_with_positional_arguments() {
        let body = message(
            vec![
                RpcValue::Int(100),
                RpcValue::Int(4),
                "zcode-agent".into_value(),
                "initialize".into_value(),
            ],
            RpcValue::Array(vec![
                RpcValue::Object(json!({"workspacePath": "/w"})),
                RpcValue::Undefined,
            ]),
        );
        assert_eq!(
            decode_request(&body).unwrap(),
            Some(Request::Call {
                id: 4,
                channel: "zcode-agent".into(),
                method: "initialize".into(),
                args: vec![Some(json!({"workspacePath": "/w"})), None],
            })
        );
    }

    #[test]
    fn decodes_listen_dispose_and_cancel() {
        let listen = message(
            vec![RpcValue::Int(102), RpcValue::Int(1), "c".into_value(), "onDynamicX".into_value()],
            RpcValue::Object(json!({"workspacePath": "/w"})),
        );
        assert!(matches!(
            decode_request(&listen).unwrap(),
            Some(Request::Listen { id: 1, arg: Some(_), .. })
        ));
        let dispose = message(vec![RpcValue::Int(103), RpcValue::Int(1)], RpcValue::Undefined);
        assert_eq!(decode_request(&dispose).unwrap(), Some(Request::Dispose { id: 1 }));
        let cancel = message(vec![RpcValue::Int(101), RpcValue::Int(2)], RpcValue::Undefined);
        assert_eq!(decode_request(&cancel).unwrap(), Some(Request::Cancel { id: 2 }));
        let unknown = message(vec![RpcValue::Int(150)], RpcValue::Undefined);
        assert_eq!(decode_request(&unknown).unwrap(), None);
    }

    #[test]
    fn refuses_headers_that_are_not_arrays() {
        let body = message(vec![], RpcValue::Undefined);
        assert!(decode_request(&body).is_err());
        let mut bytes = Vec::new();
        RpcValue::Int(100).encode(&mut bytes);
        RpcValue::Undefined.encode(&mut bytes);
        assert!(decode_request(&bytes).is_err());
    }

    trait IntoValue {
        fn into_value(self) -> RpcValue;
    }

    impl IntoValue for &str {
        fn into_value(self) -> RpcValue {
            RpcValue::String(self.to_owned())
        }
    }
}
