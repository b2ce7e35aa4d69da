//! Choosing the one mapper (and artifact) that accepts the install.

use std::fmt::Write;

use zcode_contract::VerifiedInstall;

use crate::verdict::{Accepted, CliIntegrity, ContractVerdict, Findings, Inspection};

/// The mapper and artifact that accept the install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// Index of the accepted mapper in the list given to the inspector.
    pub mapper_index: usize,
    pub source: String,
    pub protocol_id: String,
    pub install: VerifiedInstall,
    pub cli_integrity: CliIntegrity,
    pub expected_cli_sha256: String,
    /// The artifact is the simulator's, not a ZCode release.
    pub simulated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// No (mapper, artifact) accepts; the message lists what was found and expected.
    #[error("{0}")]
    NoneAccepted(String),
    #[error(
        "The ZCode install at {install_root} is accepted by more than one mapper: {}. \
         Keep only one of them.", matches.join(", ")
    )]
    Ambiguous { install_root: String, matches: Vec<String> },
}

/// Exactly one (mapper, artifact) pair must accept.
pub fn select(inspection: &Inspection) -> Result<Selected, SelectionError> {
    let accepted: Vec<(usize, &ContractVerdict, &Accepted)> = inspection
        .verdicts
        .iter()
        .enumerate()
        .flat_map(|(index, verdict)| verdict.accepted().map(move |a| (index, verdict, a)))
        .collect();
    match accepted.as_slice() {
        [] => Err(SelectionError::NoneAccepted(none_accepted(inspection))),
        [(index, verdict, artifact)] => Ok(selected(inspection, *index, verdict, artifact)),
        many => Err(SelectionError::Ambiguous {
            install_root: inspection.install_root.display().to_string(),
            matches: many
                .iter()
                .map(|(_, v, a)| {
                    format!("`{}` ({}, artifact {})", v.source, v.protocol_id, a.artifact_id)
                })
                .collect(),
        }),
    }
}

fn selected(
    inspection: &Inspection,
    index: usize,
    verdict: &ContractVerdict,
    artifact: &Accepted,
) -> Selected {
    let findings = &verdict.findings;
    let files = findings.files.as_ref().expect("an accepted contract resolved its files");
    // Paths were checked to be UTF-8 before the artifact could be accepted.
    let text = |path: &std::path::Path| path.to_string_lossy().into_owned();
    Selected {
        mapper_index: index,
        source: verdict.source.clone(),
        protocol_id: verdict.protocol_id.clone(),
        install: VerifiedInstall {
            install_root: text(&inspection.install_root),
            executable: text(&files.executable),
            cli_entry: text(&files.cli_entry),
            host_archive: text(&files.host_archive),
            artifact_id: artifact.artifact_id.clone(),
            app_version: findings.app_version.clone().unwrap_or_default(),
            cli_version: findings.cli_version.clone().unwrap_or_default(),
            files: artifact.files.clone(),
        },
        cli_integrity: artifact.cli_integrity,
        expected_cli_sha256: artifact.expected_cli_sha256.clone(),
        simulated: artifact.simulated,
    }
}

/// "Found … / expects …" for every mapper.
fn none_accepted(inspection: &Inspection) -> String {
    let mut text = format!(
        "No mapper accepts the ZCode install at {} (this process: {}).",
        inspection.install_root.display(),
        inspection.platform.tag()
    );
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
        for artifact in &verdict.expects {
            let files: Vec<String> =
                artifact.files.iter().map(|f| format!("{} {}", f.path, f.sha256)).collect();
            let _ = write!(
                text,
                "\n  expects {}: app {}, CLI {}, platform {}, {}",
                artifact.id,
                artifact.app_version,
                artifact.cli_version,
                inspection.platform.tag(),
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
        parts.push(format!("platform {}", or_unknown(&findings.metadata_platform)));
        parts.push(format!("CLI sha256 {}", or_unknown(&findings.cli_sha256)));
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
