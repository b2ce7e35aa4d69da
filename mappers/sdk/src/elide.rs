//! Long strings of a long line, elided while the line arrives (issue 27). A turn's last frames
//! carry its whole text again, megabytes of it, which the deltas already showed. A framer that
//! held such a line whole would grow the mapper's linear memory by its size, and a linear memory
//! never shrinks. A [`Compactor`] reads the line as it comes instead. A string at one of the
//! mapper's [`Paths`] that grows past a bound is not kept: it becomes an [`Elided`] object, with
//! its length, its FNV-1a fingerprint and its last bytes. A reader can then still check that the
//! string continues the text it showed, and show the rest if that rest fits in the tail
//! ([`Text::after`]).
//!
//! The compactor keeps everything but such strings as it came, and checks each string it elides
//! as `serde_json` would (escapes, surrogates, UTF-8, no control characters). Every other part
//! of the line is checked when the line is read. A reader that wants an elided value as a string
//! fails on the object it finds there, so nothing is lost silently.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use zcode_contract::MapperError;

use crate::json::protocol;

/// The member that marks an elided string: `{"$zcode-acp:elided": {bytes, fnv, tail}}`.
pub const ELIDED: &str = "$zcode-acp:elided";

/// FNV-1a (64-bit) of `bytes`, continued from `state`: a text's fingerprint, taken piece by
/// piece as it streams.
pub fn fnv(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The fingerprint of the empty text (the FNV-1a offset basis).
pub const FNV_EMPTY: u64 = 0xcbf2_9ce4_8422_2325;

/// Where string values may be elided.
pub type Paths = &'static [Path];

/// A member path from the line's root; an array adds no step (`["params", "rows", "text"]`
/// names the `text` of every element of `params.rows`).
#[derive(Clone, Copy, Debug)]
pub struct Path {
    pub members: &'static [&'static str],
    /// Only in an object where this member came before, as one of these strings (written
    /// without escapes): a `text` only where `kind` named a text row. Where it comes after,
    /// nothing is elided.
    pub when: Option<(&'static str, &'static [&'static str])>,
}

impl Path {
    /// The strings at `members`, whatever else their object holds.
    pub const fn at(members: &'static [&'static str]) -> Path {
        Path { members, when: None }
    }
}

/// What is left of an elided string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Elided {
    /// Its length in bytes (UTF-8, escapes decoded).
    pub bytes: usize,
    /// [`fnv`] of all of it.
    pub fnv: u64,
    /// Its last bytes, at most the compactor's tail, starting on a character.
    pub tail: String,
}

impl Elided {
    /// What the string adds to a text of `len` bytes with fingerprint `fingerprint`: `None`
    /// when it does not continue that text, or when what it adds is longer than the tail kept.
    pub fn after(&self, len: usize, fingerprint: u64) -> Option<&str> {
        let added = self.bytes.checked_sub(len)?;
        let rest = self.tail.get(self.tail.len().checked_sub(added)?..)?;
        (fnv(fingerprint, rest.as_bytes()) == self.fnv).then_some(rest)
    }
}

/// Why a text does not continue the text shown ([`Text::continuing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discontinued {
    /// It does not begin with it.
    Rewritten,
    /// It came elided, and its `bytes` new bytes are more than its tail kept.
    NotKept { bytes: usize },
}

/// A string member that may have been elided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Text<'a> {
    Whole(Cow<'a, str>),
    Elided(Elided),
}

impl Text<'_> {
    /// What the text adds to a text of `len` bytes with fingerprint `fingerprint` that it
    /// begins with; `None` when it does not begin so, or (elided) when the rest is not known.
    pub fn after(&self, len: usize, fingerprint: u64) -> Option<&str> {
        match self {
            Text::Whole(text) => {
                let shown = text.get(..len)?;
                (fnv(FNV_EMPTY, shown.as_bytes()) == fingerprint).then(|| &text[len..])
            }
            Text::Elided(elided) => elided.after(len, fingerprint),
        }
    }

    /// [`Text::after`], or why not: an elided text whose new part is longer than its tail
    /// says how long that part is.
    pub fn continuing(&self, len: usize, fingerprint: u64) -> Result<&str, Discontinued> {
        self.after(len, fingerprint).ok_or(match self {
            Text::Elided(elided) if elided.bytes.saturating_sub(len) > elided.tail.len() => {
                Discontinued::NotKept { bytes: elided.bytes - len }
            }
            _ => Discontinued::Rewritten,
        })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Text::Whole(text) => text.len(),
            Text::Elided(elided) => elided.bytes,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its [`fnv`] fingerprint.
    pub fn fingerprint(&self) -> u64 {
        match self {
            Text::Whole(text) => fnv(FNV_EMPTY, text.as_bytes()),
            Text::Elided(elided) => elided.fnv,
        }
    }

    /// A `text` member of a tree: a string, or an elided one; `None` for anything else.
    pub fn of(value: &serde_json::Value) -> Option<Text<'_>> {
        match value {
            serde_json::Value::String(text) => Some(Text::Whole(Cow::Borrowed(text))),
            serde_json::Value::Object(map) if map.len() == 1 => {
                serde_json::from_value(map.get(ELIDED)?.clone()).ok().map(Text::Elided)
            }
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text::Whole(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text::Whole(Cow::Owned(text.to_string())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Text::Whole(Cow::Owned(text)))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let Some(key) = map.next_key::<Cow<'de, str>>()? else {
                    return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
                };
                if key != ELIDED {
                    return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
                }
                let elided = map.next_value::<Elided>()?;
                match map.next_key::<de::IgnoredAny>()? {
                    None => Ok(Text::Elided(elided)),
                    Some(_) => Err(de::Error::invalid_type(de::Unexpected::Map, &self)),
                }
            }
        }
        deserializer.deserialize_any(Either)
    }
}

