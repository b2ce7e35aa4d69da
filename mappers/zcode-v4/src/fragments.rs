//! Reassembly of fragmented logical frames, as ZCode's own assembler checks them (3.15.1
//! `zcode-protocol-v4/wire-reassembly.ts`, `wire-assembler.ts`; `PROTOCOL_V4_LIMITS` in
//! `core.ts`).
//!
//! A large logical frame travels as fragments of its UTF-8 JSON bytes, base64-encoded, each
//! naming the fragment count, the byte count and a CRC-32 of the whole. Fragments are accepted
//! in any order, and identical repeats are harmless; every fragment of a frame must agree on
//! what it says about the frame, the bytes decoded must never exceed the announced size
//! (checked as each fragment comes, as ZCode does), and the whole must have that size and that
//! checksum. The bytes are joined as they come, so a frame is held once rather than as parts
//! and then a concatenation (F-20); a fragment that comes in order is decoded into it a piece at
//! a time, and the long strings a mapper names ([`Elision`]) are not held at all (issue 27). A repeat is compared with the fragment it repeats by its FNV-1a
//! digest.
//!
//! What a mapper does about a [`Problem`] (resync or break, and its words) is the mapper's: the
//! assembler only says what went wrong. The parameters where the V4 mappers differ are
//! explicit: [`Limits`], the [`Base64`] strictness, whether fragments of several frames may
//! interleave, and the [`Elision`].

use std::collections::BTreeMap;

use zcode_mapper_sdk::elide::{Compactor, FNV_EMPTY, Paths, fnv};

use crate::codec::Base64;

/// How much one logical frame may make the mapper hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Fragments of one frame at most.
    pub max_fragments: u64,
    /// Bytes of one logical frame at most.
    pub max_logical_bytes: u64,
}

impl Limits {
    /// `PROTOCOL_V4_LIMITS`: `logicalFrameAssemblyMaxFragments` (1024) and
    /// `logicalFrameAssemblyMaxBytes` (16 MiB).
    pub const PROTOCOL: Limits =
        Limits { max_fragments: 1024, max_logical_bytes: 16 * 1024 * 1024 };
}

/// What went wrong with a fragment. Nothing of a frame that has a problem is handed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The index, count and size contradict each other, or exceed the fragment limit.
    Inconsistent,
    /// The frame announces more bytes than the limit.
    TooLarge,
    /// The fragment disagrees with the others of its frame (count, size, checksum, or the
    /// caller's metadata), or belongs to another frame while one is being assembled and
    /// frames may not interleave.
    Mismatch,
    /// The data is not base64 of the required strictness.
    NotBase64,
    /// A fragment came again with other bytes.
    Conflict { index: u64 },
    /// The fragments decoded so far hold more bytes than the frame announced.
    TooManyBytes,
    /// All fragments came and hold fewer bytes than the frame announced.
    TooFewBytes,
    /// The reassembled bytes fail their CRC-32.
    Checksum,
    /// A long string of the frame, elided as it came, is not valid JSON text (the frame's
    /// checksum was good).
    NotJsonText,
}

/// One physical fragment.
pub struct Fragment<'a, M> {
    /// `logicalFrameId`.
    pub frame_id: &'a str,
    /// Whatever else every fragment of the frame must repeat (the envelope, for a mapper that
    /// checks it); it comes back with the frame.
    pub meta: M,
    pub index: u64,
    pub count: u64,
    pub logical_bytes: u64,
    /// 8 lowercase hex digits, checked by the caller.
    pub checksum: &'a str,
    pub data: &'a str,
}

struct Assembly<M> {
    meta: M,
    count: u64,
    logical_bytes: u64,
    checksum: String,
    /// Fragments `0..digests.len()`, joined in order as they come and compacted
    /// ([`Elision`]): a turn's last frame, which carries its whole text again, is never held
    /// whole (F-20, issue 27).
    frame: Compactor,
    /// A string of those bytes is not JSON text: the frame is refused once its checksum is
    /// known good (a damaged frame is a checksum failure).
    not_json_text: bool,
    /// The CRC-32 of those bytes as they were, before compaction.
    crc: crc32fast::Hasher,
    /// A digest of each of those fragments, to compare a repeat.
    digests: Vec<u64>,
    /// Fragments that arrived before an earlier one, until it comes.
    early: BTreeMap<u64, Vec<u8>>,
    bytes: u64,
}

