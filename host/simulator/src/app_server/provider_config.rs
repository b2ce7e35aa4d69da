//! The provider configuration the Agent boots with (reference APP §1.4, §4.3, §8.14).
//!
//! Since 3.12.3 the bundled CLI cannot find its built-in provider table on its own: without
//! `ZCODE_BUILTIN_PROVIDER_CONFIG_FILE` naming a readable table it exits during boot. An
//! account push (`provider/updateAccountConfig`) takes effect only when it is based on that
//! very table — `basedOnZCodeBuiltinRevision` = `zcode-builtin:<table revision>:<sha256 of
//! the resolved table path>` — and when `ZCODE_PERSONAL_PROVIDER_CONFIG_FILE` is set too
//! (with the built-in variable alone the CLI re-syncs its own copy of the table, which
//! silently voids the push). A push that misses either is answered like any other and ignored.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// What the real CLI prints before exiting when it cannot locate its table.
pub const MISSING_TABLE: &str = "无法定位 CLI ZCode Built-in Provider Config";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The table's path as the CLI resolves it (absolute, not canonicalised).
    pub table: PathBuf,
    /// The table's `revision`.
    pub revision: String,
    /// `ZCODE_PERSONAL_PROVIDER_CONFIG_FILE` was set.
    pub personal: bool,
}

impl ProviderConfig {
    /// Reads the variables the way the CLI does at boot; `Err` is the boot failure.
    pub fn from_env() -> Result<ProviderConfig, String> {
        let table = std::env::var_os("ZCODE_BUILTIN_PROVIDER_CONFIG_FILE")
            .filter(|value| !value.is_empty())
            .ok_or(MISSING_TABLE)?;
        let personal = std::env::var_os("ZCODE_PERSONAL_PROVIDER_CONFIG_FILE")
            .is_some_and(|value| !value.is_empty());
        ProviderConfig::load(Path::new(&table), personal)
    }

    pub fn load(table: &Path, personal: bool) -> Result<ProviderConfig, String> {
        let table = std::path::absolute(table).map_err(|_| MISSING_TABLE.to_owned())?;
        let text = std::fs::read_to_string(&table).map_err(|_| MISSING_TABLE.to_owned())?;
        let parsed: serde_json::Value =
            serde_json::from_str(&text).map_err(|_| MISSING_TABLE.to_owned())?;
        let revision = match &parsed["revision"] {
            serde_json::Value::Number(number) => number.to_string(),
            serde_json::Value::String(text) if !text.is_empty() => text.clone(),
            _ => return Err(MISSING_TABLE.to_owned()),
        };
        Ok(ProviderConfig { table, revision, personal })
    }

    /// The `basedOnZCodeBuiltinRevision` a push must carry to take effect.
    pub fn builtin_revision(&self) -> String {
        let digest = Sha256::digest(self.table.to_string_lossy().as_bytes());
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("zcode-builtin:{}:{hex}", self.revision)
    }

    /// Whether a push based on `based_on` reaches the registry.
    pub fn accepts(&self, based_on: &str) -> bool {
        self.personal && based_on == self.builtin_revision()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_must_name_this_table_and_need_the_personal_config() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("zcode-builtin.json");
        assert_eq!(ProviderConfig::load(&table, true).unwrap_err(), MISSING_TABLE);
        std::fs::write(&table, r#"{"revision": 30}"#).unwrap();
        let config = ProviderConfig::load(&table, true).unwrap();
        let expected = config.builtin_revision();
        assert!(expected.starts_with("zcode-builtin:30:"));
        assert_eq!(expected.len(), "zcode-builtin:30:".len() + 64);
        assert!(config.accepts(&expected));
        assert!(!config.accepts("zcode-builtin:30:deadbeef"));
        let alone = ProviderConfig::load(&table, false).unwrap();
        assert!(!alone.accepts(&expected), "the built-in variable alone voids the push");
        std::fs::write(&table, "{}").unwrap();
        assert!(ProviderConfig::load(&table, true).is_err());
    }
}
