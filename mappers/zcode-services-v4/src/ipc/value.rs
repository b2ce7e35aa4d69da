//! The value encoding of ZCode's channel IPC (derived from VS Code's): one tag byte, then a
//! payload. Tags (ZCode `packages/rpc/src/serialization.ts`): `0` undefined, `1` string
//! (varint byte length + UTF-8), `2` Node buffer and `3` VSBuffer (varint length + bytes), `4`
//! array (varint count + elements), `5` object (varint length + JSON text), `6` int (varint).
//!
//! Varints carry 7 bits per byte, least significant group first, high bit = continuation.
//! ZCode reads them into a JavaScript 32-bit integer, so at most 5 bytes carry meaning; a
//! longer varint, or a fifth byte with bits JavaScript would drop, is refused here rather than
//! reinterpreted. An int is those 32 bits as two's complement (JavaScript `value | 0`), which
//! is how ZCode encodes negative ints too.

use std::fmt;

/// The most nested arrays a value may hold (ZCode sends depth 1; anything deep is garbage).
const MAX_DEPTH: usize = 32;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpcValue {
    Undefined,
    String(String),
    /// Tag 2 (Node `Buffer` / `Uint8Array`) or 3 (`VSBuffer`): the tag is kept for re-encoding.
    Bytes {
        tag: u8,
        bytes: Vec<u8>,
    },
    Array(Vec<IpcValue>),
    /// Tag 5: JSON text, as it came (numbers that are not 32-bit ints, booleans, null, objects).
    Json(String),
    Int(i32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail<T>(message: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError(message.into()))
}

pub fn write_varint(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

impl IpcValue {
    /// JSON text as a value (tag 5).
    pub fn json(text: impl Into<String>) -> Self {
        IpcValue::Json(text.into())
    }

    /// An id or count as JavaScript would send the number: an int when it fits 32 bits
    /// signed, else JSON.
    pub fn number(value: u64) -> Self {
        match i32::try_from(value) {
            Ok(int) => IpcValue::Int(int),
            Err(_) => IpcValue::Json(value.to_string()),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            IpcValue::Undefined => out.push(0),
            IpcValue::String(text) => {
                out.push(1);
                write_len(out, text.len());
                out.extend_from_slice(text.as_bytes());
            }
            IpcValue::Bytes { tag, bytes } => {
                out.push(*tag);
                write_len(out, bytes.len());
                out.extend_from_slice(bytes);
            }
            IpcValue::Array(items) => {
                out.push(4);
                write_len(out, items.len());
                for item in items {
                    item.encode(out);
                }
            }
            IpcValue::Json(text) => {
                out.push(5);
                write_len(out, text.len());
                out.extend_from_slice(text.as_bytes());
            }
            IpcValue::Int(int) => {
                out.push(6);
                write_varint(out, *int as u32);
            }
        }
    }

    /// The value as JSON text: undefined is `null`, arrays are converted element by element,
    /// JSON is checked to be one JSON value and passed through unparsed. Bytes have no JSON form here: no call this mapper makes
    /// answers with them.
    pub fn into_json_text(self) -> Result<String, DecodeError> {
        if let IpcValue::Json(text) = self {
            // An event's or reply's body (one tag-5 value, as ZCode sends them): checked and
            // handed on as it is, not copied (F-20).
            check_json(&text)?;
            return Ok(text);
        }
        let mut out = String::new();
        self.write_json(&mut out)?;
        Ok(out)
    }

    fn write_json(self, out: &mut String) -> Result<(), DecodeError> {
        match self {
            IpcValue::Undefined => out.push_str("null"),
            IpcValue::String(text) => out.push_str(&serde_json::Value::String(text).to_string()),
            IpcValue::Bytes { .. } => return fail("a binary value where JSON was expected"),
            IpcValue::Array(items) => {
                out.push('[');
                for (index, item) in items.into_iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write_json(out)?;
                }
                out.push(']');
            }
            IpcValue::Json(text) => {
                // ZCode reads a tag-5 value with `JSON.parse`, which refuses text that is not
                // exactly one JSON value. Passed on unchecked, such text would be spliced into
                // the JSON of its array (`1,2` inside a one-element array read as two
                // elements) or reach a session as a body that is not JSON at all.
                check_json(&text)?;
                out.push_str(&text)
            }
            IpcValue::Int(int) => out.push_str(&int.to_string()),
        }
        Ok(())
    }
}

fn check_json(text: &str) -> Result<(), DecodeError> {
    match serde_json::from_str::<&serde_json::value::RawValue>(text) {
        Ok(_) => Ok(()),
        Err(_) => fail("a JSON value (tag 5) is not one valid JSON value"),
    }
}

/// Lengths and counts above `i32::MAX` cannot come from ZCode (JavaScript would read them as
/// negative); the encoder never has such a value (messages are bounded far below).
fn write_len(out: &mut Vec<u8>, len: usize) {
    write_varint(out, u32::try_from(len).expect("IPC values stay below 4 GiB"));
}

/// Reads values from one message body.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        let byte =
            *self.bytes.get(self.pos).ok_or_else(|| DecodeError("a value is cut off".into()))?;
        self.pos += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u32, DecodeError> {
        let mut value = 0u32;
        for index in 0..5 {
            let byte = self.byte()?;
            let group = u32::from(byte & 0x7f);
            if index == 4 && (byte & 0x80 != 0 || group > 0x0f) {
                return fail("a varint is longer than 32 bits");
            }
            value |= group << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        unreachable!("the fifth byte always returns")
    }

    fn len(&mut self) -> Result<usize, DecodeError> {
        let len = self.varint()?;
        if len > i32::MAX as u32 {
            return fail("a length is negative in JavaScript terms");
        }
        let len = len as usize;
        if len > self.bytes.len() - self.pos {
            return fail("a value is longer than its message");
        }
        Ok(len)
    }

    fn take(&mut self, len: usize) -> &'a [u8] {
        let slice = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        slice
    }

    fn utf8(&mut self, what: &str) -> Result<String, DecodeError> {
        let len = self.len()?;
        match zcode_mapper_sdk::text::utf8(self.take(len)) {
            Ok(text) => Ok(text.to_string()),
            Err(_) => fail(format!("{what} is not UTF-8")),
        }
    }

    pub fn value(&mut self) -> Result<IpcValue, DecodeError> {
        self.value_at(0)
    }

    /// The length of the JSON value (tag 5) that starts here, read without its text, which
    /// may not have arrived yet; the text then starts at [`Reader::position`].
    pub fn json_len(&mut self) -> Result<usize, DecodeError> {
        if self.byte()? != 5 {
            return fail("not a JSON value");
        }
        let len = self.varint()?;
        if len > i32::MAX as u32 {
            return fail("a length is negative in JavaScript terms");
        }
        Ok(len as usize)
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn value_at(&mut self, depth: usize) -> Result<IpcValue, DecodeError> {
        match self.byte()? {
            0 => Ok(IpcValue::Undefined),
            1 => Ok(IpcValue::String(self.utf8("a string")?)),
            tag @ (2 | 3) => {
                let len = self.len()?;
                Ok(IpcValue::Bytes { tag, bytes: self.take(len).to_vec() })
            }
            4 => {
                if depth >= MAX_DEPTH {
                    return fail("arrays are nested too deeply");
                }
                // Every element takes at least one byte, so the count is bounded by the rest.
                let count = self.len()?;
                let mut items = Vec::with_capacity(count.min(64));
                for _ in 0..count {
                    items.push(self.value_at(depth + 1)?);
                }
                Ok(IpcValue::Array(items))
            }
            5 => Ok(IpcValue::Json(self.utf8("a JSON value")?)),
            6 => Ok(IpcValue::Int(self.varint()? as i32)),
            tag => fail(format!("unknown value tag {tag}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: IpcValue) -> Vec<u8> {
        let mut bytes = Vec::new();
        value.encode(&mut bytes);
        let mut reader = Reader::new(&bytes);
        assert_eq!(reader.value().unwrap(), value);
        assert!(reader.at_end());
        bytes
    }

    #[test]
    fn encodes_varints_like_zcode() {
        // The examples in ZCode's serialization.ts: 0, 127, 128.
        let encode = |value| {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            out
        };
        assert_eq!(encode(0), [0x00]);
        assert_eq!(encode(127), [0x7f]);
        assert_eq!(encode(128), [0x80, 0x01]);
        assert_eq!(encode(u32::MAX), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn round_trips_every_tag() {
        assert_eq!(round_trip(IpcValue::Undefined), [0]);
        assert_eq!(round_trip(IpcValue::String("hé".into())), [1, 3, b'h', 0xc3, 0xa9]);
        assert_eq!(round_trip(IpcValue::Int(200)), [6, 0xc8, 0x01]);
        // A negative int is its two's complement in five bytes, as `writeInt32VQL` writes it.
        assert_eq!(round_trip(IpcValue::Int(-1)), [6, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(round_trip(IpcValue::json("{\"a\":1}"))[..2], [5, 7]);
        round_trip(IpcValue::Bytes { tag: 2, bytes: vec![0, 255] });
        round_trip(IpcValue::Bytes { tag: 3, bytes: vec![] });
        round_trip(IpcValue::Array(vec![
            IpcValue::Int(100),
            IpcValue::Int(7),
            IpcValue::String("zcode-agent".into()),
            IpcValue::Array(vec![IpcValue::Undefined]),
        ]));
    }

    #[test]
    fn numbers_outside_32_bits_travel_as_json() {
        assert_eq!(IpcValue::number(5), IpcValue::Int(5));
        assert_eq!(IpcValue::number(i32::MAX as u64), IpcValue::Int(i32::MAX));
        assert_eq!(IpcValue::number(1 << 31), IpcValue::Json("2147483648".into()));
    }

    #[test]
    fn refuses_malformed_values() {
        let error = |bytes: &[u8]| Reader::new(bytes).value().unwrap_err().0;
        assert_eq!(error(&[]), "a value is cut off");
        assert_eq!(error(&[9]), "unknown value tag 9");
        assert_eq!(error(&[1, 5, b'a']), "a value is longer than its message");
        assert_eq!(error(&[1, 1, 0xff]), "a string is not UTF-8");
        assert_eq!(error(&[6, 0x80, 0x80, 0x80, 0x80, 0x10]), "a varint is longer than 32 bits");
        assert_eq!(error(&[6, 0x80, 0x80, 0x80, 0x80, 0x80]), "a varint is longer than 32 bits");
        assert_eq!(
            error(&[1, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            "a length is negative in JavaScript terms"
        );
        assert_eq!(error(&[4, 3, 0]), "a value is longer than its message");
        assert_eq!(error(&[6, 0x80]), "a value is cut off");
        let mut deep = [4u8, 1].repeat(40);
        deep.push(0);
        assert_eq!(error(&deep), "arrays are nested too deeply");
    }

    #[test]
    fn converts_values_to_json_text() {
        let value = IpcValue::Array(vec![
            IpcValue::Undefined,
            IpcValue::String("a\"b".into()),
            IpcValue::Int(-3),
            IpcValue::json("{\"x\":true}"),
        ]);
        assert_eq!(value.into_json_text().unwrap(), r#"[null,"a\"b",-3,{"x":true}]"#);
        assert!(IpcValue::Bytes { tag: 3, bytes: vec![] }.into_json_text().is_err());
    }

    /// Finding F-12 (docs/reliability.md): tag-5 text that is not one JSON value was spliced
    /// into its array's JSON, or handed on as a body that is not JSON.
    #[test]
    fn refuses_json_text_that_is_not_one_json_value() {
        for text in ["1,2", " ", "", "{\"a\":1} {}", "[1", "tru"] {
            let inside = IpcValue::Array(vec![IpcValue::json(text)]);
            assert!(inside.into_json_text().is_err(), "{text:?} inside an array");
            assert!(IpcValue::json(text).into_json_text().is_err(), "{text:?} alone");
        }
        assert_eq!(IpcValue::json(" [1, 2] ").into_json_text().unwrap(), " [1, 2] ");
    }
}