impl<M> Assembly<M> {
    /// Whether fragment `index` came already with other bytes (`Some(false)`: the same).
    fn conflicts(&self, index: u64, bytes: &[u8]) -> Option<bool> {
        match usize::try_from(index).ok().and_then(|i| self.digests.get(i)) {
            Some(digest) => Some(*digest != fnv(FNV_EMPTY, bytes)),
            None => self.early.get(&index).map(|early| early != bytes),
        }
    }

    /// Joins the next fragment, `bytes`.
    fn append(&mut self, bytes: &[u8]) {
        let digest = self.join(FNV_EMPTY, bytes);
        self.digests.push(digest);
    }

    /// Joins a piece of the next fragment; returns the fragment's digest so far, continued
    /// from `digest`.
    fn join(&mut self, digest: u64, piece: &[u8]) -> u64 {
        self.crc.update(piece);
        if !self.not_json_text {
            self.not_json_text = self.frame.push(piece).is_err();
        }
        fnv(digest, piece)
    }
}

/// Which strings of a logical frame are elided as it is reassembled
/// (`zcode_mapper_sdk::elide`): those at `paths` longer than `min` bytes, keeping their last
/// `tail` bytes.
#[derive(Clone, Copy)]
pub struct Elision {
    pub paths: Paths,
    pub min: usize,
    pub tail: usize,
}

impl Elision {
    /// Nothing elided: the frame is reassembled as it came.
    pub const NONE: Elision = Elision { paths: &[], min: 0, tail: 0 };
}

/// Reassembles logical frames.
pub struct Assembler<M> {
    limits: Limits,
    base64: Base64,
    elision: Elision,
    /// Fragments of several frames may arrive interleaved (each frame is assembled by its id);
    /// otherwise one frame at a time.
    interleaved: bool,
    frames: BTreeMap<String, Assembly<M>>,
}

impl<M: PartialEq> Assembler<M> {
    pub fn new(limits: Limits, base64: Base64, interleaved: bool) -> Self {
        Self { limits, base64, elision: Elision::NONE, interleaved, frames: BTreeMap::new() }
    }

    /// Elides what `elision` names as each frame is reassembled.
    pub fn eliding(mut self, elision: Elision) -> Self {
        self.elision = elision;
        self
    }

    /// Drops every partial frame (after a fault, or when a resync starts over).
    pub fn reset(&mut self) {
        self.frames.clear();
    }

    pub fn in_progress(&self) -> bool {
        !self.frames.is_empty()
    }

