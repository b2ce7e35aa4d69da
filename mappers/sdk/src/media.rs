//! ACP media content: base64 payload sizes and MIME subtypes.

/// Decoded length of standard base64 (`+/`, optional `=` padding), or `None` if it is not
/// valid base64.
pub fn base64_decoded_len(data: &str) -> Option<u64> {
    let bytes = data.as_bytes();
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    if padding > 2 {
        return None;
    }
    let body = &bytes[..bytes.len() - padding];
    if !body.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/') {
        return None;
    }
    let remainder = body.len() % 4;
    if remainder == 1 || (padding > 0 && !(body.len() + padding).is_multiple_of(4)) {
        return None;
    }
    let tail = match remainder {
        2 => 1,
        3 => 2,
        _ => 0,
    };
    Some((body.len() / 4 * 3 + tail) as u64)
}

/// The subtype of a MIME type without a structured-syntax suffix (`image/svg+xml` → `svg`).
pub fn mime_subtype(mime: &str) -> Option<&str> {
    let subtype = mime.split_once('/')?.1;
    let subtype = subtype.split(';').next().unwrap_or(subtype).trim();
    let subtype = subtype.split('+').next().unwrap_or(subtype);
    (!subtype.is_empty()).then_some(subtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_and_validates_base64() {
        assert_eq!(base64_decoded_len(""), Some(0));
        assert_eq!(base64_decoded_len("aGk="), Some(2));
        assert_eq!(base64_decoded_len("aGk"), Some(2));
        assert_eq!(base64_decoded_len("aGVsbG8="), Some(5));
        assert_eq!(base64_decoded_len("aGVsbG8h"), Some(6));
        assert_eq!(base64_decoded_len("a"), None);
        assert_eq!(base64_decoded_len("aGk*"), None);
        assert_eq!(base64_decoded_len("aG=k"), None);
        assert_eq!(base64_decoded_len("aGk=="), None);
        assert_eq!(base64_decoded_len("a==="), None);
    }

    #[test]
    fn extracts_mime_subtypes() {
        assert_eq!(mime_subtype("image/png"), Some("png"));
        assert_eq!(mime_subtype("image/svg+xml"), Some("svg"));
        assert_eq!(mime_subtype("text/plain; charset=utf-8"), Some("plain"));
        assert_eq!(mime_subtype("nonsense"), None);
    }
}
