//! What the gate concluded, per mapper contract and per release.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use zcode_contract::{LayoutKind, Platform};

use crate::node::NodeCheck;

/// The gate's rules, in the order they are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateRule {
    /// The mapper's contract itself is malformed.
    Contract,
    /// The contract has no layout for this OS, or none that the root looks like.
    Layout,
    /// A file of the layout is missing, unreadable, not executable or outside the root.
    Paths,
    /// Bundle metadata (desktop) or the runtime package file: keys and literal values.
    Metadata,
    /// Bundle metadata platform.
    Platform,
    /// Bundle metadata entry name vs the CLI entry.
    MetadataEntry,
    /// The runtime's Node: missing, Electron, or older than the layout needs.
    Node,
    /// App and CLI versions: the install is not a release the contract knows.
    Versions,
    /// Pinned file hashes (a file that is missing fails here too).
    HostFiles,
    /// Required exports of host modules.
    Exports,
}

/// Why a contract or a release was refused: the first rule that failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub rule: GateRule,
    pub reason: String,
}

impl Refusal {
    pub fn new(rule: GateRule, reason: impl Into<String>) -> Self {
        Self { rule, reason: reason.into() }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Whether every file of an accepted release matched a pinned hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pinning {
    /// Every file's SHA-256 was pinned and matched.
    Pinned,
    /// Some files are not pinned for this release: they exist and export what is required,
    /// and the host's reported identity must match the release's at setup.
    Unpinned,
}

impl fmt::Display for Pinning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pinning::Pinned => "pinned",
            Pinning::Unpinned => "unpinned",
        })
    }
}

/// A release the install satisfies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub release_id: String,
    pub simulated: bool,
    /// (role, absolute path) of each file of the release.
    pub files: Vec<(String, String)>,
    /// Roles whose hash the release does not pin.
    pub unpinned: Vec<String>,
    /// What the host must report about itself at setup.
    pub identity: Option<String>,
    /// The contract's install facts, read from this release's files.
    pub facts: zcode_contract::Facts,
}

impl Accepted {
    pub fn pinning(&self) -> Pinning {
        if self.unpinned.is_empty() { Pinning::Pinned } else { Pinning::Unpinned }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseVerdict {
    pub release_id: String,
    pub result: Result<Accepted, Refusal>,
}

/// The files of one layout, resolved from the install root (canonical paths).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallFiles {
    pub kind: LayoutKind,
    /// The Electron app (desktop), or the verified Node (runtime; absent until one passed).
    pub executable: Option<PathBuf>,
    pub cli_entry: PathBuf,
    /// The bundle metadata (desktop) or the runtime's package file.
    pub metadata: PathBuf,
    /// The host archive (desktop) or the runtime directory.
    pub host_archive: PathBuf,
    pub host_archive_kind: ArchiveKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveKind {
    Directory,
    Asar,
}

/// A file a release names, as found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FoundFile {
    /// The release's path (relative to `resources` or to the runtime directory).
    pub path: String,
    /// Absolute path (`<archive>/<path>` inside an asar archive), when the file exists.
    pub location: Option<String>,
    pub sha256: Option<String>,
    /// Why the file could not be located or read.
    pub error: Option<String>,
}

/// What the install holds, as seen through one contract's layout. Facts are gathered as far
/// as the gate got; `None` means "not looked at" or "could not be read" (see the errors).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Findings {
    /// The layout the root was judged by.
    pub layout: Option<LayoutKind>,
    pub files: Option<InstallFiles>,
    pub metadata_sha256: Option<String>,
    pub metadata_platform: Option<String>,
    pub app_version: Option<String>,
    pub app_version_error: Option<String>,
    pub app_build: Option<String>,
    pub cli_version: Option<String>,
    pub cli_version_error: Option<String>,
    pub host_files: Vec<FoundFile>,
    /// Runtime layouts: each Node tried, in order.
    pub nodes: Vec<NodeCheck>,
}

