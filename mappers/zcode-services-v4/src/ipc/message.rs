//! Channel messages (ZCode `packages/rpc/src/channels.shared.ts`, `channelClient.ts`): each is
//! a header value followed by a body value.
//!
//! Requests: `[100, id, channel, method]` + the positional arguments as an array (a call);
//! `[101, id]` + undefined (cancel); `[102, id, channel, event]` + the listen argument itself
//! (listen); `[103, id]` + undefined (dispose). Responses: `[200]` Initialize, `[201, id]` +
//! result, `[202, id]` + a flattened error (`{message, name, stack, code?, ...}`), `[203, id]` +
//! a raw error value, `[204, id]` + an event's data (id = the listen's id).

use super::frame::frame;
use super::value::{DecodeError, IpcValue, Reader};

const CALL: i32 = 100;
const CANCEL: i32 = 101;
const LISTEN: i32 = 102;
const DISPOSE: i32 = 103;

fn message(header: IpcValue, body: IpcValue) -> Vec<u8> {
    let mut out = Vec::new();
    header.encode(&mut out);
    body.encode(&mut out);
    frame(&out)
}

/// A call whose arguments are JSON texts (each an object, as every call here takes).
pub fn call(id: u64, channel: &str, method: &str, args: &[String]) -> Vec<u8> {
    let header = IpcValue::Array(vec![
        IpcValue::Int(CALL),
        IpcValue::number(id),
        IpcValue::String(channel.to_string()),
        IpcValue::String(method.to_string()),
    ]);
    let body = IpcValue::Array(args.iter().map(|arg| IpcValue::json(arg.clone())).collect());
    message(header, body)
}

/// A listen for `event`, whose argument is JSON text.
pub fn listen(id: u64, channel: &str, event: &str, arg: &str) -> Vec<u8> {
    let header = IpcValue::Array(vec![
        IpcValue::Int(LISTEN),
        IpcValue::number(id),
        IpcValue::String(channel.to_string()),
        IpcValue::String(event.to_string()),
    ]);
    message(header, IpcValue::json(arg))
}

/// Ends the listen with id `id`.
pub fn dispose(id: u64) -> Vec<u8> {
    message(
        IpcValue::Array(vec![IpcValue::Int(DISPOSE), IpcValue::number(id)]),
        IpcValue::Undefined,
    )
}

/// Cancels the call with id `id`.
pub fn cancel(id: u64) -> Vec<u8> {
    message(IpcValue::Array(vec![IpcValue::Int(CANCEL), IpcValue::number(id)]), IpcValue::Undefined)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Initialize,
    Success { id: u64, body: IpcValue },
    Error { id: u64, body: IpcValue },
    ErrorObj { id: u64, body: IpcValue },
    Event { id: u64, body: IpcValue },
}

fn id_of(value: &IpcValue) -> Result<u64, DecodeError> {
    match value {
        IpcValue::Int(id) if *id >= 0 => Ok(*id as u64),
        IpcValue::Json(text) => text.trim().parse::<u64>().map_err(|_| {
            DecodeError(format!("a response id is not a non-negative integer: {text}"))
        }),
        other => {
            Err(DecodeError(format!("a response id is not a non-negative integer: {other:?}")))
        }
    }
}

/// One message from the Server. Requests from the Server (types 100–103) only exist in the
/// `desktop-attached-remote` authority mode, which this mapper never selects: they are refused.
pub fn decode_response(message: &[u8]) -> Result<Response, DecodeError> {
    let mut reader = Reader::new(message);
    let header = reader.value()?;
    let body = reader.value()?;
    if !reader.at_end() {
        return Err(DecodeError("bytes after a message's body".into()));
    }
    let IpcValue::Array(header) = header else {
        return Err(DecodeError("a message header is not an array".into()));
    };
    match header.as_slice() {
        [IpcValue::Int(200)] => Ok(Response::Initialize),
        [IpcValue::Int(kind @ 201..=204), id] => {
            let id = id_of(id)?;
            Ok(match kind {
                201 => Response::Success { id, body },
                202 => Response::Error { id, body },
                203 => Response::ErrorObj { id, body },
                _ => Response::Event { id, body },
            })
        }
        [IpcValue::Int(kind @ 100..=103), ..] => Err(DecodeError(format!(
            "the Services Server sent a request (type {kind}); none is expected in standalone mode"
        ))),
        other => Err(DecodeError(format!("an unknown message header: {other:?}"))),
    }
}

/// How a large event's message begins: the listen's id, and where its body's JSON text starts
/// and how long it is.
#[derive(Debug, PartialEq, Eq)]
pub struct EventOpening {
    pub id: u64,
    pub text_at: usize,
    pub text_len: usize,
}

/// The opening of a message of `len` bytes from its first bytes, `head`, if it is an event
/// whose body is one JSON value (tag 5) that ends the message, as ZCode sends events: its text
/// can then be handed on as it arrives. `None` for anything else, which is read whole and
/// judged by [`decode_response`].
pub fn event_opening(head: &[u8], len: usize) -> Option<EventOpening> {
    let mut reader = Reader::new(head);
    let IpcValue::Array(header) = reader.value().ok()? else {
        return None;
    };
    let [IpcValue::Int(204), id] = header.as_slice() else {
        return None;
    };
    let id = id_of(id).ok()?;
    let text_len = reader.json_len().ok()?;
    let text_at = reader.position();
    (text_at.checked_add(text_len)? == len).then_some(EventOpening { id, text_at, text_len })
}

