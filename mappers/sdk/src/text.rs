//! A host's bytes as UTF-8 text, checked sixteen bytes at a time while they are ASCII, as a
//! host's JSON lines mostly are. core's check reads a machine word at a time, and a word is four
//! bytes in a 32-bit guest: there the check of each line was 3 % of zcode-acp's CPU in a
//! profile of the desktop-4.0.0 relay (issue 27).

use std::str::Utf8Error;

/// `bytes` as text, or core's error for them.
pub fn utf8(bytes: &[u8]) -> Result<&str, Utf8Error> {
    let ascii = ascii_len(bytes);
    if std::str::from_utf8(&bytes[ascii..]).is_err() {
        // The error as core gives it for the whole, positions included.
        return Err(std::str::from_utf8(bytes).expect_err("the rest is not UTF-8"));
    }
    // SAFETY: `bytes[..ascii]` is ASCII and `bytes[ascii..]` is UTF-8 (checked above), which
    // starts on a character's first byte, after ASCII: together they are UTF-8.
    Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// How many of `bytes` lead in sixteen-byte blocks that are all ASCII.
fn ascii_len(bytes: &[u8]) -> usize {
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let word = |at: &[u8]| u64::from_ne_bytes(at.try_into().expect("eight bytes"));
    bytes
        .chunks_exact(16)
        .take_while(|block| (word(&block[..8]) | word(&block[8..])) & HIGH == 0)
        .count()
        * 16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text is what core takes, and an error is core's, wherever a wide character or a bad
    /// byte sits against the sixteen-byte blocks.
    #[test]
    fn reads_as_core_does_wherever_the_blocks_fall() {
        for len in 0..40 {
            for at in 0..=len {
                let mut text = "a".repeat(len);
                text.insert_str(at, "é€𝄞");
                assert_eq!(utf8(text.as_bytes()), Ok(text.as_str()), "{len} {at}");
                for bad in [&[0x80][..], &[0xc3], &[0xff], &[0xed, 0xa0, 0x80]] {
                    let mut bytes = "a".repeat(len).into_bytes();
                    bytes.splice(at..at, bad.iter().copied());
                    let expected = std::str::from_utf8(&bytes).unwrap_err();
                    assert_eq!(utf8(&bytes).unwrap_err(), expected, "{len} {at} {bad:?}");
                }
            }
        }
    }
}
