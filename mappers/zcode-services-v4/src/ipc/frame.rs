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

/// Messages from this size on are not waited for whole: the caller is offered each one as its
/// bytes arrive ([`Next::Opening`]). A turn's last frame comes as events of about 0.8 MB each.
pub const PIECES_FROM: usize = 256 * 1024;
/// The bytes of a large message offered at once: its header value and the start of its body
/// fit, as ZCode writes them (a `[204, id]` header and a tag-5 length take under 20).
pub const OPENING: usize = 64;

/// What the decoder has next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<'a> {
    /// A whole message.
    Message(&'a [u8]),
    /// A message of `len` bytes, at least [`PIECES_FROM`], whose first bytes are in (at least
    /// [`OPENING`] of them, all there are so far). The caller either takes them and the rest
    /// in pieces ([`FrameDecoder::stream`]) or waits for the message whole
    /// ([`FrameDecoder::hold`]); until it says which, the decoder offers the same again.
    Opening { len: usize, head: &'a [u8] },
    /// More of a message being streamed; `rest` bytes of it are still to come.
    Piece { bytes: &'a [u8], rest: usize },
}

/// Cuts a byte stream into messages, whatever the chunk boundaries.
#[derive(Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already consumed.
    start: usize,
    /// Bytes still to come of the message being streamed.
    streaming: Option<usize>,
    /// The opening offered last: where its message begins in `buffer`, and how much was offered.
    opened: Option<(usize, usize)>,
    /// The large message at `start` is to be waited for whole.
    holding: bool,
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
        } else if self.start > 0 && self.start >= self.buffer.len() / 2 && self.opened.is_none() {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
    }

    /// Bytes received or announced but not yet part of a complete message.
    pub fn pending(&self) -> usize {
        self.buffer.len() - self.start + self.streaming.unwrap_or(0)
    }

    /// The next message whole, however large: for readers of the messages this mapper writes
    /// (tests, golden traces), which stream none.
    pub fn next_message(&mut self) -> Result<Option<&[u8]>, DecodeError> {
        self.holding = true;
        match self.next_part()? {
            Some(Next::Message(message)) => Ok(Some(message)),
            Some(_) => unreachable!("a held message is offered whole"),
            None => Ok(None),
        }
    }

    /// What comes next, if anything has. A message is borrowed from the buffer: it is decoded
    /// where it lies rather than copied out first (F-20).
    pub fn next_part(&mut self) -> Result<Option<Next<'_>>, DecodeError> {
        self.compact();
        if let Some(rest) = self.streaming {
            let take = rest.min(self.buffer.len() - self.start);
            if take == 0 && rest > 0 {
                return Ok(None);
            }
            let from = self.start;
            self.start += take;
            self.streaming = (rest > take).then_some(rest - take);
            return Ok(Some(Next::Piece {
                bytes: &self.buffer[from..from + take],
                rest: rest - take,
            }));
        }
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
        let from = self.start + HEADER_LEN;
        let available = (rest.len() - HEADER_LEN).min(len);
        if len >= PIECES_FROM && !self.holding {
            if available < OPENING {
                return Ok(None);
            }
            self.opened = Some((from, available));
            return Ok(Some(Next::Opening { len, head: &self.buffer[from..from + available] }));
        }
        if available < len {
            return Ok(None);
        }
        self.start = from + len;
        self.opened = None;
        self.holding = false;
        Ok(Some(Next::Message(&self.buffer[from..from + len])))
    }

    /// Takes the opening offered last, and hands on the rest of its message as [`Next::Piece`]s.
    pub fn stream(&mut self) {
        let (from, offered) = self.opened.take().expect("an opening was offered");
        let len = u32::from_be_bytes(self.buffer[from - 4..from].try_into().expect("four bytes"));
        self.start = from + offered;
        self.streaming = (len as usize > offered).then_some(len as usize - offered);
    }

    /// Waits for the message offered last whole, as a [`Next::Message`].
    pub fn hold(&mut self) {
        self.opened = None;
        self.holding = true;
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
                while let Some(Next::Message(message)) = decoder.next_part().unwrap() {
                    messages.push(message.to_vec());
                }
            }
            assert_eq!(messages, [b"one".to_vec(), vec![], b"three".to_vec()], "split at {split}");
            assert_eq!(decoder.pending(), 0);
        }
    }

    #[test]
    fn offers_a_large_message_as_it_arrives_streamed_or_held_whole() {
        let large: Vec<u8> = (0..PIECES_FROM + 100).map(|i| i as u8).collect();
        let stream = [frame(b"one"), frame(&large), frame(b"two")].concat();
        let reads: Vec<&[u8]> = stream.chunks(64 * 1024).collect();

        let mut streamed = Vec::new();
        let mut decoder = FrameDecoder::default();
        for read in &reads {
            decoder.push(read);
            while let Some(next) = decoder.next_part().unwrap() {
                match next {
                    Next::Message(message) => streamed.push(message.to_vec()),
                    Next::Opening { len, head } => {
                        assert_eq!((len, &head[..OPENING]), (large.len(), &large[..OPENING]));
                        streamed.push(head.to_vec());
                        decoder.stream();
                    }
                    Next::Piece { bytes, rest } => {
                        streamed.last_mut().unwrap().extend_from_slice(bytes);
                        assert_eq!(rest, large.len() - streamed.last().unwrap().len());
                    }
                }
            }
        }
        assert_eq!(streamed, [b"one".to_vec(), large.clone(), b"two".to_vec()]);
        assert_eq!(decoder.pending(), 0);

        let mut held = Vec::new();
        let mut decoder = FrameDecoder::default();
        for read in &reads {
            decoder.push(read);
            while let Some(next) = decoder.next_part().unwrap() {
                match next {
                    Next::Message(message) => held.push(message.to_vec()),
                    Next::Opening { .. } => decoder.hold(),
                    Next::Piece { .. } => panic!("a held message is not streamed"),
                }
            }
        }
        assert_eq!(held, [b"one".to_vec(), large, b"two".to_vec()]);
    }

    #[test]
    fn a_streamed_message_cut_off_is_still_pending() {
        let large = frame(&vec![b'x'; PIECES_FROM]);
        let mut decoder = FrameDecoder::default();
        decoder.push(&large[..HEADER_LEN + OPENING]);
        assert!(matches!(decoder.next_part().unwrap(), Some(Next::Opening { .. })));
        decoder.stream();
        assert_eq!(decoder.next_part().unwrap(), None);
        assert_eq!(decoder.pending(), PIECES_FROM - OPENING);
    }

    #[test]
    fn refuses_other_frame_types_and_oversized_frames() {
        let mut keepalive = frame(b"");
        keepalive[0] = 9;
        let mut decoder = FrameDecoder::default();
        decoder.push(&keepalive);
        assert_eq!(
            decoder.next_part().unwrap_err().0,
            "an IPC frame of type 9 (only Regular frames carry messages)"
        );
        let mut huge = vec![1, 0, 0, 0, 0, 0, 0, 0, 0];
        huge.extend_from_slice(&((MAX_MESSAGE as u32) + 1).to_be_bytes());
        let mut decoder = FrameDecoder::default();
        decoder.push(&huge);
        assert!(decoder.next_part().unwrap_err().0.contains("exceeds"));
    }
}
