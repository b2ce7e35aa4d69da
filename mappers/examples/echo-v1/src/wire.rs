//! The echo protocol on the wire. After a one-line JSON handshake each way, both sides send
//! binary frames: a `u32` big-endian length, then that many bytes (1 to 1 MiB, the SDK's default
//! [`LengthPrefix`]): the frame kind, then what the kind says.

use zcode_mapper_sdk::contract::{MapperError, NativeRequest};
use zcode_mapper_sdk::framing::{LengthPrefix, Reader};
use zcode_mapper_sdk::json::{canonical, protocol};

pub const REQUEST: u8 = 0x01; // to host: u64 id, JSON {method, params}
pub const ANSWER: u8 = 0x02; // to host: u64 id of the host's ping, JSON result (untracked)
pub const WELCOME: u8 = 0x81; // from host: JSON {authenticated}, the handshake is done
pub const REPLY: u8 = 0x82; // from host: u64 id, u8 0 ok / 1 error, JSON result or {message}
pub const EVENT: u8 = 0x83; // from host: u8 route length, route, the event (binary, see Event)

/// A frame to the host: kind, `u64` id, JSON (keys sorted: the same bytes in every build).
pub fn frame(kind: u8, id: u64, json: &serde_json::Value) -> Vec<u8> {
    LengthPrefix::U32.encode(&[&[kind], &id.to_be_bytes(), canonical(json).as_bytes()])
}

/// Request `method`, labelled `echo.<method>` (timeout 0: no reply expected).
pub fn request(id: u64, method: &str, params: serde_json::Value, timeout_ms: u32) -> NativeRequest {
    let bytes = frame(REQUEST, id, &serde_json::json!({"method": method, "params": params}));
    NativeRequest { id, bytes, label: format!("echo.{method}"), timeout_ms }
}

/// A session event: `u8` type, `u32` sequence number, then by type the chunk's UTF-8 text, the
/// stop reason (`end_turn` or `cancelled`), or the `u64` id of a ping the host waits on.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    Chunk(String),
    End(String),
    Ping(u64),
}

impl Event {
    /// The event and its sequence number.
    pub fn parse(bytes: &[u8]) -> Result<(u32, Event), MapperError> {
        let mut reader = Reader::new(bytes, "Echo frame");
        let (kind, seq) = (reader.u8()?, reader.u32()?);
        let event = match kind {
            1 => Event::Chunk(reader.rest_text("Echo event text")?.to_string()),
            2 => Event::End(reader.rest_text("Echo event text")?.to_string()),
            3 => {
                let id = reader.u64()?;
                reader.end()?;
                Event::Ping(id)
            }
            other => return Err(protocol(format!("Unknown echo event type {other}"))),
        };
        Ok((seq, event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use zcode_mapper_sdk::framing::{BadLength, Frames};

    #[test]
    fn frames_round_trip_split_anywhere() {
        let bytes = frame(REQUEST, 7, &serde_json::json!({"method": "status"}));
        assert_eq!(&bytes[..5], &[0, 0, 0, bytes.len() as u8 - 4, REQUEST]);
        let mut frames = Frames::default();
        for byte in &bytes {
            assert_eq!(frames.next_frame().unwrap(), None);
            frames.push(std::slice::from_ref(byte));
        }
        let body = frames.next_frame().unwrap().unwrap().body;
        let mut reader = Reader::new(body, "frame");
        assert_eq!((reader.u8().unwrap(), reader.u64().unwrap()), (REQUEST, 7));
        assert_eq!(reader.rest(), br#"{"method":"status"}"#);
        assert_eq!(frames.pending(), 0);
    }

    #[test]
    fn refuses_bad_lengths_and_truncated_events() {
        let mut frames = Frames::default();
        frames.push(&[0, 0, 0, 0]);
        assert_eq!(frames.next_frame().unwrap_err(), BadLength(0));
        let mut frames = Frames::default();
        frames.push(&[0x7f, 0, 0, 0]);
        assert!(frames.next_frame().is_err());
        assert_eq!(Event::parse(&[1, 0, 0]).unwrap_err().message, "Echo frame is truncated");
        assert_eq!(
            Event::parse(&[9, 0, 0, 0, 1]).unwrap_err().message,
            "Unknown echo event type 9"
        );
        assert_eq!(
            Event::parse(&[1, 0, 0, 0, 1, 0xff]).unwrap_err().message,
            "Echo event text is not UTF-8"
        );
    }

    #[test]
    fn reads_each_event_type() {
        assert_eq!(
            Event::parse(&[1, 0, 0, 0, 2, b'h', b'i']).unwrap(),
            (2, Event::Chunk("hi".into()))
        );
        assert_eq!(
            Event::parse(b"\x02\0\0\0\x03end_turn").unwrap(),
            (3, Event::End("end_turn".into()))
        );
        let ping = [&[3, 0, 0, 0, 4][..], &9u64.to_be_bytes()].concat();
        assert_eq!(Event::parse(&ping).unwrap(), (4, Event::Ping(9)));
        assert!(Event::parse(&[&ping[..], &[1]].concat()).is_err());
    }
}
