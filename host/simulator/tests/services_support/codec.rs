//! A client-side reading of ZCode's channel IPC, written for the tests from the protocol's
//! description (not shared with the simulator): the 13-byte transport header, the tagged value
//! encoding, and the V4 wire frame with its fragments and CRC-32.

use serde_json::Value;

/// A decoded value; `Undefined` is kept apart from JSON `null`.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Undefined,
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Val>),
    Json(Value),
    Int(i32),
}

impl Val {
    /// The JSON the JavaScript side would hold (undefined → null).
    pub fn json(&self) -> Value {
        match self {
            Val::Undefined => Value::Null,
            Val::Str(text) => Value::String(text.clone()),
            Val::Bytes(bytes) => Value::from(bytes.clone()),
            Val::List(items) => Value::Array(items.iter().map(Val::json).collect()),
            Val::Json(value) => value.clone(),
            Val::Int(int) => Value::from(*int),
        }
    }

    /// How a JavaScript client serializes a JSON argument.
    pub fn from_json(value: &Value) -> Val {
        match value {
            Value::String(text) => Val::Str(text.clone()),
            Value::Array(items) => Val::List(items.iter().map(Val::from_json).collect()),
            Value::Number(number) if number.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => {
                Val::Int(number.as_i64().unwrap() as i32)
            }
            other => Val::Json(other.clone()),
        }
    }
}

fn put_len(out: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

pub fn encode(value: &Val, out: &mut Vec<u8>) {
    let tagged = |out: &mut Vec<u8>, tag: u8, bytes: &[u8]| {
        out.push(tag);
        put_len(out, bytes.len() as u32);
        out.extend_from_slice(bytes);
    };
    match value {
        Val::Undefined => out.push(0),
        Val::Str(text) => tagged(out, 1, text.as_bytes()),
        Val::Bytes(bytes) => tagged(out, 3, bytes),
        Val::List(items) => {
            out.push(4);
            put_len(out, items.len() as u32);
            items.iter().for_each(|item| encode(item, out));
        }
        Val::Json(value) => tagged(out, 5, value.to_string().as_bytes()),
        Val::Int(int) => {
            out.push(6);
            put_len(out, *int as u32);
        }
    }
}

/// Decodes one value at `*at`; `Err` explains why the bytes are not a value.
pub fn decode(bytes: &[u8], at: &mut usize) -> Result<Val, String> {
    let byte = |at: &mut usize| -> Result<u8, String> {
        let value = *bytes.get(*at).ok_or("truncated value")?;
        *at += 1;
        Ok(value)
    };
    let len = |at: &mut usize| -> Result<u32, String> {
        let mut value = 0u32;
        for shift in [0, 7, 14, 21, 28] {
            let b = byte(at)?;
            value |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("overlong varint".into())
    };
    let slice = |at: &mut usize| -> Result<Vec<u8>, String> {
        let n = len(at)? as usize;
        let end = at
            .checked_add(n)
            .filter(|end| *end <= bytes.len())
            .ok_or("value overruns its message")?;
        let out = bytes[*at..end].to_vec();
        *at = end;
        Ok(out)
    };
    match byte(at)? {
        0 => Ok(Val::Undefined),
        1 => String::from_utf8(slice(at)?).map(Val::Str).map_err(|_| "string is not UTF-8".into()),
        2 | 3 => Ok(Val::Bytes(slice(at)?)),
        4 => {
            let count = len(at)?;
            (0..count).map(|_| decode(bytes, at)).collect::<Result<_, _>>().map(Val::List)
        }
        5 => {
            let text =
                String::from_utf8(slice(at)?).map_err(|_| "object text is not UTF-8".to_owned())?;
            serde_json::from_str(&text)
                .map(Val::Json)
                .map_err(|error| format!("object text is not JSON: {error}"))
        }
        6 => Ok(Val::Int(len(at)? as i32)),
        tag => Err(format!("unknown tag {tag}")),
    }
}

/// A client message body: header list + body value.
pub fn message(header: Vec<Val>, body: &Val) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&Val::List(header), &mut out);
    encode(body, &mut out);
    out
}

pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = vec![1u8, 0, 0, 0, 0, 0, 0, 0, 0];
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// A server message: `[kind, id?]` and its body.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub kind: i32,
    pub id: Option<i64>,
    pub body: Val,
}

