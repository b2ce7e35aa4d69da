//! The Node a standalone runtime runs on: named by the user (`--zcode-node`,
//! `ZCODE_ACP_ZCODE_NODE`), given by a managed runtimes folder, or one of the layout's
//! candidates inside the install. Each is verified by running it: its version must be at
//! least the layout's minimum, and it must not be Electron (an Electron app run as Node is a
//! different runtime, and run plainly it starts a desktop UI). There is no `PATH` lookup and no
//! system Node.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::probe::{ProbeCommand, run_bounded};
use crate::version::{compare_versions, first_version_token, major};

/// Environment variable naming the Node a runtime install runs on.
pub const NODE_ENV: &str = "ZCODE_ACP_ZCODE_NODE";
/// Command-line flag naming the Node a runtime install runs on.
pub const NODE_FLAG: &str = "--zcode-node";

/// Asks a Node for its version.
const VERSION_ARGS: [&str; 1] = ["--version"];
/// Asks a Node whether it is Electron: `undefined` from a plain Node.
const ELECTRON_CHECK_ARGS: [&str; 2] = ["-p", "process.versions.electron"];

/// Where a Node candidate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeSource {
    Flag,
    Env,
    /// The Node entry of a managed runtimes folder.
    Managed,
    /// One of the layout's candidates inside the install root.
    Install,
}

impl fmt::Display for NodeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeSource::Flag => NODE_FLAG,
            NodeSource::Env => NODE_ENV,
            NodeSource::Managed => "managed runtimes folder",
            NodeSource::Install => "install",
        })
    }
}

/// A Node to try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCandidate {
    /// Canonical path.
    pub path: PathBuf,
    pub source: NodeSource,
}

/// One Node tried for a runtime, for reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCheck {
    pub path: String,
    pub source: NodeSource,
    /// The version it reported (`--version`).
    pub version: Option<String>,
    /// The Electron version it reported, when it is Electron.
    pub electron: Option<String>,
    pub accepted: bool,
    /// Why it was not accepted.
    pub problem: Option<String>,
}

/// What a Node says it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeIdentity {
    pub version: String,
    pub electron: Option<String>,
}

/// The Node the user named: `--zcode-node`, then `ZCODE_ACP_ZCODE_NODE`. It must be an
/// absolute path of an existing file; `None` when neither is set.
pub fn resolve_explicit_node(
    flag: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Result<NodeCandidate, String>> {
    let (configured, source) = match (flag, env(NODE_ENV)) {
        (Some(path), _) => (path.to_path_buf(), NodeSource::Flag),
        (None, Some(value)) => (PathBuf::from(value), NodeSource::Env),
        (None, None) => return None,
    };
    Some(check_explicit(&configured, source))
}

fn check_explicit(configured: &Path, source: NodeSource) -> Result<NodeCandidate, String> {
    if !configured.is_absolute() {
        return Err(format!(
            "The Node given with {source} must be an absolute path, got `{}` (zcode-acp never \
             looks Node up on PATH)",
            configured.display()
        ));
    }
    let path = crate::files::canonical(configured).map_err(|e| {
        format!("The Node given with {source} does not exist: {} ({e})", configured.display())
    })?;
    if !path.is_file() {
        return Err(format!(
            "The Node given with {source} is not a file: {}",
            configured.display()
        ));
    }
    Ok(NodeCandidate { path, source })
}

/// Runs `node --version` and the Electron check, with `env` added (the contract's probe
/// environment, which keeps an Electron app in Node mode), in `cwd`.
pub fn identify(
    node: &Path,
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
) -> Result<NodeIdentity, String> {
    let command = |args: &[&str]| ProbeCommand {
        program: node.to_path_buf(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: env.to_vec(),
        cwd: cwd.to_path_buf(),
    };
    let printed = run_bounded(&command(&VERSION_ARGS), timeout, "`node --version`")?;
    let version = printed
        .trim()
        .strip_prefix('v')
        .and_then(first_version_token)
        .ok_or_else(|| format!("`node --version` printed no Node version: `{}`", printed.trim()))?
        .to_string();
    let electron = run_bounded(&command(&ELECTRON_CHECK_ARGS), timeout, "the Electron check")?;
    let electron = match electron.trim() {
        "undefined" => None,
        other => Some(other.to_string()),
    };
    Ok(NodeIdentity { version, electron })
}

/// Whether `identity` can run a runtime that needs `minimum`; the error says what was found
/// and what is needed ("Node 22 found, 24 needed").
pub fn judge(node: &Path, identity: &NodeIdentity, minimum: &str) -> Result<(), String> {
    if let Some(electron) = &identity.electron {
        return Err(format!(
            "{} is Electron {electron} (Node {} inside), not a plain Node: the runtime needs Node \
             {minimum} or newer",
            node.display(),
            identity.version
        ));
    }
    let found = &identity.version;
    match compare_versions(found, minimum) {
        Some(std::cmp::Ordering::Less) => {
            let (found_major, needed_major) = (major(found), major(minimum));
            let headline = match (found_major, needed_major) {
                (Some(f), Some(n)) if f != n => format!("Node {f} found, {n} needed"),
                _ => format!("Node {found} found, {minimum} needed"),
            };
            Err(format!(
                "{headline}: {} is v{found}, the runtime needs {minimum} or newer",
                node.display()
            ))
        }
        Some(_) => Ok(()),
        None => Err(format!("{} reported an unusable Node version `{found}`", node.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(version: &str, electron: Option<&str>) -> NodeIdentity {
        NodeIdentity { version: version.into(), electron: electron.map(Into::into) }
    }

    #[test]
    fn says_what_was_found_and_what_is_needed() {
        let path = Path::new("/opt/node/bin/node");
        let error = judge(path, &node("22.12.0", None), "24.14.0").unwrap_err();
        assert!(error.starts_with("Node 22 found, 24 needed: /opt/node/bin/node is v22.12.0"));
        let error = judge(path, &node("24.10.0", None), "24.14.0").unwrap_err();
        assert!(error.starts_with("Node 24.10.0 found, 24.14.0 needed"), "{error}");
        assert!(judge(path, &node("24.14.0", None), "24.14.0").is_ok());
        assert!(judge(path, &node("25.0.0", None), "24.14.0").is_ok());
        let error = judge(path, &node("24.21.0", Some("38.0.0")), "24.14.0").unwrap_err();
        assert!(error.contains("is Electron 38.0.0"), "{error}");
    }

    #[test]
    fn an_explicit_node_must_be_an_absolute_existing_file() {
        let none = |_: &str| None;
        assert!(resolve_explicit_node(None, &none).is_none());
        let error = resolve_explicit_node(Some(Path::new("node")), &none).unwrap().unwrap_err();
        assert!(error.contains("absolute") && error.contains("PATH"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let error = resolve_explicit_node(Some(dir.path()), &none).unwrap().unwrap_err();
        assert!(error.contains("not a file"), "{error}");
        let file = dir.path().join("node");
        std::fs::write(&file, "").unwrap();
        let env = |name: &str| (name == NODE_ENV).then(|| file.clone().into_os_string());
        let found = resolve_explicit_node(None, &env).unwrap().unwrap();
        assert_eq!(found.source, NodeSource::Env);
        assert_eq!(found.path, file.canonicalize().unwrap());
    }
}
