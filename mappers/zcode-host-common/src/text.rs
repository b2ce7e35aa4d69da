//! Pure text helpers: timestamps, base64 sizes, URIs and deterministic ids.
//!
//! The mapper runs without clocks or randomness, so times come from native data and ids are
//! derived from what the mapper knows.

/// ISO 8601 (UTC, millisecond precision) of a Unix epoch time in milliseconds.
pub fn iso8601_from_epoch_ms(epoch_ms: f64) -> Option<String> {
    if !epoch_ms.is_finite() || epoch_ms.abs() > 8.64e15 {
        return None;
    }
    let ms = epoch_ms.floor() as i64;
    let days = ms.div_euclid(86_400_000);
    let ms_of_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (hours, minutes) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60);
    let (seconds, millis) = (ms_of_day / 1000 % 60, ms_of_day % 1000);
    Some(format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z"))
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), after Howard Hinnant's
/// `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

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

/// Percent-decodes a URI component; `None` for bad escapes or a result that is not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes.get(index + 1..index + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The path of a URI without scheme, authority, query or fragment.
fn uri_path(uri: &str) -> &str {
    let without_fragment = uri.split('#').next().unwrap_or(uri);
    let without_query = without_fragment.split('?').next().unwrap_or(without_fragment);
    match without_query.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |slash| &rest[slash..]),
        None => match without_query.split_once(':') {
            Some((scheme, rest)) if !scheme.contains('/') => rest,
            _ => without_query,
        },
    }
}

/// The last non-empty path segment of a URI, percent-decoded.
pub fn uri_basename(uri: &str) -> Option<String> {
    let last = uri_path(uri).rsplit('/').find(|segment| !segment.is_empty())?;
    percent_decode(last).filter(|name| !name.is_empty())
}

/// The local path named by a `file:` URI, percent-decoded (`None` if the URI is not a usable
/// `file:` URI). Windows drive paths (`file:///C:/x`) lose the leading slash.
pub fn file_uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file:")?;
    let path = match rest.strip_prefix("//") {
        // `file:///p` or `file://localhost/p`; another host is not a local file.
        Some(authority_and_path) => {
            let slash = authority_and_path.find('/')?;
            let host = &authority_and_path[..slash];
            if !host.is_empty() && host != "localhost" {
                return None;
            }
            &authority_and_path[slash..]
        }
        None => rest,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let decoded = percent_decode(path)?;
    let bytes = decoded.as_bytes();
    if bytes.len() >= 3 && bytes[0] == b'/' && bytes[1].is_ascii_alphabetic() && bytes[2] == b':' {
        return Some(decoded[1..].to_string());
    }
    Some(decoded)
}

/// Whether a path is absolute on a POSIX or Windows host.
pub fn is_absolute_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && (bytes[2] == b'/' || bytes[2] == b'\\'))
}

/// Joins a relative path onto an absolute directory, using the directory's separator style.
pub fn join_path(directory: &str, relative: &str) -> String {
    let separator = if directory.contains('\\') && !directory.contains('/') { '\\' } else { '/' };
    let relative = relative.strip_prefix("./").unwrap_or(relative);
    if directory.ends_with(separator) {
        format!("{directory}{relative}")
    } else {
        format!("{directory}{separator}{relative}")
    }
}

/// The subtype of a MIME type without a structured-syntax suffix (`image/svg+xml` → `svg`).
pub fn mime_subtype(mime: &str) -> Option<&str> {
    let subtype = mime.split_once('/')?.1;
    let subtype = subtype.split(';').next().unwrap_or(subtype).trim();
    let subtype = subtype.split('+').next().unwrap_or(subtype);
    (!subtype.is_empty()).then_some(subtype)
}

/// A UUID-shaped id (version 8, RFC 9562 variant) derived from `parts`. Deterministic by
/// design: the sandbox has no randomness, and the caller mixes in native data so ids differ
/// between runs.
pub fn derived_uuid(parts: &[&str]) -> String {
    // Two FNV-1a lanes with different offsets give 128 bits; uniqueness, not secrecy, matters.
    let mut lanes = [0xcbf2_9ce4_8422_2325_u64, 0x6c62_272e_07bb_0142_u64];
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0xff)) {
            for lane in &mut lanes {
                *lane ^= u64::from(byte);
                *lane = lane.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        lanes[1] = lanes[1].rotate_left(29) ^ lanes[0];
    }
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&lanes[0].to_be_bytes());
    bytes[8..].copy_from_slice(&lanes[1].to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_epoch_milliseconds_as_iso8601() {
        assert_eq!(iso8601_from_epoch_ms(0.0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_from_epoch_ms(1_757_000_000_000.0).unwrap(), "2025-09-04T15:33:20.000Z");
        assert_eq!(iso8601_from_epoch_ms(951_782_400_123.9).unwrap(), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601_from_epoch_ms(-1.0).unwrap(), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso8601_from_epoch_ms(f64::NAN), None);
        assert_eq!(iso8601_from_epoch_ms(1e300), None);
    }

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
    fn reads_file_uris_and_basenames() {
        assert_eq!(file_uri_path("file:///tmp/a%20b.txt").unwrap(), "/tmp/a b.txt");
        assert_eq!(file_uri_path("file://localhost/tmp/x").unwrap(), "/tmp/x");
        assert_eq!(file_uri_path("file:///C:/work/x.rs").unwrap(), "C:/work/x.rs");
        assert_eq!(file_uri_path("file:relative/x").unwrap(), "relative/x");
        assert_eq!(file_uri_path("file://server/share/x"), None);
        assert_eq!(file_uri_path("https://x/y"), None);
        assert_eq!(file_uri_path("file:///bad%zz"), None);
        assert_eq!(uri_basename("https://example.com/a/b%20c.png?x=1#f").unwrap(), "b c.png");
        assert_eq!(uri_basename("file:///tmp/dir/").unwrap(), "dir");
        assert_eq!(uri_basename("https://example.com"), None);
        assert_eq!(uri_basename("urn:x").unwrap(), "x");
    }

    #[test]
    fn recognises_absolute_paths_and_joins() {
        assert!(is_absolute_path("/a"));
        assert!(is_absolute_path("C:\\a"));
        assert!(is_absolute_path("c:/a"));
        assert!(is_absolute_path("\\\\server\\share"));
        assert!(!is_absolute_path("a/b"));
        assert!(!is_absolute_path("C:a"));
        assert_eq!(join_path("/w", "./src/x.rs"), "/w/src/x.rs");
        assert_eq!(join_path("/w/", "x"), "/w/x");
        assert_eq!(join_path("C:\\w", "x"), "C:\\w\\x");
    }

    #[test]
    fn extracts_mime_subtypes() {
        assert_eq!(mime_subtype("image/png"), Some("png"));
        assert_eq!(mime_subtype("image/svg+xml"), Some("svg"));
        assert_eq!(mime_subtype("text/plain; charset=utf-8"), Some("plain"));
        assert_eq!(mime_subtype("nonsense"), None);
    }

    #[test]
    fn derives_stable_distinct_uuids() {
        let a = derived_uuid(&["s", "1"]);
        assert_eq!(a, derived_uuid(&["s", "1"]));
        assert_ne!(a, derived_uuid(&["s", "2"]));
        assert_ne!(derived_uuid(&["s1", ""]), derived_uuid(&["s", "1"]));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
    }
}
