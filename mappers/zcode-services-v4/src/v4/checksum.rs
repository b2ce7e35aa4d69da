//! The two byte encodings of V4 fragments (ZCode 3.15.1
//! `packages/shared/src/zcode-protocol-v4/wire-binary.ts`): CRC-32 (IEEE 802.3, reflected,
//! polynomial `0xedb88320`) as 8 lowercase hex digits, and canonical padded base64 of at least
//! 4 characters (`topicWireBase64Schema`).

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut remainder = byte as u32;
        let mut bit = 0;
        while bit < 8 {
            remainder =
                if remainder & 1 != 0 { (remainder >> 1) ^ 0xedb8_8320 } else { remainder >> 1 };
            bit += 1;
        }
        table[byte] = remainder;
        byte += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

pub fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(0xffff_ffff_u32, |crc, &byte| {
        CRC_TABLE[((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// The checksum as the wire spells it.
pub fn crc32_hex(bytes: &[u8]) -> String {
    format!("{:08x}", crc32(bytes))
}

fn sextet(byte: u8) -> Option<u32> {
    Some(match byte {
        b'A'..=b'Z' => byte - b'A',
        b'a'..=b'z' => byte - b'a' + 26,
        b'0'..=b'9' => byte - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Decodes canonical base64: whole 4-character groups, padding only in the last one, no
/// whitespace, at least one group. `None` for anything else.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() < 4 || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.len() / 4;
    for (index, group) in bytes.chunks(4).enumerate() {
        let last = index + 1 == groups;
        let padding = if last { group.iter().rev().take_while(|&&b| b == b'=').count() } else { 0 };
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

/// Canonical padded base64 (tests and golden inputs).
pub fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computes_ieee_crc32() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32_hex(b"123456789"), "cbf43926");
        assert_eq!(crc32_hex(b""), "00000000");
        assert_eq!(crc32_hex(b"a"), "e8b7be43");
    }

    #[test]
    fn decodes_only_canonical_base64() {
        assert_eq!(decode_base64("aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode_base64("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64("YWJj"), Some(b"abc".to_vec()));
        for bad in ["", "aGk", "aG k", "a===", "aG=k", "aGk=aGk=", "aGk\n"] {
            assert_eq!(decode_base64(bad), None, "{bad:?}");
        }
        for bytes in [&b"x"[..], b"xy", b"xyz", &[0u8, 255, 7, 9]] {
            assert_eq!(decode_base64(&encode_base64(bytes)).unwrap(), bytes);
        }
    }
}
