//! Property tests of the connection's decoder: a valid stream means the same whatever its
//! chunking, and arbitrary bytes never panic it (they may fail the transport, closed).

use proptest::prelude::*;
use zcode_contract::Inbound;
use zcode_mapper_sdk::Connection as _;
use zcode_services_v4::ServicesConnection;
use zcode_services_v4::ipc::message::{Response, encode_response};
use zcode_services_v4::ipc::value::IpcValue;

const HELLO: &[u8] = b"{\"type\":\"zcode-hello\",\"version\":\"3.14.3\",\"platform\":\"linux\",\"arch\":\"x64\",\"pid\":1}\n";

fn response(kind: u8, id: u32, text: &str) -> Vec<u8> {
    let body =
        IpcValue::json(format!("{{\"text\":{}}}", serde_json::Value::String(text.to_string())));
    let id = u64::from(id);
    encode_response(&match kind % 4 {
        0 => Response::Success { id, body },
        1 => Response::Event { id, body },
        2 => Response::Error { id, body },
        _ => Response::ErrorObj { id, body: IpcValue::String(text.to_string()) },
    })
}

fn stream(messages: &[(u8, u32, String)]) -> Vec<u8> {
    let mut bytes = HELLO.to_vec();
    bytes.extend(encode_response(&Response::Initialize));
    for (kind, id, text) in messages {
        bytes.extend(response(*kind, *id, text));
    }
    bytes
}

fn decode(chunks: Vec<&[u8]>) -> Result<Vec<Inbound>, String> {
    let mut connection = ServicesConnection::new();
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(connection.push(chunk).map_err(|e| e.message)?);
    }
    out.extend(connection.finish().map_err(|e| e.message)?);
    Ok(out)
}

/// `bytes` cut at the given points (sorted, deduplicated, within bounds).
fn cut<'a>(bytes: &'a [u8], points: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = points.iter().map(|p| p % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for point in points {
        chunks.push(&bytes[start..point]);
        start = point;
    }
    chunks.push(&bytes[start..]);
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_of_a_valid_stream_means_the_same(
        messages in prop::collection::vec((any::<u8>(), any::<u32>(), "\\PC{0,40}"), 0..12),
        points in prop::collection::vec(any::<usize>(), 0..24),
    ) {
        let bytes = stream(&messages);
        let whole = decode(vec![&bytes]).expect("a valid stream decodes");
        prop_assert_eq!(whole.len(), messages.len() + 2, "ack, ready, and one inbound per message");
        prop_assert_eq!(decode(cut(&bytes, &points)).expect("chunked"), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        prefix in prop::bool::ANY,
        garbage in prop::collection::vec(any::<u8>(), 0..512),
        points in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut bytes = if prefix { stream(&[]) } else { Vec::new() };
        bytes.extend(garbage);
        // Either it decodes or it fails closed; either way the same for every chunking.
        let whole = decode(vec![&bytes]);
        let chunked = decode(cut(&bytes, &points));
        prop_assert_eq!(whole.is_ok(), chunked.is_ok());
        if let (Ok(whole), Ok(chunked)) = (whole, chunked) {
            prop_assert_eq!(whole, chunked);
        }
    }
}
