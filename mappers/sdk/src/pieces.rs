//! A large native event handed from a connection to its session in pieces, as its bytes arrive
//! (issue 27). A connection that waited for such an event whole would grow its linear memory
//! by the event, the core would hold it as it goes from one component to the other, and a
//! linear memory never shrinks. Cut into pieces, the connection and the core hold one read's
//! worth at a time; only the session, which reads the event, joins it.
//!
//! The pieces of one event are consecutive `binary` events on the event's route: the first
//! names the event's whole length ([`first`]), the others carry the bytes that follow
//! ([`more`]). Both ends are in one component, so the format is this SDK's and nothing else's.
//! The session's [`Joiner`] hands on the event as text once its last byte came, and refuses
//! anything else: a piece out of turn, more bytes than announced, text that is not UTF-8.

use zcode_contract::MapperError;

use crate::json::protocol;

const FIRST: u8 = 1;
const MORE: u8 = 2;
/// The tag and the length.
const FIRST_HEAD: usize = 5;

/// The first piece of an event of `len` bytes, carrying its first `bytes`.
pub fn first(len: u32, bytes: &[u8]) -> Vec<u8> {
    let mut piece = Vec::with_capacity(FIRST_HEAD + bytes.len());
    piece.push(FIRST);
    piece.extend_from_slice(&len.to_be_bytes());
    piece.extend_from_slice(bytes);
    piece
}

/// A piece that continues the event begun by [`first`].
pub fn more(bytes: &[u8]) -> Vec<u8> {
    let mut piece = Vec::with_capacity(1 + bytes.len());
    piece.push(MORE);
    piece.extend_from_slice(bytes);
    piece
}

/// Joins the pieces of one event at a time.
#[derive(Default)]
pub struct Joiner {
    /// The event so far, with room for all of it, while one is being joined.
    text: Option<Vec<u8>>,
    /// Its length, as its first piece announced.
    len: usize,
}

impl Joiner {
    /// Whether an event has begun and not yet ended: nothing but its pieces may come now.
    pub fn in_progress(&self) -> bool {
        self.text.is_some()
    }

    /// Takes the next piece; the event as text once it is whole. The largest event accepted
    /// is `max` bytes. A piece refused drops the event it belongs to.
    pub fn push(&mut self, piece: &[u8], max: usize) -> Result<Option<String>, MapperError> {
        let joined = self.take(piece, max);
        if joined.is_err() {
            self.text = None;
        }
        joined
    }

    fn take(&mut self, piece: &[u8], max: usize) -> Result<Option<String>, MapperError> {
        match piece.first() {
            Some(&FIRST) if !self.in_progress() => {
                let Some(len) = piece.get(1..FIRST_HEAD) else {
                    return Err(protocol("A large event's first piece is cut off"));
                };
                let len = u32::from_be_bytes(len.try_into().expect("four bytes")) as usize;
                if len > max {
                    return Err(protocol(format!("A large event of {len} bytes exceeds {max}")));
                }
                // Room for the whole event at once: a buffer that doubled as pieces came would
                // hold up to twice the event while it grew.
                self.text = Some(Vec::with_capacity(len));
                self.len = len;
                self.join(&piece[FIRST_HEAD..])
            }
            Some(&FIRST) => Err(protocol("A large event began before the one before it ended")),
            Some(&MORE) if self.in_progress() => self.join(&piece[1..]),
            Some(&MORE) => Err(protocol("A piece of a large event came before its first piece")),
            _ => Err(protocol("A binary event is not a piece of a large event")),
        }
    }

    fn join(&mut self, bytes: &[u8]) -> Result<Option<String>, MapperError> {
        let text = self.text.as_mut().expect("joining an event in progress");
        if bytes.len() > self.len - text.len() {
            return Err(protocol("A large event's pieces hold more bytes than it announced"));
        }
        text.extend_from_slice(bytes);
        if text.len() < self.len {
            return Ok(None);
        }
        let text = self.text.take().expect("the event just joined");
        String::from_utf8(text).map(Some).map_err(|_| protocol("A large event is not UTF-8 text"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_an_event_cut_anywhere() {
        let event = r#"{"kind":"fragment","dataBase64":"aGVsbG8="}"#;
        let len = event.len() as u32;
        for cut in 0..event.len() {
            let (head, tail) = event.as_bytes().split_at(cut);
            let mut joiner = Joiner::default();
            assert_eq!(joiner.push(&first(len, head), 1024).unwrap(), None, "cut at {cut}");
            assert!(joiner.in_progress());
            let whole = joiner.push(&more(tail), 1024).unwrap();
            assert_eq!(whole.as_deref(), Some(event), "cut at {cut}");
            assert!(!joiner.in_progress());
        }
        let mut joiner = Joiner::default();
        let whole = joiner.push(&first(len, event.as_bytes()), 1024).unwrap();
        assert_eq!(whole.as_deref(), Some(event), "a first piece may carry it all");
    }

    #[test]
    fn refuses_pieces_out_of_turn_and_bytes_beyond_the_length() {
        let mut joiner = Joiner::default();
        assert!(joiner.push(&more(b"x"), 1024).unwrap_err().message.contains("first piece"));
        assert!(joiner.push(&first(4, b"ab"), 1024).unwrap().is_none());
        assert!(joiner.push(&first(4, b"ab"), 1024).unwrap_err().message.contains("began before"));
        assert!(!joiner.in_progress(), "a refused piece drops its event");
        let mut joiner = Joiner::default();
        joiner.push(&first(4, b"ab"), 1024).unwrap();
        assert!(joiner.push(&more(b"cde"), 1024).unwrap_err().message.contains("more bytes"));
        assert!(!joiner.in_progress(), "a refused event is dropped");
        assert!(joiner.push(&first(2048, b""), 1024).unwrap_err().message.contains("exceeds"));
        assert!(joiner.push(&[FIRST, 0, 0], 1024).unwrap_err().message.contains("cut off"));
        assert!(joiner.push(&[9], 1024).unwrap_err().message.contains("not a piece"));
        assert!(joiner.push(&[], 1024).unwrap_err().message.contains("not a piece"));
    }

    #[test]
    fn refuses_an_event_that_is_not_utf8() {
        let mut joiner = Joiner::default();
        joiner.push(&first(2, &[0xc3]), 1024).unwrap();
        assert!(joiner.push(&more(&[0x28]), 1024).unwrap_err().message.contains("UTF-8"));
        assert!(!joiner.in_progress());
    }
}
