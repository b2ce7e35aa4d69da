//! The host archive: a plain directory or an asar archive file.

use std::path::{Path, PathBuf};

use crate::asar::{AsarArchive, AsarEntry};
use crate::files::{contain, join_relative};
use crate::hashing::FileSource;
use crate::verdict::ArchiveKind;

pub enum HostArchive {
    Directory(PathBuf),
    Asar(AsarArchive),
}

/// One file located in the host archive.
pub struct ArchivedFile {
    pub source: FileSource,
    /// The absolute path a runtime uses to reach it: the real path for a directory, and
    /// `<archive>/<path>` for an asar archive (Electron reads through the archive).
    pub location: PathBuf,
}

impl HostArchive {
    /// Opens the archive at `path` (canonical).
    pub fn open(path: &Path, kind: ArchiveKind) -> Result<Self, String> {
        match kind {
            ArchiveKind::Directory => Ok(HostArchive::Directory(path.to_path_buf())),
            ArchiveKind::Asar => AsarArchive::open(path)
                .map(HostArchive::Asar)
                .map_err(|e| format!("host archive {}: {e}", path.display())),
        }
    }

    /// Locates `inner` (a validated relative path); the file must stay inside `root`.
    pub fn locate(&self, root: &Path, inner: &str) -> Result<ArchivedFile, String> {
        let what = format!("host file `{inner}`");
        match self {
            HostArchive::Directory(dir) => {
                let real = contain(root, &join_relative(dir, inner), &what)?;
                if !real.is_file() {
                    return Err(format!("{what} is not a regular file"));
                }
                Ok(ArchivedFile { source: FileSource::Plain(real.clone()), location: real })
            }
            HostArchive::Asar(asar) => {
                let location = join_relative(asar.path(), inner);
                match asar.entry(inner)? {
                    AsarEntry::Packed { offset, size } => Ok(ArchivedFile {
                        source: FileSource::Packed {
                            archive: asar.path().to_path_buf(),
                            inner: inner.to_string(),
                            offset,
                            size,
                        },
                        location,
                    }),
                    AsarEntry::Unpacked(path) => {
                        let real = contain(root, &path, &what)?;
                        Ok(ArchivedFile { source: FileSource::Plain(real), location })
                    }
                }
            }
        }
    }

    /// Reads a small file (`package.json`) from the archive.
    pub fn read_small(&self, root: &Path, inner: &str, cap: u64) -> Result<Vec<u8>, String> {
        let file = self.locate(root, inner)?;
        let (path, offset, size) = match &file.source {
            FileSource::Plain(path) => {
                let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
                (path.clone(), 0, len)
            }
            FileSource::Packed { archive, offset, size, .. } => (archive.clone(), *offset, *size),
        };
        if size > cap {
            return Err(format!("`{inner}` is larger than {cap} bytes"));
        }
        crate::asar::read_range(&path, offset, size)
            .map_err(|e| format!("cannot read `{inner}`: {e}"))
    }
}
