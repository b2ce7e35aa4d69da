//! Resolving a layout's runtime files from the install root, with the path rules of the
//! gate: every path stays inside the root after symlinks are resolved, is readable, and the
//! executable is executable.

use std::fs;
use std::path::{Path, PathBuf};

use zcode_contract::Layout;

use crate::verdict::{ArchiveKind, InstallFiles};

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
    let real = fs::canonicalize(path)
        .map_err(|e| format!("{what} is missing: {} ({e})", path.display()))?;
    if !real.starts_with(root) {
        return Err(format!(
            "Resolved runtime path is outside the install root: {what} {} resolves to {}",
            path.display(),
            real.display()
        ));
    }
    Ok(real)
}

/// Resolves and checks the executable, CLI entry, metadata and host archive of `layout`
/// as one set from `root`.
pub fn resolve_files(root: &Path, layout: &Layout) -> Result<InstallFiles, String> {
    let executable = resolve_inside(root, &layout.executable, "the executable")?;
    let cli_entry = resolve_inside(root, &layout.cli_entry, "the CLI entry")?;
    let metadata = resolve_inside(root, &layout.metadata, "the bundle metadata")?;
    let host_archive = resolve_inside(root, &layout.host_archive, "the host archive")?;

    readable_file(&executable, "the executable")?;
    executable_file(&executable)?;
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
    Ok(InstallFiles { executable, cli_entry, metadata, host_archive, host_archive_kind })
}

fn readable_file(path: &Path, what: &str) -> Result<(), String> {
    if !path.is_file() {
        return Err(format!("{what} {} is not a regular file", path.display()));
    }
    fs::File::open(path)
        .map(drop)
        .map_err(|e| format!("{what} {} is not readable: {e}", path.display()))
}

#[cfg(unix)]
fn executable_file(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(path).map_err(|e| e.to_string())?.permissions().mode();
    if mode & 0o111 == 0 {
        return Err(format!("the executable {} is not executable", path.display()));
    }
    Ok(())
}

#[cfg(not(unix))]
fn executable_file(_path: &Path) -> Result<(), String> {
    Ok(())
}
