//! The stdio transport frame of `SocketProtocol`: a 13-byte header `type:u8, id:u32 BE,
//! ack:u32 BE, length:u32 BE` followed by `length` body bytes. Only type 1 (Regular) carries
//! messages; the reader skips every other type. Input may be split anywhere, so the decoder
//! waits until a whole frame has arrived before it consumes the header.

pub const HEADER_BYTES: usize = 13;
/// `ProtocolMessageType.Regular`.
pub const REGULAR: u8 = 1;

/// Wraps one message body in a Regular frame (`id` and `ack` are 0, as the stdio server sends).
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(HEADER_BYTES + body.len());
    frame.push(REGULAR);
    frame.extend_from_slice(&0u32.to_be_bytes());
    frame.extend_from_slice(&0u32.to_be_bytes());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(body);
    frame
}

/// Accumulates input and hands out the bodies of complete Regular frames.
#[derive(Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
    start: usize,
}

impl FrameDecoder {
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete Regular frame's body, if one has fully arrived.
    pub fn next_body(&mut self) -> Option<Vec<u8>> {
        loop {
            let pending = &self.buffer[self.start..];
            if pending.len() < HEADER_BYTES {
                return None;
            }
            let kind = pending[0];
            let length =
                u32::from_be_bytes(pending[9..13].try_into().expect("four bytes")) as usize;
            if pending.len() - HEADER_BYTES < length {
                return None;
            }
            let body = pending[HEADER_BYTES..HEADER_BYTES + length].to_vec();
            self.start += HEADER_BYTES + length;
            if self.start > (1 << 20) && self.start * 2 > self.buffer.len() {
                self.buffer.drain(..self.start);
                self.start = 0;
            }
            if kind == REGULAR {
                return Some(body);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembles_frames_split_at_every_byte() {
        let mut stream = encode_frame(b"first");
        stream.extend(encode_frame(b""));
        stream.extend(encode_frame(b"third"));
        let mut decoder = FrameDecoder::default();
        let mut bodies = Vec::new();
        for byte in &stream {
            decoder.push(std::slice::from_ref(byte));
            while let Some(body) = decoder.next_body() {
                bodies.push(body);
            }
        }
        assert_eq!(bodies, [b"first".to_vec(), Vec::new(), b"third".to_vec()]);
    }

    #[test]
    fn skips_frames_that_are_not_regular() {
        let mut keep_alive = encode_frame(b"ping");
        keep_alive[0] = 9;
        keep_alive.extend(encode_frame(b"data"));
        let mut decoder = FrameDecoder::default();
        decoder.push(&keep_alive);
        assert_eq!(decoder.next_body(), Some(b"data".to_vec()));
        assert_eq!(decoder.next_body(), None);
    }

    #[test]
    fn waits_for_the_whole_body() {
        let frame = encode_frame(b"abcdef");
        let mut decoder = FrameDecoder::default();
        decoder.push(&frame[..15]);
        assert_eq!(decoder.next_body(), None);
        decoder.push(&frame[15..]);
        assert_eq!(decoder.next_body(), Some(b"abcdef".to_vec()));
    }
}
