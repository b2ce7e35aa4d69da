//! Validation of a mapper's contract before it is applied. A contract that could accept more
//! than one exact set of files (a wildcard hash, an empty version, a path that leaves the
//! install, an unpinned file without an identity to check instead) is refused: drop-in mappers
//! are third-party code, and the gate must never widen.

use std::collections::HashSet;

use zcode_contract::{
    Contract, DesktopLayout, FactKind, Layout, LayoutKind, Release, RuntimeLayout,
};

use crate::version::is_version;

/// Checks `contract`; the error names the first malformed field.
pub fn validate_contract(contract: &Contract) -> Result<(), String> {
    non_empty("protocol-id", &contract.protocol_id)?;
    if contract.layouts.is_empty() {
        return Err("lists no layouts".into());
    }
    let mut oses = HashSet::new();
    let mut runtime_layouts = 0;
    for layout in &contract.layouts {
        match layout {
            Layout::Desktop(desktop) => {
                if !oses.insert(desktop.os) {
                    return Err(format!("lists two desktop layouts for {:?}", desktop.os));
                }
                validate_desktop(desktop)?;
            }
            Layout::Runtime(runtime) => {
                runtime_layouts += 1;
                if runtime_layouts > 1 {
                    return Err("lists two runtime layouts".into());
                }
                validate_runtime(runtime)?;
            }
        }
    }
    if contract.releases.is_empty() {
        return Err("lists no releases".into());
    }
    let mut ids = HashSet::new();
    let mut versions = HashSet::new();
    for release in &contract.releases {
        if !ids.insert(release.id.as_str()) {
            return Err(format!("lists release `{}` twice", release.id));
        }
        validate_release(contract, release)
            .map_err(|e| format!("release `{}`: {e}", release.id))?;
        // Two real (or two simulated) releases with the same versions would make the gate
        // choose between them by their files: each version pair must name one release.
        let key = (release.kind, &release.app_version, &release.cli_version, release.simulated);
        if !versions.insert(key) {
            return Err(format!(
                "lists app {} / CLI {} twice (release `{}`)",
                release.app_version, release.cli_version, release.id
            ));
        }
    }
    for (key, _) in &contract.cli_version_probe.env {
        env_name("cli-version-probe env", key)?;
    }
    if contract.cli_version_probe.args.iter().any(|a| a.contains('\0')) {
        return Err("cli-version-probe args contain a NUL byte".into());
    }
    validate_credential_sources(contract)?;
    validate_facts(contract)?;
    // No credentials file means authentication presence is reported as unknown.
    if contract.credentials_file.is_empty() {
        return Ok(());
    }
    relative_path("credentials-file", &contract.credentials_file)
}

fn validate_desktop(layout: &DesktopLayout) -> Result<(), String> {
    let os = format!("{:?}", layout.os).to_lowercase();
    relative_path(&format!("{os} layout executable"), &layout.executable)?;
    relative_path(&format!("{os} layout cli-entry"), &layout.cli_entry)?;
    relative_path(&format!("{os} layout metadata"), &layout.metadata)?;
    relative_path(&format!("{os} layout host-archive"), &layout.host_archive)?;
    // An empty platform key declares a platform-independent bundle: there is no platform
    // value to check.
    let mut keys = HashSet::new();
    for (key, value) in &layout.metadata_pairs {
        non_empty(&format!("{os} layout metadata key"), key)?;
        non_empty(&format!("{os} layout metadata value of `{key}`"), value)?;
        if !keys.insert(key.as_str()) || *key == layout.metadata_platform_key {
            return Err(format!("{os} layout names metadata key `{key}` twice"));
        }
    }
    let entry = &layout.metadata_entry_key;
    if !entry.is_empty() && !keys.contains(entry.as_str()) {
        return Err(format!(
            "{os} layout metadata-entry-key `{entry}` is not one of the metadata keys"
        ));
    }
    Ok(())
}

fn validate_runtime(layout: &RuntimeLayout) -> Result<(), String> {
    if layout.runtime_dir != "." {
        relative_path("runtime layout runtime-dir", &layout.runtime_dir)?;
    }
    relative_path("runtime layout package-file", &layout.package_file)?;
    relative_path("runtime layout cli-entry", &layout.cli_entry)?;
    let mut keys = HashSet::new();
    for (key, value) in &layout.package_pairs {
        non_empty("runtime layout package key", key)?;
        non_empty(&format!("runtime layout package value of `{key}`"), value)?;
        if key == "version" || !keys.insert(key.as_str()) {
            return Err(format!("runtime layout names package key `{key}` twice"));
        }
    }
    for candidate in &layout.node_candidates {
        relative_path("runtime layout node-candidate", candidate)?;
    }
    version("runtime layout min-node-version", &layout.min_node_version)
}

