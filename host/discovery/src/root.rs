//! Install root resolution: `--zcode-install`, then `ZCODE_ACP_ZCODE_INSTALL`, then the places
//! ZCode installs itself (the first that exists). There is deliberately no fallback to a
//! system Node, `PATH` or another root once one is found: the host must run with the runtime
//! of the install the user pointed at, or of the first one found.
//!
//! Places tried, in order: macOS `/Applications/ZCode.app`, `~/Applications/ZCode.app`; Linux
//! `/opt/ZCode` (deb; rpm and pkg.tar.zst presumably too); Windows
//! `%LOCALAPPDATA%\Programs\ZCode`, `%ProgramFiles%\ZCode`, `C:\Program Files\ZCode`, then the
//! roots ZCode's uninstall entries name (other drives); on every OS the Paseo ZCode plugin's
//! managed runtimes folder.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use zcode_contract::{Os, Platform};

use crate::appimage::{extraction_hint, find_appimages, is_appimage};
use crate::files::canonical;
use crate::node::{NODE_ENV, NODE_FLAG, NodeCandidate};
use crate::paseo::{is_managed_runtime, managed_runtimes_dir, scan};
use crate::uninstall::{UninstallRegistry, zcode_roots};

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
    /// A root named by a Windows uninstall entry.
    WindowsRegistry,
    /// The Paseo ZCode plugin's managed runtimes folder.
    PaseoManaged,
}

impl fmt::Display for RootSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootSource::Flag => write!(f, "{INSTALL_FLAG}"),
            RootSource::Env => write!(f, "{INSTALL_ENV}"),
            RootSource::OsDefault => f.write_str("OS default"),
            RootSource::WindowsRegistry => f.write_str("Windows uninstall entry"),
            RootSource::PaseoManaged => f.write_str("Paseo managed runtimes"),
        }
    }
}

/// What discovery is told, and how it sees this machine.
pub struct Search<'a> {
    /// `--zcode-install`.
    pub install_flag: Option<&'a Path>,
    /// `--zcode-node`.
    pub node_flag: Option<&'a Path>,
    /// Environment lookup ([`process_env`] outside tests).
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
    /// The user's home directory.
    pub home: Option<&'a Path>,
    /// Windows uninstall entries ([`crate::SystemRegistry`] outside tests).
    pub registry: &'a dyn UninstallRegistry,
}

/// A place ZCode may be installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    pub source: RootSource,
}

/// A resolved install root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallRoot {
    /// The path as configured or found (before realpath).
    pub configured: PathBuf,
    pub source: RootSource,
    /// Canonical absolute path of an existing directory.
    pub path: PathBuf,
    /// Nodes that come with the root (the Node entries of a managed runtimes folder).
    pub given_nodes: Vec<NodeCandidate>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RootError {
    #[error("Unsupported platform: {0} (ZCode installs exist for macOS, Linux and Windows)")]
    UnsupportedPlatform(String),
    #[error("ZCode install root must be an absolute path, got `{}` (from {from}). {}",
        configured.display(), how_to_point())]
    Relative { configured: PathBuf, from: RootSource },
    #[error(
        "ZCode install root does not exist: {} (from {from}). {}{}",
        list(tried),
        how_to_point(),
        appimage_note(appimages)
    )]
    Missing { tried: Vec<PathBuf>, from: RootSource, appimages: Vec<PathBuf> },
    #[error("ZCode install root is not a directory: {} (from {from}). {}",
        configured.display(), how_to_point())]
    NotADirectory { configured: PathBuf, from: RootSource },
    #[error("{} (from {from}) is a ZCode AppImage. {}", configured.display(),
        extraction_hint(configured))]
    AppImage { configured: PathBuf, from: RootSource },
}

impl RootError {
    /// The configured paths this error is about (empty for an unsupported platform).
    pub fn configured(&self) -> Vec<PathBuf> {
        match self {
            RootError::UnsupportedPlatform(_) => Vec::new(),
            RootError::Relative { configured, .. }
            | RootError::NotADirectory { configured, .. }
            | RootError::AppImage { configured, .. } => vec![configured.clone()],
            RootError::Missing { tried, .. } => tried.clone(),
        }
    }

    /// Where the configured root came from.
    pub fn configured_from(&self) -> Option<RootSource> {
        match self {
            RootError::UnsupportedPlatform(_) => None,
            RootError::Relative { from, .. }
            | RootError::Missing { from, .. }
            | RootError::NotADirectory { from, .. }
            | RootError::AppImage { from, .. } => Some(*from),
        }
    }

    /// ZCode AppImages found in the usual places when nothing else was.
    pub fn appimages(&self) -> &[PathBuf] {
        match self {
            RootError::Missing { appimages, .. } => appimages,
            _ => &[],
        }
    }
}

/// How a user points zcode-acp at an install (shared by errors and the doctor report).
pub fn how_to_point() -> String {
    format!(
        "Point zcode-acp at a ZCode install with {INSTALL_FLAG} <absolute path> or \
         {INSTALL_ENV}=<absolute path> (a desktop app, or a runtime folder with its Node, \
         which {NODE_FLAG} or {NODE_ENV} can name)."
    )
}

