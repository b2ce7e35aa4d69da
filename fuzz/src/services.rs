//! The `zcode-services-v4` decoder of Services Server stdout under arbitrary bytes: the hello
//! line, the 13-byte transport frames, the two-value messages and the value encoding.
//!
//! Properties:
//! - no panic;
//! - the split does not matter: the same bytes pushed whole or in random pieces give the same
//!   error, and without one the same inbound items (a push that fails returns no items, so
//!   what came before an error in the same chunk differs with the chunking; the core fails
//!   the transport at the first error either way);
//! - no silence, no invention: without an error, every complete Regular frame after `[200]` is
//!   exactly one reply or event, and nothing comes from bytes that are not a whole frame. A
//!   large event comes in pieces as it arrives (`zcode_mapper_sdk::pieces`); it is counted, and
//!   compared across splits, as its session joins it;
//! - every reply and event body handed on is the JSON form of the IPC value ZCode sent, or an
//!   error: never different JSON (see [`check_values`]). A large event is UTF-8 (its session
//!   refuses it otherwise) and its session parses it: the connection does not wait for it to
//!   check it;
//! - values the decoder reads re-encode to bytes that decode to the same value.

use serde_json::Value;
use zcode_contract::{Inbound, NativeData, ReplyBody, RoutedEvent};
use zcode_mapper_sdk::Connection as _;
use zcode_mapper_sdk::pieces::Joiner;
use zcode_services_v4::ServicesConnection;
use zcode_services_v4::ipc::frame::{HEADER_LEN, MAX_MESSAGE};
use zcode_services_v4::ipc::message::{Response, encode_response};
use zcode_services_v4::ipc::value::{IpcValue, Reader};

use crate::split::{Decoded, check_cuts};

/// A hello as ZCode's `entry-stdio.ts` writes it.
pub const HELLO: &[u8] =
    b"{\"type\":\"zcode-hello\",\"version\":\"4.0.0\",\"platform\":\"linux\",\"arch\":\"x64\",\"pid\":7}\n";

/// libFuzzer entry: the first byte says whether a valid hello and `[200]` come first (so the
/// fuzzer spends its time on the binary phase), the next four choose the split.
pub fn check_services_frames(data: &[u8]) {
    let (handshake, seed, stream) = match data {
        [mode, a, b, c, d, rest @ ..] => {
            (mode & 1 == 1, u32::from_le_bytes([*a, *b, *c, *d]), rest)
        }
        _ => (false, 0, data),
    };
    let mut bytes = if handshake { handshake_bytes() } else { Vec::new() };
    bytes.extend_from_slice(stream);
    check_stream(&bytes, seed);
    check_values(stream);
}

/// The hello line and the `[200]` Initialize message, framed.
pub fn handshake_bytes() -> Vec<u8> {
    let mut bytes = HELLO.to_vec();
    bytes.extend(encode_response(&Response::Initialize));
    bytes
}

/// Checks the decoder's properties for `stream` split as `seed` says (the hello counts as
/// one item: its acknowledgement).
pub fn check_stream(stream: &[u8], seed: u32) {
    let [whole, piecewise] =
        check_cuts(stream, seed, || complete_frames_after_hello(stream), decode);
    let items = [&whole, &piecewise].into_iter().flat_map(|decoded| {
        let joined = |index| decoded.joined.contains(&index);
        decoded.items.iter().enumerate().map(move |(index, item)| (item, joined(index)))
    });
    for (item, joined) in items {
        let text = match item {
            Inbound::Reply(reply) => match &reply.body {
                ReplyBody::Ok(NativeData::Text(text)) => text,
                ReplyBody::Ok(other) => panic!("a reply body that is not text: {other:?}"),
                ReplyBody::Error(_) => continue,
                ReplyBody::Lost(why) => panic!("the decoder reported a lost reply: {why}"),
            },
            Inbound::Event(event) => {
                assert!(!event.route.is_empty(), "an event without a route");
                match &event.payload {
                    NativeData::Text(text) => text,
                    other => panic!("an event payload that is not text: {other:?}"),
                }
            }
            Inbound::Write(_) | Inbound::Ready => continue,
            other => panic!("the Services Server decoder produced {other:?}"),
        };
        if joined {
            continue;
        }
        // Sessions parse what the connection hands on; it must be JSON text (bodies of
        // messages that are not are refused by the decoder, never passed on).
        serde_json::from_str::<&serde_json::value::RawValue>(text)
            .unwrap_or_else(|e| panic!("a body handed on is not JSON ({e}): {text:?}"));
    }
}

fn decode(pieces: &[&[u8]]) -> Decoded {
    let mut connection = ServicesConnection::new();
    let decoded = crate::split::decode(pieces, |read| match read {
        Some(bytes) => connection.push(bytes),
        None => connection.finish(),
    });
    join_pieces(decoded)
}

/// Joins the pieces of each large event as its session does, so what a stream means does not
/// depend on where its reads fell. A piece the session would refuse is the decode's error,
/// unless the transport failed too; the pieces of an event the stream cuts off make nothing,
/// as for any incomplete frame.
fn join_pieces(decoded: Decoded) -> Decoded {
    let mut joiner = Joiner::default();
    let mut out = Decoded { items: Vec::new(), error: None, joined: Vec::new() };
    for item in decoded.items {
        let Inbound::Event(RoutedEvent { route, payload: NativeData::Binary(piece) }) = item else {
            assert!(!joiner.in_progress(), "an item between the pieces of one event: {item:?}");
            out.items.push(item);
            continue;
        };
        match joiner.push(&piece, MAX_MESSAGE) {
            Ok(Some(text)) => {
                out.joined.push(out.items.len());
                let event = RoutedEvent { route, payload: NativeData::Text(text) };
                out.items.push(Inbound::Event(event));
            }
            Ok(None) => {}
            Err(error) => {
                // A transport that fails anywhere fails first: the core ends the connection.
                out.error = decoded.error.or(Some(error.message));
                return out;
            }
        }
    }
    out.error = decoded.error;
    out
}

