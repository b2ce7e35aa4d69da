//! The V4 physical wire frame (ZCode `zcode-protocol-v4/wire.ts`, `wire-codec.ts`): a logical
//! topic frame goes out `complete` when its measured envelope fits the physical limit, else as
//! `fragment`s of its UTF-8 JSON bytes with a CRC-32 (IEEE) of the whole and base64 data.
//!
//! The envelope is measured the way the publisher measures it: the largest of the Agent's NDJSON
//! line, the channel message on a socket and the mobile relay's base64 of it. The app-server
//! sends every frame `complete` (fragmentation is not simulated there).

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::publisher::Delta;
use crate::common::json_text;

/// `V4_WIRE_PROTOCOL_VERSION`.
pub const WIRE_VERSION: u64 = 3;
/// `PROTOCOL_V4_LIMITS.maxFrameBytes`.
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;
/// `PROTOCOL_V4_LIMITS.logicalFrameAssemblyMaxBytes`.
pub const MAX_ASSEMBLY_BYTES: usize = 16 * 1024 * 1024;
/// `PROTOCOL_V4_LIMITS.logicalFrameAssemblyMaxFragments`.
pub const MAX_FRAGMENTS: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryKind {
    Initial,
    Online,
    Recovery,
}

impl DeliveryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryKind::Initial => "initial",
            DeliveryKind::Online => "online",
            DeliveryKind::Recovery => "recovery",
        }
    }
}

/// A logical frame on its way to one subscription.
#[derive(Debug, Clone)]
pub struct Frame {
    pub topic: Arc<str>,
    pub subscription_id: Arc<str>,
    /// The subscriber's connection (the app-server's flow control; empty on the Services Server).
    pub connection_id: Arc<str>,
    pub ordinal: u64,
    pub delivery: DeliveryKind,
    /// `{topic, subscriptionId, fromSeq, toSeq, sentAt, payload}`.
    pub logical: Logical,
}

/// What a logical frame carries.
#[derive(Debug, Clone)]
pub enum Logical {
    /// `payload: {kind: "deltas", deltas}`, the frame every streamed delta goes out in: kept
    /// typed and written without a tree (`topic` and `subscriptionId` are the [`Frame`]'s).
    Deltas { from_seq: u64, to_seq: u64, sent_at: u64, deltas: Vec<Arc<Delta>> },
    /// Any other frame (a snapshot), as its whole tree.
    Tree(Value),
}

/// How a server wraps logical frames into physical ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One `complete` wire per frame, whatever its size, with logical frame ids
    /// `<subscriptionId>:<ordinal>` (the app-server).
    Complete,
    /// `complete` while the measured envelope fits, else fragments; logical frame ids
    /// `<subscriptionId>-lf-<ordinal>`, as observed on real Services Server traffic.
    Measured { max_physical_bytes: usize },
}

impl Framing {
    /// What comes between a logical frame id's subscription id and ordinal.
    fn frame_id_separator(self) -> &'static str {
        match self {
            Framing::Complete => ":",
            Framing::Measured { .. } => "-lf-",
        }
    }
}

impl Frame {
    /// The logical frame as JSON text.
    pub fn logical_text(&self) -> String {
        let mut text = String::with_capacity(self.text_capacity());
        self.write_logical(&mut text);
        text
    }

    /// The logical frame as a tree.
    #[cfg(test)]
    pub fn logical_value(&self) -> Value {
        serde_json::from_str(&self.logical_text()).expect("the text is JSON")
    }

    /// Room for the frame's wire and a notification around it, so that writing one grows no
    /// buffer (a streamed delta's frame is about 450 bytes).
    pub fn text_capacity(&self) -> usize {
        let names = 3 * (self.topic.len() + self.subscription_id.len());
        let deltas = match &self.logical {
            Logical::Deltas { deltas, .. } => deltas
                .iter()
                .map(|delta| match &**delta {
                    Delta::Append { append, .. } => 96 + 2 * append.len(),
                    Delta::Op(_) => 512,
                })
                .sum(),
            Logical::Tree(_) => 4096,
        };
        384 + names + deltas
    }

