//! The runtime root the simulator expects (the layout of an extracted zcode-runtime archive
//! next to a Node distribution):
//!
//! ```text
//! <root>/node/bin/node                     (node\node.exe on Windows) — runs this simulator
//! <root>/zcode/package.json                {"name":"zcode-runtime","version":"<release>"}
//! <root>/zcode/server/remote/zcode-server.cjs
//! <root>/zcode/agent/zcode.cjs
//! <root>/zcode/agent/provider/zcode-builtin.json
//! ```
//!
//! or the runtime directory itself (`package.json`, `server/`, `agent/` at the root), as the
//! Paseo plugin's managed entries `zcode-<version>-<sha12>/` are, their Node in a sibling entry.

use std::path::{Path, PathBuf};

use super::profile::RuntimeProfile;

pub const PACKAGE_NAME: &str = "zcode-runtime";

/// The runtime directory of `root`: its `zcode/` when there is one, else the root itself when
/// its own `package.json` names the runtime package; `None` for any other folder (a desktop
/// install), so the Desktop profiles get their turn.
pub fn runtime_dir(root: &Path) -> Option<PathBuf> {
    let nested = root.join("zcode");
    if nested.join("package.json").is_file() {
        return Some(nested);
    }
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let package: serde_json::Value = serde_json::from_str(&text).ok()?;
    (package.get("name").and_then(|name| name.as_str()) == Some(PACKAGE_NAME))
        .then(|| root.to_path_buf())
}

pub fn server_entry(dir: &Path) -> PathBuf {
    dir.join("server/remote/zcode-server.cjs")
}

pub fn agent_entry(dir: &Path) -> PathBuf {
    dir.join("agent/zcode.cjs")
}

/// `None` when the root is not a runtime root at all, so the Desktop profiles get their turn;
/// otherwise its runtime directory and the profile, or why there is none.
pub fn detect(root: &Path) -> Option<Result<(PathBuf, &'static RuntimeProfile), String>> {
    let dir = runtime_dir(root)?;
    let path = dir.join("package.json");
    let text = std::fs::read_to_string(&path).ok()?;
    Some(read_profile(&path, &text).map(|profile| (dir, profile)))
}

fn read_profile(path: &Path, text: &str) -> Result<&'static RuntimeProfile, String> {
    let package: serde_json::Value = serde_json::from_str(text)
        .map_err(|error| format!("invalid JSON in {}: {error}", path.display()))?;
    if package.get("name").and_then(|name| name.as_str()) != Some(PACKAGE_NAME) {
        return Err(format!("{} is not a {PACKAGE_NAME} package", path.display()));
    }
    let version = package
        .get("version")
        .and_then(|version| version.as_str())
        .ok_or_else(|| format!("{} has no string `version`", path.display()))?;
    RuntimeProfile::for_version(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(package: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("zcode")).unwrap();
        std::fs::write(root.path().join("zcode/package.json"), package).unwrap();
        root
    }

    #[test]
    fn detects_runtime_roots_only() {
        let root = root_with(r#"{"name":"zcode-runtime","version":"3.17.2"}"#);
        let (dir, profile) = detect(root.path()).unwrap().unwrap();
        assert_eq!((dir, profile.name), (root.path().join("zcode"), "runtime-3.17.2"));
        assert!(detect(tempfile::tempdir().unwrap().path()).is_none());
    }

    #[test]
    fn a_managed_entry_is_its_own_runtime_directory() {
        let entry = tempfile::tempdir().unwrap();
        std::fs::write(
            entry.path().join("package.json"),
            r#"{"name":"zcode-runtime","version":"4.0.0"}"#,
        )
        .unwrap();
        let (dir, profile) = detect(entry.path()).unwrap().unwrap();
        assert_eq!((dir.as_path(), profile.name), (entry.path(), "runtime-4.0.0"));
        // Another package at the root is no runtime: the Desktop profiles get their turn.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("package.json"), r#"{"name":"zcode","version":"4.0.0"}"#)
            .unwrap();
        assert!(detect(other.path()).is_none());
    }

    #[test]
    fn refuses_foreign_packages_and_unknown_versions() {
        let other = root_with(r#"{"name":"zcode","version":"3.17.2"}"#);
        assert!(detect(other.path()).unwrap().unwrap_err().contains("not a zcode-runtime"));
        let future = root_with(r#"{"name":"zcode-runtime","version":"9.9.9"}"#);
        assert!(detect(future.path()).unwrap().unwrap_err().contains("no simulator profile"));
        let broken = root_with("{");
        assert!(detect(broken.path()).unwrap().unwrap_err().contains("invalid JSON"));
    }
}
