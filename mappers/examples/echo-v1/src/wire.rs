//! The echo protocol on the wire. After a one-line JSON handshake each way, both sides send
//! binary frames: a `u32` big-endian length, then that many bytes, the first of which is the
//! frame kind.
//!
//! | kind | direction | body after the kind byte |
//! | --- | --- | --- |
//! | `0x01` request | to host | `u64` id, JSON `{method, params}` |
//! | `0x02` answer | to host | `u64` id of the host's ping, JSON result (untracked) |
//! | `0x81` welcome | from host | JSON `{authenticated}`: the handshake is done |
//! | `0x82` reply | from host | `u64` id, `u8` 0 ok / 1 error, JSON result or `{message}` |
//! | `0x83` event | from host | `u8` route length, route, the event (binary, see [`Event`]) |

use zcode_mapper_sdk::contract::{MapperError, NativeRequest};
use zcode_mapper_sdk::json::protocol;

pub const REQUEST: u8 = 0x01;
pub const ANSWER: u8 = 0x02;
pub const WELCOME: u8 = 0x81;
pub const REPLY: u8 = 0x82;
pub const EVENT: u8 = 0x83;

/// Longest frame accepted.
pub const MAX_FRAME: usize = 1024 * 1024;

/// A frame to the host: kind, `u64` id, JSON (keys sorted, so the bytes are the same in every
/// build).
pub fn frame(kind: u8, id: u64, json: &serde_json::Value) -> Vec<u8> {
    let body = zcode_mapper_sdk::json::canonical(json);
    let length = u32::try_from(1 + 8 + body.len()).expect("frames stay small");
    let mut bytes = Vec::with_capacity(4 + length as usize);
    bytes.extend_from_slice(&length.to_be_bytes());
    bytes.push(kind);
    bytes.extend_from_slice(&id.to_be_bytes());
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// A request to the host with the id the core handed out (timeout 0: no reply expected).
pub fn request(
    id: u64,
    label: &str,
    method: &str,
    params: serde_json::Value,
    timeout_ms: u32,
) -> NativeRequest {
    let bytes = frame(REQUEST, id, &serde_json::json!({"method": method, "params": params}));
    NativeRequest { id, bytes, label: label.to_string(), timeout_ms }
}

/// Reads big-endian integers and slices off the front of a frame, failing closed.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], MapperError> {
        if self.0.len() < n {
            return Err(protocol("Echo frame is truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub fn u8(&mut self) -> Result<u8, MapperError> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, MapperError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    pub fn u64(&mut self) -> Result<u64, MapperError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("eight bytes")))
    }

    pub fn rest(self) -> &'a [u8] {
        self.0
    }
}

/// Splits a byte stream into frame bodies.
#[derive(Default)]
pub struct Frames {
    buffer: Vec<u8>,
}

impl Frames {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame body, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, MapperError> {
        let Some(prefix) = self.buffer.first_chunk::<4>() else { return Ok(None) };
        let length = u32::from_be_bytes(*prefix) as usize;
        if length == 0 || length > MAX_FRAME {
            return Err(protocol(format!("Echo frame length {length} is out of bounds")));
        }
        if self.buffer.len() < 4 + length {
            return Ok(None);
        }
        let body = self.buffer[4..4 + length].to_vec();
        self.buffer.drain(..4 + length);
        Ok(Some(body))
    }

    /// Bytes of a frame that never completed.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// What is left once the handshake line is taken (the first frames may follow it).
    pub fn take_line(&mut self) -> Option<Vec<u8>> {
        let newline = self.buffer.iter().position(|&b| b == b'\n')?;
        let line = self.buffer[..newline].to_vec();
        self.buffer.drain(..=newline);
        Some(line)
    }
}

/// A session event: `u8` type, `u32` sequence number, then by type: the chunk's UTF-8 text, the
/// stop reason (`end_turn` or `cancelled`), or the `u64` id of a ping the host waits on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Chunk { seq: u32, text: String },
    End { seq: u32, reason: String },
    Ping { seq: u32, id: u64 },
}

impl Event {
    pub fn parse(bytes: &[u8]) -> Result<Event, MapperError> {
        let mut reader = Reader(bytes);
        let kind = reader.u8()?;
        let seq = reader.u32()?;
        let text = |bytes: &[u8]| {
            String::from_utf8(bytes.to_vec()).map_err(|_| protocol("Echo event text is not UTF-8"))
        };
        match kind {
            1 => Ok(Event::Chunk { seq, text: text(reader.rest())? }),
            2 => Ok(Event::End { seq, reason: text(reader.rest())? }),
            3 => {
                let id = reader.u64()?;
                if !reader.rest().is_empty() {
                    return Err(protocol("Echo ping has trailing bytes"));
                }
                Ok(Event::Ping { seq, id })
            }
            other => Err(protocol(format!("Unknown echo event type {other}"))),
        }
    }

    pub fn seq(&self) -> u32 {
        match self {
            Event::Chunk { seq, .. } | Event::End { seq, .. } | Event::Ping { seq, .. } => *seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_split_anywhere() {
        let bytes = frame(REQUEST, 7, &serde_json::json!({"method": "status"}));
        assert_eq!(&bytes[..5], &[0, 0, 0, bytes.len() as u8 - 4, REQUEST]);
        let mut frames = Frames::default();
        for byte in &bytes {
            assert_eq!(frames.next_frame().unwrap(), None);
            frames.push(std::slice::from_ref(byte));
        }
        let body = frames.next_frame().unwrap().unwrap();
        let mut reader = Reader(&body);
        assert_eq!((reader.u8().unwrap(), reader.u64().unwrap()), (REQUEST, 7));
        assert_eq!(reader.rest(), br#"{"method":"status"}"#);
        assert_eq!(frames.pending(), 0);
    }

    #[test]
    fn refuses_bad_lengths_and_truncated_events() {
        let mut frames = Frames::default();
        frames.push(&[0, 0, 0, 0]);
        assert_eq!(
            frames.next_frame().unwrap_err().message,
            "Echo frame length 0 is out of bounds"
        );
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
            Event::Chunk { seq: 2, text: "hi".into() }
        );
        assert_eq!(
            Event::parse(b"\x02\0\0\0\x03end_turn").unwrap(),
            Event::End { seq: 3, reason: "end_turn".into() }
        );
        let ping = [&[3, 0, 0, 0, 4][..], &9u64.to_be_bytes()].concat();
        assert_eq!(Event::parse(&ping).unwrap(), Event::Ping { seq: 4, id: 9 });
        assert!(Event::parse(&[&ping[..], &[1]].concat()).is_err());
    }
}
