//! The doctor report: what discovery found, what each mapper expects, which drop-in mappers
//! are trusted, and whether a session could start. Field names are stable (documented in
//! docs/doctor.md).

use std::path::Path;

use serde::Serialize;
use zcode_contract::LayoutKind;

use crate::discover::Discovery;
use crate::node::{NodeCheck, NodeSource};
use crate::root::{RootError, RootSource, how_to_point};
use crate::select::{SelectionError, VersionStanding, version_standing};
use crate::verdict::{
    ArchiveKind, ContractVerdict, Findings, GateRule, Pinning, ReleaseExpectation,
};

/// Outcome of the host smoke start, run by the caller for the selected install.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SmokeResult {
    pub passed: bool,
    pub duration_ms: u64,
    pub detail: String,
    /// What the host said when probed with a workspace (the mapper's answer: availability,
    /// sign-in), when it answered.
    pub probe: Option<serde_json::Value>,
    /// The lines the mapper wants the user to read (`probe.notes`, WIT `connection-op.probe`),
    /// as it wrote them: the core does not interpret them.
    pub notes: Vec<String>,
}

impl SmokeResult {
    /// A smoke start that passed with the mapper's `probe` answer; its `notes` are the answer's
    /// `notes` strings (anything else there is ignored).
    pub fn passed(duration_ms: u64, detail: String, probe: Option<serde_json::Value>) -> Self {
        let notes = probe
            .as_ref()
            .and_then(|p| p.get("notes"))
            .and_then(serde_json::Value::as_array)
            .map(|notes| notes.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        Self { passed: true, duration_ms, detail, probe, notes }
    }

    pub fn failed(duration_ms: u64, detail: String) -> Self {
        Self { passed: false, duration_ms, detail, probe: None, notes: Vec::new() }
    }
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

/// Whether a drop-in mapper file may be loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropInTrust {
    /// Its SHA-256 is recorded in the trust file.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but the file changed since.
    Changed,
    /// The file or the trust file could not be read (see `error`).
    Unknown,
}

impl std::fmt::Display for DropInTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DropInTrust::Trusted => "trusted",
            DropInTrust::Untrusted => "untrusted",
            DropInTrust::Changed => "changed",
            DropInTrust::Unknown => "unknown",
        })
    }
}

