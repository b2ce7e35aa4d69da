//! The mapper's decoder of host stdout under arbitrary bytes, split arbitrarily.
//!
//! Properties:
//! - no panic;
//! - the split does not matter: the same bytes pushed whole or in random pieces give the same
//!   frames and the same error;
//! - errors are not silence: without an error, every non-blank line is exactly one frame;
//! - every event payload is a JSON object (what the session's `map-event` expects), once the
//!   events the connection joins for one session are taken apart into their lines;
//! - once failed, the decoder stays failed.

use serde_json::value::RawValue;
use zcode_contract::{Inbound, Mapper, MapperConnection, NativeData, RoutedEvent};
use zcode_task_v1::TaskV1Mapper;

use crate::split::{Decoded, check_cuts};

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
    for decoded in check_cuts(stream, seed, || non_blank_lines(stream), decode) {
        for frame in &decoded.items {
            if let Inbound::Event(event) = frame {
                let text = event.payload.as_text().expect("the task protocol's events are text");
                // JSON by its grammar: a number beyond f64's range is routed, for `map-event`
                // to refuse (no `Value` can hold it; `events` in zcode-task tests that).
                serde_json::from_str::<&RawValue>(text).expect("an event payload is JSON");
                assert!(text.starts_with('{'), "an event payload is not an object: {text}");
                assert!(!event.route.is_empty(), "an event without a route");
            }
        }
    }
}

fn decode(pieces: &[&[u8]]) -> Decoded {
    let mut connection = TaskV1Mapper.connection().expect("a native connection never faults");
    let mut decoded = crate::split::decode(pieces, |read| match read {
        Some(bytes) => connection.push(bytes),
        None => connection.finish(),
    });
    // Events joined for one session are the events of their lines, as the session maps them;
    // which events one read joins depends on the cut.
    decoded.items = decoded.items.into_iter().flat_map(events_of).collect();
    if decoded.error.is_some() {
        revived(connection.as_mut());
    }
    decoded
}

/// An event per line of a joined event; anything else as it is.
fn events_of(item: Inbound) -> Vec<Inbound> {
    match &item {
        Inbound::Event(RoutedEvent { route, payload: NativeData::Text(text) })
            if text.contains('\n') =>
        {
            let event = |line: &str| RoutedEvent { route: route.clone(), payload: line.into() };
            text.split('\n').map(|line| Inbound::Event(event(line))).collect()
        }
        _ => vec![item],
    }
}

/// After a failure, the decoder refuses everything.
fn revived(connection: &mut dyn MapperConnection) {
    assert!(connection.push(b"{\"id\":1,\"result\":null}\n").is_err(), "a failed decoder revived");
    assert!(connection.finish().is_err(), "a failed decoder revived at its end");
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