fn not_json() -> MapperError {
    protocol("ZCode wrote a long string that is not valid JSON text")
}

/// Nesting followed for paths; deeper values are never elided (a reader refuses such depth).
const MAX_LEVELS: usize = 64;
/// Longest member name followed for paths; a longer one matches no path.
const MAX_KEY: usize = 64;

/// One open container: an array, or an object with the member it is at, and the members it
/// held that a [`Path::when`] names.
enum Level {
    Array,
    Object { key: Vec<u8>, value_next: bool, noted: Vec<(Vec<u8>, Vec<u8>)> },
}

/// Where the compactor is in the line.
enum At {
    /// Outside any string.
    Between,
    /// In a string kept as it came (a member name, or a value on no path), whose text starts
    /// at `start` in the output.
    Kept { key: bool, escaped: bool, start: usize },
    /// In a string on a path: kept until it passes the bound, measured throughout.
    Measured(Box<Measure>),
}

/// A string on a path, decoded as it comes.
struct Measure {
    /// Where its text starts in the output (after the quote), while it is still kept.
    start: usize,
    raw: usize,
    elided: bool,
    bytes: usize,
    fnv: u64,
    tail: Vec<u8>,
    escape: Escape,
    /// The start of a UTF-8 character cut by the chunk's end.
    partial: Vec<u8>,
}

#[derive(Clone, Copy)]
enum Escape {
    None,
    Backslash,
    /// `\u` and `digits` hex digits so far; `high` when a high surrogate came before.
    Hex {
        digits: u8,
        value: u32,
        high: Option<u32>,
    },
    /// A high surrogate's `\uXXXX` came: its low half must follow (`seen`: 0, `\` 1).
    Low {
        high: u32,
        seen: u8,
    },
}

/// Compacts one line as it arrives ([`Compactor::push`]), eliding strings longer than `min`
/// bytes as written at `paths` (their text then keeps its last `tail` bytes).
pub struct Compactor {
    paths: Paths,
    min: usize,
    tail: usize,
    out: Vec<u8>,
    levels: Vec<Level>,
    /// Containers opened past [`MAX_LEVELS`].
    deep: usize,
    at: At,
}

impl Compactor {
    pub fn new(paths: Paths, min: usize, tail: usize) -> Self {
        Self { paths, min, tail, out: Vec::new(), levels: Vec::new(), deep: 0, at: At::Between }
    }

