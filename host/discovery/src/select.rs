//! Choosing the one mapper (and release) that accepts the install.
//!
//! A trusted drop-in is how a user brings a newer or fixed mapper for an install: when one
//! accepts, the embedded mappers that accept the same install give way to it. Then a release
//! whose every file matched a pin is stronger evidence than one that leaves files unpinned, so
//! pinned acceptances win over unpinned ones (the simulator's pinned release of a version over a
//! real release of that version known only by its identity). Among equals, exactly one must
//! accept.

use std::cmp::Ordering;
use std::fmt::Write;

use serde::Serialize;
use zcode_contract::{LayoutKind, VerifiedInstall};

use crate::verdict::{Accepted, ContractVerdict, Findings, Inspection, Pinning};
use crate::version::compare_versions;

/// How the sources of embedded mappers start (`embedded:zcode-task-v1`); any other source is a
/// drop-in file.
pub const EMBEDDED_SOURCE_PREFIX: &str = "embedded:";

fn is_drop_in(source: &str) -> bool {
    !source.starts_with(EMBEDDED_SOURCE_PREFIX)
}

/// The mapper and release that accept the install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// Index of the accepted mapper in the list given to the inspector.
    pub mapper_index: usize,
    pub source: String,
    pub protocol_id: String,
    pub install: VerifiedInstall,
    /// The release is the simulator's, not a ZCode release.
    pub simulated: bool,
    pub pinning: Pinning,
    /// What the host must report about itself at setup (the release's `identity`); the core
    /// refuses a host that reports anything else.
    pub identity: Option<String>,
    /// Embedded mappers that accepted the install too, and gave way to this drop-in.
    pub overrides: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// No (mapper, release) accepts; the message lists what was found and expected.
    #[error("{0}")]
    NoneAccepted(String),
    #[error(
        "The ZCode install at {install_root} is accepted by more than one mapper: {}. \
         Keep only one of them.", matches.join(", ")
    )]
    Ambiguous { install_root: String, matches: Vec<String> },
}

/// Whether the installed ZCode's app version is one the mappers know.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "standing")]
pub enum VersionStanding {
    /// A release of that layout names the version.
    Known { found: String },
    /// Newer than every release the mappers know.
    Newer { found: String, newest: String },
    /// Not newer, but no release names it.
    Unknown { found: String, newest: String },
    /// The mappers know no release of the install's layout.
    NoReleases { found: String },
}

impl VersionStanding {
    /// The sentence reports lead with when no mapper accepts (`None` for a known version).
    pub fn sentence(&self, kind: LayoutKind) -> Option<String> {
        let kind = match kind {
            LayoutKind::Desktop => "desktop",
            LayoutKind::Runtime => "runtime",
        };
        let advice = "Nothing is guessed: add a mapper that knows it (`zcode-acp mapper install \
                      <file.wasm>`) or use a release listed below.";
        match self {
            VersionStanding::Known { .. } => None,
            VersionStanding::Newer { found, newest } => Some(format!(
                "ZCode {kind} {found} is newer than any release the installed mappers know \
                 (newest: {newest}). {advice}"
            )),
            VersionStanding::Unknown { found, newest } => Some(format!(
                "ZCode {kind} {found} is not a release the installed mappers know (newest: \
                 {newest}). {advice}"
            )),
            VersionStanding::NoReleases { found } => Some(format!(
                "ZCode {kind} {found} is not a release the installed mappers know: they know \
                 no {kind} release. {advice}"
            )),
        }
    }
}

/// What the install's app version is to the mappers' releases, once its version was read.
pub fn version_standing(inspection: &Inspection) -> Option<(LayoutKind, VersionStanding)> {
    // The first mapper that read the install's version (a mapper of another layout kind,
    // listed first, finds a layout it cannot read a version from).
    let findings = inspection
        .verdicts
        .iter()
        .map(|v| &v.findings)
        .find(|f| f.layout.is_some() && f.app_version.is_some())?;
    let (kind, found) = (findings.layout?, findings.app_version.clone()?);
    let releases: Vec<_> = inspection
        .verdicts
        .iter()
        .flat_map(|v| &v.expects)
        .filter(|release| release.kind == kind)
        .collect();
    if releases.iter().any(|release| release.app_version == found) {
        return Some((kind, VersionStanding::Known { found }));
    }
    // Name a real release when there is one; a simulated one says so.
    let newest = |simulated: bool| {
        releases
            .iter()
            .filter(|release| release.simulated == simulated)
            .max_by(|a, b| {
                compare_versions(&a.app_version, &b.app_version).unwrap_or(Ordering::Equal)
            })
            .map(|release| release.app_version.clone())
    };
    let newest = match (newest(false), newest(true)) {
        (Some(real), _) => real,
        (None, Some(simulated)) => format!("{simulated}, simulated"),
        (None, None) => return Some((kind, VersionStanding::NoReleases { found })),
    };
    let bare = newest.trim_end_matches(", simulated");
    let standing = match compare_versions(&found, bare) {
        Some(Ordering::Greater) => VersionStanding::Newer { found, newest },
        _ => VersionStanding::Unknown { found, newest },
    };
    Some((kind, standing))
}

