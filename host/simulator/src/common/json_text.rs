//! JSON text written by hand, for the frames a server writes once per streamed delta: serde's
//! derive escapes every member name, though none ever needs it, and its escaping was a sixth of
//! the Desktop simulator's CPU per delta (a profile of `sim:stream` on desktop-4.0.0,
//! docs/performance.md, issue 27). Member names are the caller's literals; values are escaped
//! exactly as serde_json escapes them.

/// Appends `text` as a JSON string.
pub fn push_str(out: &mut String, text: &str) {
    out.push('"');
    push_inner(out, text);
    out.push('"');
}

/// Appends `text` as the inside of a JSON string, without its quotes.
pub fn push_inner(out: &mut String, text: &str) {
    if needs_escape(text.as_bytes()) {
        let quoted = serde_json::to_string(text).expect("strings serialize");
        out.push_str(&quoted[1..quoted.len() - 1]);
    } else {
        out.push_str(text);
    }
}

/// Whether `bytes` hold anything serde_json escapes: a control character, `"` or `\`.
/// Eight bytes at a time (a byte-wise loop was a tenth of the simulator's CPU per delta).
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Nonzero exactly when some byte of `x` is below `n` (n ≤ 0x80).
    let any_below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS;
    let any_equal = |x: u64, b: u8| any_below(x ^ (ONES * u64::from(b)), 1);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let x = u64::from_ne_bytes(chunk.try_into().expect("eight bytes"));
        if any_below(x, 0x20) | any_equal(x, b'"') | any_equal(x, b'\\') != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')
}

/// Appends an unsigned integer.
pub fn push_uint(out: &mut String, value: u64) {
    out.push_str(itoa::Buffer::new().format(value));
}

/// Appends `value`'s JSON text, for the parts written through serde.
pub fn push_value(out: &mut String, value: &impl serde::Serialize) {
    out.push_str(&serde_json::to_string(value).expect("JSON values always serialize"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for text in ["lorem ipsum ", "", "a\"b\\c", "tab\there\nline\u{1f}", "é😀/\u{7f}<>"] {
            let mut out = String::new();
            push_str(&mut out, text);
            assert_eq!(out, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn every_byte_that_needs_an_escape_is_found_wherever_it_is() {
        for byte in 0..=u8::MAX {
            let escaped = byte < 0x20 || byte == b'"' || byte == b'\\';
            for at in 0..19 {
                let mut text = vec![b'a'; 19];
                text[at] = byte;
                assert_eq!(needs_escape(&text), escaped, "byte {byte:#x} at {at}");
            }
        }
        // Every byte of a UTF-8 sequence longer than one is above 0x7f: none is escaped.
        assert!(!needs_escape("é😀 — ünïcödé text".as_bytes()));
    }

    #[test]
    fn integers_and_values_are_their_json_text() {
        let mut out = String::new();
        push_uint(&mut out, u64::MAX);
        out.push(',');
        push_value(&mut out, &serde_json::json!({"op": "row.upserted"}));
        assert_eq!(out, r#"18446744073709551615,{"op":"row.upserted"}"#);
    }
}
