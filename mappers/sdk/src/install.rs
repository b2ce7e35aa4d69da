//! Small builders for the install data of a contract: lists of strings and pairs as the
//! contract holds them, and file pins.

use zcode_contract::FilePin;

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
    }
}
