//! Plain-text rendering of the doctor report: `key: value` lines under headings, with the
//! same key names as the JSON form.

use std::fmt::Display;

use crate::doctor::{DoctorReport, MapperVerdict};

struct Lines(String);

impl Lines {
    fn heading(&mut self, name: &str) {
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        self.0.push_str(&format!("[{name}]\n"));
    }

    fn field(&mut self, key: &str, value: impl Display) {
        self.0.push_str(&format!("{key}: {value}\n"));
    }

    fn optional(&mut self, key: &str, value: Option<impl Display>) {
        match value {
            Some(value) => self.field(key, value),
            None => self.field(key, "null"),
        }
    }
}

pub(crate) fn render(report: &DoctorReport) -> String {
    let mut out = Lines(String::new());
    out.heading("summary");
    out.field("ok", report.ok);
    out.field("platform", &report.platform);
    out.field("displayServerNeeded", report.display_server_needed);
    if let Some(hint) = &report.hint {
        out.field("hint", hint);
    }

    let install = &report.install;
    out.heading("install");
    out.optional("configuredRoot", install.configured_root.as_ref());
    out.optional("source", install.source);
    out.optional("resolvedRoot", install.resolved_root.as_ref());
    if let Some(error) = &install.error {
        out.field("error", error);
    }
    out.field("osDefaults", install.os_defaults.join(", "));
    out.optional("writableByGroupOrOthers", install.writable_by_group_or_others);

    if let Some(files) = &report.files {
        out.heading("files");
        out.field("executable", &files.executable);
        out.field("cliEntry", &files.cli_entry);
        out.field("metadata", &files.metadata);
        out.field(
            "hostArchive",
            format!("{} ({})", files.host_archive, kind(files.host_archive_kind)),
        );
        for file in &files.host_files {
            let state = match (&file.sha256, &file.error) {
                (Some(sha), _) => format!("sha256 {sha}"),
                (None, Some(error)) => format!("unreadable: {error}"),
                (None, None) => "not checked".to_string(),
            };
            out.field(&format!("hostFile {}", file.path), state);
        }
    }

    out.heading("versions");
    out.optional("appVersion", report.app_version.as_ref());
    out.optional("appBuild", report.app_build.as_ref());
    out.optional("cliVersion", report.cli_version.as_ref());
    out.optional("cliSha256", report.cli_sha256.as_ref());
    out.optional("expectedCliSha256", report.expected_cli_sha256.as_ref());
    out.optional("cliIntegrity", report.cli_integrity);
    out.optional("metadataSha256", report.metadata_sha256.as_ref());
    out.optional("metadataPlatform", report.metadata_platform.as_ref());

    out.heading("mappers");
    for mapper in &report.mappers {
        let verdict = match mapper.verdict {
            MapperVerdict::Accepted => {
                format!("accepted {}", mapper.accepted_artifact.as_deref().unwrap_or("?"))
            }
            MapperVerdict::Refused => {
                format!("refused: {}", mapper.reason.as_deref().unwrap_or("no reason given"))
            }
            MapperVerdict::NotInspected => "not inspected (no install root)".to_string(),
        };
        out.field(&format!("mapper {} ({})", mapper.source, mapper.protocol_id), verdict);
        for artifact in &mapper.expects {
            let files: Vec<String> =
                artifact.files.iter().map(|f| format!("{} {}", f.path, f.sha256)).collect();
            out.field(
                &format!("  expects {}", artifact.id),
                format!(
                    "app {}, CLI {}{}, {}",
                    artifact.app_version,
                    artifact.cli_version,
                    if artifact.simulated { " (simulated)" } else { "" },
                    files.join(", ")
                ),
            );
        }
    }
    for unloaded in &report.unloaded_mappers {
        // One line per key: a loader error can carry a multi-line dump (the JSON has it all).
        let first_line = unloaded.error.lines().next().unwrap_or_default();
        out.field(&format!("unloaded {}", unloaded.source), first_line);
    }
    match &report.selected_mapper {
        Some(s) => out.field(
            "selectedMapper",
            format!(
                "{} ({}, artifact {}{})",
                s.source,
                s.protocol_id,
                s.artifact_id,
                if s.simulated { ", simulated" } else { "" }
            ),
        ),
        None => out.field("selectedMapper", "null"),
    }
    if let Some(error) = &report.selection_error {
        // The per-mapper lines above already say what was found and expected.
        out.field("selectionError", error.lines().next().unwrap_or_default());
    }

    out.heading("session");
    out.field("authentication", report.authentication);
    out.optional("credentialsFile", report.credentials_file.as_ref());
    match &report.smoke {
        Some(smoke) => out.field(
            "smoke",
            format!(
                "{} in {} ms: {}",
                if smoke.passed { "passed" } else { "failed" },
                smoke.duration_ms,
                smoke.detail
            ),
        ),
        None => out.field("smoke", "not run"),
    }
    out.0
}

fn kind(kind: crate::verdict::ArchiveKind) -> &'static str {
    match kind {
        crate::verdict::ArchiveKind::Directory => "directory",
        crate::verdict::ArchiveKind::Asar => "asar",
    }
}