    /// Takes the next bytes of the line (no newline among them).
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), MapperError> {
        while !bytes.is_empty() {
            let used = match &mut self.at {
                At::Between => self.between(bytes),
                At::Kept { .. } => self.kept(bytes),
                At::Measured(_) => self.measured(bytes)?,
            };
            bytes = &bytes[used..];
        }
        Ok(())
    }

    /// The line, compacted. A string left open is the reader's to refuse: what came of it is
    /// kept (elided, its marker is left out, so the line cannot read as whole).
    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    /// Structure up to the next string's opening quote (included).
    fn between(&mut self, bytes: &[u8]) -> usize {
        for (i, &byte) in bytes.iter().enumerate() {
            match byte {
                b'"' => {
                    self.out.extend_from_slice(&bytes[..=i]);
                    self.open_string();
                    return i + 1;
                }
                b'{' | b'[' if self.levels.len() >= MAX_LEVELS || self.deep > 0 => self.deep += 1,
                b'{' => self.levels.push(Level::Object {
                    key: Vec::new(),
                    value_next: false,
                    noted: Vec::new(),
                }),
                b'[' => self.levels.push(Level::Array),
                b'}' | b']' if self.deep > 0 => self.deep -= 1,
                b'}' | b']' => {
                    self.levels.pop();
                }
                b':' => {
                    if let Some(Level::Object { value_next, .. }) = self.levels.last_mut() {
                        *value_next = true;
                    }
                }
                b',' => {
                    if let Some(Level::Object { key, value_next, .. }) = self.levels.last_mut() {
                        key.clear();
                        *value_next = false;
                    }
                }
                _ => {}
            }
        }
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn open_string(&mut self) {
        let key = match self.levels.last_mut() {
            Some(Level::Object { key, value_next: false, .. }) => {
                key.clear();
                true
            }
            _ => false,
        };
        self.at = if !key && self.deep == 0 && self.on_path() {
            At::Measured(Box::new(Measure {
                start: self.out.len(),
                raw: 0,
                elided: false,
                bytes: 0,
                fnv: FNV_EMPTY,
                tail: Vec::new(),
                escape: Escape::None,
                partial: Vec::new(),
            }))
        } else {
            At::Kept { key, escaped: false, start: self.out.len() }
        };
    }

    fn on_path(&self) -> bool {
        let keys = || {
            self.levels.iter().filter_map(|level| match level {
                Level::Object { key, .. } => Some(key.as_slice()),
                Level::Array => None,
            })
        };
        let noted = match self.levels.last() {
            Some(Level::Object { noted, .. }) => noted.as_slice(),
            _ => &[],
        };
        self.paths.iter().any(|path| {
            path.members.len() == keys().count()
                && path.members.iter().zip(keys()).all(|(name, key)| name.as_bytes() == key)
                && path.when.is_none_or(|(name, values)| {
                    noted.iter().any(|(member, value)| {
                        member == name.as_bytes()
                            && values.iter().any(|allowed| allowed.as_bytes() == value)
                    })
                })
        })
    }

    /// A kept string, through its closing quote.
    fn kept(&mut self, bytes: &[u8]) -> usize {
        let At::Kept { key, escaped, start } = &mut self.at else { unreachable!() };
        let (key, start) = (*key, *start);
        let mut end = None;
        let mut i = 0;
        while i < bytes.len() {
            if *escaped {
                *escaped = false;
                i += 1;
                continue;
            }
            match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                None => break,
                Some(at) if bytes[i + at] == b'\\' => {
                    *escaped = true;
                    i += at + 1;
                }
                Some(at) => {
                    end = Some(i + at);
                    break;
                }
            }
        }
        let used = end.map_or(bytes.len(), |end| end + 1);
        let text = &bytes[..end.unwrap_or(bytes.len())];
        if key && let Some(Level::Object { key: name, .. }) = self.levels.last_mut() {
            // A name too long for any path is cut; it then matches none.
            let room = (MAX_KEY + 1).saturating_sub(name.len());
            name.extend_from_slice(&text[..text.len().min(room)]);
        }
        self.out.extend_from_slice(&bytes[..used]);
        if end.is_some() {
            self.at = At::Between;
            if !key {
                self.note(start);
            }
        }
        used
    }

    /// A value string just kept, its text at `start` in the output: noted in its object if a
    /// path's condition names its member.
    fn note(&mut self, start: usize) {
        let Some(Level::Object { key, noted, .. }) = self.levels.last_mut() else { return };
        let named = |path: &Path| path.when.is_some_and(|(name, _)| name.as_bytes() == *key);
        let value = &self.out[start..self.out.len() - 1];
        if value.len() <= MAX_KEY && self.paths.iter().any(named) {
            noted.push((key.clone(), value.to_vec()));
        }
    }

    /// A string on a path, through its closing quote.
    fn measured(&mut self, bytes: &[u8]) -> Result<usize, MapperError> {
        let At::Measured(measure) = &mut self.at else { unreachable!() };
        let (used, closed) = measure.read(bytes, self.tail)?;
        if !measure.elided {
            self.out.extend_from_slice(&bytes[..used]);
            if measure.raw > self.min {
                measure.elided = true;
                self.out.truncate(measure.start - 1);
            }
        }
        if closed {
            if measure.elided {
                let marker = measure.marker(self.tail)?;
                self.out.extend_from_slice(&marker);
            }
            self.at = At::Between;
        }
        Ok(used)
    }
}

impl Measure {
    /// Reads string text up to its closing quote; the bytes used, and whether it closed.
    fn read(&mut self, bytes: &[u8], tail: usize) -> Result<(usize, bool), MapperError> {
        let mut i = 0;
        while i < bytes.len() {
            if !matches!(self.escape, Escape::None) {
                self.escape(bytes[i], tail)?;
                i += 1;
                continue;
            }
            let run_end =
                memchr::memchr2(b'"', b'\\', &bytes[i..]).map_or(bytes.len(), |at| i + at);
            self.text(&bytes[i..run_end], tail)?;
            i = run_end;
            if i == bytes.len() {
                break;
            }
            if !self.partial.is_empty() {
                return Err(not_json());
            }
            i += 1;
            if bytes[i - 1] == b'"' {
                self.raw += i;
                return Ok((i, true));
            }
            self.escape = Escape::Backslash;
        }
        self.raw += bytes.len();
        Ok((bytes.len(), false))
    }

