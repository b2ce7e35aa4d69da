//! Version tokens: `digits.digits.digits` with an optional `-`/`+` suffix, as the CLI prints
//! them and as contracts name them.

use std::cmp::Ordering;

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

/// Orders two exact versions (`x.y.z[-pre][+build]`) as semantic versions do: numerically by
/// part, a pre-release before its release, build metadata ignored. `None` when either is not a
/// version.
pub fn compare_versions(a: &str, b: &str) -> Option<Ordering> {
    let (a_parts, a_pre) = split_version(a)?;
    let (b_parts, b_pre) = split_version(b)?;
    Some(a_parts.cmp(&b_parts).then_with(|| match (a_pre, b_pre) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => a.cmp(b),
    }))
}

/// The numeric parts and the pre-release of an exact version.
fn split_version(value: &str) -> Option<([u64; 3], Option<&str>)> {
    if !is_version(value) {
        return None;
    }
    let core_end = value.find(['-', '+']).unwrap_or(value.len());
    let mut parts = [0u64; 3];
    for (slot, part) in parts.iter_mut().zip(value[..core_end].split('.')) {
        *slot = part.parse().ok()?;
    }
    let pre = value[core_end..].strip_prefix('-');
    Some((parts, pre))
}

/// The major part of a version (`22` of `22.12.0`).
pub fn major(value: &str) -> Option<u64> {
    split_version(value).map(|(parts, _)| parts[0])
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
    fn versions_order_numerically() {
        let order = |a, b| compare_versions(a, b).unwrap();
        assert_eq!(order("3.19.0", "4.0.0"), Ordering::Less);
        assert_eq!(order("3.10.0", "3.9.9"), Ordering::Greater);
        assert_eq!(order("24.14.0", "24.14.0"), Ordering::Equal);
        assert_eq!(order("1.0.0-rc.1", "1.0.0"), Ordering::Less);
        assert_eq!(order("1.0.0+b7", "1.0.0"), Ordering::Equal);
        assert_eq!(compare_versions("1.0", "1.0.0"), None);
        assert_eq!(major("22.12.0"), Some(22));
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