/// One `*.wasm` file of the drop-in folder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DropInReport {
    pub path: String,
    pub sha256: Option<String>,
    pub trust: DropInTrust,
    /// It was loaded (trusted, and a valid 0.2 component); a loaded drop-in is also in
    /// `mappers`.
    pub loaded: bool,
    /// Why it was not loaded.
    pub error: Option<String>,
    /// The command that trusts it, when it is not trusted.
    pub trust_command: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// A session could start: an install was accepted and the smoke start passed.
    pub ok: bool,
    /// `<os>-<arch>` of this process, as bundle metadata spells it.
    pub platform: String,
    /// `desktop` or `runtime`: the layout the install was judged by.
    pub layout: Option<LayoutKind>,
    pub install: InstallReport,
    pub node: NodeReport,
    /// Files of the selected mapper's layout (or of the first mapper that resolved them when
    /// none was selected).
    pub files: Option<FilesReport>,
    pub app_version: Option<String>,
    pub app_build: Option<String>,
    pub cli_version: Option<String>,
    pub metadata_sha256: Option<String>,
    pub metadata_platform: Option<String>,
    /// `known`, `newer`, `unknown` or `no-releases`: the app version against every release
    /// the loaded mappers know.
    pub version_standing: Option<String>,
    /// The newest release version the loaded mappers know for the install's layout.
    pub newest_known_release: Option<String>,
    pub mappers: Vec<MapperReport>,
    /// Every `*.wasm` of the drop-in folder, with its trust state.
    pub drop_ins: Vec<DropInReport>,
    pub selected_mapper: Option<SelectedMapperReport>,
    pub selection_error: Option<String>,
    pub authentication: Authentication,
    pub credentials_file: Option<String>,
    pub display_server_needed: bool,
    pub smoke: Option<SmokeResult>,
    /// What to do when `ok` is false.
    pub hint: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallReport {
    pub configured_root: Option<String>,
    pub source: Option<RootSource>,
    pub resolved_root: Option<String>,
    pub error: Option<String>,
    /// Where ZCode installs itself on this OS, in the order tried.
    pub os_defaults: Vec<String>,
    /// ZCode AppImages found in the usual places when no install was (never run).
    pub app_images: Vec<String>,
    /// The root's mode has group or other write bits (anyone in the group could swap files).
    pub writable_by_group_or_others: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    /// The Node the user named (`--zcode-node`, `ZCODE_ACP_ZCODE_NODE`).
    pub configured: Option<String>,
    pub source: Option<NodeSource>,
    /// Why the named Node cannot be used.
    pub error: Option<String>,
    /// Each Node tried for a runtime layout, in order.
    pub tried: Vec<NodeCheck>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesReport {
    pub executable: Option<String>,
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
pub struct MapperReport {
    pub source: String,
    pub protocol_id: String,
    pub verdict: MapperVerdict,
    pub accepted_release: Option<String>,
    pub refused_by: Option<GateRule>,
    pub reason: Option<String>,
    pub releases: Vec<ReleaseExpectation>,
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
    pub release_id: String,
    pub simulated: bool,
    /// `pinned`, or `unpinned` when some files have no pinned hash for this release.
    pub pinning: Pinning,
    pub unpinned_roles: Vec<String>,
    /// What the host must report at setup (required for an unpinned release).
    pub identity: Option<String>,
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
        let standing = discovery.inspection.as_ref().and_then(version_standing);
        let (standing_name, newest) = match standing.as_ref().map(|(_, s)| s) {
            None => (None, None),
            Some(VersionStanding::Known { .. }) => (Some("known"), None),
            Some(VersionStanding::Newer { newest, .. }) => (Some("newer"), Some(newest.clone())),
            Some(VersionStanding::Unknown { newest, .. }) => {
                (Some("unknown"), Some(newest.clone()))
            }
            Some(VersionStanding::NoReleases { .. }) => (Some("no-releases"), None),
        };
        let newest = newest.or_else(|| {
            let kind = findings.and_then(|f| f.layout)?;
            newest_release(discovery, kind)
        });

        let mut report = DoctorReport {
            ok: accepted_and_smoked,
            platform: discovery.platform.tag(),
            layout: findings.and_then(|f| f.layout),
            install: install_report(discovery),
            node: node_report(discovery, findings),
            files: findings.and_then(files_report),
            app_version: findings.and_then(|f| f.app_version.clone()),
            app_build: findings.and_then(|f| f.app_build.clone()),
            cli_version: findings.and_then(|f| f.cli_version.clone()),
            metadata_sha256: findings.and_then(|f| f.metadata_sha256.clone()),
            metadata_platform: findings.and_then(|f| f.metadata_platform.clone()),
            version_standing: standing_name.map(str::to_string),
            newest_known_release: newest,
            mappers: mapper_reports(discovery),
            drop_ins: Vec::new(),
            selected_mapper: selected.map(|s| SelectedMapperReport {
                source: s.source.clone(),
                protocol_id: s.protocol_id.clone(),
                release_id: s.install.release_id.clone(),
                simulated: s.simulated,
                pinning: s.pinning,
                unpinned_roles: s.install.unpinned.clone(),
                identity: s.identity.clone(),
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

    /// Adds the drop-in folder's files (discovery only sees the mappers that were loaded).
    pub fn with_drop_ins(mut self, drop_ins: Vec<DropInReport>) -> Self {
        self.drop_ins = drop_ins;
        self.hint = self.hint.map(|hint| match drop_in_note(&self.drop_ins) {
            Some(note) if self.selected_mapper.is_none() => format!("{hint} {note}"),
            _ => hint,
        });
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

/// The newest app version of the releases of `kind` the mappers know.
fn newest_release(discovery: &Discovery, kind: LayoutKind) -> Option<String> {
    discovery
        .mappers
        .iter()
        .flat_map(|m| &m.releases)
        .filter(|r| r.kind == kind && !r.simulated)
        .map(|r| r.app_version.clone())
        .max_by(|a, b| crate::version::compare_versions(a, b).unwrap_or(std::cmp::Ordering::Equal))
}

fn install_report(discovery: &Discovery) -> InstallReport {
    let os_defaults = discovery.candidates.iter().map(|c| c.path.display().to_string()).collect();
    match &discovery.root {
        Ok(root) => InstallReport {
            configured_root: Some(root.configured.display().to_string()),
            source: Some(root.source),
            resolved_root: Some(root.path.display().to_string()),
            error: None,
            os_defaults,
            app_images: Vec::new(),
            writable_by_group_or_others: writable_by_others(&root.path),
        },
        Err(error) => InstallReport {
            configured_root: error.configured().first().map(|p| p.display().to_string()),
            source: error.configured_from(),
            resolved_root: None,
            error: Some(error.to_string()),
            os_defaults,
            app_images: error.appimages().iter().map(|p| p.display().to_string()).collect(),
            writable_by_group_or_others: None,
        },
    }
}

fn node_report(discovery: &Discovery, findings: Option<&Findings>) -> NodeReport {
    let (configured, source, error) = match &discovery.explicit_node {
        None => (None, None, None),
        Some(Ok(node)) => (Some(node.path.display().to_string()), Some(node.source), None),
        Some(Err(error)) => (None, None, Some(error.clone())),
    };
    NodeReport {
        configured,
        source,
        error,
        tried: findings.map(|f| f.nodes.clone()).unwrap_or_default(),
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
        executable: files.executable.as_deref().map(text),
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
                accepted_release: accepted.map(|a| a.release_id.clone()),
                refused_by: verdict.and_then(ContractVerdict::refusal_rule),
                reason: verdict.and_then(ContractVerdict::refusal_summary),
                releases: mapper.releases.clone(),
            }
        })
        .collect()
}

/// What an untrusted drop-in means for an install nobody accepted.
fn drop_in_note(drop_ins: &[DropInReport]) -> Option<String> {
    let waiting: Vec<&DropInReport> = drop_ins
        .iter()
        .filter(|d| matches!(d.trust, DropInTrust::Untrusted | DropInTrust::Changed))
        .collect();
    let first = waiting.first()?;
    let command = first.trust_command.as_deref().unwrap_or("zcode-acp mapper trust <file>");
    Some(format!(
        "{} drop-in mapper(s) are not loaded until trusted (a mapper runs code as you): \
         check where {} came from, then run `{command}`.",
        waiting.len(),
        first.path
    ))
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
    if let Err(error @ RootError::AppImage { .. }) = &discovery.root {
        return Some(error.to_string());
    }
    let defaults = if discovery.candidates.is_empty() {
        "there is no OS default on this platform".to_string()
    } else {
        let list: Vec<String> =
            discovery.candidates.iter().map(|c| c.path.display().to_string()).collect();
        format!("the places tried are {}", list.join(", then "))
    };
    let what = match &discovery.selection {
        None => "No ZCode install was found",
        Some(Err(SelectionError::Ambiguous { .. })) => {
            return Some(
                "More than one mapper accepts this install; keep only one of them.".into(),
            );
        }
        Some(_) => "The ZCode install was not accepted by any mapper (see `mappers`)",
    };
    let mut hint = format!("{what}. {} Without either, {defaults}.", how_to_point());
    if let Some(first) = discovery.root.as_ref().err().and_then(|e| e.appimages().first()) {
        hint.push_str(&format!(
            " A ZCode AppImage lies at {}: {}",
            first.display(),
            crate::appimage::extraction_hint(first)
        ));
    }
    Some(hint)
}
