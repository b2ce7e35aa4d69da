//! Framers for host output: newline-delimited lines ([`Lines`], NDJSON), and length-prefixed
//! binary frames ([`Frames`], which also reads a text line first for hosts that greet in
//! text), each bounded; and [`Reader`], which takes big-endian fields off the front of a
//! frame. A frame is handed to the mapper as a slice of the framer's buffer, whatever the chunk
//! boundaries of `push`, and is never copied to get there.
//!
//! A framer never skips or guesses: bytes beyond its bounds are an error, and the connection
//! fails the transport with it.

use zcode_contract::MapperError;

use crate::json::protocol;

/// Lines of a byte stream: each complete line without its `\n` (and a `\r` before it).
pub struct Lines {
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no newline: a long line that comes in many pushes
    /// is scanned once, not once per push.
    scanned: usize,
    max: usize,
    too_long: fn(usize) -> MapperError,
}

fn line_too_long(max: usize) -> MapperError {
    protocol(format!("A line of host output exceeded {max} bytes"))
}

impl Lines {
    /// Lines of at most `max` bytes.
    pub fn new(max: usize) -> Self {
        Self { buffer: Vec::new(), scanned: 0, max, too_long: line_too_long }
    }

    /// The error for a line over the bound (given the bound).
    pub fn too_long(mut self, error: fn(usize) -> MapperError) -> Self {
        self.too_long = error;
        self
    }

    /// Takes `bytes` and hands `each` every line they complete, in order. An error (a line
    /// over the bound, or one `each` refuses) stops at that line.
    pub fn push(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(&[u8]) -> Result<(), MapperError>,
    ) -> Result<(), MapperError> {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        let mut from = self.scanned;
        while let Some(offset) = memchr::memchr(b'\n', &self.buffer[from..]) {
            let end = from + offset;
            let line = &self.buffer[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.len() > self.max {
                return Err((self.too_long)(self.max));
            }
            each(line)?;
            start = end + 1;
            from = start;
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if self.buffer.len() > self.max {
            return Err((self.too_long)(self.max));
        }
        Ok(())
    }

    /// At end of input: the last line, if it has no newline (it is still a line).
    pub fn finish(
        &mut self,
        each: impl FnOnce(&[u8]) -> Result<(), MapperError>,
    ) -> Result<(), MapperError> {
        let rest = std::mem::take(&mut self.buffer);
        self.scanned = 0;
        if rest.is_empty() {
            return Ok(());
        }
        let line = rest.strip_suffix(b"\r").unwrap_or(&rest);
        if line.len() > self.max {
            return Err((self.too_long)(self.max));
        }
        each(line)
    }

    /// Bytes of a line not yet complete.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// Forgets what is buffered (after the transport failed).
    pub fn clear(&mut self) {
        self.buffer = Vec::new();
        self.scanned = 0;
    }
}

/// The frames of one NDJSON line (already trimmed): a line that holds a JSON array is a batch
/// of frames, read in order; any other line is one frame, and `None` says so (the caller reads
/// the line as it is, and refuses it there if it is no frame).
///
/// A real ZCode app-server writes batched notification frames this way: a JetBrains client of
/// it (csuftt/zcode-jetbrains-plugin, ZC-GUI 0.3.7 release notes, 2026-09-20) fixed "array-format
/// notification frames from the new CLI crashing the reader thread". Each element is handed on
/// as the text it came as, never built into a tree; an element that is not a frame (an array, a
/// string) is the caller's to refuse, as a line holding it would be. An array that is not JSON
/// fails: nothing of it is read.
pub fn json_batch(line: &str) -> Result<Option<Vec<&str>>, MapperError> {
    if !line.starts_with('[') {
        return Ok(None);
    }
    let frames: Vec<&serde_json::value::RawValue> = serde_json::from_str(line).map_err(|e| {
        protocol(format!("A line of host output is not a JSON array of frames: {e}"))
    })?;
    Ok(Some(frames.into_iter().map(|frame| frame.get()).collect()))
}

/// Where a frame's length is and what it may be: a header of `header` bytes holds the body's
/// length as a big-endian `u32` at `length_at`; the body follows the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LengthPrefix {
    pub header: usize,
    pub length_at: usize,
    /// Shortest body accepted (1 refuses empty frames).
    pub min_body: usize,
    pub max_body: usize,
}

impl LengthPrefix {
    /// A big-endian `u32` length, then a body of 1 byte to 1 MiB: the [`Default`].
    pub const U32: LengthPrefix =
        LengthPrefix { header: 4, length_at: 0, min_body: 1, max_body: 1024 * 1024 };