/// The inbound items an error-free decode must give: the acknowledgement of the hello, then
/// one per complete frame (the first is `[200]`, which is `ready`).
fn complete_frames_after_hello(stream: &[u8]) -> usize {
    let Some(end) = stream.iter().position(|&b| b == b'\n') else { return 0 };
    let mut rest = &stream[end + 1..];
    let mut frames = 0;
    while rest.len() >= HEADER_LEN {
        let len = u32::from_be_bytes([rest[9], rest[10], rest[11], rest[12]]) as usize;
        if rest.len() < HEADER_LEN + len {
            break;
        }
        frames += 1;
        rest = &rest[HEADER_LEN + len..];
    }
    1 + frames
}

/// The value decoder on its own: whatever `bytes` decode to re-encodes to the same value, and
/// its JSON form is the JSON the value means, or an error — never other JSON. (ZCode parses a
/// tag-5 value with `JSON.parse`, which refuses anything that is not exactly one JSON value.)
pub fn check_values(bytes: &[u8]) {
    let mut reader = Reader::new(bytes);
    let Ok(value) = reader.value() else { return };
    let mut encoded = Vec::new();
    value.encode(&mut encoded);
    let mut again = Reader::new(&encoded);
    assert_eq!(again.value().as_ref(), Ok(&value), "a value does not survive re-encoding");
    assert!(again.at_end(), "re-encoding left bytes over");
    let meant = json_of(&value);
    if let Ok(text) = value.into_json_text() {
        match serde_json::from_str::<Value>(&text) {
            Ok(parsed) => assert_eq!(
                Some(&parsed),
                meant.as_ref(),
                "the JSON handed on is not what the IPC value means: {text:?}"
            ),
            Err(_) => assert!(meant.is_none(), "a valid value turned into invalid JSON: {text:?}"),
        }
    }
}

/// What an IPC value means as JSON, as ZCode's deserializer reads it; `None` where it would
/// throw (tag-5 text that is not one JSON value) or where this mapper has no JSON for it.
fn json_of(value: &IpcValue) -> Option<Value> {
    Some(match value {
        IpcValue::Undefined => Value::Null,
        IpcValue::String(text) => Value::String(text.clone()),
        IpcValue::Bytes { .. } => return None,
        IpcValue::Array(items) => Value::Array(items.iter().map(json_of).collect::<Option<_>>()?),
        IpcValue::Json(text) => serde_json::from_str(text).ok()?,
        IpcValue::Int(int) => Value::from(*int),
    })
}

/// Realistic messages of a session (replies, errors, events with V4 wire frames), framed: the
/// seeds of the bounded property test and of a fuzzing corpus.
pub fn message_templates() -> Vec<Vec<u8>> {
    let wire = r#"{"wireVersion":3,"kind":"complete","deliveryKind":"online","logicalFrameId":"sub-1-lf-2","logicalFrameOrdinal":2,"topic":"conversation/sess_1","subscriptionId":"sub-1","frame":{"topic":"conversation/sess_1","subscriptionId":"sub-1","fromSeq":4,"toSeq":5,"sentAt":1700000000000,"payload":{"kind":"deltas","deltas":[{"op":"row.delta","rowId":3,"path":"text","append":"Hello"}]}}}"#;
    let fragment = r#"{"wireVersion":3,"kind":"fragment","deliveryKind":"online","logicalFrameId":"sub-1-lf-3","logicalFrameOrdinal":3,"topic":"conversation/sess_1","subscriptionId":"sub-1","fragmentIndex":0,"fragmentCount":2,"logicalBytes":10,"checksum":{"algorithm":"crc32","value":"cbf43926"},"dataBase64":"MTIzNDU="}"#;
    let ack = r#"{"commandId":"c-1","status":"accepted","revisionAtDecision":4,"result":{"type":"inputAccepted","inputId":"c-1","delivery":"startNow"}}"#;
    let error = r#"{"message":"Method not found: nothing","name":"Error","stack":"Error: Method not found"}"#;
    let responses = [
        Response::Success {
            id: 0,
            body: IpcValue::json(r#"{"kind":"hello","protocolVersion":3}"#),
        },
        Response::Success { id: 1, body: IpcValue::Undefined },
        Response::Success { id: 2, body: IpcValue::json(ack) },
        Response::Success {
            id: 3,
            body: IpcValue::Array(vec![
                IpcValue::json(r#"{"sessionId":"sess_1","updatedAt":1700000000000}"#),
                IpcValue::String("text".into()),
                IpcValue::Int(-7),
            ]),
        },
        Response::Error { id: 4, body: IpcValue::json(error) },
        Response::ErrorObj { id: 5, body: IpcValue::String("raw".into()) },
        Response::Event { id: 6, body: IpcValue::json(wire) },
        Response::Event { id: 6, body: IpcValue::json(fragment) },
        Response::Success { id: 4_000_000_000, body: IpcValue::Int(i32::MAX) },
    ];
    responses.iter().map(encode_response).collect()
}
