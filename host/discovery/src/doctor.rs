//! The doctor report: what discovery found, what each mapper expects, and whether a session
//! could start. Field names are stable (documented in docs/doctor.md).

use std::path::Path;

use serde::Serialize;

use crate::discover::Discovery;
use crate::root::{RootSource, how_to_point};
use crate::verdict::{
    ArchiveKind, ArtifactExpectation, CliIntegrity, ContractVerdict, Findings, GateRule,
};

/// Outcome of the host smoke start, run by the caller for the selected install.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SmokeResult {
    pub passed: bool,
    pub duration_ms: u64,
    pub detail: String,
}

/// Presence of ZCode's credentials file (its contents are never read).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Authentication {
    Present,
    Missing,
    Unknown,
}

impl std::fmt::Display for Authentication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Authentication::Present => "present",
            Authentication::Missing => "missing",
            Authentication::Unknown => "unknown",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// A session could start: an install was accepted and the smoke start passed.
    pub ok: bool,
    /// `<os>-<arch>` of this process, as bundle metadata spells it.
    pub platform: String,
    pub install: InstallReport,
    /// Runtime files of the selected mapper's layout (or of the first mapper that resolved
    /// them when none was selected).
    pub files: Option<FilesReport>,
    pub app_version: Option<String>,
    pub app_build: Option<String>,
    pub cli_version: Option<String>,
    pub cli_sha256: Option<String>,
    pub expected_cli_sha256: Option<String>,
    pub cli_integrity: Option<CliIntegrity>,
    pub metadata_sha256: Option<String>,
    pub metadata_platform: Option<String>,
    pub mappers: Vec<MapperReport>,
    /// Drop-in mapper files that could not be loaded (so they accept nothing), with why.
    pub unloaded_mappers: Vec<UnloadedMapper>,
    pub selected_mapper: Option<SelectedMapperReport>,
    pub selection_error: Option<String>,
    pub authentication: Authentication,
    pub credentials_file: Option<String>,
    pub display_server_needed: bool,
    pub smoke: Option<SmokeResult>,
    /// What to do when no install was accepted.
    pub hint: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallReport {
    pub configured_root: Option<String>,
    pub source: Option<RootSource>,
    pub resolved_root: Option<String>,
    pub error: Option<String>,
    pub os_defaults: Vec<String>,
    /// The root's mode has group or other write bits (anyone in the group could swap files).
    pub writable_by_group_or_others: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesReport {
    pub executable: String,
    pub cli_entry: String,
    pub metadata: String,
    pub host_archive: String,
    pub host_archive_kind: ArchiveKind,
    pub host_files: Vec<HostFileReport>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostFileReport {
    pub path: String,
    pub location: Option<String>,
    pub sha256: Option<String>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnloadedMapper {
    pub source: String,
    pub error: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MapperReport {
    pub source: String,
    pub protocol_id: String,
    pub verdict: MapperVerdict,
    pub accepted_artifact: Option<String>,
    pub refused_by: Option<GateRule>,
    pub reason: Option<String>,
    pub expects: Vec<ArtifactExpectation>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MapperVerdict {
    Accepted,
    Refused,
    /// No install root was resolved.
    NotInspected,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectedMapperReport {
    pub source: String,
    pub protocol_id: String,
    pub artifact_id: String,
    pub simulated: bool,
}

impl DoctorReport {
    /// Builds the report. `home` is the user's home directory (for the credentials presence
    /// check); `smoke` is the caller's smoke start of the selected install, if it ran.
    pub fn new(discovery: &Discovery, home: Option<&Path>, smoke: Option<SmokeResult>) -> Self {
        let selected = discovery.selected();
        let verdicts: &[ContractVerdict] =
            discovery.inspection.as_ref().map(|i| i.verdicts.as_slice()).unwrap_or_default();
        let shown = match selected {
            Some(s) => verdicts.get(s.mapper_index),
            None => verdicts.iter().find(|v| v.findings.files.is_some()),
        };
        let findings = shown.map(|v| &v.findings);
        let credentials = selected
            .and_then(|s| discovery.mappers.get(s.mapper_index))
            .map(|m| &m.credentials_file);
        let accepted_and_smoked = selected.is_some() && smoke.as_ref().is_some_and(|s| s.passed);

        let mut report = DoctorReport {
            ok: accepted_and_smoked,
            platform: discovery.platform.tag(),
            install: install_report(discovery),
            files: findings.and_then(files_report),
            app_version: findings.and_then(|f| f.app_version.clone()),
            app_build: findings.and_then(|f| f.app_build.clone()),
            cli_version: findings.and_then(|f| f.cli_version.clone()),
            cli_sha256: findings.and_then(|f| f.cli_sha256.clone()),
            expected_cli_sha256: selected.map(|s| s.expected_cli_sha256.clone()),
            cli_integrity: selected.map(|s| s.cli_integrity),
            metadata_sha256: findings.and_then(|f| f.metadata_sha256.clone()),
            metadata_platform: findings.and_then(|f| f.metadata_platform.clone()),
            mappers: mapper_reports(discovery),
            unloaded_mappers: Vec::new(),
            selected_mapper: selected.map(|s| SelectedMapperReport {
                source: s.source.clone(),
                protocol_id: s.protocol_id.clone(),
                artifact_id: s.install.artifact_id.clone(),
                simulated: s.simulated,
            }),
            selection_error: discovery
                .selection
                .as_ref()
                .and_then(|s| s.as_ref().err())
                .map(ToString::to_string),
            authentication: credentials
                .map(|file| authentication_presence(home, file))
                .unwrap_or(Authentication::Unknown),
            credentials_file: credentials
                .filter(|file| !file.is_empty())
                .and_then(|file| home.map(|home| crate::files::join_relative(home, file)))
                .map(|path| path.display().to_string()),
            display_server_needed: false,
            smoke,
            hint: None,
        };
        report.hint = hint(&report, discovery);
        report
    }

    /// Adds the drop-in mappers that did not load (discovery only sees the loaded ones).
    pub fn with_unloaded_mappers(mut self, unloaded: Vec<UnloadedMapper>) -> Self {
        self.unloaded_mappers = unloaded;
        self
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serializes")
    }

    /// `key: value` lines, grouped under headings.
    pub fn to_text(&self) -> String {
        crate::doctor_text::render(self)
    }
}

/// Whether `<home>/<credentials_file>` exists as a non-empty regular file.
pub fn authentication_presence(home: Option<&Path>, credentials_file: &str) -> Authentication {
    let Some(home) = home.filter(|h| h.is_absolute()) else { return Authentication::Unknown };
    if credentials_file.is_empty() {
        return Authentication::Unknown;
    }
    match std::fs::metadata(crate::files::join_relative(home, credentials_file)) {
        Ok(meta) if meta.is_file() && meta.len() > 0 => Authentication::Present,
        Ok(_) => Authentication::Missing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Authentication::Missing,
        Err(_) => Authentication::Unknown,
    }
}

fn install_report(discovery: &Discovery) -> InstallReport {
    let os_defaults = discovery.os_defaults.iter().map(|p| p.display().to_string()).collect();
    match &discovery.root {
        Ok(root) => InstallReport {
            configured_root: Some(root.configured.display().to_string()),
            source: Some(root.source),
            resolved_root: Some(root.path.display().to_string()),
            error: None,
            os_defaults,
            writable_by_group_or_others: writable_by_others(&root.path),
        },
        Err(error) => InstallReport {
            configured_root: error.configured().first().map(|p| p.display().to_string()),
            source: error.configured_from(),
            resolved_root: None,
            error: Some(error.to_string()),
            os_defaults,
            writable_by_group_or_others: None,
        },
    }
}

#[cfg(unix)]
fn writable_by_others(path: &Path) -> Option<bool> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o022 != 0)
}

#[cfg(not(unix))]
fn writable_by_others(_path: &Path) -> Option<bool> {
    None
}

fn files_report(findings: &Findings) -> Option<FilesReport> {
    let files = findings.files.as_ref()?;
    let text = |p: &Path| p.display().to_string();
    Some(FilesReport {
        executable: text(&files.executable),
        cli_entry: text(&files.cli_entry),
        metadata: text(&files.metadata),
        host_archive: text(&files.host_archive),
        host_archive_kind: files.host_archive_kind,
        host_files: findings
            .host_files
            .iter()
            .map(|f| HostFileReport {
                path: f.path.clone(),
                location: f.location.clone(),
                sha256: f.sha256.clone(),
                error: f.error.clone(),
            })
            .collect(),
    })
}

fn mapper_reports(discovery: &Discovery) -> Vec<MapperReport> {
    let verdicts = discovery.inspection.as_ref().map(|i| &i.verdicts);
    discovery
        .mappers
        .iter()
        .enumerate()
        .map(|(index, mapper)| {
            let verdict = verdicts.and_then(|v| v.get(index));
            let accepted = verdict.and_then(|v| v.accepted().next());
            MapperReport {
                source: mapper.source.clone(),
                protocol_id: mapper.protocol_id.clone(),
                verdict: match (verdict, accepted) {
                    (None, _) => MapperVerdict::NotInspected,
                    (Some(_), Some(_)) => MapperVerdict::Accepted,
                    (Some(_), None) => MapperVerdict::Refused,
                },
                accepted_artifact: accepted.map(|a| a.artifact_id.clone()),
                refused_by: verdict.and_then(ContractVerdict::refusal_rule),
                reason: verdict.and_then(ContractVerdict::refusal_summary),
                expects: mapper.expects.clone(),
            }
        })
        .collect()
}

fn hint(report: &DoctorReport, discovery: &Discovery) -> Option<String> {
    if report.selected_mapper.is_some() {
        return match &report.smoke {
            Some(smoke) if !smoke.passed => {
                Some("The install was accepted but the host did not start; see `smoke`.".into())
            }
            None => Some("The host smoke start did not run.".into()),
            Some(_) => None,
        };
    }
    let defaults = if discovery.os_defaults.is_empty() {
        "there is no OS default on this platform".to_string()
    } else {
        let list: Vec<String> =
            discovery.os_defaults.iter().map(|p| p.display().to_string()).collect();
        format!("the OS default is {}", list.join(", then "))
    };
    let what = match &discovery.selection {
        None => "No ZCode install was found",
        Some(Err(crate::select::SelectionError::Ambiguous { .. })) => {
            return Some(
                "More than one mapper accepts this install; keep only one of them.".into(),
            );
        }
        Some(_) => "The ZCode install was not accepted by any mapper (see `mappers`)",
    };
    Some(format!("{what}. {} Without either, {defaults}.", how_to_point()))
}