    /// A frame of this format around the body made of `parts`: the header holds the body's
    /// length at `length_at` and zeros elsewhere. Panics on a body over `u32::MAX` bytes.
    pub fn encode(&self, parts: &[&[u8]]) -> Vec<u8> {
        let length: usize = parts.iter().map(|part| part.len()).sum();
        let prefix = u32::try_from(length).expect("a frame body fits a u32 length");
        let mut frame = vec![0; self.header];
        frame[self.length_at..self.length_at + 4].copy_from_slice(&prefix.to_be_bytes());
        frame.reserve(length);
        parts.iter().for_each(|part| frame.extend_from_slice(part));
        frame
    }
}

impl Default for LengthPrefix {
    fn default() -> Self {
        LengthPrefix::U32
    }
}

/// One complete frame, borrowed from the framer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub header: &'a [u8],
    pub body: &'a [u8],
}

/// A frame whose length is out of bounds: the length it gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadLength(pub usize);

/// Length-prefixed frames of a byte stream.
pub struct Frames {
    format: LengthPrefix,
    buffer: Vec<u8>,
    /// Bytes of `buffer` already taken.
    start: usize,
}

/// Frames of the default format, [`LengthPrefix::U32`].
impl Default for Frames {
    fn default() -> Self {
        Self::new(LengthPrefix::U32)
    }
}

impl Frames {
    pub fn new(format: LengthPrefix) -> Self {
        Self { format, buffer: Vec::new(), start: 0 }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.compact();
        self.buffer.extend_from_slice(bytes);
    }

    /// Drops taken bytes once they are at least half the buffer (amortised, and never a copy
    /// of a large frame the caller still reads).
    fn compact(&mut self) {
        if self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        } else if self.start > 0 && self.start >= self.buffer.len() / 2 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
    }

    fn rest(&self) -> &[u8] {
        &self.buffer[self.start..]
    }

    /// Bytes received but not yet taken as a frame or line.
    pub fn pending(&self) -> usize {
        self.buffer.len() - self.start
    }

    /// The next frame's header, once it is complete (before its body is), so a mapper can
    /// check it first.
    pub fn header(&self) -> Option<&[u8]> {
        self.rest().get(..self.format.header)
    }

    /// The next complete frame, if it has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, BadLength> {
        self.compact();
        let LengthPrefix { header, length_at, min_body, max_body } = self.format;
        let Some(head) = self.header() else { return Ok(None) };
        let prefix: [u8; 4] = head[length_at..length_at + 4].try_into().expect("four bytes");
        let length = u32::from_be_bytes(prefix) as usize;
        if length < min_body || length > max_body {
            return Err(BadLength(length));
        }
        if self.pending() < header + length {
            return Ok(None);
        }
        let from = self.start;
        self.start += header + length;
        let frame = &self.buffer[from..self.start];
        Ok(Some(Frame { header: &frame[..header], body: &frame[header..] }))
    }

    /// [`Frames::next_frame`], with a length out of bounds a protocol error: `"<what> length
    /// <n> is out of bounds"`.
    pub fn frame(&mut self, what: &str) -> Result<Option<Frame<'_>>, MapperError> {
        let bad = |BadLength(n)| protocol(format!("{what} length {n} is out of bounds"));
        self.next_frame().map_err(bad)
    }

    /// [`Frames::next_line`], with a line over `max` bytes a protocol error: `"<what> is too
    /// long"`.
    pub fn line(&mut self, max: usize, what: &str) -> Result<Option<&[u8]>, MapperError> {
        self.next_line(max).map_err(|_| protocol(format!("{what} is too long")))
    }

    /// At end of output: an error when it stopped inside a frame or line (`"<host> stopped
    /// inside a frame (<n> bytes left)"`).
    pub fn finish(&self, host: &str) -> Result<(), MapperError> {
        match self.pending() {
            0 => Ok(()),
            left => Err(protocol(format!("{host} stopped inside a frame ({left} bytes left)"))),
        }
    }

    /// The next text line (without its `\n`), for a host that greets with one before its
    /// frames; `None` until it is complete. `Err` carries the bytes waiting when more than
    /// `max` arrived without a newline.
    pub fn next_line(&mut self, max: usize) -> Result<Option<&[u8]>, usize> {
        self.compact();
        let Some(newline) = self.rest().iter().position(|&b| b == b'\n') else {
            return match self.pending() {
                waiting if waiting > max => Err(waiting),
                _ => Ok(None),
            };
        };
        let from = self.start;
        self.start += newline + 1;
        Ok(Some(&self.buffer[from..from + newline]))
    }
}

