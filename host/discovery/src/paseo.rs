//! The runtimes folder the Paseo ZCode plugin manages: `node-v<ver>-<platform>/` and
//! `zcode-<ver>-<sha12>/` entries, each complete once it holds the marker
//! `.paseo-managed.json` (`{"version", "archiveSha256"}`). The `zcode-…` entry is a runtime
//! directory; the `node-…` entry holds the Node it runs on (`bin/node`, `node.exe` on Windows).
//! Facts: supermomonga/paseo-plugin-zcode-provider `server/runtime/managed.ts` @ `cc95c06c`.

use std::cmp::Ordering;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use zcode_contract::{Os, Platform};

use crate::node::{NodeCandidate, NodeSource};
use crate::version::compare_versions;

const PLUGIN_DIR: &str = "paseo-plugin-zcode-provider";
const RUNTIMES_DIR: &str = "runtimes";
const MARKER: &str = ".paseo-managed.json";
/// Largest marker read (the real one is ~100 bytes).
const MAX_MARKER: u64 = 4096;

/// The managed runtimes folder: under an absolute `$XDG_DATA_HOME` on every OS, else
/// `%LOCALAPPDATA%` on Windows and `~/.local/share` elsewhere.
pub fn managed_runtimes_dir(
    os: Os,
    env: &dyn Fn(&str) -> Option<OsString>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|path| path.is_absolute());
    let base = absolute("XDG_DATA_HOME").or_else(|| match os {
        Os::Windows => {
            absolute("LOCALAPPDATA").or_else(|| home.map(|home| home.join("AppData").join("Local")))
        }
        Os::Macos | Os::Linux => home.map(|home| home.join(".local").join("share")),
    })?;
    Some(base.join(PLUGIN_DIR).join(RUNTIMES_DIR))
}

/// A complete managed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedEntry {
    pub path: PathBuf,
    pub version: String,
}

/// The complete entries of a managed runtimes folder, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagedFolder {
    pub runtimes: Vec<ManagedEntry>,
    /// Node entries for this platform.
    pub nodes: Vec<ManagedEntry>,
}

impl ManagedFolder {
    /// The Nodes of the folder as candidates (newest first).
    pub fn node_candidates(&self, platform: &Platform) -> Vec<NodeCandidate> {
        let executable = if platform.os == Some(Os::Windows) { "node.exe" } else { "bin/node" };
        self.nodes
            .iter()
            .map(|entry| {
                let path = executable.split('/').fold(entry.path.clone(), |p, part| p.join(part));
                NodeCandidate {
                    path: crate::files::canonical(&path).unwrap_or(path),
                    source: NodeSource::Managed,
                }
            })
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Marker {
    version: String,
    archive_sha256: String,
}

/// Reads `dir`'s complete entries. An entry counts only when its marker is valid and agrees
/// with its name; anything else (a staging folder, an interrupted install) is ignored.
pub fn scan(dir: &Path, platform: &Platform) -> ManagedFolder {
    let Ok(entries) = std::fs::read_dir(dir) else { return ManagedFolder::default() };
    let node_suffix = format!("-{}", node_platform(platform));
    let mut folder = ManagedFolder::default();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        let Some(marker) = read_marker(&path) else { continue };
        if let Some(rest) = name.strip_prefix("node-v")
            && rest.strip_suffix(&node_suffix) == Some(marker.version.as_str())
        {
            folder.nodes.push(ManagedEntry { path, version: marker.version });
        } else if let Some(rest) = name.strip_prefix("zcode-")
            && let Some(prefix) = marker.archive_sha256.get(..12)
            && rest == format!("{}-{prefix}", marker.version)
        {
            folder.runtimes.push(ManagedEntry { path, version: marker.version });
        }
    }
    let newest_first = |a: &ManagedEntry, b: &ManagedEntry| {
        compare_versions(&b.version, &a.version)
            .unwrap_or(Ordering::Equal)
            .then(b.path.cmp(&a.path))
    };
    folder.runtimes.sort_by(newest_first);
    folder.nodes.sort_by(newest_first);
    folder
}

/// Whether `dir` is itself a complete managed runtime entry.
pub fn is_managed_runtime(dir: &Path) -> bool {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.starts_with("zcode-") && read_marker(dir).is_some()
}

fn read_marker(dir: &Path) -> Option<Marker> {
    let path = dir.join(MARKER);
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_MARKER {
        return None;
    }
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The plugin's platform names: Node's, with `win32` spelled `win`.
fn node_platform(platform: &Platform) -> String {
    let os = if platform.node_os == "win32" { "win" } else { &platform.node_os };
    format!("{os}-{}", platform.node_arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_follows_xdg_then_the_os_convention() {
        let home = Path::new("/home/ada");
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into())
        };
        let runtimes = |os, pairs| managed_runtimes_dir(os, &env(pairs), Some(home)).unwrap();
        assert_eq!(
            runtimes(Os::Linux, &[]),
            Path::new("/home/ada/.local/share/paseo-plugin-zcode-provider/runtimes")
        );
        assert_eq!(
            runtimes(Os::Linux, &[("XDG_DATA_HOME", "/data")]),
            Path::new("/data/paseo-plugin-zcode-provider/runtimes")
        );
        // A relative XDG_DATA_HOME is ignored, as the XDG specification requires.
        assert_eq!(
            runtimes(Os::Macos, &[("XDG_DATA_HOME", "data")]),
            Path::new("/home/ada/.local/share/paseo-plugin-zcode-provider/runtimes")
        );
        assert_eq!(
            runtimes(Os::Windows, &[("LOCALAPPDATA", "/c/Users/ada/AppData/Local")]),
            Path::new("/c/Users/ada/AppData/Local/paseo-plugin-zcode-provider/runtimes")
        );
        assert_eq!(managed_runtimes_dir(Os::Linux, &env(&[]), None), None);
        assert_eq!(node_platform(&Platform::from_rust("windows", "aarch64")), "win-arm64");
    }
}
