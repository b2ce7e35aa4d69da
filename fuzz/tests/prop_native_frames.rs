//! Bounded property test of the zcode-task-v1 decoder (the CI share of the `native_frames`
//! fuzz target): streams of real frames, mutated frames and random bytes, split at random.

use proptest::prelude::*;
use zcode_acp_fuzz::frame_templates;
use zcode_acp_fuzz::frames::check_stream;

/// Bytes that matter to a JSON or line decoder.
const SPECIAL: &[u8] = b"{}[]\",:\\\r\x00\xff";

/// One line of host stdout: a real frame, a real frame with a few bytes changed, or noise.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let templates = frame_templates();
    assert!(!templates.is_empty(), "no frame templates");
    let real = proptest::sample::select(templates.to_vec());
    let mutated = (proptest::sample::select(templates.to_vec()), any::<u64>(), 0..4usize).prop_map(
        |(mut frame, seed, edits)| {
            let mut state = seed | 1;
            for _ in 0..edits {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                if frame.is_empty() {
                    break;
                }
                let at = (state >> 33) as usize % frame.len();
                match (state >> 8) % 3 {
                    0 => frame[at] = (state >> 16) as u8,
                    1 => drop(frame.remove(at)),
                    _ => frame.insert(at, SPECIAL[(state >> 20) as usize % SPECIAL.len()]),
                }
            }
            frame
        },
    );
    let noise = proptest::collection::vec(any::<u8>(), 0..48);
    prop_oneof![4 => real, 4 => mutated, 1 => noise]
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    (proptest::collection::vec((line(), 0..3u8), 0..12), any::<bool>()).prop_map(
        |(lines, terminated)| {
            let mut stream = Vec::new();
            for (line, ending) in lines {
                stream.extend_from_slice(&line);
                stream.extend_from_slice(match ending {
                    0 => b"\n".as_slice(),
                    1 => b"\r\n",
                    _ => b"\n\n",
                });
            }
            if !terminated {
                stream.pop();
            }
            stream
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn any_stream_split_anyhow_decodes_the_same_and_never_silently(
        stream in stream(),
        seed in any::<u32>(),
    ) {
        check_stream(&stream, seed);
    }
}

/// Found by CI (stop 22): a mutated timestamp, `1757…e…`, past f64's range. It is JSON, and the
/// decoder routes it; a `Value` cannot hold it.
#[test]
fn a_number_out_of_range_is_still_a_json_event() {
    let line = br#"{"method":"event","params":{"subscriptionId":"s","event":{"type":"session.event","event":{"seq":1,"timestamp":17570e9000000}}}}"#;
    for seed in [0, 1, 7, u32::MAX] {
        check_stream(&[&line[..], b"\n"].concat(), seed);
    }
}
