//! URIs and paths of the machine the host runs on (POSIX or Windows), as text: a guest has
//! no filesystem to ask.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