/// Big-endian fields off the front of a frame; running out is a protocol error that names the
/// frame (`"<what> is truncated"`).
pub struct Reader<'a> {
    bytes: &'a [u8],
    what: &'a str,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], what: &'a str) -> Self {
        Self { bytes, what }
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], MapperError> {
        if self.bytes.len() < n {
            return Err(protocol(format!("{} is truncated", self.what)));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    pub fn u8(&mut self) -> Result<u8, MapperError> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, MapperError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    pub fn u64(&mut self) -> Result<u64, MapperError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("eight bytes")))
    }

    /// What is left.
    /// `n` bytes as UTF-8 text (see [`utf8`]).
    pub fn text(&mut self, n: usize, what: &str) -> Result<&'a str, MapperError> {
        utf8(self.take(n)?, what)
    }

    pub fn rest(self) -> &'a [u8] {
        self.bytes
    }

    /// Nothing is left: trailing bytes are a protocol error, `"<what> has trailing bytes"`.
    pub fn end(self) -> Result<(), MapperError> {
        match self.bytes {
            [] => Ok(()),
            _ => Err(protocol(format!("{} has trailing bytes", self.what))),
        }
    }

    /// The rest of the frame as UTF-8 text (see [`utf8`]).
    pub fn rest_text(self, what: &str) -> Result<&'a str, MapperError> {
        utf8(self.bytes, what)
    }
}