/// Decodes a request this mapper wrote, for tests and golden traces: `(header, body)`.
pub fn decode_request(message: &[u8]) -> Result<(IpcValue, IpcValue), DecodeError> {
    let mut reader = Reader::new(message);
    let header = reader.value()?;
    let body = reader.value()?;
    if !reader.at_end() {
        return Err(DecodeError("bytes after a message's body".into()));
    }
    Ok((header, body))
}

/// The message of a single frame (tests and traces).
pub fn unframe(bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut decoder = super::frame::FrameDecoder::default();
    decoder.push(bytes);
    let message =
        decoder.next_message()?.ok_or_else(|| DecodeError("an incomplete frame".into()))?.to_vec();
    if decoder.pending() != 0 {
        return Err(DecodeError("more than one frame".into()));
    }
    Ok(message)
}

/// A response message (tests, traces, and the simulator-free golden inputs).
pub fn encode_response(response: &Response) -> Vec<u8> {
    let (header, body) = match response {
        Response::Initialize => (vec![IpcValue::Int(200)], IpcValue::Undefined),
        Response::Success { id, body } => {
            (vec![IpcValue::Int(201), IpcValue::number(*id)], body.clone())
        }
        Response::Error { id, body } => {
            (vec![IpcValue::Int(202), IpcValue::number(*id)], body.clone())
        }
        Response::ErrorObj { id, body } => {
            (vec![IpcValue::Int(203), IpcValue::number(*id)], body.clone())
        }
        Response::Event { id, body } => {
            (vec![IpcValue::Int(204), IpcValue::number(*id)], body.clone())
        }
    };
    message(IpcValue::Array(header), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_calls_with_positional_arguments() {
        let bytes = call(3, "zcode-agent", "initialize", &["{\"workspacePath\":\"/w\"}".into()]);
        let (header, body) = decode_request(&unframe(&bytes).unwrap()).unwrap();
        assert_eq!(
            header,
            IpcValue::Array(vec![
                IpcValue::Int(100),
                IpcValue::Int(3),
                IpcValue::String("zcode-agent".into()),
                IpcValue::String("initialize".into()),
            ])
        );
        assert_eq!(body, IpcValue::Array(vec![IpcValue::json("{\"workspacePath\":\"/w\"}")]));
    }

    #[test]
    fn writes_listen_with_the_argument_itself_and_bare_dispose_and_cancel() {
        let (header, body) = decode_request(
            &unframe(&listen(9, "zcode-agent", "onDynamicConversationFrame", "{}")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            header,
            IpcValue::Array(vec![
                IpcValue::Int(102),
                IpcValue::Int(9),
                IpcValue::String("zcode-agent".into()),
                IpcValue::String("onDynamicConversationFrame".into()),
            ])
        );
        assert_eq!(body, IpcValue::json("{}"));
        let (header, body) = decode_request(&unframe(&dispose(9)).unwrap()).unwrap();
        assert_eq!(
            (header, body),
            (IpcValue::Array(vec![IpcValue::Int(103), IpcValue::Int(9)]), IpcValue::Undefined)
        );
        let (header, _) = decode_request(&unframe(&cancel(4)).unwrap()).unwrap();
        assert_eq!(header, IpcValue::Array(vec![IpcValue::Int(101), IpcValue::Int(4)]));
    }

    #[test]
    fn reads_every_response_type() {
        let round = |response: Response| {
            let decoded = decode_response(&unframe(&encode_response(&response)).unwrap()).unwrap();
            assert_eq!(decoded, response);
        };
        round(Response::Initialize);
        round(Response::Success { id: 1, body: IpcValue::json("{}") });
        round(Response::Error { id: 2, body: IpcValue::json("{\"message\":\"x\"}") });
        round(Response::ErrorObj { id: 3, body: IpcValue::String("boom".into()) });
        round(Response::Event { id: 1 << 33, body: IpcValue::json("{}") });
    }

    #[test]
    fn refuses_requests_and_unknown_headers() {
        let encode = |header: IpcValue| {
            let mut out = Vec::new();
            header.encode(&mut out);
            IpcValue::Undefined.encode(&mut out);
            out
        };
        let request = encode(IpcValue::Array(vec![IpcValue::Int(100), IpcValue::Int(0)]));
        assert!(decode_response(&request).unwrap_err().0.contains("sent a request"));
        let unknown = encode(IpcValue::Array(vec![IpcValue::Int(205), IpcValue::Int(0)]));
        assert!(decode_response(&unknown).unwrap_err().0.starts_with("an unknown message header"));
        let negative = encode(IpcValue::Array(vec![IpcValue::Int(201), IpcValue::Int(-1)]));
        assert!(decode_response(&negative).unwrap_err().0.contains("non-negative"));
        assert_eq!(
            decode_response(&encode(IpcValue::Int(200))).unwrap_err().0,
            "a message header is not an array"
        );
        let mut trailing = encode(IpcValue::Array(vec![IpcValue::Int(200)]));
        trailing.push(0);
        assert_eq!(decode_response(&trailing).unwrap_err().0, "bytes after a message's body");
        assert_eq!(decode_response(&[]).unwrap_err().0, "a value is cut off");
    }
}
