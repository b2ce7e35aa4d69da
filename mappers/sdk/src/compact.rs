//! A reader of JSON as JavaScript's `JSON.stringify` writes it: no whitespace, member names
//! without escapes. It is for the few frames a host writes by the thousand (a streamed delta),
//! where reading them through serde's derived readers costs most of a mapper's time (issue 27).
//!
//! It reads only what is plainly of that form and answers `None` for anything else:
//! whitespace, an escaped member name, a number with a sign, fraction or exponent, a value it
//! was not asked for. The caller then reads the same text with its general reader
//! (serde_json), which says what, if anything, is wrong. So it never takes text serde_json
//! refuses, and what it takes, it reads as serde_json does: a caller that reads with both gets
//! one answer, only sooner.

use std::borrow::Cow;

/// A position in a text being read. Each read moves past what it read, or answers `None`; after
/// a `None` the position is of no use, and the caller gives the text to its general reader.
pub struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// How many bytes of the text have been read.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// Whether all of the text has been read.
    pub fn at_end(&self) -> bool {
        self.at == self.text.len()
    }

    /// How long the line read is, when the reader is at its end: at the text's end, or before
    /// the newline that ends a line of a joined input (`crate::joined`). A line is read from
    /// the start of such an input so, and not found first by a scan for its newline.
    pub fn line_end(&self) -> Option<usize> {
        matches!(self.peek(), None | Some(b'\n')).then_some(self.at)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string with no escape in it, borrowed. Its value is its text.
    // Inlined, as `string` and `uint` are: a call for each member name and value cost about an
    // eighth of a streamed line's read (`delta_cost.rs`, issue 27).
    #[inline]
    pub fn plain_str(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        if bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let end = start + plain_len(bytes.get(start..)?);
        if bytes.get(end) != Some(&b'"') {
            return None;
        }
        self.at = end + 1;
        // Both ends are beside an ASCII quote, so on char boundaries.
        self.text.get(start..end)
    }

    /// [`Reader::plain_str`] of a string that is `usual` on almost every line: compared whole,
    /// which costs less than scanning for its end, and read as any other string only when it is
    /// not. `usual` holds nothing JSON escapes, so both ways read the same.
    #[inline]
    pub fn usual_str(&mut self, usual: &'static str) -> Option<&'a str> {
        debug_assert_eq!(plain_len(usual.as_bytes()), usual.len());
        let at = self.at;
        if self
            .literal("\"")
            .and_then(|()| self.literal(usual))
            .and_then(|()| self.literal("\""))
            .is_some()
        {
            return Some(usual);
        }
        self.at = at;
        self.plain_str()
    }

    /// Any string: borrowed when it has no escape, else decoded by serde_json.
    #[inline]
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
        let bytes = self.text.as_bytes();
        if bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        // Where it ends: at the first quote no backslash escapes, in one scan. A control
        // character (which JSON refuses in a string) ends the read.
        let (mut end, mut escaped) = (start, false);
        loop {
            end += plain_len(bytes.get(end..)?);
            match *bytes.get(end)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    end += 2;
                }
                _ => return None,
            }
        }
        self.at = end + 1;
        // Both ends are beside an ASCII quote, so on char boundaries.
        if !escaped {
            return self.text.get(start..end).map(Cow::Borrowed);
        }
        serde_json::from_str::<String>(self.text.get(start - 1..=end)?).ok().map(Cow::Owned)
    }

    /// The text `expected`, where the reader is, passed over. A caller that knows the order in
    /// which a host writes a frame's members compares the fixed text between its values whole,
    /// instead of reading each member's name (issue 27). What it compares must mean the same
    /// compared or read: a string's content compared so must hold nothing JSON escapes.
    // Bytes, not a `str` slice: a slice checks both ends for character boundaries, which in
    // the guest was a call of its own, 4 % of zcode-acp's samples. `expected` is whole
    // characters, so the reader stays on a boundary.
    #[inline(always)]
    pub fn literal(&mut self, expected: &str) -> Option<()> {
        let end = self.at.checked_add(expected.len())?;
        let found = self.text.as_bytes().get(self.at..end)?;
        equal(found, expected.as_bytes()).then(|| self.at = end)
    }

    /// An unsigned integer as JSON writes one (no sign, no leading zero, no fraction or
    /// exponent) that fits a `u64`.
    #[inline]
    pub fn uint(&mut self) -> Option<u64> {
        let rest = &self.text.as_bytes()[self.at..];
        // Eight digits a step while words of them follow (a timestamp in milliseconds has
        // thirteen), then one at a time: digit by digit, a streamed line's numbers were about
        // a twentieth of zcode-acp's CPU per Desktop delta (issue 27). 19 digits always fit a
        // `u64`, so only a longer number needs checking.
        let (mut value, mut len, mut whole) = (0u64, 0, true);
        while whole
            && len < 16
            && let Some(word) = rest.get(len..len + 8)
        {
            let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            let digits = leading_digits(word);
            value = value * POW10[digits] + digits_value(word, digits);
            len += digits;
            whole = digits == 8;
        }
        while let Some(digit) = rest.get(len).map(|b| b.wrapping_sub(b'0')).filter(|d| *d <= 9) {
            value = if len < 19 {
                value * 10 + u64::from(digit)
            } else {
                value.checked_mul(10)?.checked_add(u64::from(digit))?
            };
            len += 1;
        }
        if len == 0
            || (rest[0] == b'0' && len > 1)
            || matches!(rest.get(len), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        self.at += len;
        Some(value)
    }

    /// `null` as `None`, any other value as `read` reads it.
    pub fn nullable<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.text[self.at..].starts_with("null") {
            self.at += 4;
            return Some(None);
        }
        read(self).map(Some)
    }

    /// Any value made of what this reader reads (strings, unsigned integers, `true`, `false`,
    /// `null`, and objects and arrays of them nested at most [`MAX_DEPTH`] deep), passed over:
    /// its text. A member named twice is passed over too, as a raw value takes it.
    pub fn value_text(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.skip_value(MAX_DEPTH)?;
        Some(&self.text[start..self.at])
    }

    fn skip_value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => {
                let inner = depth.checked_sub(1)?;
                self.object(|r, _| r.skip_value(inner))
            }
            b'[' => {
                let inner = depth.checked_sub(1)?;
                self.array(|r| r.skip_value(inner))
            }
            _ => self.skip_scalar(),
        }
    }

    /// A value that is read only to be passed over: a string, an unsigned integer, `true`,
    /// `false` or `null`.
    pub fn skip_scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'0'..=b'9' => self.uint().map(drop),
            _ => ["true", "false", "null"].into_iter().find_map(|word| {
                self.text[self.at..].starts_with(word).then(|| self.at += word.len())
            }),
        }
    }

    /// Passes over an object's members up to the member `name`, every value before it a scalar
    /// ([`Self::skip_scalar`]): the reader is then at that member's value. `None` when the text
    /// opens no object, a value before `name` is no scalar, or the object ends first. A host
    /// that writes a frame's short members first is routed on one of them without reading the
    /// rest.
    pub fn find_after_scalars(&mut self, name: &str) -> Option<()> {
        self.eat(b'{')?;
        loop {
            let member = self.plain_str()?;
            self.eat(b':')?;
            if member == name {
                return Some(());
            }
            self.skip_scalar()?;
            self.eat(b',')?;
        }
    }

    /// An object: `member(reader, name)` reads the value of each member in turn, or answers
    /// `None` to give the text up (for a name it does not know, or one it has seen).
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let name = self.plain_str()?;
            self.eat(b':')?;
            member(self, name)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array: `element(reader)` reads each element in turn, or answers `None` to give the
    /// text up.
    pub fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// How deep [`Reader::value_text`] goes, well within serde_json's limit (128).
