//! The trust file: which drop-in mapper files (canonical path and SHA-256) the user trusts.
//!
//! A mapper chooses the native program's arguments, environment and a script that ZCode's
//! runtime executes, so loading one runs its code as the user: only a file whose exact bytes
//! the user trusted is loaded. The file is user-only (`0600` in a `0700` folder), written
//! atomically (a temporary file renamed over it) under a lock, and refused when others could
//! have written it. On Windows it lives in the user's profile, which only the user can write.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The trust file's name in the zcode-acp config folder.
pub const TRUST_FILE: &str = "trusted-mappers.json";
/// The format version written and read.
const FORMAT: u32 = 1;
/// Largest trust file read.
const MAX_TRUST_FILE: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error(
        "the trust file {} is not safe to use: {why}; nothing is trusted until it is fixed \
         (make it yours and mode 0600, in a folder only you can write)",
        path.display()
    )]
    Insecure { path: PathBuf, why: String },
    #[error(
        "the trust file {} cannot be read: {why}; nothing is trusted until it is fixed or removed",
        path.display()
    )]
    Corrupt { path: PathBuf, why: String },
    #[error("{action} {}: {source}", path.display())]
    Io { action: &'static str, path: PathBuf, source: io::Error },
}

/// What the trust file says about one file with one SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustState {
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted with other bytes: the file changed since.
    Changed {
        trusted_sha256: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    version: u32,
    mappers: Vec<TrustedMapper>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustedMapper {
    path: String,
    sha256: String,
}

/// The trust file as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
    /// Canonical path → SHA-256 (lowercase hex).
    entries: BTreeMap<String, String>,
}

impl TrustStore {
    /// Reads the trust file at `path`; a missing file trusts nothing.
    pub fn open(path: &Path) -> Result<Self, TrustError> {
        let entries = read(path)?;
        Ok(Self { path: path.to_path_buf(), entries })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The trust state of `file` (a canonical path) holding bytes with `sha256`.
    pub fn state(&self, file: &Path, sha256: &str) -> TrustState {
        match self.entries.get(&key(file)) {
            Some(trusted) if trusted == sha256 => TrustState::Trusted,
            Some(trusted) => TrustState::Changed { trusted_sha256: trusted.clone() },
            None => TrustState::Untrusted,
        }
    }

    /// The trusted files, as (canonical path, SHA-256).
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(path, sha)| (path.as_str(), sha.as_str()))
    }

    /// Records `file` (canonical) with `sha256` in the trust file at `path`, replacing what it
    /// said about that file.
    pub fn trust(path: &Path, file: &Path, sha256: &str) -> Result<Self, TrustError> {
        update(path, |entries| {
            entries.insert(key(file), sha256.to_string());
        })
    }

    /// Removes `file` from the trust file at `path`; whether it was there.
    pub fn revoke(path: &Path, file: &Path) -> Result<(Self, bool), TrustError> {
        let mut removed = false;
        let store = update(path, |entries| removed = entries.remove(&key(file)).is_some())?;
        Ok((store, removed))
    }
}

fn key(file: &Path) -> String {
    file.to_string_lossy().into_owned()
}

/// Read, change and write the trust file under its lock, so concurrent changes never lose
/// one another.
fn update(
    path: &Path,
    change: impl FnOnce(&mut BTreeMap<String, String>),
) -> Result<TrustStore, TrustError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let lock_path = path.with_extension("lock");
    let lock = private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|source| TrustError::Io {
            action: "cannot open",
            path: lock_path.clone(),
            source,
        })?;
    lock.lock().map_err(|source| TrustError::Io {
        action: "cannot lock",
        path: lock_path,
        source,
    })?;
    let mut entries = read(path)?;
    change(&mut entries);
    write_atomically(path, &entries)?;
    Ok(TrustStore { path: path.to_path_buf(), entries })
}

fn read(path: &Path) -> Result<BTreeMap<String, String>, TrustError> {
    let corrupt = |why: String| TrustError::Corrupt { path: path.to_path_buf(), why };
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => {
            return Err(TrustError::Io {
                action: "cannot inspect",
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if !meta.is_file() {
        return Err(TrustError::Insecure {
            path: path.to_path_buf(),
            why: "it is not a regular file".into(),
        });
    }
    check_private(path, &meta)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let dir_meta = fs::metadata(dir).map_err(|source| TrustError::Io {
            action: "cannot inspect",
            path: dir.to_path_buf(),
            source,
        })?;
        check_private(dir, &dir_meta)?;
    }
    if meta.len() > MAX_TRUST_FILE {
        return Err(corrupt(format!("it is larger than {MAX_TRUST_FILE} bytes")));
    }
    let bytes = fs::read(path).map_err(|source| TrustError::Io {
        action: "cannot read",
        path: path.to_path_buf(),
        source,
    })?;
    let file: TrustFile = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if file.version != FORMAT {
        return Err(corrupt(format!("format version {} is not {FORMAT}", file.version)));
    }
    let mut entries = BTreeMap::new();
    for mapper in file.mappers {
        if !is_sha256(&mapper.sha256) {
            return Err(corrupt(format!(
                "the SHA-256 of {} is not 64 lowercase hex digits",
                mapper.path
            )));
        }
        entries.insert(mapper.path, mapper.sha256);
    }
    Ok(entries)
}

fn is_sha256(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Writes a temporary file (0600) beside `path`, syncs it, and renames it over `path`.
fn write_atomically(path: &Path, entries: &BTreeMap<String, String>) -> Result<(), TrustError> {
    let file = TrustFile {
        version: FORMAT,
        mappers: entries
            .iter()
            .map(|(path, sha256)| TrustedMapper { path: path.clone(), sha256: sha256.clone() })
            .collect(),
    };
    let mut text = serde_json::to_vec_pretty(&file).expect("the trust file serializes");
    text.push(b'\n');
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    let io_err = |action, source| TrustError::Io { action, path: temp.clone(), source };
    let _ = fs::remove_file(&temp); // a leftover of a crashed writer of this pid
    let mut out = private_options()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|e| io_err("cannot create", e))?;
    let written = out.write_all(&text).and_then(|()| out.sync_all());
    drop(out);
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(io_err("cannot write", e));
    }
    fs::rename(&temp, path).map_err(|source| {
        let _ = fs::remove_file(&temp);
        TrustError::Io { action: "cannot replace", path: path.to_path_buf(), source }
    })?;
    // The rename is durable once the folder is synced (where the OS allows opening it).
    if let Some(dir) = path.parent()
        && let Ok(dir) = File::open(dir)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(unix)]
fn private_options() -> OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = OpenOptions::new();
    options.mode(0o600);
    options
}

#[cfg(not(unix))]
fn private_options() -> OpenOptions {
    OpenOptions::new()
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<(), TrustError> {
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(source) => {
            Err(TrustError::Io { action: "cannot create", path: dir.to_path_buf(), source })
        }
    }
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<(), TrustError> {
    fs::create_dir_all(dir).map_err(|source| TrustError::Io {
        action: "cannot create",
        path: dir.to_path_buf(),
        source,
    })
}

/// Refuses a file or folder that someone else owns or that group or others can write.
#[cfg(unix)]
fn check_private(path: &Path, meta: &fs::Metadata) -> Result<(), TrustError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let insecure = |why: String| TrustError::Insecure { path: path.to_path_buf(), why };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(insecure(format!(
            "{} belongs to user {}, not to you",
            path.display(),
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(insecure(format!(
            "{} can be written by group or others (mode {:o})",
            path.display(),
            mode & 0o777
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path, _meta: &fs::Metadata) -> Result<(), TrustError> {
    Ok(())
}
