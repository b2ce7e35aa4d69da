//! A directory of precompiled mappers, so that start-up does not pay Cranelift each time.
//!
//! Loading a precompiled artifact is `unsafe` in wasmtime: the bytes are trusted to be machine
//! code wasmtime wrote. So only entries this cache wrote are loaded, and each is checked first:
//! `<key>.cwasm` holds the artifact and `<key>.meta` records the key, length and SHA-256 of the
//! artifact. Anything that does not match (a truncated or corrupt file, a stale or foreign
//! entry) is deleted and compiled again, never loaded.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Bumped whenever the entry layout or what goes into the key changes.
const CACHE_FORMAT: &str = "zcode-mapper-cache 1";

/// What the cache did for one load, for reports and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a copy of the precompiled artifact built into the binary (embedded mappers
    /// only).
    Embedded,
    /// Run from the precompiled artifact where the binary holds it, without a copy (embedded
    /// mappers, on platforms that allow it: `in_place.rs`).
    EmbeddedInPlace,
    /// No cache directory was configured: the mapper was compiled.
    Disabled,
    /// Loaded from a precompiled entry.
    Hit,
    /// No entry yet: compiled and (if the directory is writable) stored.
    Miss,
    /// An entry existed but was refused for the given reason, deleted, and replaced.
    Replaced(String),
}

pub(crate) enum Lookup {
    Hit(Component),
    Absent,
    Refused(String),
}

pub(crate) struct ArtifactCache {
    dir: PathBuf,
    engine_fingerprint: String,
}

impl ArtifactCache {
    pub fn new(dir: PathBuf, engine: &Engine) -> Self {
        Self { dir, engine_fingerprint: engine_fingerprint(engine) }
    }

    /// The entry name for a component: its bytes and the engine settings that shape the
    /// compiled code (wasmtime version, target, fuel metering, ...).
    pub fn key(&self, component_bytes: &[u8]) -> String {
        let mut hasher = Sha256::new();
        hasher.update(CACHE_FORMAT);
        hasher.update(self.engine_fingerprint.as_bytes());
        hasher.update(Sha256::digest(component_bytes));
        hex(&hasher.finalize())
    }

    pub fn load(&self, engine: &Engine, key: &str) -> Lookup {
        let (artifact_path, meta_path) = self.paths(key);
        let artifact = match fs::read(&artifact_path) {
            Ok(bytes) => bytes,
            Err(err)
                if matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) =>
            {
                return Lookup::Absent;
            }
            Err(err) => return self.refuse(key, format!("cannot read the artifact: {err}")),
        };
        let meta = match fs::read_to_string(&meta_path) {
            Ok(text) => text,
            Err(err) => return self.refuse(key, format!("cannot read the sidecar: {err}")),
        };
        if meta != sidecar(key, &artifact) {
            return self.refuse(key, "the sidecar does not match the artifact".into());
        }
        // SAFETY: the bytes are exactly those this cache serialized from a component compiled by
        // an engine with the same fingerprint (the sidecar matched their length and SHA-256, and
        // the key covers the engine settings); wasmtime still checks its own header.
        match unsafe { Component::deserialize(engine, &artifact) } {
            Ok(component) => Lookup::Hit(component),
            Err(err) => self.refuse(key, format!("wasmtime refused the artifact: {err}")),
        }
    }

    /// Writes an entry for a freshly compiled component.
    pub fn store(&self, key: &str, component: &Component) -> io::Result<()> {
        let artifact = component.serialize().map_err(io::Error::other)?;
        create_private_dir(&self.dir)?;
        let (artifact_path, meta_path) = self.paths(key);
        write_atomically(&artifact_path, &artifact)?;
        write_atomically(&meta_path, sidecar(key, &artifact).as_bytes())
    }

    fn refuse(&self, key: &str, reason: String) -> Lookup {
        let (artifact_path, meta_path) = self.paths(key);
        for path in [artifact_path, meta_path] {
            if let Err(err) = fs::remove_file(&path)
                && err.kind() != io::ErrorKind::NotFound
            {
                tracing::warn!("cannot delete refused cache entry {}: {err}", path.display());
            }
        }
        Lookup::Refused(reason)
    }

    fn paths(&self, key: &str) -> (PathBuf, PathBuf) {
        (self.dir.join(format!("{key}.cwasm")), self.dir.join(format!("{key}.meta")))
    }
}

fn sidecar(key: &str, artifact: &[u8]) -> String {
    let digest = hex(&Sha256::digest(artifact));
    format!(
        "{CACHE_FORMAT}\nkey {key}\nartifact-len {}\nartifact-sha256 {digest}\n",
        artifact.len()
    )
}

/// SHA-256 of wasmtime's own compatibility hash (version, target, compiler flags, tunables
/// such as fuel metering, wasm features) and this process's target.
fn engine_fingerprint(engine: &Engine) -> String {
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    std::env::consts::ARCH.hash(&mut hasher);
    std::env::consts::OS.hash(&mut hasher);
    hex(&hasher.0.finalize())
}

/// Feeds `Hash` output into SHA-256, which (unlike `DefaultHasher`) is stable across builds.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        unreachable!("only the SHA-256 state is used")
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Writes through a uniquely named temporary file (mode 0600) and renames it into place, so a
/// reader never sees a half-written file under the final name.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = path.with_file_name(format!(".{name}.{}.{unique}.tmp", std::process::id()));
    let written = write_new_private(&temp, bytes).and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

fn write_new_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
