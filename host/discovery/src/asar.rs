//! A reader for Electron asar archives (enough to locate and read single files).
//!
//! Layout: bytes 0..8 are a Chromium pickle holding one u32, the size of the header pickle
//! that follows (the pickle's own first u32 is its payload size, always 4 here). The header
//! pickle holds a length-prefixed UTF-8 string: the JSON header
//! `{"files": {name: {"files": {...}} | {"offset": "<decimal>", "size": n, "unpacked"?: bool}}}`.
//! File data starts right after the header pickle (`8 + header pickle size`); a file's
//! `offset` is relative to that point. Files marked `unpacked` live beside the archive under
//! `<archive>.unpacked/<path>`. All integers are little-endian.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Largest JSON header accepted; real archives have headers of a few hundred KiB.
const MAX_HEADER: u64 = 64 * 1024 * 1024;

#[derive(Debug)]
pub struct AsarArchive {
    path: PathBuf,
    len: u64,
    data_start: u64,
    root: Map<String, Value>,
}

/// Where the bytes of one archived file are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsarEntry {
    /// Inside the archive file: absolute byte offset and length.
    Packed { offset: u64, size: u64 },
    /// Beside the archive, at this path (not yet resolved or checked).
    Unpacked(PathBuf),
}

impl AsarArchive {
    /// Reads and checks the header of the archive at `path`.
    pub fn open(path: &Path) -> Result<Self, String> {
        let mut file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
        let len = file.metadata().map_err(|e| format!("cannot stat: {e}"))?.len();
        let mut prefix = [0u8; 8];
        file.read_exact(&mut prefix).map_err(|_| "too short for an asar header".to_string())?;
        if u32_at(&prefix, 0) != 4 {
            return Err("not an asar archive (bad size pickle)".into());
        }
        let header_size = u64::from(u32_at(&prefix, 4));
        if !(8..=MAX_HEADER).contains(&header_size) || 8 + header_size > len {
            return Err(format!("asar header size {header_size} is out of range"));
        }
        let mut header = vec![0u8; header_size as usize];
        file.read_exact(&mut header).map_err(|e| format!("cannot read the header: {e}"))?;
        let payload = u64::from(u32_at(&header, 0));
        let json_len = u64::from(u32_at(&header, 4));
        if payload + 4 > header_size || json_len + 4 > payload {
            return Err("asar header pickle is inconsistent".into());
        }
        let json = &header[8..8 + json_len as usize];
        let root = match serde_json::from_slice(json) {
            Ok(Value::Object(root)) => root,
            Ok(_) => return Err("asar header is not a JSON object".into()),
            Err(e) => return Err(format!("asar header is not JSON: {e}")),
        };
        if !root.get("files").is_some_and(Value::is_object) {
            return Err("asar header has no `files` object".into());
        }
        Ok(Self { path: path.to_path_buf(), len, data_start: 8 + header_size, root })
    }

    /// Finds the file at the `/`-separated `inner` path.
    pub fn entry(&self, inner: &str) -> Result<AsarEntry, String> {
        let mut node = &self.root;
        for part in inner.split('/') {
            if part.is_empty() || part == "." || part == ".." {
                return Err(format!("`{inner}` is not a plain path"));
            }
            node = node
                .get("files")
                .and_then(Value::as_object)
                .and_then(|files| files.get(part))
                .and_then(Value::as_object)
                .ok_or_else(|| format!("`{inner}` is not in the archive"))?;
        }
        if node.contains_key("files") {
            return Err(format!("`{inner}` is a directory in the archive"));
        }
        if node.contains_key("link") {
            // A link could point anywhere; the gate only trusts files it can pin.
            return Err(format!("`{inner}` is a symbolic link in the archive"));
        }
        if node.get("unpacked").and_then(Value::as_bool) == Some(true) {
            let mut path = self.unpacked_dir();
            path.extend(inner.split('/'));
            return Ok(AsarEntry::Unpacked(path));
        }
        let size = node.get("size").and_then(Value::as_u64);
        let offset = match node.get("offset") {
            Some(Value::String(text)) => text.parse::<u64>().ok(),
            _ => None,
        };
        let (Some(offset), Some(size)) = (offset, size) else {
            return Err(format!("`{inner}` has no valid offset and size in the archive header"));
        };
        let start = self.data_start.saturating_add(offset);
        match start.checked_add(size) {
            Some(end) if end <= self.len => Ok(AsarEntry::Packed { offset: start, size }),
            _ => Err(format!("`{inner}` lies beyond the end of the archive")),
        }
    }

    /// The directory holding unpacked files: `<archive>.unpacked`.
    pub fn unpacked_dir(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_os_string();
        name.push(".unpacked");
        PathBuf::from(name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads `size` bytes at `offset` of the file at `path`.
pub fn read_range(path: &Path, offset: u64, size: u64) -> std::io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.take(size).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != size {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "archive truncated"));
    }
    Ok(bytes)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An archive with the given JSON header and data section.
    fn archive(dir: &Path, header: &str, data: &[u8]) -> PathBuf {
        let padded = header.len().div_ceil(4) * 4;
        let payload = (4 + padded) as u32;
        let mut bytes = [4u32, payload + 4, payload, header.len() as u32]
            .iter()
            .flat_map(|n| n.to_le_bytes())
            .collect::<Vec<u8>>();
        bytes.extend_from_slice(header.as_bytes());
        bytes.resize(16 + padded, 0);
        bytes.extend_from_slice(data);
        let path = dir.join("app.asar");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn locates_files_and_refuses_what_it_cannot_pin() {
        let dir = tempfile::tempdir().unwrap();
        let header = r#"{"files":{"a":{"files":{"b.js":{"offset":"2","size":3}}},
            "u.js":{"size":9,"unpacked":true},"l.js":{"link":"a/b.js"},
            "far.js":{"offset":"4","size":3},"num.js":{"offset":0,"size":1}}}"#;
        let path = archive(dir.path(), header, b"xxabcy");
        let asar = AsarArchive::open(&path).unwrap();
        let AsarEntry::Packed { offset, size } = asar.entry("a/b.js").unwrap() else {
            panic!("packed")
        };
        assert_eq!(read_range(&path, offset, size).unwrap(), b"abc");
        assert_eq!(
            asar.entry("u.js").unwrap(),
            AsarEntry::Unpacked(dir.path().join("app.asar.unpacked").join("u.js"))
        );
        for (inner, why) in [
            ("a", "is a directory"),
            ("l.js", "symbolic link"),
            ("far.js", "beyond the end"),
            ("num.js", "no valid offset"),
            ("a/../a/b.js", "not a plain path"),
            ("a/c.js", "not in the archive"),
        ] {
            let error = asar.entry(inner).unwrap_err();
            assert!(error.contains(why), "{inner}: {error}");
        }
    }

    #[test]
    fn refuses_what_is_not_an_asar_archive() {
        let dir = tempfile::tempdir().unwrap();
        let not_json = archive(dir.path(), "{files", b"");
        assert!(AsarArchive::open(&not_json).unwrap_err().contains("not JSON"));
        let no_files = archive(dir.path(), r#"{"x":1}"#, b"");
        assert!(AsarArchive::open(&no_files).unwrap_err().contains("no `files`"));
        std::fs::write(dir.path().join("zip"), b"PK\x03\x04rest of a zip").unwrap();
        assert!(AsarArchive::open(&dir.path().join("zip")).unwrap_err().contains("not an asar"));
    }
}
