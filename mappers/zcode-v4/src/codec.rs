//! The two byte encodings of V4 fragments (ZCode 3.15.1
//! `packages/shared/src/zcode-protocol-v4/wire-binary.ts`): CRC-32 (IEEE 802.3, reflected,
//! polynomial `0xedb88320`: CRC-32/ISO-HDLC) written as 8 lowercase hex digits, and base64 of
//! the standard alphabet. Both from the well-kept crates (`crc32fast`, `base64`).
//!
//! ZCode writes canonical padded base64 of at least 4 characters (`topicWireBase64Schema`);
//! [`Base64::Canonical`] reads exactly that. [`Base64::Lenient`] is what the app-server mapper
//! has always accepted: any padding, and a dangling last character ignored.

use base64::Engine as _;
use base64::alphabet::STANDARD as ALPHABET;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// Padding required where the length needs it, nowhere else. Bits past the last byte are not
/// checked (ZCode's own decoder does not check them either).
const CANONICAL: GeneralPurpose = GeneralPurpose::new(
    &ALPHABET,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// Padding already stripped.
const UNPADDED: GeneralPurpose = GeneralPurpose::new(
    &ALPHABET,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// How strictly a fragment's `dataBase64` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base64 {
    /// Whole 4-character groups, padding only in the last one, no whitespace, at least one
    /// group (`topicWireBase64Schema`).
    Canonical,
    /// Trailing `=` ignored, whatever their number; a last character that completes no byte
    /// is ignored; an empty text is no bytes. Anything outside the alphabet is still refused.
    Lenient,
}

/// Characters of base64 [`Checked::decode_each`] decodes at a time: whole groups, so that a
/// fragment's megabyte is never held decoded at once (issue 27).
const PIECE_CHARS: usize = 16 * 1024;

impl Base64 {
    /// The bytes `text` holds; `None` when it is not base64 of this strictness.
    pub fn decode(self, text: &str) -> Option<Vec<u8>> {
        let (text, engine) = self.prepared(text)?;
        engine.decode(text).ok()
    }

    /// `text` checked whole, to be decoded a piece at a time ([`Checked::decode_each`]) so
    /// that its bytes are never held whole; `None` when it is not base64 of this strictness.
    pub fn check(self, text: &str) -> Option<Checked<'_>> {
        self.check_in(text, PIECE_CHARS)
    }

    fn check_in(self, text: &str, piece_chars: usize) -> Option<Checked<'_>> {
        debug_assert!(piece_chars.is_multiple_of(4));
        let (text, engine) = self.prepared(text)?;
        let mut checked = Checked { text, engine, piece_chars, bytes: 0 };
        let mut buffer = checked.buffer();
        let mut bytes = 0;
        for piece in checked.pieces() {
            bytes += engine.decode_slice(piece, &mut buffer).ok()? as u64;
        }
        checked.bytes = bytes;
        Some(checked)
    }

    /// The text the engine decodes, and the engine. What only the whole text can tell is
    /// checked here, so that the text decodes the same whole or in pieces of whole groups.
    fn prepared(self, text: &str) -> Option<(&str, &'static GeneralPurpose)> {
        match self {
            Base64::Canonical => {
                let bytes = text.as_bytes();
                // Padding only in the last group: a piece of the text ending in `=` would
                // otherwise pass on its own.
                if bytes.len() < 4
                    || !bytes.len().is_multiple_of(4)
                    || bytes[..bytes.len() - 4].contains(&b'=')
                {
                    return None;
                }
                Some((text, &CANONICAL))
            }
            Base64::Lenient => {
                let text = text.trim_end_matches('=');
                let text = if text.len() % 4 == 1 {
                    // Six bits that make no byte: dropped, once they are base64.
                    let (head, last) = text.split_at(text.len() - 1);
                    if !last.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/') {
                        return None;
                    }
                    head
                } else {
                    text
                };
                Some((text, &UNPADDED))
            }
        }
    }
}

/// Base64 text known to decode ([`Base64::check`]).
pub struct Checked<'a> {
    text: &'a str,
    engine: &'static GeneralPurpose,
    piece_chars: usize,
    bytes: u64,
}

impl Checked<'_> {
    /// How many bytes the text holds.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Hands the bytes to `sink`, in order, a piece at a time.
    pub fn decode_each(&self, mut sink: impl FnMut(&[u8])) {
        let mut buffer = self.buffer();
        for piece in self.pieces() {
            // Each piece decoded when the text was checked.
            if let Ok(decoded) = self.engine.decode_slice(piece, &mut buffer) {
                sink(&buffer[..decoded]);
            }
        }
    }

    fn pieces(&self) -> std::slice::Chunks<'_, u8> {
        self.text.as_bytes().chunks(self.piece_chars)
    }

    fn buffer(&self) -> Vec<u8> {
        vec![0; self.piece_chars.min(self.text.len()).div_ceil(4) * 3]
    }
}

/// Canonical padded base64 (tests, golden traces).
pub fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// The checksum of a logical frame as the wire spells it: CRC-32 as 8 lowercase hex digits.
pub fn crc32_hex(bytes: &[u8]) -> String {
    format!("{:08x}", crc32fast::hash(bytes))
}

