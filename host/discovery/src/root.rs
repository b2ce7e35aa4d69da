//! Install root resolution: `--zcode-install`, then `ZCODE_ACP_ZCODE_INSTALL`, then the OS
//! default. There is deliberately no fallback to a system Node, `PATH` or another root: the
//! host must run with the runtime of the install the user pointed at.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use zcode_contract::{Os, Platform};

/// Environment variable that overrides the install root.
pub const INSTALL_ENV: &str = "ZCODE_ACP_ZCODE_INSTALL";
/// Command-line flag that overrides the install root.
pub const INSTALL_FLAG: &str = "--zcode-install";

/// Where the configured root came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootSource {
    Flag,
    Env,
    OsDefault,
}

impl fmt::Display for RootSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootSource::Flag => write!(f, "{INSTALL_FLAG}"),
            RootSource::Env => write!(f, "{INSTALL_ENV}"),
            RootSource::OsDefault => f.write_str("OS default"),
        }
    }
}

/// A resolved install root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallRoot {
    /// The path as configured (before realpath).
    pub configured: PathBuf,
    pub source: RootSource,
    /// Canonical absolute path of an existing directory.
    pub path: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    #[error("Unsupported platform: {0} (ZCode installs exist for macOS, Linux and Windows)")]
    UnsupportedPlatform(String),
    #[error("ZCode install root must be an absolute path, got `{}` (from {from}). {}",
        configured.display(), how_to_point())]
    Relative { configured: PathBuf, from: RootSource },
    #[error("ZCode install root does not exist: {} (from {from}). {}", list(tried), how_to_point())]
    Missing { tried: Vec<PathBuf>, from: RootSource },
    #[error("ZCode install root is not a directory: {} (from {from}). {}",
        configured.display(), how_to_point())]
    NotADirectory { configured: PathBuf, from: RootSource },
}

impl RootError {
    /// The configured paths this error is about (empty for an unsupported platform).
    pub fn configured(&self) -> Vec<PathBuf> {
        match self {
            RootError::UnsupportedPlatform(_) => Vec::new(),
            RootError::Relative { configured, .. }
            | RootError::NotADirectory { configured, .. } => {
                vec![configured.clone()]
            }
            RootError::Missing { tried, .. } => tried.clone(),
        }
    }

    /// Where the configured root came from.
    pub fn configured_from(&self) -> Option<RootSource> {
        match self {
            RootError::UnsupportedPlatform(_) => None,
            RootError::Relative { from, .. }
            | RootError::Missing { from, .. }
            | RootError::NotADirectory { from, .. } => Some(*from),
        }
    }
}

/// How a user points zcode-acp at an install (shared by errors and the doctor report).
pub fn how_to_point() -> String {
    format!(
        "Point zcode-acp at a ZCode install with {INSTALL_FLAG} <absolute path> or \
         {INSTALL_ENV}=<absolute path>."
    )
}

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", then ")
}

/// Resolves the install root. `env` looks up environment variables (pass
/// [`process_env`] outside tests).
pub fn resolve_install_root(
    flag: Option<&Path>,
    platform: &Platform,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<InstallRoot, RootError> {
    let os = platform.os.ok_or_else(|| RootError::UnsupportedPlatform(platform.node_os.clone()))?;
    if let Some(path) = flag {
        return resolve_one(path.to_path_buf(), RootSource::Flag);
    }
    if let Some(value) = env(INSTALL_ENV) {
        return resolve_one(PathBuf::from(value), RootSource::Env);
    }
    let candidates = default_roots(os, env);
    // Windows has two conventional places; the first that exists wins.
    for candidate in &candidates {
        if candidate.exists() {
            return resolve_one(candidate.clone(), RootSource::OsDefault);
        }
    }
    Err(RootError::Missing { tried: candidates, from: RootSource::OsDefault })
}

/// `std::env::var_os`, as an `env` argument for [`resolve_install_root`].
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Where ZCode installs itself on `os`, in the order they are tried.
pub fn default_roots(os: Os, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    match os {
        Os::Macos => vec![PathBuf::from("/Applications/ZCode.app")],
        Os::Linux => vec![PathBuf::from("/opt/ZCode")],
        Os::Windows => {
            let mut roots = Vec::new();
            // Per-user installs live under %LOCALAPPDATA%; ignore a value that is not a path.
            if let Some(local) = env("LOCALAPPDATA").filter(|v| !v.is_empty()) {
                roots.push(join_windows(&PathBuf::from(local), &["Programs", "ZCode"]));
            }
            roots.push(PathBuf::from(r"C:\Program Files\ZCode"));
            roots
        }
    }
}

/// Joins with a backslash so that the spelling is the Windows one even when computed elsewhere.
fn join_windows(base: &Path, parts: &[&str]) -> PathBuf {
    let mut text = base.as_os_str().to_os_string();
    for part in parts {
        if !text.to_string_lossy().ends_with(['\\', '/']) {
            text.push("\\");
        }
        text.push(part);
    }
    PathBuf::from(text)
}

fn resolve_one(configured: PathBuf, source: RootSource) -> Result<InstallRoot, RootError> {
    if !configured.is_absolute() {
        return Err(RootError::Relative { configured, from: source });
    }
    let Ok(path) = std::fs::canonicalize(&configured) else {
        return Err(RootError::Missing { tried: vec![configured], from: source });
    };
    if !path.is_dir() {
        return Err(RootError::NotADirectory { configured, from: source });
    }
    Ok(InstallRoot { configured, source, path: simplify(path) })
}

/// On Windows `canonicalize` returns `\\?\C:\…`; Electron and scripts expect `C:\…`, which
/// names the same file as long as the path has a drive letter and no reserved component.
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