/// Exactly one (mapper, release) pair must accept, pinned ones first.
pub fn select(inspection: &Inspection) -> Result<Selected, SelectionError> {
    let accepted: Vec<(usize, &ContractVerdict, &Accepted)> = inspection
        .verdicts
        .iter()
        .enumerate()
        .flat_map(|(index, verdict)| verdict.accepted().map(move |a| (index, verdict, a)))
        .collect();
    let (drop_ins, embedded): (Vec<_>, Vec<_>) =
        accepted.iter().copied().partition(|(_, verdict, _)| is_drop_in(&verdict.source));
    let (candidates, overrides) = match drop_ins.is_empty() {
        true => (embedded, Vec::new()),
        false => {
            let mut overridden: Vec<String> =
                embedded.iter().map(|(_, verdict, _)| verdict.source.clone()).collect();
            overridden.dedup();
            (drop_ins, overridden)
        }
    };
    let pinned: Vec<_> =
        candidates.iter().filter(|(_, _, a)| a.pinning() == Pinning::Pinned).copied().collect();
    let strongest = if pinned.is_empty() { candidates } else { pinned };
    match strongest.as_slice() {
        [] => Err(SelectionError::NoneAccepted(none_accepted(inspection))),
        [(index, verdict, release)] => {
            let mut selected = selected(inspection, *index, verdict, release);
            selected.overrides = overrides;
            Ok(selected)
        }
        many => Err(SelectionError::Ambiguous {
            install_root: inspection.install_root.display().to_string(),
            matches: many
                .iter()
                .map(|(_, v, a)| {
                    format!("`{}` ({}, release {})", v.source, v.protocol_id, a.release_id)
                })
                .collect(),
        }),
    }
}

fn selected(
    inspection: &Inspection,
    index: usize,
    verdict: &ContractVerdict,
    release: &Accepted,
) -> Selected {
    let findings = &verdict.findings;
    let files = findings.files.as_ref().expect("an accepted contract resolved its files");
    // Paths were checked to be UTF-8 before the release could be accepted.
    let text = |path: &std::path::Path| path.to_string_lossy().into_owned();
    let executable = files.executable.as_deref().expect("an accepted install has an executable");
    Selected {
        mapper_index: index,
        source: verdict.source.clone(),
        protocol_id: verdict.protocol_id.clone(),
        install: VerifiedInstall {
            facts: release.facts.clone(),
            install_root: text(&inspection.install_root),
            kind: files.kind,
            executable: text(executable),
            cli_entry: text(&files.cli_entry),
            host_archive: text(&files.host_archive),
            release_id: release.release_id.clone(),
            app_version: findings.app_version.clone().unwrap_or_default(),
            cli_version: findings.cli_version.clone().unwrap_or_default(),
            files: release.files.clone(),
            unpinned: release.unpinned.clone(),
            home: inspection.home.as_deref().map(text).unwrap_or_default(),
        },
        simulated: release.simulated,
        pinning: release.pinning(),
        identity: release.identity.clone(),
        overrides: Vec::new(),
    }
}

/// "Found … / expects …" for every mapper, after what the version is to them.
fn none_accepted(inspection: &Inspection) -> String {
    let mut text = format!(
        "No mapper accepts the ZCode install at {} (this process: {}).",
        inspection.install_root.display(),
        inspection.platform.tag()
    );
    if let Some((kind, standing)) = version_standing(inspection)
        && let Some(sentence) = standing.sentence(kind)
    {
        text.push(' ');
        text.push_str(&sentence);
    }
    if inspection.verdicts.is_empty() {
        text.push_str(" No mappers are loaded.");
    }
    for verdict in &inspection.verdicts {
        let reason = verdict.refusal_summary().unwrap_or_default();
        let _ = write!(
            text,
            "\nMapper `{}` ({}) refused: {reason}",
            verdict.source, verdict.protocol_id
        );
        let found = describe_findings(&verdict.findings);
        if !found.is_empty() {
            let _ = write!(text, "\n  found: {found}");
        }
        for release in &verdict.expects {
            let files: Vec<String> = release
                .files
                .iter()
                .map(|f| format!("{} {}", f.path, f.sha256.as_deref().unwrap_or("unpinned")))
                .collect();
            let kind = match release.kind {
                LayoutKind::Desktop => "desktop",
                LayoutKind::Runtime => "runtime",
            };
            let _ = write!(
                text,
                "\n  expects {}: {kind} app {}, CLI {}, {}",
                release.id,
                release.app_version,
                release.cli_version,
                files.join(", ")
            );
        }
    }
    text
}

fn describe_findings(findings: &Findings) -> String {
    let mut parts = Vec::new();
    let or_unknown = |value: &Option<String>| value.clone().unwrap_or_else(|| "unknown".into());
    if findings.files.is_some() {
        parts.push(format!("app {}", or_unknown(&findings.app_version)));
        parts.push(format!("CLI {}", or_unknown(&findings.cli_version)));
        if findings.layout == Some(LayoutKind::Desktop) {
            parts.push(format!("platform {}", or_unknown(&findings.metadata_platform)));
        }
    }
    for node in &findings.nodes {
        let version = node.version.as_deref().map_or("no version".into(), |v| format!("v{v}"));
        parts.push(format!("Node {} {version}", node.path));
    }
    for file in &findings.host_files {
        match (&file.sha256, &file.error) {
            (Some(sha), _) => parts.push(format!("{} {sha}", file.path)),
            (None, error) => parts.push(format!(
                "{} unreadable ({})",
                file.path,
                error.as_deref().unwrap_or("unknown error")
            )),
        }
    }
    parts.join(", ")
}