/// Whether `value` is a checksum as the wire spells one (`/^[0-9a-f]{8}$/`).
pub fn is_crc32_hex(value: &str) -> bool {
    value.len() == 8 && value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn computes_ieee_crc32() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32_hex(b"123456789"), "cbf43926");
        assert_eq!(crc32_hex(b""), "00000000");
        assert_eq!(crc32_hex(b"a"), "e8b7be43");
        assert!(is_crc32_hex("cbf43926") && !is_crc32_hex("CBF43926") && !is_crc32_hex("cbf4392"));
    }

    #[test]
    fn decodes_only_canonical_base64() {
        let canonical = |text: &str| Base64::Canonical.decode(text);
        assert_eq!(canonical("aGk="), Some(b"hi".to_vec()));
        assert_eq!(canonical("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(canonical("YWJj"), Some(b"abc".to_vec()));
        for bad in ["", "aGk", "aG k", "a===", "aG=k", "aGk=aGk=", "aGk\n"] {
            assert_eq!(canonical(bad), None, "{bad:?}");
        }
        for bytes in [&b"x"[..], b"xy", b"xyz", &[0u8, 255, 7, 9]] {
            assert_eq!(canonical(&encode_base64(bytes)).unwrap(), bytes);
        }
    }

    fn joined(checked: &Checked<'_>) -> Vec<u8> {
        let mut joined = Vec::new();
        checked.decode_each(|piece| joined.extend_from_slice(piece));
        joined
    }

    /// Each group of `aGk=aGk=` is base64 on its own; the whole is not, in any pieces.
    #[test]
    fn padding_inside_the_text_is_refused_in_pieces_too() {
        for base64 in [Base64::Canonical, Base64::Lenient] {
            assert!(base64.check_in("aGk=aGk=", 4).is_none(), "{base64:?}");
        }
    }

    #[test]
    fn decodes_lenient_base64() {
        let lenient = |text: &str| Base64::Lenient.decode(text);
        for text in ["", "f", "fo", "foo", "foob", "{\"a\":[1,2]}"] {
            assert_eq!(lenient(&encode_base64(text.as_bytes())).unwrap(), text.as_bytes());
        }
        assert_eq!(lenient("Zm9vYg==").unwrap(), b"foob");
        assert_eq!(lenient("Zm9vYg").unwrap(), b"foob");
        assert_eq!(lenient("Zm9vY").unwrap(), b"foo");
        assert_eq!(lenient("").unwrap(), b"");
        assert!(lenient("Zm9*").is_none());
        assert!(lenient("Zm9v*").is_none());
    }

    /// The decoders each mapper had before these crates, kept as the oracle: the crates must
    /// accept and refuse exactly what they did.
    mod before {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

        fn sextet(byte: u8) -> Option<u32> {
            ALPHABET.iter().position(|c| *c == byte).map(|p| p as u32)
        }

        pub fn lenient(text: &str) -> Option<Vec<u8>> {
            let text = text.trim_end_matches('=');
            let mut out = Vec::new();
            let (mut acc, mut bits) = (0u32, 0u32);
            for byte in text.bytes() {
                acc = (acc << 6) | sextet(byte)?;
                bits += 6;
                if bits >= 8 {
                    bits -= 8;
                    out.push((acc >> bits) as u8);
                    acc &= (1 << bits) - 1;
                }
            }
            Some(out)
        }

        pub fn canonical(text: &str) -> Option<Vec<u8>> {
            let bytes = text.as_bytes();
            if bytes.len() < 4 || !bytes.len().is_multiple_of(4) {
                return None;
            }
            let mut out = Vec::new();
            let groups = bytes.len() / 4;
            for (index, group) in bytes.chunks(4).enumerate() {
                let last = index + 1 == groups;
                let padding =
                    if last { group.iter().rev().take_while(|&&b| b == b'=').count() } else { 0 };
                if padding > 2 {
                    return None;
                }
                let mut value = 0u32;
                for &byte in &group[..4 - padding] {
                    value = value << 6 | sextet(byte)?;
                }
                value <<= 6 * padding as u32;
                let decoded = [(value >> 16) as u8, (value >> 8) as u8, value as u8];
                out.extend_from_slice(&decoded[..3 - padding]);
            }
            Some(out)
        }

        pub fn crc32(bytes: &[u8]) -> u32 {
            !bytes.iter().fold(!0u32, |mut crc, byte| {
                crc ^= u32::from(*byte);
                for _ in 0..8 {
                    crc = if crc & 1 != 0 { 0xEDB8_8320 ^ (crc >> 1) } else { crc >> 1 };
                }
                crc
            })
        }
    }

    proptest! {
        #[test]
        fn the_crates_read_what_the_hand_written_code_read(text in "[A-Za-z0-9+/=*\n ]{0,24}") {
            prop_assert_eq!(Base64::Lenient.decode(&text), before::lenient(&text));
            prop_assert_eq!(Base64::Canonical.decode(&text), before::canonical(&text));
        }

        /// Whole or in pieces of any number of groups, the same bytes or the same refusal.
        #[test]
        fn a_text_decodes_the_same_in_pieces(
            text in "[A-Za-z0-9+/=*]{0,40}",
            groups in 1usize..4,
        ) {
            for base64 in [Base64::Lenient, Base64::Canonical] {
                let whole = base64.decode(&text);
                let checked = base64.check_in(&text, groups * 4);
                prop_assert_eq!(checked.is_some(), whole.is_some());
                if let (Some(checked), Some(whole)) = (checked, whole) {
                    prop_assert_eq!(checked.bytes(), whole.len() as u64);
                    prop_assert_eq!(joined(&checked), whole);
                }
            }
        }

        #[test]
        fn base64_of_any_bytes_reads_back(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let text = encode_base64(&bytes);
            prop_assert_eq!(Base64::Lenient.decode(&text), before::lenient(&text));
            prop_assert_eq!(Base64::Canonical.decode(&text), before::canonical(&text));
            prop_assert_eq!(crc32_hex(&bytes), format!("{:08x}", before::crc32(&bytes)));
            prop_assert_eq!(joined(&Base64::Lenient.check_in(&text, 8).unwrap()), bytes);
        }
    }
}