fn validate_release(contract: &Contract, release: &Release) -> Result<(), String> {
    non_empty("id", &release.id)?;
    let has_layout = contract.layouts.iter().any(|layout| layout.kind() == release.kind);
    if !has_layout {
        let kind = match release.kind {
            LayoutKind::Desktop => "desktop",
            LayoutKind::Runtime => "runtime",
        };
        return Err(format!("is a {kind} release but the contract has no {kind} layout"));
    }
    version("app-version", &release.app_version)?;
    version("cli-version", &release.cli_version)?;
    if release.files.is_empty() {
        return Err("lists no files".into());
    }
    let mut roles = HashSet::new();
    let mut paths = HashSet::new();
    for file in &release.files {
        non_empty("file role", &file.role)?;
        if !roles.insert(file.role.as_str()) {
            return Err(format!("lists role `{}` twice", file.role));
        }
        relative_path(&format!("file `{}` path", file.role), &file.path)?;
        if !paths.insert(file.path.as_str()) {
            return Err(format!("lists path `{}` twice", file.path));
        }
        if let Some(hash) = &file.sha256 {
            sha256(&format!("file `{}` sha256", file.role), hash)?;
        }
        if file.required_exports.iter().any(|name| name.is_empty()) {
            return Err(format!("file `{}` requires an empty export name", file.role));
        }
    }
    if let Some(identity) = &release.identity {
        non_empty("identity", identity)?;
    } else if let Some(file) = release.files.iter().find(|file| file.sha256.is_none()) {
        // Without a pin, the host's reported identity is what ties the install to the
        // release; a release with neither could be anything.
        return Err(format!("leaves file `{}` unpinned but names no identity", file.role));
    }
    for data in &release.data_files {
        non_empty("data-file role", &data.role)?;
        if !roles.insert(data.role.as_str()) {
            return Err(format!("lists role `{}` twice", data.role));
        }
        relative_path(&format!("data file `{}` path", data.role), &data.path)?;
        if !paths.insert(data.path.as_str()) {
            return Err(format!("lists path `{}` twice", data.path));
        }
    }
    Ok(())
}

/// Facts are read for the mapper, so none may reach a secret: a user file is never the
/// credentials file or a credential source's file (a credential crosses only as a presence
/// verdict), it sits in the host's own data folder (the folder of the contract's credentials
/// file), and every name, role and source is one the contract declares. Without the folder
/// rule any JSON file of the home would do, and other programs keep tokens in theirs (e.g. a
/// container registry's `config.json`).
fn validate_facts(contract: &Contract) -> Result<(), String> {
    let mut names = HashSet::new();
    let secret_files: HashSet<&str> = std::iter::once(contract.credentials_file.as_str())
        .chain(contract.credential_sources.iter().map(|s| s.file.as_str()))
        .filter(|file| !file.is_empty())
        .collect();
    // Below the home, never the home itself: a host keeps its files in a folder of its own.
    let host_folder = contract.credentials_file.rsplit_once('/').map(|(folder, _)| folder);
    let has_role = |role: &str| {
        contract.releases.iter().any(|release| {
            release.files.iter().any(|f| f.role == role)
                || release.data_files.iter().any(|d| d.role == role)
        })
    };
    for fact in &contract.facts {
        non_empty("fact name", &fact.name)?;
        if !names.insert(fact.name.as_str()) {
            return Err(format!("lists fact `{}` twice", fact.name));
        }
        let field = |what: &str| format!("fact `{}` {what}", fact.name);
        let pointer = |pointer: &str| match pointer.is_empty() || pointer.starts_with('/') {
            true => Ok(()),
            false => Err(field("has a JSON pointer that does not start with `/`")),
        };
        match &fact.kind {
            FactKind::InstallJson(json) => {
                if !has_role(&json.file) {
                    return Err(field(&format!(
                        "names file role `{}`, which no release lists",
                        json.file
                    )));
                }
                pointer(&json.pointer)?;
            }
            FactKind::InstallPath(role) => {
                if !has_role(role) {
                    return Err(field(&format!(
                        "names file role `{role}`, which no release lists"
                    )));
                }
            }
            FactKind::UserJson(json) => {
                relative_path(&field("file"), &json.file)?;
                let folder = json.file.rsplit_once('/').map(|(folder, _)| folder);
                if host_folder.is_none() || folder != host_folder {
                    return Err(field(&format!(
                        "reads `{}`, outside the host's own folder (the credentials file's, `{}`)",
                        json.file,
                        host_folder.unwrap_or("none"),
                    )));
                }
                if secret_files.contains(json.file.as_str()) {
                    return Err(field(&format!(
                        "reads `{}`, which holds credentials: only their presence may be asked",
                        json.file
                    )));
                }
                pointer(&json.pointer)?;
            }
            FactKind::CredentialPresence(presence) => {
                if !contract.credential_sources.iter().any(|s| s.name == presence.source) {
                    return Err(field(&format!(
                        "names credential source `{}`, which the contract does not declare",
                        presence.source
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Credential sources name files the core reads for the mapper: they must stay in `$HOME`.
fn validate_credential_sources(contract: &Contract) -> Result<(), String> {
    let mut names = HashSet::new();
    for source in &contract.credential_sources {
        non_empty("credential-source name", &source.name)?;
        if !names.insert(source.name.as_str()) {
            return Err(format!("lists credential source `{}` twice", source.name));
        }
        let field = |what: &str| format!("credential source `{}` {what}", source.name);
        relative_path(&field("file"), &source.file)?;
        non_empty(&field("key"), &source.key)?;
        if source.encodings.is_empty() {
            return Err(field("lists no encodings"));
        }
        for lookup in &source.lookups {
            non_empty(&field("lookup name"), &lookup.name)?;
            non_empty(&field("lookup key"), &lookup.key)?;
            non_empty(&field("lookup field"), &lookup.field)?;
        }
    }
    Ok(())
}

fn env_name(field: &str, key: &str) -> Result<(), String> {
    if key.is_empty() || key.contains('=') || key.contains('\0') {
        return Err(format!("{field} has an invalid name `{key}`"));
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
