//! The drop-in folder, seen through the trust file: every `*.wasm` with its SHA-256 and trust
//! state. A trusted file comes with the bytes that were hashed, so what is loaded is exactly
//! what was checked (the file is never read a second time).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::sha256_hex;
use crate::store::{TrustState, TrustStore};

/// Largest mapper file read (real mappers are a few MiB).
pub const MAX_MAPPER_FILE: u64 = 256 * 1024 * 1024;

/// Whether a drop-in may be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Trusted: load exactly these bytes.
    Trusted(Vec<u8>),
    /// Never trusted: not loaded.
    Untrusted,
    /// Trusted with other bytes: not loaded until trusted again.
    Changed { trusted_sha256: String },
    /// The file could not be read.
    Unreadable(String),
    /// The trust file cannot be used, so nothing is trusted.
    NoTrust(String),
}

/// One `*.wasm` of the drop-in folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropIn {
    /// Canonical path (what the trust file records).
    pub path: PathBuf,
    pub sha256: Option<String>,
    pub admission: Admission,
}

impl DropIn {
    /// The bytes to load, when trusted.
    pub fn trusted_bytes(&self) -> Option<&[u8]> {
        match &self.admission {
            Admission::Trusted(bytes) => Some(bytes),
            _ => None,
        }
    }
}

impl fmt::Display for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Admission::Trusted(_) => f.write_str("trusted"),
            Admission::Untrusted => f.write_str("not trusted"),
            Admission::Changed { trusted_sha256 } => {
                write!(f, "changed since it was trusted (trusted sha256 {trusted_sha256})")
            }
            Admission::Unreadable(error) => write!(f, "unreadable: {error}"),
            Admission::NoTrust(error) => f.write_str(error),
        }
    }
}

/// Every `*.wasm` regular file in `dir` (sorted), judged by `store` (or, when the trust file
/// cannot be used, by nothing: the error says why).
pub fn scan(dir: &Path, store: Result<&TrustStore, &str>) -> Result<Vec<DropIn>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read the mappers folder {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm") && path.is_file())
        .collect();
    files.sort();
    Ok(files.into_iter().map(|path| judge(path, store)).collect())
}

fn judge(path: PathBuf, store: Result<&TrustStore, &str>) -> DropIn {
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let bytes = match read_capped(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            return DropIn { path, sha256: None, admission: Admission::Unreadable(error) };
        }
    };
    let sha256 = sha256_hex(&bytes);
    let admission = match store {
        Err(error) => Admission::NoTrust(error.to_string()),
        Ok(store) => match store.state(&path, &sha256) {
            TrustState::Trusted => Admission::Trusted(bytes),
            TrustState::Untrusted => Admission::Untrusted,
            TrustState::Changed { trusted_sha256 } => Admission::Changed { trusted_sha256 },
        },
    };
    DropIn { path, sha256: Some(sha256), admission }
}

/// Reads a mapper file, refusing one larger than [`MAX_MAPPER_FILE`].
pub fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_MAPPER_FILE + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_MAPPER_FILE {
        return Err(format!("larger than {MAX_MAPPER_FILE} bytes"));
    }
    Ok(bytes)
}
