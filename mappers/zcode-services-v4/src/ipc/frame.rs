//! The transport frames of ZCode's stdio IPC (`SocketProtocol`, ZCode
//! `packages/rpc/src/protocol.ts`): a 13-byte header — type `u8`, id `u32` BE, ack `u32` BE,
//! length `u32` BE — then `length` bytes of message. Only type 1 (Regular) carries messages; the
//! other types (Control 2, Ack 3, Disconnect 5, ReplayRequest 6, Pause 7, Resume 8, KeepAlive 9)
//! belong to ZCode's persistent protocol, which the stdio server does not run. ZCode's reader
//! skips them; here they are a protocol break, because nothing the Server sends should be one.
//! The Server writes id = ack = 0 and ignores both on input.

use super::value::DecodeError;

pub const HEADER_LEN: usize = 13;
const REGULAR: u8 = 1;
/// The largest message accepted: a V4 logical frame may be 16 MiB (ZCode
/// `PROTOCOL_V4_LIMITS.logicalFrameAssemblyMaxBytes`); a physical frame is at most 1 MiB, so
/// no message of this mapper's calls comes near it.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// One message in a Regular frame with id and ack 0, as ZCode's `SocketProtocol.send` writes.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let len = u32::try_from(message.len()).expect("messages stay below 4 GiB");
    let mut out = Vec::with_capacity(HEADER_LEN + message.len());
    out.push(REGULAR);
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Cuts a byte stream into messages, whatever the chunk boundaries.
#[derive(Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already consumed.
    start: usize,
}

impl FrameDecoder {
    pub fn push(&mut self, bytes: &[u8]) {
        self.compact();
        self.buffer.extend_from_slice(bytes);
    }

    /// Drops consumed bytes once they are at least half the buffer (amortised, and never a
    /// copy of a large message the caller still reads).
    fn compact(&mut self) {
        if self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        } else if self.start > 0 && self.start >= self.buffer.len() / 2 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
    }

    /// Bytes received but not yet part of a complete message.
    pub fn pending(&self) -> usize {
        self.buffer.len() - self.start
    }

    /// The next complete message, if there is one, borrowed from the buffer: a message is
    /// decoded where it lies rather than copied out first (F-20).
    pub fn next_message(&mut self) -> Result<Option<&[u8]>, DecodeError> {
        self.compact();
        let rest = &self.buffer[self.start..];
        if rest.len() < HEADER_LEN {
            return Ok(None);
        }
        if rest[0] != REGULAR {
            return Err(DecodeError(format!(
                "an IPC frame of type {} (only Regular frames carry messages)",
                rest[0]
            )));
        }
        let len = u32::from_be_bytes([rest[9], rest[10], rest[11], rest[12]]) as usize;
        if len > MAX_MESSAGE {
            return Err(DecodeError(format!("an IPC frame of {len} bytes exceeds {MAX_MESSAGE}")));
        }
        if rest.len() < HEADER_LEN + len {
            return Ok(None);
        }
        let from = self.start + HEADER_LEN;
        self.start = from + len;
        Ok(Some(&self.buffer[from..from + len]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_regular_frames_with_zero_id_and_ack() {
        assert_eq!(frame(b"ab"), [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, b'a', b'b']);
    }

    #[test]
    fn reads_frames_split_at_every_byte() {
        let stream: Vec<u8> = [frame(b"one"), frame(b""), frame(b"three")].concat();
        for split in 0..=stream.len() {
            let mut decoder = FrameDecoder::default();
            let mut messages = Vec::new();
            for chunk in [&stream[..split], &stream[split..]] {
                decoder.push(chunk);
                while let Some(message) = decoder.next_message().unwrap() {
                    messages.push(message.to_vec());
                }
            }
            assert_eq!(messages, [b"one".to_vec(), vec![], b"three".to_vec()], "split at {split}");
            assert_eq!(decoder.pending(), 0);
        }
    }

    #[test]
    fn refuses_other_frame_types_and_oversized_frames() {
        let mut keepalive = frame(b"");
        keepalive[0] = 9;
        let mut decoder = FrameDecoder::default();
        decoder.push(&keepalive);
        assert_eq!(
            decoder.next_message().unwrap_err().0,
            "an IPC frame of type 9 (only Regular frames carry messages)"
        );
        let mut huge = vec![1, 0, 0, 0, 0, 0, 0, 0, 0];
        huge.extend_from_slice(&((MAX_MESSAGE as u32) + 1).to_be_bytes());
        let mut decoder = FrameDecoder::default();
        decoder.push(&huge);
        assert!(decoder.next_message().unwrap_err().0.contains("exceeds"));
    }
}