/// What a contract's release requires, for reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseExpectation {
    pub id: String,
    pub kind: LayoutKind,
    pub app_version: String,
    pub cli_version: String,
    pub simulated: bool,
    /// Every file's hash is pinned.
    pub pinned: bool,
    pub identity: Option<String>,
    pub files: Vec<ExpectedFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedFile {
    pub role: String,
    pub path: String,
    pub sha256: Option<String>,
    pub required_exports: Vec<String>,
}

impl ReleaseExpectation {
    pub fn of(contract: &zcode_contract::Contract) -> Vec<Self> {
        contract
            .releases
            .iter()
            .map(|release| ReleaseExpectation {
                id: release.id.clone(),
                kind: release.kind,
                app_version: release.app_version.clone(),
                cli_version: release.cli_version.clone(),
                simulated: release.simulated,
                pinned: release.pinned(),
                identity: release.identity.clone(),
                files: release
                    .files
                    .iter()
                    .map(|f| ExpectedFile {
                        role: f.role.clone(),
                        path: f.path.clone(),
                        sha256: f.sha256.clone(),
                        required_exports: f.required_exports.clone(),
                    })
                    .collect(),
            })
            .collect()
    }
}

/// The gate's verdict on one mapper's contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractVerdict {
    /// Where the mapper came from (its `source`).
    pub source: String,
    pub protocol_id: String,
    /// What the contract's releases require.
    pub expects: Vec<ReleaseExpectation>,
    pub findings: Findings,
    pub outcome: ContractOutcome,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContractOutcome {
    /// Refused before any release could be compared (contract, layout, paths, metadata,
    /// platform, Node).
    Refused(Refusal),
    /// One verdict per release of the install's layout kind, in contract order.
    Compared(Vec<ReleaseVerdict>),
}

impl ContractVerdict {
    /// Releases of this contract the install satisfies.
    pub fn accepted(&self) -> impl Iterator<Item = &Accepted> {
        let releases = match &self.outcome {
            ContractOutcome::Compared(releases) => releases.as_slice(),
            ContractOutcome::Refused(_) => &[],
        };
        releases.iter().filter_map(|r| r.result.as_ref().ok())
    }

    /// The refusal to report: the contract's, or each release's (`id: reason`).
    pub fn refusal_summary(&self) -> Option<String> {
        match &self.outcome {
            ContractOutcome::Refused(refusal) => Some(refusal.reason.clone()),
            ContractOutcome::Compared(releases) => {
                if releases.iter().any(|r| r.result.is_ok()) {
                    return None;
                }
                if releases.is_empty() {
                    return Some("the contract lists no release of this layout".into());
                }
                let reasons: Vec<String> = releases
                    .iter()
                    .filter_map(|r| {
                        r.result.as_ref().err().map(|e| format!("{}: {e}", r.release_id))
                    })
                    .collect();
                Some(reasons.join("; "))
            }
        }
    }

    /// The first failing rule: the contract's, or the one of the release that got furthest
    /// (a release whose versions matched says more than the others).
    pub fn refusal_rule(&self) -> Option<GateRule> {
        match &self.outcome {
            ContractOutcome::Refused(refusal) => Some(refusal.rule),
            ContractOutcome::Compared(releases) => {
                if releases.iter().any(|r| r.result.is_ok()) {
                    return None;
                }
                let rules = releases.iter().filter_map(|r| r.result.as_ref().err().map(|e| e.rule));
                rules.max().or(Some(GateRule::Versions))
            }
        }
    }
}

/// The gate applied to one install root with every mapper's contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    pub install_root: PathBuf,
    pub platform: Platform,
    /// The user's home directory, handed to the mapper with the verified install.
    pub home: Option<PathBuf>,
    /// One per mapper, in the order the mappers were given.
    pub verdicts: Vec<ContractVerdict>,
}
