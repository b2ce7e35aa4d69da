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

use std::path::{Path, PathBuf};

use super::profile::RuntimeProfile;

pub const PACKAGE_NAME: &str = "zcode-runtime";

pub fn package_json(root: &Path) -> PathBuf {
    root.join("zcode/package.json")
}

pub fn server_entry(root: &Path) -> PathBuf {
    root.join("zcode/server/remote/zcode-server.cjs")
}

pub fn agent_entry(root: &Path) -> PathBuf {
    root.join("zcode/agent/zcode.cjs")
}

pub fn builtin_provider_config(root: &Path) -> PathBuf {
    root.join("zcode/agent/provider/zcode-builtin.json")
}

/// The Node executable inside the root (what a launch plan runs).
pub fn node_executable(root: &Path) -> PathBuf {
    if cfg!(windows) { root.join("node/node.exe") } else { root.join("node/bin/node") }
}

/// `None` when the root is not a runtime root at all (no `zcode/package.json`), so the
/// Desktop profiles get their turn; otherwise the profile or why there is none.
pub fn detect(root: &Path) -> Option<Result<&'static RuntimeProfile, String>> {
    let path = package_json(root);
    let text = std::fs::read_to_string(&path).ok()?;
    Some(read_profile(&path, &text))
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
        std::fs::write(package_json(root.path()), package).unwrap();
        root
    }

    #[test]
    fn detects_runtime_roots_only() {
        let root = root_with(r#"{"name":"zcode-runtime","version":"3.17.2"}"#);
        assert_eq!(detect(root.path()).unwrap().unwrap().name, "runtime-3.17.2");
        assert!(detect(tempfile::tempdir().unwrap().path()).is_none());
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
