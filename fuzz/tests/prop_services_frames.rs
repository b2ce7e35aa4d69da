//! Bounded property test of the zcode-services-v4 decoder (the CI share of the
//! `services_frames` fuzz target): streams of real messages, mutated messages and random
//! bytes, after a valid handshake or not, split at random.

use proptest::prelude::*;
use zcode_acp_fuzz::services::{check_stream, check_values, handshake_bytes, message_templates};

/// One framed message: a real one, a real one with a few bytes changed, or noise.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let templates = message_templates();
    let real = proptest::sample::select(templates.clone());
    let mutated = (proptest::sample::select(templates), any::<u64>(), 0..4usize).prop_map(
        |(mut message, seed, edits)| {
            let mut state = seed | 1;
            for _ in 0..edits {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                let at = (state >> 33) as usize % message.len();
                match (state >> 8) % 3 {
                    0 => message[at] = (state >> 16) as u8,
                    1 => drop(message.remove(at)),
                    _ => message.insert(at, (state >> 20) as u8),
                }
            }
            message
        },
    );
    let noise = proptest::collection::vec(any::<u8>(), 0..48);
    prop_oneof![4 => real, 4 => mutated, 1 => noise]
}

fn stream() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (proptest::collection::vec(message(), 0..10), any::<bool>()).prop_map(|(messages, hello)| {
        let body: Vec<u8> = messages.concat();
        let mut stream = if hello { handshake_bytes() } else { Vec::new() };
        stream.extend_from_slice(&body);
        (stream, body)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn any_services_stream_split_anyhow_decodes_the_same_and_never_silently(
        (stream, body) in stream(),
        seed in any::<u32>(),
    ) {
        check_stream(&stream, seed);
        // Every message body on its own through the value decoder (skip the 13-byte header).
        check_values(body.get(13..).unwrap_or_default());
    }
}

/// The finding of the `services_frames` campaign, as the fuzzer minimised it: a tag-5 value
/// inside an array whose text is not one JSON value used to be spliced into the array's JSON.
#[test]
fn json_text_that_is_not_one_value_never_becomes_other_json() {
    // [4, 1, 5, 3, "1,2"]: an array of one JSON value whose text is `1,2`.
    check_values(&[4, 1, 5, 3, b'1', b',', b'2']);
    // [5, 1, " "]: blank JSON text, which JSON.parse refuses.
    check_values(&[4, 1, 5, 1, b' ']);
}

/// A large event (from 256 KiB) is handed on in pieces as it arrives: whole, cut off, not UTF-8,
/// not JSON, or a large reply, and split at random, each decodes the same once its pieces are
/// joined, and an event the stream cuts off makes nothing.
#[test]
fn large_events_in_pieces_decode_the_same_however_split() {
    use zcode_services_v4::ipc::message::{Response, encode_response};
    use zcode_services_v4::ipc::value::IpcValue;
    let big = "QUJD".repeat(70 * 1024);
    let event =
        |text: String| encode_response(&Response::Event { id: 9, body: IpcValue::Json(text) });
    let valid = event(format!(r#"{{"dataBase64":"{big}"}}"#));
    let not_json = event(format!(r#"{{"dataBase64":"{big}""#));
    let mut not_utf8 = valid.clone();
    let at = not_utf8.len() - 10;
    not_utf8[at] = 0xff;
    let reply =
        encode_response(&Response::Success { id: 3, body: IpcValue::Json(format!("\"{big}\"")) });
    let small = message_templates()[0].clone();
    let cut_off = valid[..valid.len() / 2].to_vec();
    for messages in [
        vec![valid.clone(), small.clone(), valid.clone()],
        vec![not_json, small.clone()],
        vec![not_utf8, small.clone()],
        vec![reply, valid.clone()],
        vec![small, cut_off],
    ] {
        let mut stream = handshake_bytes();
        stream.extend(messages.concat());
        for seed in [1, 7, 0xdead_beef] {
            check_stream(&stream, seed);
        }
    }
}

/// Writes the templates as fuzzing seeds (`ZCODE_FUZZ_CORPUS=<dir>`, run with `--ignored`):
/// each after the mode byte (valid handshake first) and a split seed, and all of them at once.
#[test]
#[ignore = "writes a corpus for a fuzzing campaign"]
fn seed_corpus() {
    let dir = std::path::PathBuf::from(std::env::var_os("ZCODE_FUZZ_CORPUS").expect("a folder"));
    std::fs::create_dir_all(&dir).unwrap();
    let templates = message_templates();
    let mut all = vec![1, 7, 0, 0, 0];
    for (index, template) in templates.iter().enumerate() {
        let mut seed = vec![1, index as u8, 0, 0, 0];
        seed.extend_from_slice(template);
        std::fs::write(dir.join(format!("template-{index}")), seed).unwrap();
        all.extend_from_slice(template);
    }
    std::fs::write(dir.join("all-templates"), all).unwrap();
}