    /// `{topic, subscriptionId, fromSeq, toSeq, sentAt, payload}`, the members in the order
    /// ZCode writes them; a `row.delta` is `{op, rowId, path, append}`.
    fn write_logical(&self, out: &mut String) {
        let (from_seq, to_seq, sent_at, deltas) = match &self.logical {
            Logical::Tree(tree) => return json_text::push_value(out, tree),
            Logical::Deltas { from_seq, to_seq, sent_at, deltas } => {
                (*from_seq, *to_seq, *sent_at, deltas)
            }
        };
        out.push_str(r#"{"topic":"#);
        json_text::push_str(out, &self.topic);
        out.push_str(r#","subscriptionId":"#);
        json_text::push_str(out, &self.subscription_id);
        out.push_str(r#","fromSeq":"#);
        json_text::push_uint(out, from_seq);
        out.push_str(r#","toSeq":"#);
        json_text::push_uint(out, to_seq);
        out.push_str(r#","sentAt":"#);
        json_text::push_uint(out, sent_at);
        out.push_str(r#","payload":{"kind":"deltas","deltas":["#);
        for (index, delta) in deltas.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            match &**delta {
                Delta::Append { row_id, path, append } => {
                    out.push_str(r#"{"op":"row.delta","rowId":"#);
                    json_text::push_uint(out, *row_id);
                    out.push_str(r#","path":"#);
                    json_text::push_str(out, path);
                    out.push_str(r#","append":"#);
                    json_text::push_str(out, append);
                    out.push('}');
                }
                Delta::Op(delta) => json_text::push_value(out, delta),
            }
        }
        out.push_str("]}}");
    }

    /// The logical frame id each framing gives a frame.
    fn logical_frame_id(&self, framing: Framing) -> String {
        format!("{}{}{}", self.subscription_id, framing.frame_id_separator(), self.ordinal)
    }

    /// [`Self::logical_frame_id`] as the inside of a JSON string.
    fn push_logical_frame_id(&self, out: &mut String, framing: Framing) {
        json_text::push_inner(out, &self.subscription_id);
        out.push_str(framing.frame_id_separator());
        json_text::push_uint(out, self.ordinal);
    }

    fn header(&self, kind: &str, framing: Framing) -> Map<String, Value> {
        let logical_frame_id = self.logical_frame_id(framing);
        let mut header = Map::new();
        header.insert("wireVersion".into(), json!(WIRE_VERSION));
        header.insert("kind".into(), json!(kind));
        header.insert("deliveryKind".into(), json!(self.delivery.as_str()));
        header.insert("logicalFrameId".into(), json!(logical_frame_id));
        header.insert("logicalFrameOrdinal".into(), json!(self.ordinal));
        header.insert("topic".into(), json!(&*self.topic));
        header.insert("subscriptionId".into(), json!(&*self.subscription_id));
        header
    }

    fn fragment(
        &self,
        framing: Framing,
        index: usize,
        count: usize,
        logical_bytes: usize,
        crc: u32,
        data: String,
    ) -> Value {
        let mut wire = self.header("fragment", framing);
        wire.insert("fragmentIndex".into(), json!(index));
        wire.insert("fragmentCount".into(), json!(count));
        wire.insert("logicalBytes".into(), json!(logical_bytes));
        wire.insert(
            "checksum".into(),
            json!({"algorithm": "crc32", "value": format!("{crc:08x}")}),
        );
        wire.insert("dataBase64".into(), json!(data));
        Value::Object(wire)
    }
}

/// A frame's one `complete` wire as JSON text.
pub fn complete_text(frame: &Frame, framing: Framing) -> String {
    let mut text = String::with_capacity(frame.text_capacity());
    write_complete(&mut text, frame, framing);
    text
}

/// Appends a frame's one `complete` wire, written by hand (a server writes one for every
/// streamed delta): `{wireVersion, kind, deliveryKind, logicalFrameId, logicalFrameOrdinal,
/// topic, subscriptionId, frame}`, the members in a fragment's order.
pub fn write_complete(out: &mut String, frame: &Frame, framing: Framing) {
    out.push_str(r#"{"wireVersion":"#);
    json_text::push_uint(out, WIRE_VERSION);
    out.push_str(r#","kind":"complete","deliveryKind":""#);
    out.push_str(frame.delivery.as_str());
    out.push_str(r#"","logicalFrameId":""#);
    frame.push_logical_frame_id(out, framing);
    out.push_str(r#"","logicalFrameOrdinal":"#);
    json_text::push_uint(out, frame.ordinal);
    out.push_str(r#","topic":"#);
    json_text::push_str(out, &frame.topic);
    out.push_str(r#","subscriptionId":"#);
    json_text::push_str(out, &frame.subscription_id);
    out.push_str(r#","frame":"#);
    frame.write_logical(out);
    out.push('}');
}

/// Why a logical frame cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodingError(pub &'static str);

/// Encodes a logical frame into its wire frames, as JSON texts. `force_fragments` sends even
/// a small frame as fragments (the CRC fault needs some), `corrupt_crc` flips the checksum.
pub fn encode(
    frame: &Frame,
    framing: Framing,
    force_fragments: bool,
    corrupt_crc: bool,
) -> Result<Vec<String>, EncodingError> {
    let Framing::Measured { max_physical_bytes } = framing else {
        return Ok(vec![complete_text(frame, framing)]);
    };
    // A complete wire, when one fits (never when fragments are forced).
    let complete = (!force_fragments)
        .then(|| complete_text(frame, framing))
        .filter(|whole| measure_bytes(whole.len()) <= max_physical_bytes);
    // The logical frame is shorter than the wire that carries it, so a complete wire within
    // the assembly limit needs no serialization of the frame alone (a streamed delta's case).
    if complete.as_ref().is_some_and(|whole| whole.len() <= MAX_ASSEMBLY_BYTES) {
        return Ok(complete.into_iter().collect());
    }
    let bytes = frame.logical_text().into_bytes();
    if bytes.len() > MAX_ASSEMBLY_BYTES {
        return Err(EncodingError("proto.frameAssemblyTooLarge"));
    }
    if let Some(whole) = complete {
        return Ok(vec![whole]);
    }
    let crc = crc32(&bytes) ^ if corrupt_crc { 0xffff_ffff } else { 0 };
    let chunk = if force_fragments {
        // At least two fragments, so the receiver has to assemble something.
        bytes.len().div_ceil(2).max(1)
    } else {
        fragment_budget(frame, max_physical_bytes, bytes.len(), crc)
    };
    if chunk == 0 {
        return Err(EncodingError("proto.frameEnvelopeTooLarge"));
    }
    let count = bytes.len().div_ceil(chunk);
    if count > MAX_FRAGMENTS {
        return Err(EncodingError("proto.frameFragmentCountExceeded"));
    }
    Ok(bytes
        .chunks(chunk)
        .enumerate()
        .map(|(index, piece)| {
            let wire =
                frame.fragment(framing, index, count, bytes.len(), crc, BASE64.encode(piece));
            wire.to_string()
        })
        .collect())
}

/// The largest fragment payload whose worst-case envelope still fits.
fn fragment_budget(
    frame: &Frame,
    max_physical_bytes: usize,
    logical_bytes: usize,
    crc: u32,
) -> usize {
    let framing = Framing::Measured { max_physical_bytes };
    let (mut low, mut high, mut best) = (1, logical_bytes.min(max_physical_bytes), 0);
    while low <= high {
        let candidate = (low + high) / 2;
        let data = "A".repeat(4 * candidate.div_ceil(3));
        let probe = frame.fragment(
            framing,
            logical_bytes.saturating_sub(1),
            logical_bytes,
            logical_bytes,
            crc,
            data,
        );
        if measure(&probe) <= max_physical_bytes {
            best = candidate;
            low = candidate + 1;
        } else {
            high = candidate - 1;
        }
    }
    best
}

fn varint_len(mut value: usize) -> usize {
    let mut bytes = 1;
    while value >= 0x80 {
        value >>= 7;
        bytes += 1;
    }
    bytes
}

/// `measureTopicNotificationEnvelopeBytes(wire).maxBytes`.
pub fn measure(wire: &Value) -> usize {
    measure_bytes(serde_json::to_vec(wire).expect("JSON values always serialize").len())
}

/// [`measure`] of a wire whose JSON text is `wire_bytes` long.
fn measure_bytes(wire_bytes: usize) -> usize {
    // `{"method":"v4/conversation/frame","params":<wire>}` and its newline.
    let ndjson = r#"{"method":"v4/conversation/frame","params":}"#.len() + wire_bytes + 1;
    // Header `[204, id]` with the widest id (Number.MAX_SAFE_INTEGER as JSON), then the body.
    let widest_id = "9007199254740991".len();
    let channel_header =
        1 + varint_len(2) + 1 + varint_len(204) + 1 + varint_len(widest_id) + widest_id;
    let channel_payload = channel_header + 1 + varint_len(wire_bytes) + wire_bytes;
    let socket = channel_payload + 13;
    let relay = mobile_relay_fixed_bytes() + 4 * channel_payload.div_ceil(3);
    ndjson.max(socket).max(relay)
}

fn mobile_relay_fixed_bytes() -> usize {
    static FIXED: OnceLock<usize> = OnceLock::new();
    *FIXED.get_or_init(|| {
        let id = "x".repeat(256);
        let max = 9_007_199_254_740_991_u64;
        let envelope = json!({
            "type": "data",
            "payload": {"zcode_type": "rpc-frame", "bridgeSessionId": id, "bridgeGeneration": max,
                        "recoveryId": id, "seq": max, "dataBase64": ""},
            "client_ts": max, "server_ts": max,
        });
        serde_json::to_vec(&envelope).expect("serializable").len()
    })
}

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it).
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(logical: &Value) -> Frame {
        Frame {
            topic: "conversation/sess_1".into(),
            subscription_id: "sub-1".into(),
            connection_id: "".into(),
            ordinal: 3,
            delivery: DeliveryKind::Online,
            logical: Logical::Tree(logical.clone()),
        }
    }

    fn parsed(texts: Result<Vec<String>, EncodingError>) -> Vec<Value> {
        texts.unwrap().iter().map(|text| serde_json::from_str(text).unwrap()).collect()
    }

    fn measured(max_physical_bytes: usize) -> Framing {
        Framing::Measured { max_physical_bytes }
    }

    #[test]
    fn crc32_matches_the_ieee_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn small_frames_go_complete() {
        let logical =
            json!({"topic": "conversation/sess_1", "payload": {"kind": "deltas", "deltas": []}});
        let wires = parsed(encode(&frame(&logical), measured(MAX_FRAME_BYTES), false, false));
        assert_eq!(wires.len(), 1);
        assert_eq!(wires[0]["kind"], "complete");
        assert_eq!(wires[0]["logicalFrameId"], "sub-1-lf-3");
        assert_eq!(wires[0]["frame"], logical);
        let app_server = parsed(encode(&frame(&logical), Framing::Complete, false, false));
        assert_eq!(app_server[0]["logicalFrameId"], "sub-1:3");
    }

    #[test]
    fn a_deltas_frame_has_zcodes_member_order_and_serde_jsons_escapes() {
        let deltas = vec![
            Arc::new(Delta::Append { row_id: 9, path: "output.text", append: "x\u{1}\"é".into() }),
            Arc::new(Delta::Op(json!({"op": "row.upserted", "row": {"rowId": 9, "text": "\\"}}))),
        ];
        let frame = Frame {
            topic: "conversation/s\"1".into(),
            subscription_id: "sub\\1".into(),
            connection_id: "".into(),
            ordinal: 12,
            delivery: DeliveryKind::Recovery,
            logical: Logical::Deltas {
                from_seq: 40,
                to_seq: 42,
                sent_at: 1_700_000_000_123,
                deltas,
            },
        };
        // ZCode's member order, escaped as serde_json escapes (a `Value` would sort the members
        // unless serde_json's `preserve_order` is on, which depends on the build).
        let logical = concat!(
            r#"{"topic":"conversation/s\"1","subscriptionId":"sub\\1","fromSeq":40,"toSeq":42,"#,
            r#""sentAt":1700000000123,"payload":{"kind":"deltas","deltas":[{"op":"row.delta","#,
            r#""rowId":9,"path":"output.text","append":"x\u0001\"é"},"#,
            r#"{"op":"row.upserted","row":{"rowId":9,"text":"\\"}}]}}"#
        );
        assert_eq!(frame.logical_text(), logical);
        let tree: Value = serde_json::from_str(logical).unwrap();
        assert_eq!(tree["payload"]["deltas"][0]["append"], "x\u{1}\"é");
        let head = r#"{"wireVersion":3,"kind":"complete","deliveryKind":"recovery","#;
        let names = r#""topic":"conversation/s\"1","subscriptionId":"sub\\1","frame":"#;
        for (framing, id) in [(Framing::Complete, r"sub\\1:12"), (measured(4096), r"sub\\1-lf-12")]
        {
            let ordinal = format!(r#""logicalFrameId":"{id}","logicalFrameOrdinal":12,"#);
            assert_eq!(
                complete_text(&frame, framing),
                format!("{head}{ordinal}{names}{logical}}}")
            );
        }
    }

    #[test]
    fn large_frames_fragment_within_the_limit_and_reassemble() {
        let logical = json!({"text": "é".repeat(20_000)});
        let wires = parsed(encode(&frame(&logical), measured(4096), false, false));
        assert!(wires.len() > 1);
        assert!(wires.iter().all(|wire| measure(wire) <= 4096));
        let mut bytes = Vec::new();
        for (index, wire) in wires.iter().enumerate() {
            assert_eq!(wire["fragmentIndex"], index);
            assert_eq!(wire["fragmentCount"], wires.len());
            bytes.extend(decode_base64(wire["dataBase64"].as_str().unwrap()));
        }
        assert_eq!(wires[0]["logicalBytes"], bytes.len());
        assert_eq!(wires[0]["checksum"]["value"], format!("{:08x}", crc32(&bytes)));
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), logical);
    }

    #[test]
    fn forced_fragments_can_carry_a_wrong_checksum() {
        let logical = json!({"a": 1});
        let wires = parsed(encode(&frame(&logical), measured(MAX_FRAME_BYTES), true, true));
        assert_eq!(wires.len(), 2);
        let bytes = serde_json::to_vec(&logical).unwrap();
        assert_ne!(wires[0]["checksum"]["value"], format!("{:08x}", crc32(&bytes)));
    }

    fn decode_base64(text: &str) -> Vec<u8> {
        BASE64.decode(text).unwrap()
    }
}
