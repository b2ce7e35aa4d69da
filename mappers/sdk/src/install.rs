//! Small builders for the install data of a contract: lists of strings and pairs as the
//! contract holds them, file pins, the CLI version probe and credentials stored in the clear.

use zcode_contract::{
    CredentialEncoding, CredentialSource, FilePin, MapperError, VerifiedInstall, VersionProbe,
};

use crate::json::internal;

pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

pub fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect()
}

/// A file of a release with role `role` at `path`, pinned by its SHA-256; `None` when the hash
/// is not known (the release must then name the identity its host reports).
pub fn pin(role: &str, path: &str, sha256: Option<&str>) -> FilePin {
    FilePin {
        role: role.to_string(),
        path: path.to_string(),
        sha256: sha256.map(str::to_string),
        required_exports: Vec::new(),
    }
}

/// How the core asks an install for its CLI version: `args` (`{cli-entry}` stands for the CLI
/// entry), no extra environment.
pub fn version_probe(args: &[&str]) -> VersionProbe {
    VersionProbe { args: strings(args), env: Vec::new() }
}

/// Credential source `name`: the value at `key` of the JSON file `file` (relative to the home
/// folder), stored in the clear.
pub fn plain_credential(name: &str, file: &str, key: &str) -> CredentialSource {
    CredentialSource {
        name: name.to_string(),
        file: file.to_string(),
        key: key.to_string(),
        lookups: Vec::new(),
        encodings: vec![CredentialEncoding::Plain],
    }
}

/// Refuses an install of a release not in `releases` (the core only hands a mapper installs of
/// its contract's releases: this guards a launch plan against a mix-up).
pub fn known_release(install: &VerifiedInstall, releases: &[&str]) -> Result<(), MapperError> {
    match releases.contains(&install.release_id.as_str()) {
        true => Ok(()),
        false => Err(internal(format!(
            "Release {} is not part of this mapper's contract",
            install.release_id
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_contract_values() {
        assert_eq!(strings(&["a", "b"]), ["a", "b"]);
        assert_eq!(pairs(&[("k", "v")]), [("k".to_string(), "v".to_string())]);
        let file = pin("cli", "server.mjs", None);
        assert_eq!(
            (file.role.as_str(), file.sha256, file.required_exports.len()),
            ("cli", None, 0)
        );
        let probe = version_probe(&["{cli-entry}", "--version"]);
        assert_eq!((probe.args.len(), probe.env.len()), (2, 0));
        let token = plain_credential("t", ".host/credentials.json", "token");
        assert_eq!((token.name.as_str(), token.key.as_str()), ("t", "token"));
        assert_eq!(token.encodings, [CredentialEncoding::Plain]);
        assert!(token.lookups.is_empty());
    }

    #[test]
    fn knows_its_releases() {
        let install = VerifiedInstall {
            facts: Default::default(),
            install_root: "/opt/h".into(),
            kind: zcode_contract::LayoutKind::Runtime,
            executable: "/usr/bin/node".into(),
            cli_entry: "/opt/h/cli.mjs".into(),
            host_archive: "/opt/h".into(),
            release_id: "h-1".into(),
            app_version: "1".into(),
            cli_version: "1".into(),
            files: Vec::new(),
            unpinned: Vec::new(),
            home: "/home/u".into(),
        };
        assert!(known_release(&install, &["h-0", "h-1"]).is_ok());
        assert_eq!(
            known_release(&install, &["h-2"]).unwrap_err().message,
            "Release h-1 is not part of this mapper's contract"
        );
    }
}
