//! Resolving a layout's runtime files from the install root, with the path rules of the
//! gate: every path stays inside the root after symlinks are resolved, is readable, and the
//! executable is executable.

use std::fs;
use std::path::{Path, PathBuf};

use zcode_contract::{DesktopLayout, LayoutKind};

use crate::verdict::{ArchiveKind, InstallFiles};

/// `canonicalize`, in the spelling programs expect. On Windows `canonicalize` returns
/// `\\?\C:\…`; Electron and scripts expect `C:\…`, which names the same file as long as
/// the path has a drive letter and is short.
pub fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    fs::canonicalize(path).map(simplify)
}

#[cfg(windows)]
fn simplify(path: PathBuf) -> PathBuf {
    let text = path.to_string_lossy();
    match text.strip_prefix(r"\\?\") {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') && rest.len() < 260 => {
            PathBuf::from(rest.to_string())
        }
        _ => path,
    }
}

#[cfg(not(windows))]
fn simplify(path: PathBuf) -> PathBuf {
    path
}

/// Joins a contract path (`/`-separated, validated relative) onto `base`.
pub fn join_relative(base: &Path, relative: &str) -> PathBuf {
    let mut path = base.to_path_buf();
    path.extend(relative.split('/'));
    path
}

/// Resolves `relative` under `root` (canonical) and checks that it stays inside.
pub fn resolve_inside(root: &Path, relative: &str, what: &str) -> Result<PathBuf, String> {
    contain(root, &join_relative(root, relative), what)
}

/// Canonicalizes `path` and checks that it lies inside `root` (canonical).
pub fn contain(root: &Path, path: &Path, what: &str) -> Result<PathBuf, String> {
    let real =
        canonical(path).map_err(|e| format!("{what} is missing: {} ({e})", path.display()))?;
    if !real.starts_with(root) {
        return Err(format!(
            "Resolved runtime path is outside the install root: {what} {} resolves to {}",
            path.display(),
            real.display()
        ));
    }
    Ok(real)
}

/// Resolves and checks the executable, CLI entry, metadata and host archive of a desktop
/// `layout` as one set from `root`.
pub fn resolve_desktop_files(root: &Path, layout: &DesktopLayout) -> Result<InstallFiles, String> {
    let executable = resolve_inside(root, &layout.executable, "the executable")?;
    let cli_entry = resolve_inside(root, &layout.cli_entry, "the CLI entry")?;
    let metadata = resolve_inside(root, &layout.metadata, "the bundle metadata")?;
    let host_archive = resolve_inside(root, &layout.host_archive, "the host archive")?;

    readable_file(&executable, "the executable")?;
    executable_file(&executable, "the executable")?;
    readable_file(&cli_entry, "the CLI entry")?;
    readable_file(&metadata, "the bundle metadata")?;
    let host_archive_kind = if host_archive.is_dir() {
        fs::read_dir(&host_archive).map_err(|e| {
            format!("the host archive {} is not readable: {e}", host_archive.display())
        })?;
        ArchiveKind::Directory
    } else {
        readable_file(&host_archive, "the host archive")?;
        ArchiveKind::Asar
    };
    Ok(InstallFiles {
        kind: LayoutKind::Desktop,
        executable: Some(executable),
        cli_entry,
        metadata,
        host_archive,
        host_archive_kind,
    })
}

pub fn readable_file(path: &Path, what: &str) -> Result<(), String> {
    if !path.is_file() {
        return Err(format!("{what} {} is not a regular file", path.display()));
    }
    fs::File::open(path)
        .map(drop)
        .map_err(|e| format!("{what} {} is not readable: {e}", path.display()))
}

#[cfg(unix)]
pub fn executable_file(path: &Path, what: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(path).map_err(|e| e.to_string())?.permissions().mode();
    if mode & 0o111 == 0 {
        return Err(format!("{what} {} is not executable", path.display()));
    }
    Ok(())
}

#[cfg(not(unix))]
pub fn executable_file(_path: &Path, _what: &str) -> Result<(), String> {
    Ok(())
}