    /// Unescaped text as it came: checked as UTF-8 across chunk ends.
    fn text(&mut self, run: &[u8], tail: usize) -> Result<(), MapperError> {
        // A run ends before any quote or backslash, so where its plain part ends before it
        // does, a control character stands.
        if crate::compact::plain_len(run) < run.len() {
            return Err(not_json());
        }
        let mut run = run;
        if !self.partial.is_empty() {
            let need = utf8_len(self.partial[0]).ok_or_else(not_json)? - self.partial.len();
            let take = need.min(run.len());
            self.partial.extend_from_slice(&run[..take]);
            run = &run[take..];
            if take < need {
                return Ok(());
            }
            let char = std::mem::take(&mut self.partial);
            std::str::from_utf8(&char).map_err(|_| not_json())?;
            self.decoded(&char, tail);
        }
        let whole = match crate::text::utf8(run) {
            Ok(_) => run.len(),
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => return Err(not_json()),
        };
        self.decoded(&run[..whole], tail);
        self.partial.extend_from_slice(&run[whole..]);
        Ok(())
    }

    fn escape(&mut self, byte: u8, tail: usize) -> Result<(), MapperError> {
        self.escape = match (self.escape, byte) {
            (Escape::Backslash, b'u') => Escape::Hex { digits: 0, value: 0, high: None },
            (Escape::Backslash, _) => {
                let decoded = match byte {
                    b'"' | b'\\' | b'/' => byte,
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    _ => return Err(not_json()),
                };
                self.decoded(&[decoded], tail);
                Escape::None
            }
            (Escape::Hex { digits, value, high }, _) => {
                let digit = (byte as char).to_digit(16).ok_or_else(not_json)?;
                let value = value << 4 | digit;
                if digits < 3 {
                    Escape::Hex { digits: digits + 1, value, high }
                } else {
                    match (high, value) {
                        (None, 0xD800..=0xDBFF) => Escape::Low { high: value, seen: 0 },
                        (None, 0xDC00..=0xDFFF) => return Err(not_json()),
                        (Some(high), 0xDC00..=0xDFFF) => {
                            let code = 0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00);
                            self.char(code, tail)?;
                            Escape::None
                        }
                        (Some(_), _) => return Err(not_json()),
                        (None, code) => {
                            self.char(code, tail)?;
                            Escape::None
                        }
                    }
                }
            }
            (Escape::Low { high, seen: 0 }, b'\\') => Escape::Low { high, seen: 1 },
            (Escape::Low { high, .. }, b'u') => {
                Escape::Hex { digits: 0, value: 0, high: Some(high) }
            }
            (Escape::Low { .. }, _) | (Escape::None, _) => return Err(not_json()),
        };
        Ok(())
    }

    fn char(&mut self, code: u32, tail: usize) -> Result<(), MapperError> {
        let char = char::from_u32(code).ok_or_else(not_json)?;
        self.decoded(char.encode_utf8(&mut [0; 4]).as_bytes(), tail);
        Ok(())
    }

    fn decoded(&mut self, bytes: &[u8], tail: usize) {
        self.bytes += bytes.len();
        self.fnv = fnv(self.fnv, bytes);
        self.tail.extend_from_slice(bytes);
        // Trimmed once it holds twice the tail, so each byte moves at most once.
        if self.tail.len() >= 2 * tail.max(1) {
            self.tail.drain(..self.tail.len() - tail);
        }
    }

    /// The marker for the string, once closed.
    fn marker(&mut self, tail: usize) -> Result<Vec<u8>, MapperError> {
        if !matches!(self.escape, Escape::None) || !self.partial.is_empty() {
            return Err(not_json());
        }
        let mut from = self.tail.len().saturating_sub(tail);
        while self.tail.get(from).is_some_and(|byte| byte & 0xC0 == 0x80) {
            from += 1;
        }
        let tail = std::str::from_utf8(&self.tail[from..]).map_err(|_| not_json())?.to_string();
        let elided = Elided { bytes: self.bytes, fnv: self.fnv, tail };
        let mut marker = format!("{{\"{ELIDED}\":").into_bytes();
        serde_json::to_writer(&mut marker, &elided).map_err(|_| not_json())?;
        marker.push(b'}');
        Ok(marker)
    }
}

/// The length of the UTF-8 character a lead byte starts; `None` for a byte that starts none.
fn utf8_len(lead: u8) -> Option<usize> {
    match lead {
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