pub const MAX_DEPTH: usize = 64;

/// Whether `found` is `expected` (of the same length), a word of eight bytes at a time, the
/// last one ending where they end. Inlined where `expected` is a fixed text, whose words LLVM
/// then knows: comparing with slices' `==` was a call to `memcmp` for each fixed text a line
/// holds, 3 % of zcode-acp's samples in the guest profile after the SIMD build (issue 27).
#[inline(always)]
fn equal(found: &[u8], expected: &[u8]) -> bool {
    debug_assert_eq!(found.len(), expected.len());
    let len = expected.len();
    if len < 8 {
        return found.iter().zip(expected).all(|(a, b)| a == b);
    }
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
    };
    let mut differ = word(found, len - 8) ^ word(expected, len - 8);
    let mut at = 0;
    while at + 8 < len {
        differ |= word(found, at) ^ word(expected, at);
        at += 8;
    }
    differ == 0
}

/// How many of `word`'s bytes, from its first (lowest), are ASCII digits.
#[inline(always)]
fn leading_digits(word: u64) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    // A digit's value, 0 to 9; any other byte becomes 10 or more.
    let values = word ^ (ONES * u64::from(b'0'));
    // The high bit of each byte of 10 or more: adding 0x76 sets it from 10 up to 0x89, and it
    // is set already above. A carry out of a byte follows the first such byte, the one taken.
    let other = (values.wrapping_add(ONES * 0x76) | values) & (ONES << 7);
    (other.trailing_zeros() / 8) as usize
}

/// 10 to the power of its index.
const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// The number that the first `digits` bytes of `word` spell, each an ASCII digit, at most 8.
#[inline(always)]
fn digits_value(word: u64, digits: usize) -> u64 {
    if digits == 0 {
        return 0;
    }
    // The digits' values, moved up so that the missing ones are leading zeros (the first byte
    // is the most significant digit), then added up in pairs, fours and the eight.
    let values = (word ^ u64::from_ne_bytes([b'0'; 8])) << (8 * (8 - digits));
    let pairs = (values.wrapping_mul(10 << 8 | 1) >> 8) & 0x00ff_00ff_00ff_00ff;
    let fours = (pairs.wrapping_mul(100 << 16 | 1) >> 16) & 0x0000_ffff_0000_ffff;
    fours.wrapping_mul(10_000 << 32 | 1) >> 32
}

/// How many bytes `bytes` starts with that are neither a quote, a backslash nor a control
/// character: eight at a time, as serde_json scans a string, since the streamed frames are
/// mostly strings.
pub(crate) fn plain_len(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let (quote, backslash) =
            (word ^ (ONES * u64::from(b'"')), word ^ (ONES * u64::from(b'\\')));
        // The high bit of each byte that is zero (`quote`, `backslash`) or below 0x20 (`word`).
        // A borrow can set bits above the first such byte only, and the first is all we take.
        let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x;
        let found = (below(quote, 1) | below(backslash, 1) | below(word, 0x20)) & HIGH;
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = &bytes[at..];
    at + rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(rest.len())
}

/// A member read at most once: a second value for it gives the text up, as serde refuses a
/// field named twice.
pub fn once<T>(slot: &mut Option<T>, value: Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value?);
    Some(())
}

#[cfg(any(test, feature = "json-edits"))]
pub mod edit;

#[cfg(test)]
mod tests;