fn appimage_note(appimages: &[PathBuf]) -> String {
    match appimages.first() {
        Some(first) => {
            format!(" Found a ZCode AppImage at {}: {}", first.display(), extraction_hint(first))
        }
        None => String::new(),
    }
}

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", then ")
}

/// Resolves the install root.
pub fn resolve_install_root(
    search: &Search<'_>,
    platform: &Platform,
) -> Result<InstallRoot, RootError> {
    let os = platform.os.ok_or_else(|| RootError::UnsupportedPlatform(platform.node_os.clone()))?;
    if let Some(path) = search.install_flag {
        return resolve_one(path.to_path_buf(), RootSource::Flag, platform);
    }
    if let Some(value) = (search.env)(INSTALL_ENV) {
        return resolve_one(PathBuf::from(value), RootSource::Env, platform);
    }
    let candidates = default_candidates(os, search);
    for candidate in &candidates {
        if candidate.source == RootSource::PaseoManaged {
            if let Some(root) = managed_root(&candidate.path, RootSource::PaseoManaged, platform) {
                return Ok(root);
            }
        } else if candidate.path.exists() {
            return resolve_one(candidate.path.clone(), candidate.source, platform);
        }
    }
    let appimages = match (os, search.home) {
        (Os::Linux, Some(home)) => find_appimages(home),
        _ => Vec::new(),
    };
    Err(RootError::Missing {
        tried: candidates.into_iter().map(|c| c.path).collect(),
        from: RootSource::OsDefault,
        appimages,
    })
}

/// `std::env::var_os`, as the `env` of a [`Search`].
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Where ZCode installs itself on `os`, in the order they are tried.
pub fn default_candidates(os: Os, search: &Search<'_>) -> Vec<Candidate> {
    let mut candidates = Vec::new();
    let mut push = |path: PathBuf, source: RootSource| {
        if !candidates.iter().any(|c: &Candidate| c.path == path) {
            candidates.push(Candidate { path, source });
        }
    };
    let env_path = |name: &str| (search.env)(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    match os {
        Os::Macos => {
            push(PathBuf::from("/Applications/ZCode.app"), RootSource::OsDefault);
            if let Some(home) = search.home {
                push(home.join("Applications").join("ZCode.app"), RootSource::OsDefault);
            }
        }
        Os::Linux => push(PathBuf::from("/opt/ZCode"), RootSource::OsDefault),
        Os::Windows => {
            // Per-user installs live under %LOCALAPPDATA%; machine installs under Program Files.
            if let Some(local) = env_path("LOCALAPPDATA") {
                push(join_windows(&local, &["Programs", "ZCode"]), RootSource::OsDefault);
            }
            if let Some(program_files) = env_path("ProgramFiles") {
                push(join_windows(&program_files, &["ZCode"]), RootSource::OsDefault);
            }
            push(PathBuf::from(r"C:\Program Files\ZCode"), RootSource::OsDefault);
            for root in zcode_roots(search.registry) {
                push(root, RootSource::WindowsRegistry);
            }
        }
    }
    if let Some(managed) = managed_runtimes_dir(os, search.env, search.home) {
        push(managed, RootSource::PaseoManaged);
    }
    candidates
}

/// The newest complete runtime of a managed runtimes folder, with the folder's Nodes.
fn managed_root(folder: &Path, source: RootSource, platform: &Platform) -> Option<InstallRoot> {
    let managed = scan(folder, platform);
    let runtime = managed.runtimes.first()?;
    let path = canonical(&runtime.path).ok()?;
    Some(InstallRoot {
        configured: runtime.path.clone(),
        source,
        path,
        given_nodes: managed.node_candidates(platform),
    })
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

/// A root the user named: an AppImage is refused with how to extract it; a managed runtimes
/// folder (or one of its runtime entries) comes with its Nodes.
fn resolve_one(
    configured: PathBuf,
    source: RootSource,
    platform: &Platform,
) -> Result<InstallRoot, RootError> {
    if !configured.is_absolute() {
        return Err(RootError::Relative { configured, from: source });
    }
    let Ok(path) = canonical(&configured) else {
        return Err(RootError::Missing {
            tried: vec![configured],
            from: source,
            appimages: Vec::new(),
        });
    };
    if is_appimage(&path) {
        return Err(RootError::AppImage { configured, from: source });
    }
    if !path.is_dir() {
        return Err(RootError::NotADirectory { configured, from: source });
    }
    if let Some(root) = managed_root(&path, source, platform) {
        return Ok(InstallRoot { configured, ..root });
    }
    let given_nodes = match path.parent() {
        Some(folder) if is_managed_runtime(&path) => {
            scan(folder, platform).node_candidates(platform)
        }
        _ => Vec::new(),
    };
    Ok(InstallRoot { configured, source, path, given_nodes })
}
