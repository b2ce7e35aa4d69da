//! What the gate concluded, per mapper contract and per artifact.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use zcode_contract::Platform;

/// The gate's rules, in the order they are applied (reference §1.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateRule {
    /// The mapper's contract itself is malformed.
    Contract,
    /// The contract has no layout for this OS.
    Layout,
    /// A runtime path is missing, unreadable, not executable or outside the root.
    Paths,
    /// Bundle metadata keys and literal values.
    Metadata,
    /// Bundle metadata platform.
    Platform,
    /// Bundle metadata entry name vs the CLI entry.
    MetadataEntry,
    /// App and CLI versions.
    Versions,
    /// Host file hashes.
    HostFiles,
    /// Required exports of host modules.
    Exports,
}

/// Why a contract or an artifact was refused: the first rule that failed.
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

/// Whether the CLI entry is the one the artifact was verified with. Diagnostic only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CliIntegrity {
    Verified,
    Modified,
}

impl fmt::Display for CliIntegrity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CliIntegrity::Verified => "verified",
            CliIntegrity::Modified => "modified",
        })
    }
}

/// An artifact the install satisfies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub artifact_id: String,
    pub simulated: bool,
    pub cli_integrity: CliIntegrity,
    pub expected_cli_sha256: String,
    /// (role, absolute path) of each checked file.
    pub files: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactVerdict {
    pub artifact_id: String,
    pub result: Result<Accepted, Refusal>,
}

/// The runtime files of one layout, resolved from the install root (canonical paths).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallFiles {
    pub executable: PathBuf,
    pub cli_entry: PathBuf,
    pub metadata: PathBuf,
    pub host_archive: PathBuf,
    pub host_archive_kind: ArchiveKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveKind {
    Directory,
    Asar,
}

/// A host file a contract asked about, as found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FoundFile {
    /// Path inside the host archive.
    pub path: String,
    /// Absolute path (`<archive>/<path>` for an asar archive), when the file exists.
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
    pub files: Option<InstallFiles>,
    pub metadata_sha256: Option<String>,
    pub metadata_platform: Option<String>,
    pub cli_sha256: Option<String>,
    pub app_version: Option<String>,
    pub app_version_error: Option<String>,
    pub app_build: Option<String>,
    pub cli_version: Option<String>,
    pub cli_version_error: Option<String>,
    pub host_files: Vec<FoundFile>,
}

/// What a contract's artifact requires, for reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactExpectation {
    pub id: String,
    pub app_version: String,
    pub cli_version: String,
    pub cli_sha256: String,
    pub simulated: bool,
    pub files: Vec<ExpectedFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedFile {
    pub role: String,
    pub path: String,
    pub sha256: String,
    pub required_exports: Vec<String>,
}

impl ArtifactExpectation {
    pub fn of(contract: &zcode_contract::Contract) -> Vec<Self> {
        contract
            .artifacts
            .iter()
            .map(|a| ArtifactExpectation {
                id: a.id.clone(),
                app_version: a.app_version.clone(),
                cli_version: a.cli_version.clone(),
                cli_sha256: a.cli_sha256.clone(),
                simulated: a.simulated,
                files: a
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
    /// What the contract's artifacts require.
    pub expects: Vec<ArtifactExpectation>,
    pub findings: Findings,
    pub outcome: ContractOutcome,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContractOutcome {
    /// Refused before any artifact could be compared (contract, layout, paths, metadata,
    /// platform).
    Refused(Refusal),
    /// One verdict per artifact of the contract, in contract order.
    Compared(Vec<ArtifactVerdict>),
}

impl ContractVerdict {
    /// Artifacts of this contract the install satisfies.
    pub fn accepted(&self) -> impl Iterator<Item = &Accepted> {
        let artifacts = match &self.outcome {
            ContractOutcome::Compared(artifacts) => artifacts.as_slice(),
            ContractOutcome::Refused(_) => &[],
        };
        artifacts.iter().filter_map(|a| a.result.as_ref().ok())
    }

    /// The refusal to report: the contract's, or each artifact's (`id: reason`).
    pub fn refusal_summary(&self) -> Option<String> {
        match &self.outcome {
            ContractOutcome::Refused(refusal) => Some(refusal.reason.clone()),
            ContractOutcome::Compared(artifacts) => {
                if artifacts.iter().any(|a| a.result.is_ok()) {
                    return None;
                }
                let reasons: Vec<String> = artifacts
                    .iter()
                    .filter_map(|a| {
                        a.result.as_ref().err().map(|r| format!("{}: {r}", a.artifact_id))
                    })
                    .collect();
                Some(reasons.join("; "))
            }
        }
    }

    /// The first failing rule (the contract's, or the least advanced artifact's).
    pub fn refusal_rule(&self) -> Option<GateRule> {
        match &self.outcome {
            ContractOutcome::Refused(refusal) => Some(refusal.rule),
            ContractOutcome::Compared(artifacts) => {
                if artifacts.iter().any(|a| a.result.is_ok()) {
                    return None;
                }
                artifacts.iter().filter_map(|a| a.result.as_ref().err().map(|r| r.rule)).min()
            }
        }
    }
}

/// The gate applied to one install root with every mapper's contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    pub install_root: PathBuf,
    pub platform: Platform,
    /// One per mapper, in the order the mappers were given.
    pub verdicts: Vec<ContractVerdict>,
}
