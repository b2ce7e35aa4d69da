//! Workspace keys: the canonical absolute directory a session belongs to.

use std::path::{Path, PathBuf};

use crate::error::CoordinatorError;

/// Validates an ACP `cwd` and returns its canonical form (symlinks resolved).
pub fn canonical_workspace(cwd: &Path) -> Result<PathBuf, CoordinatorError> {
    if !cwd.is_absolute() {
        return Err(CoordinatorError::InvalidParams(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        )));
    }
    let canonical = std::fs::canonicalize(cwd).map_err(|_| {
        CoordinatorError::InvalidParams(format!("cwd does not exist: {}", cwd.display()))
    })?;
    if !canonical.is_dir() {
        return Err(CoordinatorError::InvalidParams(format!(
            "cwd is not a directory: {}",
            cwd.display()
        )));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_existing_absolute_directories() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = canonical_workspace(dir.path()).unwrap();
        assert_eq!(canonical, std::fs::canonicalize(dir.path()).unwrap());

        let relative = canonical_workspace(Path::new("relative/dir")).unwrap_err();
        assert!(relative.to_string().contains("absolute"), "{relative}");

        let missing = canonical_workspace(&dir.path().join("missing")).unwrap_err();
        assert!(missing.to_string().contains("does not exist"), "{missing}");

        let file = dir.path().join("file.txt");
        std::fs::write(&file, "x").unwrap();
        let not_dir = canonical_workspace(&file).unwrap_err();
        assert!(not_dir.to_string().contains("not a directory"), "{not_dir}");
    }
}
