//! Plain-text rendering of the doctor report: `key: value` lines under headings, with the
//! same key names as the JSON form.

use std::fmt::Display;

use zcode_contract::LayoutKind;

use crate::doctor::{DoctorReport, DropInTrust, MapperVerdict};
use crate::verdict::{ArchiveKind, ReleaseExpectation};

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

fn kind_name(kind: LayoutKind) -> &'static str {
    match kind {
        LayoutKind::Desktop => "desktop",
        LayoutKind::Runtime => "runtime",
    }
}

/// One line per release: `app X, CLI Y (simulated), unpinned: identity …, files`.
pub(crate) fn release_line(release: &ReleaseExpectation) -> String {
    let files: Vec<String> = release
        .files
        .iter()
        .map(|f| format!("{} {}", f.path, f.sha256.as_deref().unwrap_or("unpinned")))
        .collect();
    let pinning = match (&release.identity, release.pinned) {
        (_, true) => "pinned".to_string(),
        (Some(identity), false) => format!("unpinned (identity {identity})"),
        (None, false) => "unpinned".to_string(),
    };
    format!(
        "{} app {}, CLI {}{}, {pinning}: {}",
        kind_name(release.kind),
        release.app_version,
        release.cli_version,
        if release.simulated { " (simulated)" } else { "" },
        files.join(", ")
    )
}

pub(crate) fn render(report: &DoctorReport) -> String {
    let mut out = Lines(String::new());
    out.heading("summary");
    out.field("ok", report.ok);
    out.field("platform", &report.platform);
    out.optional("layout", report.layout.map(kind_name));
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
        out.field("error", error.lines().next().unwrap_or_default());
    }
    out.field("osDefaults", install.os_defaults.join(", "));
    for appimage in &install.app_images {
        out.field("appImage", format!("{appimage} (not run; extract it, see hint)"));
    }
    out.optional("writableByGroupOrOthers", install.writable_by_group_or_others);

    let node = &report.node;
    if node.configured.is_some() || node.error.is_some() || !node.tried.is_empty() {
        out.heading("node");
        out.optional("configured", node.configured.as_ref());
        if let Some(error) = &node.error {
            out.field("error", error);
        }
        for tried in &node.tried {
            let version = tried.version.as_deref().map_or("no version".into(), |v| format!("v{v}"));
            let state = match &tried.problem {
                None => format!("{version}, accepted"),
                Some(problem) => format!("{version}, refused: {problem}"),
            };
            out.field(&format!("tried {} ({})", tried.path, tried.source), state);
        }
    }

    if let Some(files) = &report.files {
        out.heading("files");
        out.optional("executable", files.executable.as_ref());
        out.field("cliEntry", &files.cli_entry);
        out.field("metadata", &files.metadata);
        let kind = match files.host_archive_kind {
            ArchiveKind::Directory => "directory",
            ArchiveKind::Asar => "asar",
        };
        out.field("hostArchive", format!("{} ({kind})", files.host_archive));
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
    out.optional("metadataSha256", report.metadata_sha256.as_ref());
    out.optional("metadataPlatform", report.metadata_platform.as_ref());
    out.optional("versionStanding", report.version_standing.as_ref());
    out.optional("newestKnownRelease", report.newest_known_release.as_ref());

    out.heading("mappers");
    for mapper in &report.mappers {
        let verdict = match mapper.verdict {
            MapperVerdict::Accepted => {
                format!("accepted {}", mapper.accepted_release.as_deref().unwrap_or("?"))
            }
            MapperVerdict::Refused => {
                format!("refused: {}", mapper.reason.as_deref().unwrap_or("no reason given"))
            }
            MapperVerdict::NotInspected => "not inspected (no install root)".to_string(),
        };
        out.field(&format!("mapper {} ({})", mapper.source, mapper.protocol_id), verdict);
        for release in &mapper.releases {
            out.field(&format!("  release {}", release.id), release_line(release));
        }
    }
    for drop_in in &report.drop_ins {
        let state = match (drop_in.trust, drop_in.loaded) {
            (_, true) => "trusted, loaded".to_string(),
            (DropInTrust::Trusted, false) => format!(
                "trusted, not loaded: {}",
                drop_in.error.as_deref().and_then(|e| e.lines().next()).unwrap_or("?")
            ),
            (trust, false) => {
                let command = drop_in.trust_command.as_deref().unwrap_or("zcode-acp mapper trust");
                let why = drop_in.error.as_deref().and_then(|e| e.lines().next());
                match why {
                    Some(why) => format!("{trust}, not loaded ({why}); trust it with `{command}`"),
                    None => format!("{trust}, not loaded; trust it with `{command}`"),
                }
            }
        };
        out.field(&format!("dropIn {}", drop_in.path), state);
    }
    match &report.selected_mapper {
        Some(s) => out.field(
            "selectedMapper",
            format!(
                "{} ({}, release {}, {}{}{})",
                s.source,
                s.protocol_id,
                s.release_id,
                s.pinning,
                if s.unpinned_roles.is_empty() {
                    String::new()
                } else {
                    format!(": {}", s.unpinned_roles.join(", "))
                },
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
    // The mapper's own lines, as it wrote them, one `note` line each; a control character (a
    // line break would forge a field) is shown escaped.
    for note in report.smoke.iter().flat_map(|s| &s.notes) {
        let line: String = note
            .chars()
            .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
            .collect();
        out.field("note", line);
    }
    out.0
}