/// `bytes` as UTF-8 text; bytes that are not are a protocol error, `"<what> is not UTF-8"`.
pub fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, MapperError> {
    crate::text::utf8(bytes).map_err(|_| protocol(format!("{what} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_line_is_a_batch_of_frames_in_order() {
        let line = r#"[{"method":"a","params":{"n":1}}, {"method":"b"} ,[1]]"#;
        assert_eq!(
            json_batch(line).unwrap(),
            Some(vec![r#"{"method":"a","params":{"n":1}}"#, r#"{"method":"b"}"#, "[1]"])
        );
        assert_eq!(json_batch("[]").unwrap(), Some(Vec::new()));
        assert_eq!(json_batch(r#"{"method":"a"}"#).unwrap(), None);
        assert_eq!(json_batch("not json").unwrap(), None);
        let error = json_batch(r#"[{"method":"a"}"#).unwrap_err();
        assert!(error.message.contains("not a JSON array of frames"), "{}", error.message);
    }

    fn lines_of(lines: &mut Lines, bytes: &[u8]) -> Result<Vec<String>, MapperError> {
        let mut out = Vec::new();
        lines.push(bytes, |line| {
            out.push(String::from_utf8(line.to_vec()).unwrap());
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn splits_lines_whatever_the_chunks() {
        let stream = b"{\"a\":1}\r\n\n{\"b\":2}\nrest";
        for split in 0..=stream.len() {
            let mut lines = Lines::new(64);
            let mut got = lines_of(&mut lines, &stream[..split]).unwrap();
            got.extend(lines_of(&mut lines, &stream[split..]).unwrap());
            assert_eq!(got, ["{\"a\":1}", "", "{\"b\":2}"], "split at {split}");
            assert_eq!(lines.pending(), 4);
            let mut last = Vec::new();
            lines
                .finish(|line| {
                    last.extend_from_slice(line);
                    Ok(())
                })
                .unwrap();
            assert_eq!(last, b"rest");
            assert_eq!(lines.pending(), 0);
        }
    }

    #[test]
    fn bounds_lines() {
        let mut lines = Lines::new(4).too_long(|max| protocol(format!("over {max}")));
        assert_eq!(lines_of(&mut lines, b"abcd\n").unwrap(), ["abcd"]);
        assert_eq!(lines_of(&mut lines, b"abcde\n").unwrap_err().message, "over 4");
        let mut waiting = Lines::new(4);
        assert_eq!(
            lines_of(&mut waiting, b"abcde").unwrap_err().message,
            "A line of host output exceeded 4 bytes"
        );
        let mut refused = Lines::new(8);
        let error = refused.push(b"x\ny\n", |_| Err(protocol("no"))).unwrap_err();
        assert_eq!(error.message, "no");
    }

    const FORMAT: LengthPrefix = LengthPrefix { header: 5, length_at: 1, min_body: 0, max_body: 8 };

    fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
        [&[kind][..], &(body.len() as u32).to_be_bytes(), body].concat()
    }

    #[test]
    fn splits_frames_whatever_the_chunks() {
        let stream = [frame(1, b"one"), frame(2, b""), frame(3, b"three")].concat();
        for split in 0..=stream.len() {
            let mut frames = Frames::new(FORMAT);
            let mut got = Vec::new();
            for chunk in [&stream[..split], &stream[split..]] {
                frames.push(chunk);
                while let Some(frame) = frames.next_frame().unwrap() {
                    got.push((frame.header[0], frame.body.to_vec()));
                }
            }
            assert_eq!(got, [(1, b"one".to_vec()), (2, vec![]), (3, b"three".to_vec())]);
            assert_eq!(frames.pending(), 0);
        }
    }

    #[test]
    fn bounds_frames_and_reads_a_greeting_line() {
        let mut frames = Frames::new(LengthPrefix { min_body: 1, ..FORMAT });
        frames.push(b"{\"hello\":1}\n");
        frames.push(&frame(7, b"x")[..3]);
        assert_eq!(frames.next_line(64).unwrap(), Some(&b"{\"hello\":1}"[..]));
        assert_eq!(frames.header(), None);
        frames.push(&frame(7, b"x")[3..]);
        assert_eq!(frames.header(), Some(&[7, 0, 0, 0, 1][..]));
        assert_eq!(frames.next_frame().unwrap().unwrap().body, b"x");
        frames.push(&frame(1, b""));
        assert_eq!(frames.next_frame().unwrap_err(), BadLength(0));
        let mut long = Frames::new(FORMAT);
        long.push(&frame(1, b"123456789"));
        assert_eq!(long.next_frame().unwrap_err(), BadLength(9));
        let mut chatty = Frames::new(FORMAT);
        chatty.push(b"no newline");
        assert_eq!(chatty.next_line(4), Err(10));
    }

    #[test]
    fn encodes_frames_it_reads_back() {
        let bytes = FORMAT.encode(&[b"ab", b"", b"c"]);
        assert_eq!(bytes, [0, 0, 0, 0, 3, b'a', b'b', b'c']);
        assert_eq!(frame(0, b"abc"), bytes);
        let mut frames = Frames::new(FORMAT);
        frames.push(&bytes);
        assert_eq!(frames.frame("Test frame").unwrap().unwrap().body, b"abc");
    }

    #[test]
    fn names_what_is_out_of_bounds() {
        let mut frames = Frames::new(FORMAT);
        frames.push(b"hello\n");
        assert_eq!(frames.line(8, "Test hello").unwrap(), Some(&b"hello"[..]));
        frames.push(&frame(1, b"123456789"));
        assert_eq!(
            frames.frame("Test frame").unwrap_err().message,
            "Test frame length 9 is out of bounds"
        );
        let mut chatty = Frames::new(FORMAT);
        chatty.push(b"no newline");
        assert_eq!(chatty.line(4, "Test hello").unwrap_err().message, "Test hello is too long");
    }

    #[test]
    fn says_when_output_stops_inside_a_frame() {
        let mut frames = Frames::new(FORMAT);
        frames.push(&frame(1, b"ab"));
        assert_eq!(
            frames.finish("The host").unwrap_err().message,
            "The host stopped inside a frame (7 bytes left)"
        );
        frames.next_frame().unwrap();
        assert!(frames.finish("The host").is_ok());
    }

    #[test]
    fn reads_big_endian_fields() {
        let bytes = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, b'x'];
        let mut reader = Reader::new(&bytes, "Test frame");
        assert_eq!((reader.u8().unwrap(), reader.u32().unwrap()), (1, 2));
        assert_eq!(reader.u64().unwrap(), 3);
        assert_eq!(reader.rest(), b"x");
        assert_eq!(
            Reader::new(&[0], "Test frame").u32().unwrap_err().message,
            "Test frame is truncated"
        );
    }

    #[test]
    fn frames_a_u32_length_by_default() {
        let mut frames = Frames::default();
        frames.push(&LengthPrefix::default().encode(&[b"x"]));
        assert_eq!(frames.next_frame().unwrap().unwrap().body, b"x");
        frames.push(&[0, 0x10, 0, 1]);
        assert_eq!(frames.next_frame().unwrap_err(), BadLength(1024 * 1024 + 1));
        let mut empty = Frames::default();
        empty.push(&[0; 4]);
        assert_eq!(empty.next_frame().unwrap_err(), BadLength(0));
    }

    #[test]
    fn ends_where_the_frame_ends() {
        let mut reader = Reader::new(&[1, 2], "Test frame");
        reader.u8().unwrap();
        assert_eq!(reader.end().unwrap_err().message, "Test frame has trailing bytes");
        let mut reader = Reader::new(&[1], "Test frame");
        reader.u8().unwrap();
        assert!(reader.end().is_ok());
    }

    #[test]
    fn reads_text_fields() {
        let bytes = [2, b'h', b'i', b'o', b'k'];
        let mut reader = Reader::new(&bytes, "Test frame");
        let length = reader.u8().unwrap().into();
        assert_eq!(reader.text(length, "Test route").unwrap(), "hi");
        assert_eq!(reader.rest_text("Test text").unwrap(), "ok");
        assert_eq!(
            Reader::new(&[0xff], "Test frame").rest_text("Test text").unwrap_err().message,
            "Test text is not UTF-8"
        );
        let truncated = Reader::new(&[1], "Test frame").text(2, "Test route").unwrap_err();
        assert_eq!(truncated.message, "Test frame is truncated");
        assert_eq!(utf8(b"\xc3", "Hello").unwrap_err().kind, zcode_contract::ErrorKind::Protocol);
    }
}
