//! The RPC value encoding of ZCode's `packages/rpc` serializer (VS Code IPC lineage): one tag
//! byte, then a payload. Tags: 0 undefined, 1 string, 2 Buffer, 3 VSBuffer, 4 array, 5 object
//! (JSON text), 6 int. Lengths and ints are a 7-bit varint, least significant group first.
//!
//! Arrays are encoded element by element; everything that is not a string, buffer, array or
//! 32-bit integer (objects, `null`, booleans, other numbers) goes as JSON text.

use serde_json::Value;

const TAG_UNDEFINED: u8 = 0;
const TAG_STRING: u8 = 1;
const TAG_BUFFER: u8 = 2;
const TAG_VS_BUFFER: u8 = 3;
const TAG_ARRAY: u8 = 4;
const TAG_OBJECT: u8 = 5;
const TAG_INT: u8 = 6;

/// One serialized value, as the JavaScript side would see it.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcValue {
    Undefined,
    String(String),
    /// A `Uint8Array` (tag 2).
    Buffer(Vec<u8>),
    /// A `VSBuffer` (tag 3).
    VsBuffer(Vec<u8>),
    Array(Vec<RpcValue>),
    /// Anything JSON-encoded (tag 5).
    Object(Value),
    /// The same, already written as JSON text (a V4 wire the publisher wrote without a tree).
    Json(String),
    Int(i32),
}

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl RpcValue {
    /// The value JavaScript's serializer would produce for this JSON value.
    pub fn from_json(value: &Value) -> RpcValue {
        match value {
            Value::String(text) => RpcValue::String(text.clone()),
            Value::Array(items) => RpcValue::Array(items.iter().map(RpcValue::from_json).collect()),
            Value::Number(number) => match number.as_i64().and_then(|n| i32::try_from(n).ok()) {
                Some(int) => RpcValue::Int(int),
                None => RpcValue::Object(value.clone()),
            },
            other => RpcValue::Object(other.clone()),
        }
    }

    /// The JSON view of a decoded value (`undefined` becomes `null`, buffers byte arrays).
    pub fn to_json(&self) -> Value {
        match self {
            RpcValue::Undefined => Value::Null,
            RpcValue::String(text) => Value::String(text.clone()),
            RpcValue::Buffer(bytes) | RpcValue::VsBuffer(bytes) => {
                Value::Array(bytes.iter().map(|byte| Value::from(*byte)).collect())
            }
            RpcValue::Array(items) => Value::Array(items.iter().map(RpcValue::to_json).collect()),
            RpcValue::Object(value) => value.clone(),
            RpcValue::Json(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            RpcValue::Int(int) => Value::from(*int),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            RpcValue::Undefined => out.push(TAG_UNDEFINED),
            RpcValue::String(text) => encode_bytes(out, TAG_STRING, text.as_bytes()),
            RpcValue::Buffer(bytes) => encode_bytes(out, TAG_BUFFER, bytes),
            RpcValue::VsBuffer(bytes) => encode_bytes(out, TAG_VS_BUFFER, bytes),
            RpcValue::Array(items) => {
                out.push(TAG_ARRAY);
                write_varint(out, items.len() as u32);
                for item in items {
                    item.encode(out);
                }
            }
            RpcValue::Object(value) => {
                let text = serde_json::to_vec(value).expect("JSON values always serialize");
                encode_bytes(out, TAG_OBJECT, &text);
            }
            RpcValue::Json(text) => encode_bytes(out, TAG_OBJECT, text.as_bytes()),
            RpcValue::Int(int) => {
                out.push(TAG_INT);
                // The serializer writes the 32-bit pattern, so negative ints take five bytes.
                write_varint(out, *int as u32);
            }
        }
    }

    /// Decodes one value from the front of `input`, returning it and the bytes it used.
    pub fn decode(input: &[u8]) -> Result<(RpcValue, usize), DecodeError> {
        let mut reader = Reader { input, position: 0 };
        let value = reader.value(0)?;
        Ok((value, reader.position))
    }
}

fn encode_bytes(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    out.push(tag);
    write_varint(out, bytes.len() as u32);
    out.extend_from_slice(bytes);
}

pub fn write_varint(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let low = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// Nesting beyond this is refused rather than risking the stack on hostile input.
const MAX_DEPTH: usize = 64;

struct Reader<'a> {
    input: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, DecodeError> {
        let byte = *self
            .input
            .get(self.position)
            .ok_or_else(|| DecodeError("message ends inside a value".into()))?;
        self.position += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u32, DecodeError> {
        let mut value: u32 = 0;
        for shift in (0..35).step_by(7) {
            let byte = self.byte()?;
            value |= u32::from(byte & 0x7f).wrapping_shl(shift);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError("varint longer than five bytes".into()))
    }

    fn bytes(&mut self) -> Result<&[u8], DecodeError> {
        let length = self.varint()? as usize;
        let end =
            self.position.checked_add(length).filter(|end| *end <= self.input.len()).ok_or_else(
                || DecodeError(format!("value of {length} bytes overruns the message")),
            )?;
        let bytes = &self.input[self.position..end];
        self.position = end;
        Ok(bytes)
    }

    fn value(&mut self, depth: usize) -> Result<RpcValue, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError("values nested too deeply".into()));
        }
        match self.byte()? {
            TAG_UNDEFINED => Ok(RpcValue::Undefined),
            TAG_STRING => {
                // Node decodes invalid UTF-8 lossily; so does the simulator.
                Ok(RpcValue::String(String::from_utf8_lossy(self.bytes()?).into_owned()))
            }
            TAG_BUFFER => Ok(RpcValue::Buffer(self.bytes()?.to_vec())),
            TAG_VS_BUFFER => Ok(RpcValue::VsBuffer(self.bytes()?.to_vec())),
            TAG_ARRAY => {
                let count = self.varint()?;
                let mut items = Vec::new();
                for _ in 0..count {
                    items.push(self.value(depth + 1)?);
                }
                Ok(RpcValue::Array(items))
            }
            TAG_OBJECT => {
                let text = String::from_utf8_lossy(self.bytes()?).into_owned();
                serde_json::from_str(&text)
                    .map(RpcValue::Object)
                    .map_err(|error| DecodeError(format!("object value is not JSON: {error}")))
            }
            TAG_INT => Ok(RpcValue::Int(self.varint()? as i32)),
            tag => Err(DecodeError(format!("unknown value tag {tag}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(value: RpcValue) {
        let mut bytes = Vec::new();
        value.encode(&mut bytes);
        assert_eq!(RpcValue::decode(&bytes).unwrap(), (value, bytes.len()));
    }

    #[test]
    fn encodes_the_documented_byte_layout() {
        let mut bytes = Vec::new();
        RpcValue::Array(vec![RpcValue::Int(100), RpcValue::Int(0), RpcValue::String("ab".into())])
            .encode(&mut bytes);
        assert_eq!(bytes, [4, 3, 6, 100, 6, 0, 1, 2, b'a', b'b']);
        let mut bytes = Vec::new();
        RpcValue::Int(300).encode(&mut bytes);
        assert_eq!(bytes, [6, 0xac, 0x02]);
        let mut bytes = Vec::new();
        RpcValue::Object(json!({"a": 1})).encode(&mut bytes);
        assert_eq!(bytes, [5, 7, b'{', b'"', b'a', b'"', b':', b'1', b'}']);
    }

    #[test]
    fn round_trips_every_tag() {
        round_trip(RpcValue::Undefined);
        round_trip(RpcValue::String("héllo".into()));
        round_trip(RpcValue::Buffer(vec![0, 255]));
        round_trip(RpcValue::VsBuffer(vec![1; 300]));
        round_trip(RpcValue::Object(json!({"nested": [1, null, true]})));
        round_trip(RpcValue::Int(-1));
        round_trip(RpcValue::Int(i32::MAX));
        round_trip(RpcValue::Array(vec![RpcValue::Undefined, RpcValue::Array(vec![])]));
    }

    #[test]
    fn maps_json_the_way_the_javascript_serializer_does() {
        assert_eq!(RpcValue::from_json(&json!(7)), RpcValue::Int(7));
        assert_eq!(RpcValue::from_json(&json!(1.5)), RpcValue::Object(json!(1.5)));
        assert_eq!(
            RpcValue::from_json(&json!(4_294_967_296_u64)),
            RpcValue::Object(json!(4_294_967_296_u64))
        );
        assert_eq!(RpcValue::from_json(&json!(null)), RpcValue::Object(json!(null)));
        assert_eq!(RpcValue::from_json(&json!(true)), RpcValue::Object(json!(true)));
        assert_eq!(
            RpcValue::from_json(&json!(["x", {"y": 1}])),
            RpcValue::Array(vec![RpcValue::String("x".into()), RpcValue::Object(json!({"y": 1}))])
        );
    }

    #[test]
    fn refuses_truncated_and_unknown_input() {
        assert!(RpcValue::decode(&[]).is_err());
        assert!(RpcValue::decode(&[1, 5, b'a']).is_err());
        assert!(RpcValue::decode(&[9]).unwrap_err().0.contains("unknown value tag 9"));
        assert!(RpcValue::decode(&[6, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).is_err());
        assert!(RpcValue::decode(&[5, 1, b'{']).is_err());
    }
}
