//! Version tokens: `digits.digits.digits` with an optional `-`/`+` suffix, as the CLI prints
//! them and as contracts name them.

/// The first version token in `text`: a match of
/// `\b\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?` (ASCII word boundary, as JavaScript's `\b`).
pub fn first_version_token(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .filter(|&start| bytes[start].is_ascii_digit())
        .filter(|&start| start == 0 || !is_word(bytes[start - 1]))
        .find_map(|start| match_version(bytes, start).map(|end| &text[start..end]))
}

/// True when `value` is exactly one version token.
pub fn is_version(value: &str) -> bool {
    !value.is_empty()
        && value.as_bytes()[0].is_ascii_digit()
        && match_version(value.as_bytes(), 0) == Some(value.len())
}

/// End of the version token starting at `start`, if one starts there.
fn match_version(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start;
    for part in 0..3 {
        if part > 0 {
            if bytes.get(at) != Some(&b'.') {
                return None;
            }
            at += 1;
        }
        let digits = bytes[at.min(bytes.len())..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        at += digits;
    }
    if matches!(bytes.get(at), Some(b'-' | b'+')) {
        let suffix = bytes[at + 1..]
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
            .count();
        if suffix > 0 {
            at += 1 + suffix;
        }
    }
    Some(at)
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_token_like_the_reference_regex() {
        assert_eq!(first_version_token("zcode 0.16.5\n"), Some("0.16.5"));
        // One suffix only, as in the regex: `+` is not a suffix character.
        assert_eq!(first_version_token("0.16.5-beta.1+b7 (x)"), Some("0.16.5-beta.1"));
        assert_eq!(first_version_token("1.0.0+b7"), Some("1.0.0+b7"));
        assert_eq!(first_version_token("v1.2.3 then 4.5.6"), Some("4.5.6"));
        assert_eq!(first_version_token("1.2 and 10.20.30.40"), Some("10.20.30"));
        assert_eq!(first_version_token("build 1.2.3- done"), Some("1.2.3"));
        assert_eq!(first_version_token("x.7.8.9"), Some("7.8.9"));
        assert_eq!(first_version_token("no version"), None);
        assert_eq!(first_version_token("1.2."), None);
    }

    #[test]
    fn exact_versions() {
        assert!(is_version("3.11.2"));
        assert!(is_version("0.16.5-rc.1"));
        for bad in ["", "*", "3.11", "3.11.x", " 3.11.2", "3.11.2 ", "v3.11.2", "3.11.2-"] {
            assert!(!is_version(bad), "{bad}");
        }
    }
}
