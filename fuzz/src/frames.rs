//! The mapper's decoder of host stdout under arbitrary bytes, split arbitrarily.
//!
//! Properties:
//! - no panic;
//! - the split does not matter: the same bytes pushed whole or in random pieces give the same
//!   frames and the same error;
//! - errors are not silence: without an error, every non-blank line is exactly one frame;
//! - every event payload is a JSON object (what the session's `map-event` expects);
//! - once failed, the decoder stays failed.

use zcode_contract::{Inbound, Mapper, MapperConnection};
use zcode_task_v1::TaskV1Mapper;

/// What decoding a stream produced.
#[derive(Debug, PartialEq)]
struct Decoded {
    frames: Vec<Inbound>,
    error: Option<String>,
}

/// libFuzzer entry: the first four bytes choose the split, the rest is the stream.
pub fn check_frames(data: &[u8]) {
    let (seed, stream) = match data {
        [a, b, c, d, rest @ ..] => (u32::from_le_bytes([*a, *b, *c, *d]), rest),
        _ => (0, data),
    };
    check_stream(stream, seed);
}

/// Checks the properties for `stream` split as `seed` says.
pub fn check_stream(stream: &[u8], seed: u32) {
    let whole = decode(&[stream]);
    let pieces = split(stream, seed);
    let piecewise = decode(&pieces);
    assert_eq!(whole.error, piecewise.error, "the split changed the outcome");
    if whole.error.is_none() {
        assert_eq!(whole.frames, piecewise.frames, "the split changed the frames");
        let lines = non_blank_lines(stream);
        assert_eq!(
            whole.frames.len(),
            lines,
            "{lines} non-blank lines gave {} frames: silence or invention",
            whole.frames.len()
        );
    }
    for frame in whole.frames.iter().chain(&piecewise.frames) {
        if let Inbound::Event(event) = frame {
            let text = event.payload.as_text().expect("the task protocol's events are text");
            let payload: serde_json::Value =
                serde_json::from_str(text).expect("an event payload is JSON");
            assert!(payload.is_object(), "an event payload is not an object: {text}");
            assert!(!event.route.is_empty(), "an event without a route");
        }
    }
}

fn decode(pieces: &[&[u8]]) -> Decoded {
    let mut connection = TaskV1Mapper.connection().expect("a native connection never faults");
    let mut frames = Vec::new();
    for piece in pieces {
        match connection.push(piece) {
            Ok(more) => frames.extend(more),
            Err(error) => return failed(connection.as_mut(), frames, error.message),
        }
    }
    match connection.finish() {
        Ok(more) => frames.extend(more),
        Err(error) => return failed(connection.as_mut(), frames, error.message),
    }
    Decoded { frames, error: None }
}

/// After a failure, the decoder refuses everything.
fn failed(connection: &mut dyn MapperConnection, frames: Vec<Inbound>, error: String) -> Decoded {
    assert!(connection.push(b"{\"id\":1,\"result\":null}\n").is_err(), "a failed decoder revived");
    assert!(connection.finish().is_err(), "a failed decoder revived at its end");
    Decoded { frames, error: Some(error) }
}

/// Lines as the host's stdout holds them: split at `\n`, a final unterminated line included.
fn non_blank_lines(stream: &[u8]) -> usize {
    stream
        .split(|&b| b == b'\n')
        .filter(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            std::str::from_utf8(line).map_or(true, |text| !text.trim().is_empty())
        })
        .count()
}

/// Cuts `stream` into pieces of pseudo-random sizes (1 to 64 bytes, sometimes empty).
fn split(stream: &[u8], seed: u32) -> Vec<&[u8]> {
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