/// The largest transport frame this client accepts (the V4 assembly limit plus slack).
pub const MAX_FRAME: usize = 17 * 1024 * 1024;

/// Cuts a byte stream into server messages.
#[derive(Default)]
pub struct Reader {
    buffer: Vec<u8>,
}

impl Reader {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next message; `Err` is a framing fault (the stream is unusable after it).
    pub fn next(&mut self) -> Result<Option<Incoming>, String> {
        loop {
            if self.buffer.len() < 13 {
                return Ok(None);
            }
            let length = u32::from_be_bytes(self.buffer[9..13].try_into().unwrap()) as usize;
            if length > MAX_FRAME {
                return Err(format!("transport frame of {length} bytes exceeds the limit"));
            }
            if self.buffer.len() < 13 + length {
                return Ok(None);
            }
            let kind = self.buffer[0];
            let body: Vec<u8> = self.buffer.drain(..13 + length).skip(13).collect();
            if kind != 1 {
                continue;
            }
            let mut at = 0;
            let header = decode(&body, &mut at)?;
            let value = decode(&body, &mut at)?;
            let Val::List(header) = header else {
                return Err("message header is not a list".into());
            };
            let kind = match header.first() {
                Some(Val::Int(kind)) => *kind,
                _ => return Err("message header has no type".into()),
            };
            let id = match header.get(1) {
                Some(Val::Int(id)) => Some(i64::from(*id)),
                _ => None,
            };
            return Ok(Some(Incoming { kind, id, body: value }));
        }
    }
}

pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

pub fn unbase64(text: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| -> Result<u32, String> {
        Ok(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("bad base64 byte {c}")),
        } as u32)
    };
    let mut out = Vec::new();
    for group in text.as_bytes().chunks(4) {
        let digits: Vec<u32> =
            group.iter().filter(|c| **c != b'=').map(|c| digit(*c)).collect::<Result<_, _>>()?;
        let mut bits = 0u32;
        for d in &digits {
            bits = bits << 6 | d;
        }
        bits <<= 6 * (4 - digits.len() as u32);
        for index in 0..digits.len().saturating_sub(1) {
            out.push((bits >> (16 - 8 * index)) as u8);
        }
    }
    Ok(out)
}

/// Reassembles V4 wire frames into logical frames.
#[derive(Default)]
pub struct Assembler {
    parts: Vec<Vec<u8>>,
    id: Option<String>,
}

impl Assembler {
    /// A logical frame when one is complete; `Err` for a corrupt or inconsistent fragment.
    pub fn feed(&mut self, wire: &Value) -> Result<Option<Value>, String> {
        if wire["wireVersion"] != 3 {
            return Err(format!("unknown wire version {}", wire["wireVersion"]));
        }
        match wire["kind"].as_str() {
            Some("complete") => Ok(Some(wire["frame"].clone())),
            Some("fragment") => {
                let id = wire["logicalFrameId"].as_str().unwrap_or_default().to_owned();
                let index =
                    wire["fragmentIndex"].as_u64().ok_or("fragment without index")? as usize;
                let count =
                    wire["fragmentCount"].as_u64().ok_or("fragment without count")? as usize;
                if self.id.as_deref() != Some(id.as_str()) {
                    if index != 0 {
                        return Err("fragment sequence starts past 0".into());
                    }
                    self.id = Some(id);
                    self.parts.clear();
                }
                if index != self.parts.len() {
                    return Err("fragments out of order".into());
                }
                self.parts.push(unbase64(wire["dataBase64"].as_str().unwrap_or_default())?);
                if self.parts.len() < count {
                    return Ok(None);
                }
                let bytes: Vec<u8> = self.parts.drain(..).flatten().collect();
                self.id = None;
                if wire["logicalBytes"].as_u64() != Some(bytes.len() as u64) {
                    return Err("logicalBytes mismatch".into());
                }
                let expected = wire["checksum"]["value"].as_str().unwrap_or_default();
                if format!("{:08x}", crc32(&bytes)) != expected {
                    return Err("crc32 mismatch".into());
                }
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|error| format!("fragment payload is not JSON: {error}"))
            }
            other => Err(format!("unknown wire kind {other:?}")),
        }
    }
}
