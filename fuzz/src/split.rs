//! The property every stream decoder shares: how the bytes are cut into reads changes nothing.

use zcode_contract::{Inbound, MapperError};

/// What decoding a stream produced: every item up to the first error, and that error.
#[derive(Debug, PartialEq)]
pub(crate) struct Decoded {
    pub items: Vec<Inbound>,
    pub error: Option<String>,
    /// Items joined from pieces, as a session joins them (the Services Server's large events).
    pub joined: Vec<usize>,
}

/// Feeds `pieces` to `step` (`Some` a read, `None` the end of the stream) until it fails.
pub(crate) fn decode(
    pieces: &[&[u8]],
    mut step: impl FnMut(Option<&[u8]>) -> Result<Vec<Inbound>, MapperError>,
) -> Decoded {
    let mut items = Vec::new();
    for read in pieces.iter().map(|piece| Some(*piece)).chain([None]) {
        match step(read) {
            Ok(more) => items.extend(more),
            Err(error) => return Decoded { items, error: Some(error.message), joined: Vec::new() },
        }
    }
    Decoded { items, error: None, joined: Vec::new() }
}

/// Decodes `stream` whole and cut as `seed` says, and checks that the cut changes neither the
/// outcome nor the items, and that an error-free decode gives `expected` items (errors are not
/// silence, nothing is invented). Returns both decodes, whole first.
pub(crate) fn check_cuts(
    stream: &[u8],
    seed: u32,
    expected: impl FnOnce() -> usize,
    decode: impl Fn(&[&[u8]]) -> Decoded,
) -> [Decoded; 2] {
    let whole = decode(&[stream]);
    let piecewise = decode(&cut(stream, seed));
    assert_eq!(whole.error, piecewise.error, "the split changed the outcome");
    if whole.error.is_none() {
        assert_eq!(whole.items, piecewise.items, "the split changed what was decoded");
        let expected = expected();
        assert_eq!(
            whole.items.len(),
            expected,
            "{expected} frames gave {} items: silence or invention",
            whole.items.len()
        );
    }
    [whole, piecewise]
}

/// Cuts `stream` into pieces of pseudo-random sizes (0 to 64 bytes).
fn cut(stream: &[u8], seed: u32) -> Vec<&[u8]> {
    let mut state = seed | 1;
    let mut pieces = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let size = (state % 65) as usize;
        let (piece, tail) = rest.split_at(size.min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}
