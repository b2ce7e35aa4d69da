//! SHA-256 and export facts of install files, computed once per file per process.
//!
//! Several mappers usually pin the same files; an install's files are tens of MiB, so each
//! is read and hashed once. The cache key includes size and modification time, so a file
//! replaced in place is read again.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::asar::read_range;
use crate::exports::exported_names;

/// Largest file read into memory for hashing (ZCode's largest checked file is ~20 MiB).
const MAX_FILE: u64 = 512 * 1024 * 1024;

/// The bytes of one install file: a plain file, or a range of an asar archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileSource {
    Plain(PathBuf),
    Packed { archive: PathBuf, inner: String, offset: u64, size: u64 },
}

/// What the gate needs to know about one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileFacts {
    /// Lowercase hex.
    pub sha256: String,
    /// Names exported if the file is an ES module (empty otherwise).
    pub exports: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Files read and hashed.
    pub computed: u64,
    /// Requests answered from the cache.
    pub hits: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct FileKey {
    path: PathBuf,
    inner: Option<String>,
    size: u64,
    modified: Option<SystemTime>,
}

#[derive(Default)]
pub struct HashCache {
    entries: Mutex<HashMap<FileKey, Arc<FileFacts>>>,
    computed: AtomicU64,
    hits: AtomicU64,
}

impl HashCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The process-wide cache.
    pub fn global() -> &'static HashCache {
        static GLOBAL: OnceLock<HashCache> = OnceLock::new();
        GLOBAL.get_or_init(HashCache::new)
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            computed: self.computed.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
        }
    }

    /// Facts about `source`, computed on first request. `source` paths must be canonical.
    pub fn facts(&self, source: &FileSource) -> Result<Arc<FileFacts>, String> {
        let key = key_of(source)?;
        // Held while hashing: concurrent requests for one file must not hash it twice.
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(facts) = entries.get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Arc::clone(facts));
        }
        let bytes = read(source)?;
        let facts = Arc::new(FileFacts {
            sha256: sha256_hex(&bytes),
            exports: std::str::from_utf8(&bytes).map(exported_names).unwrap_or_default(),
        });
        self.computed.fetch_add(1, Ordering::Relaxed);
        entries.insert(key, Arc::clone(&facts));
        Ok(facts)
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn key_of(source: &FileSource) -> Result<FileKey, String> {
    let (path, inner) = match source {
        FileSource::Plain(path) => (path, None),
        FileSource::Packed { archive, inner, .. } => (archive, Some(inner.clone())),
    };
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
    Ok(FileKey { path: path.clone(), inner, size: meta.len(), modified: meta.modified().ok() })
}

fn read(source: &FileSource) -> Result<Vec<u8>, String> {
    match source {
        FileSource::Plain(path) => read_capped(path),
        FileSource::Packed { archive, inner, offset, size } => {
            if *size > MAX_FILE {
                return Err(format!("`{inner}` is larger than {MAX_FILE} bytes"));
            }
            read_range(archive, *offset, *size)
                .map_err(|e| format!("cannot read `{inner}` from {}: {e}", archive.display()))
        }
    }
}

fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("{} is larger than {MAX_FILE} bytes", path.display()));
    }
    Ok(bytes)
}