    /// The logical frame's bytes (checked against size and checksum) once its last fragment
    /// came, with the metadata of its first; `None` while fragments are missing.
    pub fn accept(&mut self, fragment: Fragment<'_, M>) -> Result<Option<(M, Vec<u8>)>, Problem> {
        let Fragment { frame_id, meta, index, count, logical_bytes, checksum, data } = fragment;
        if count == 0
            || count > self.limits.max_fragments
            || count > logical_bytes
            || index >= count
        {
            return Err(Problem::Inconsistent);
        }
        if logical_bytes > self.limits.max_logical_bytes {
            return Err(Problem::TooLarge);
        }
        if !self.interleaved && self.frames.keys().any(|id| id != frame_id) {
            return Err(Problem::Mismatch);
        }
        match self.frames.get(frame_id) {
            Some(assembly)
                if assembly.meta != meta
                    || assembly.count != count
                    || assembly.logical_bytes != logical_bytes
                    || assembly.checksum != checksum =>
            {
                return Err(Problem::Mismatch);
            }
            Some(_) => {}
            None => {
                let Elision { paths, min, tail } = self.elision;
                let assembly = Assembly {
                    meta,
                    count,
                    logical_bytes,
                    checksum: checksum.to_string(),
                    frame: Compactor::new(paths, min, tail),
                    not_json_text: false,
                    crc: crc32fast::Hasher::new(),
                    digests: Vec::new(),
                    early: BTreeMap::new(),
                    bytes: 0,
                };
                self.frames.insert(frame_id.to_string(), assembly);
            }
        }
        let assembly = self.frames.get_mut(frame_id).expect("inserted above");
        if index == assembly.digests.len() as u64 {
            // The next fragment in order, the usual case: joined as it is decoded, a piece at
            // a time, so that its bytes are never held whole (issue 27). It cannot be a repeat:
            // fragments up to it are joined, and none after it is.
            let data = self.base64.check(data).ok_or(Problem::NotBase64)?;
            assembly.bytes += data.bytes();
            if assembly.bytes > logical_bytes {
                return Err(Problem::TooManyBytes);
            }
            let mut digest = FNV_EMPTY;
            data.decode_each(|piece| digest = assembly.join(digest, piece));
            assembly.digests.push(digest);
            while let Some(next) = assembly.early.remove(&(assembly.digests.len() as u64)) {
                assembly.append(&next);
            }
        } else {
            let decoded = self.base64.decode(data).ok_or(Problem::NotBase64)?;
            match assembly.conflicts(index, &decoded) {
                Some(true) => return Err(Problem::Conflict { index }),
                Some(false) => return Ok(None),
                None => {}
            }
            assembly.bytes += decoded.len() as u64;
            if assembly.bytes > logical_bytes {
                return Err(Problem::TooManyBytes);
            }
            assembly.early.insert(index, decoded);
        }
        if (assembly.digests.len() as u64) < count {
            return Ok(None);
        }
        let assembly = self.frames.remove(frame_id).expect("assembling");
        if assembly.bytes != logical_bytes {
            return Err(Problem::TooFewBytes);
        }
        // The checksum covers exactly the decoded fragments joined in index order, before any
        // UTF-8 or JSON decoding or compaction.
        if format!("{:08x}", assembly.crc.finalize()) != assembly.checksum {
            return Err(Problem::Checksum);
        }
        if assembly.not_json_text {
            return Err(Problem::NotJsonText);
        }
        Ok(Some((assembly.meta, assembly.frame.finish())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{crc32_hex, encode_base64};

    const TEXT: &[u8] = "{\"héllo\":\"wörld, and some more text\"}".as_bytes();

    fn pieces(bytes: &[u8], count: usize) -> Vec<String> {
        bytes.chunks(bytes.len().div_ceil(count)).map(encode_base64).collect()
    }

    fn fragment<'a>(
        id: &'a str,
        index: usize,
        data: &'a [String],
        sum: &'a str,
    ) -> Fragment<'a, ()> {
        Fragment {
            frame_id: id,
            meta: (),
            index: index as u64,
            count: data.len() as u64,
            logical_bytes: TEXT.len() as u64,
            checksum: sum,
            data: &data[index],
        }
    }

    fn assembler(interleaved: bool) -> Assembler<()> {
        Assembler::new(Limits::PROTOCOL, Base64::Canonical, interleaved)
    }

    #[test]
    fn reassembles_in_any_order_with_repeats() {
        let data = pieces(TEXT, 5);
        let sum = crc32_hex(TEXT);
        let mut assembler = assembler(false);
        for index in [3, 1, 1, 4, 0, 2] {
            let done = assembler.accept(fragment("f", index, &data, &sum)).unwrap();
            assert_eq!(done.is_some(), index == 2, "fragment {index}");
            if let Some(((), bytes)) = done {
                assert_eq!(bytes, TEXT);
            }
        }
        assert!(!assembler.in_progress());
    }

    /// A fragment longer than a piece of base64 (`codec`'s 16 KiB) is decoded into the frame
    /// piece by piece: its checksum, its digest (an identical repeat passes, a changed one
    /// conflicts) and its bytes are those of the whole.
    #[test]
    fn a_long_fragment_is_joined_piece_by_piece() {
        let text: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let data = pieces(&text, 2);
        assert!(data[0].len() > 3 * 16 * 1024, "several pieces each");
        let sum = crc32_hex(&text);
        let mut changed = text[..50_000].to_vec();
        changed[40_000] = b'!';
        // The two fragments, and the first with one byte changed.
        let texts = [data[0].clone(), data[1].clone(), encode_base64(&changed)];
        let fragment = |index: usize, data: usize| Fragment {
            frame_id: "f",
            meta: (),
            index: index as u64,
            count: 2,
            logical_bytes: text.len() as u64,
            checksum: &sum,
            data: &texts[data],
        };
        let mut one = assembler(false);
        assert_eq!(one.accept(fragment(0, 0)), Ok(None));
        assert_eq!(one.accept(fragment(0, 0)), Ok(None), "an identical repeat");
        assert_eq!(one.accept(fragment(0, 2)), Err(Problem::Conflict { index: 0 }));
        let mut one = assembler(false);
        one.accept(fragment(0, 0)).unwrap();
        assert_eq!(one.accept(fragment(1, 1)), Ok(Some(((), text.clone()))));
        let mut bad = assembler(false);
        bad.accept(fragment(0, 2)).unwrap();
        assert_eq!(bad.accept(fragment(1, 1)), Err(Problem::Checksum));
    }

    #[test]
    fn says_what_is_wrong() {
        let data = pieces(TEXT, 3);
        let sum = crc32_hex(TEXT);
        let mut one = assembler(false);
        one.accept(fragment("f", 0, &data, &sum)).unwrap();
        assert_eq!(one.accept(fragment("g", 1, &data, &sum)), Err(Problem::Mismatch));
        let other = [encode_base64(b"zz"), data[1].clone(), data[2].clone()];
        assert_eq!(one.accept(fragment("f", 0, &other, &sum)), Err(Problem::Conflict { index: 0 }));
        let mut many = assembler(true);
        many.accept(fragment("f", 0, &data, &sum)).unwrap();
        assert_eq!(many.accept(fragment("g", 1, &data, &sum)), Ok(None), "frames interleave");
        assert_eq!(many.accept(fragment("f", 1, &data, "00000000")), Err(Problem::Mismatch));
        let mut bad = assembler(false);
        for index in 0..2 {
            bad.accept(fragment("f", index, &data, "00000000")).unwrap();
        }
        assert_eq!(bad.accept(fragment("f", 2, &data, "00000000")), Err(Problem::Checksum));
        let mut short = fragment("f", 0, &data, &sum);
        short.data = "aGk";
        assert_eq!(assembler(false).accept(short), Err(Problem::NotBase64));
        let mut big = fragment("f", 0, &data, &sum);
        big.logical_bytes = 17 * 1024 * 1024;
        assert_eq!(assembler(false).accept(big), Err(Problem::TooLarge));
        let mut many_parts = fragment("f", 0, &data, &sum);
        many_parts.count = 1025;
        assert_eq!(assembler(false).accept(many_parts), Err(Problem::Inconsistent));
        let whole = [encode_base64(TEXT), encode_base64(b"x")];
        let mut over = assembler(false);
        over.accept(fragment("f", 0, &whole, &sum)).unwrap();
        assert_eq!(over.accept(fragment("f", 1, &whole, &sum)), Err(Problem::TooManyBytes));
        let few = [encode_base64(b"x"), encode_base64(b"y")];
        let mut under = assembler(false);
        under.accept(fragment("f", 0, &few, &sum)).unwrap();
        assert_eq!(under.accept(fragment("f", 1, &few, &sum)), Err(Problem::TooFewBytes));
    }

    /// A long string elided as it comes is checked as JSON text; a frame that fails there is
    /// refused as not JSON only once its checksum says it came as sent.
    #[test]
    fn elides_long_strings_and_refuses_one_that_is_not_json_text() {
        use zcode_mapper_sdk::elide::Path;
        const LONG: Elision = Elision { paths: &[Path::at(&["s"])], min: 8, tail: 2 };
        let assemble = |text: &[u8], sum: &str| {
            let data = pieces(text, 3);
            let mut one = assembler(false).eliding(LONG);
            let mut done = Ok(None);
            for index in 0..data.len() {
                let mut part = fragment("f", index, &data, sum);
                part.logical_bytes = text.len() as u64;
                done = one.accept(part);
            }
            done
        };
        let good = br#"{"s":"0123456789","t":"0123456789"}"#;
        let ((), frame) = assemble(good, &crc32_hex(good)).unwrap().unwrap();
        let frame: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(frame["s"]["$zcode-acp:elided"]["tail"], "89");
        assert_eq!(frame["t"], "0123456789");
        let bad = br#"{"s":"0123456789\x","t":1}"#;
        assert_eq!(assemble(bad, &crc32_hex(bad)), Err(Problem::NotJsonText));
        assert_eq!(assemble(bad, "00000000"), Err(Problem::Checksum));
    }
}
