//! Validation of a mapper's contract before it is applied. A contract that could accept
//! more than one exact set of files (a wildcard hash, an empty version, a path that leaves
//! the install) is refused: mappers run untrusted, and the gate must never widen.

use std::collections::HashSet;

use zcode_contract::{Artifact, Contract, Layout};

use crate::version::is_version;

/// Checks `contract`; the error names the first malformed field.
pub fn validate_contract(contract: &Contract) -> Result<(), String> {
    non_empty("protocol-id", &contract.protocol_id)?;
    if contract.layouts.is_empty() {
        return Err("lists no layouts".into());
    }
    let mut oses = HashSet::new();
    for layout in &contract.layouts {
        if !oses.insert(layout.os) {
            return Err(format!("lists two layouts for {:?}", layout.os));
        }
        validate_layout(layout)?;
    }
    validate_metadata(contract)?;
    if contract.artifacts.is_empty() {
        return Err("lists no artifacts".into());
    }
    let mut ids = HashSet::new();
    for artifact in &contract.artifacts {
        if !ids.insert(artifact.id.as_str()) {
            return Err(format!("lists artifact `{}` twice", artifact.id));
        }
        validate_artifact(artifact).map_err(|e| format!("artifact `{}`: {e}", artifact.id))?;
    }
    for (key, _) in &contract.cli_version_probe.env {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(format!("cli-version-probe env has an invalid name `{key}`"));
        }
    }
    if contract.cli_version_probe.args.iter().any(|a| a.contains('\0')) {
        return Err("cli-version-probe args contain a NUL byte".into());
    }
    // No credentials file means authentication presence is reported as unknown.
    if contract.credentials_file.is_empty() {
        return Ok(());
    }
    relative_path("credentials-file", &contract.credentials_file)
}

fn validate_layout(layout: &Layout) -> Result<(), String> {
    let os = format!("{:?}", layout.os).to_lowercase();
    relative_path(&format!("{os} layout executable"), &layout.executable)?;
    relative_path(&format!("{os} layout cli-entry"), &layout.cli_entry)?;
    relative_path(&format!("{os} layout metadata"), &layout.metadata)?;
    relative_path(&format!("{os} layout host-archive"), &layout.host_archive)
}

fn validate_metadata(contract: &Contract) -> Result<(), String> {
    // An empty platform key declares a platform-independent bundle (e.g. pure JavaScript run
    // by a separately verified runtime): there is no platform value to check.
    let mut keys = HashSet::new();
    for (key, value) in &contract.metadata {
        non_empty("metadata key", key)?;
        non_empty(&format!("metadata value of `{key}`"), value)?;
        if !keys.insert(key.as_str()) || *key == contract.metadata_platform_key {
            return Err(format!("names metadata key `{key}` twice"));
        }
    }
    let entry = &contract.metadata_entry_key;
    if !entry.is_empty() && !keys.contains(entry.as_str()) {
        return Err(format!("metadata-entry-key `{entry}` is not one of the metadata keys"));
    }
    Ok(())
}

fn validate_artifact(artifact: &Artifact) -> Result<(), String> {
    non_empty("id", &artifact.id)?;
    version("app-version", &artifact.app_version)?;
    version("cli-version", &artifact.cli_version)?;
    sha256("cli-sha256", &artifact.cli_sha256)?;
    if artifact.files.is_empty() {
        return Err("lists no host files".into());
    }
    let mut roles = HashSet::new();
    let mut paths = HashSet::new();
    for file in &artifact.files {
        non_empty("file role", &file.role)?;
        if !roles.insert(file.role.as_str()) {
            return Err(format!("lists role `{}` twice", file.role));
        }
        relative_path(&format!("file `{}` path", file.role), &file.path)?;
        if !paths.insert(file.path.as_str()) {
            return Err(format!("lists path `{}` twice", file.path));
        }
        sha256(&format!("file `{}` sha256", file.role), &file.sha256)?;
        if file.required_exports.iter().any(|name| name.is_empty()) {
            return Err(format!("file `{}` requires an empty export name", file.role));
        }
    }
    Ok(())
}

fn non_empty(field: &str, value: &str) -> Result<(), String> {
    if value.trim().is_empty() { Err(format!("{field} is empty")) } else { Ok(()) }
}

fn version(field: &str, value: &str) -> Result<(), String> {
    if is_version(value) {
        Ok(())
    } else {
        Err(format!("{field} `{value}` is not an exact version (x.y.z)"))
    }
}

fn sha256(field: &str, value: &str) -> Result<(), String> {
    let hex = value.len() == 64 && value.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if hex { Ok(()) } else { Err(format!("{field} `{value}` is not 64 lowercase hex digits")) }
}

/// A `/`-separated path that stays below the directory it is relative to.
fn relative_path(field: &str, value: &str) -> Result<(), String> {
    non_empty(field, value)?;
    let bad = |why: &str| Err(format!("{field} `{value}` {why}"));
    if value.starts_with('/') || value.contains('\\') || value.contains('\0') {
        return bad("must be a relative path with `/` separators");
    }
    if value.as_bytes().get(1) == Some(&b':') {
        return bad("must not name a drive");
    }
    for part in value.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return bad("must not contain empty, `.` or `..` components");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_relative() {
        assert!(relative_path("p", "resources/app.asar").is_ok());
        assert!(relative_path("p", "Contents/Frameworks/ZCode Helper.app/x").is_ok());
        for bad in ["", "/abs", "a/../b", "..", "a//b", "./a", "a\\b", "C:/x", "a/"] {
            assert!(relative_path("p", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hashes_must_be_exact() {
        assert!(sha256("h", &"a".repeat(64)).is_ok());
        for bad in ["", "*", &"A".repeat(64), &"a".repeat(63), &"g".repeat(64)] {
            assert!(sha256("h", bad).is_err(), "{bad}");
        }
    }
}
