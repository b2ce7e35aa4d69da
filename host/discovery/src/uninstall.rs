//! Windows installs found through their uninstall entries (`…\CurrentVersion\Uninstall` in
//! HKCU, HKLM and HKLM `WOW6432Node`). ZCode 3.14.5's entry has no `InstallLocation`; its
//! `UninstallString` quotes the uninstaller in the install root
//! (`"<root>\Uninstall ZCode.exe" /allusers`), so the root is that file's folder.
//!
//! The registry is read behind [`UninstallRegistry`], so the derivation is tested anywhere
//! with recorded entries; only [`SystemRegistry`] touches the real registry, on Windows.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The key name of ZCode's entry: its installer's product code.
const PRODUCT_CODE: &str = "268ce9e6-a30b-5890-ad18-d4b3ebba5377";
/// The display name ZCode's installer writes (`ZCode` or `ZCode <version>`).
const DISPLAY_NAME: &str = "ZCode";

/// One entry under an `Uninstall` key, as the registry holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UninstallEntry {
    /// Hive and key path, e.g. `HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\{…}`.
    pub key: String,
    pub display_name: Option<String>,
    pub display_version: Option<String>,
    pub install_location: Option<String>,
    pub uninstall_string: Option<String>,
}

/// Where uninstall entries come from.
pub trait UninstallRegistry {
    /// Every entry under the uninstall keys (any product); unreadable keys are skipped.
    fn entries(&self) -> Vec<UninstallEntry>;
}

/// Entries recorded elsewhere (tests, fake installs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordedRegistry(pub Vec<UninstallEntry>);

impl RecordedRegistry {
    /// Entries from JSON: one entry object or an array of them.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let entries = match value {
            serde_json::Value::Array(_) => serde_json::from_value(value),
            other => serde_json::from_value(other).map(|entry| vec![entry]),
        };
        entries.map(RecordedRegistry).map_err(|e| format!("not an uninstall entry: {e}"))
    }
}

impl UninstallRegistry for RecordedRegistry {
    fn entries(&self) -> Vec<UninstallEntry> {
        self.0.clone()
    }
}

/// The registry of this machine (no entries off Windows).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemRegistry;

impl UninstallRegistry for SystemRegistry {
    fn entries(&self) -> Vec<UninstallEntry> {
        system::entries()
    }
}

/// Whether `entry` is ZCode's: its key is the product code, or its display name is `ZCode`
/// or `ZCode <version>`.
pub fn is_zcode(entry: &UninstallEntry) -> bool {
    let key = entry.key.rsplit(['\\', '/']).next().unwrap_or_default();
    let key = key.trim_start_matches('{').trim_end_matches('}');
    let named = entry.display_name.as_deref().is_some_and(|name| {
        name == DISPLAY_NAME
            || name.strip_prefix(DISPLAY_NAME).is_some_and(|rest| {
                rest.strip_prefix(' ').is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            })
    });
    key.eq_ignore_ascii_case(PRODUCT_CODE) || named
}

/// The install root an entry names: `InstallLocation` when set, else the folder of the
/// executable its `UninstallString` starts with (quoted, or unquoted without spaces).
pub fn root_of(entry: &UninstallEntry) -> Option<PathBuf> {
    if let Some(location) = entry.install_location.as_deref().map(str::trim)
        && !location.is_empty()
    {
        let location = location.trim_matches('"').trim_end_matches(['\\', '/']);
        return (!location.is_empty()).then(|| PathBuf::from(location));
    }
    let command = entry.uninstall_string.as_deref()?.trim();
    let program = match command.strip_prefix('"') {
        Some(rest) => rest.split_once('"')?.0,
        // Unquoted, a path with spaces cannot be told from its arguments: only the first word,
        // and only if that word is the executable.
        None => command.split_whitespace().next()?,
    };
    if !program.to_ascii_lowercase().ends_with(".exe") {
        return None;
    }
    let (folder, _) = program.rsplit_once(['\\', '/'])?;
    (!folder.is_empty() && !folder.ends_with(':')).then(|| PathBuf::from(folder))
}

/// The install roots ZCode's uninstall entries name, in registry order, without repeats.
pub fn zcode_roots(registry: &dyn UninstallRegistry) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for root in registry.entries().iter().filter(|e| is_zcode(e)).filter_map(root_of) {
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

#[cfg(windows)]
mod system {
    use windows_registry::{CURRENT_USER, Key, LOCAL_MACHINE};

    use super::UninstallEntry;

    const UNINSTALL: &str = r"Software\Microsoft\Windows\CurrentVersion\Uninstall";
    const UNINSTALL_WOW64: &str =
        r"Software\WOW6432Node\Microsoft\Windows\CurrentVersion\Uninstall";

    pub fn entries() -> Vec<UninstallEntry> {
        let hives: [(&str, &Key, &str); 3] = [
            ("HKCU", CURRENT_USER, UNINSTALL),
            ("HKLM", LOCAL_MACHINE, UNINSTALL),
            ("HKLM", LOCAL_MACHINE, UNINSTALL_WOW64),
        ];
        let mut entries = Vec::new();
        for (hive, root, path) in hives {
            let Ok(uninstall) = root.open(path) else { continue };
            let Ok(names) = uninstall.keys() else { continue };
            for name in names {
                let Ok(key) = uninstall.open(&name) else { continue };
                let text = |value: &str| key.get_string(value).ok();
                entries.push(UninstallEntry {
                    key: format!(r"{hive}\{path}\{name}"),
                    display_name: text("DisplayName"),
                    display_version: text("DisplayVersion"),
                    install_location: text("InstallLocation"),
                    uninstall_string: text("UninstallString"),
                });
            }
        }
        entries
    }
}

#[cfg(not(windows))]
mod system {
    use super::UninstallEntry;

    pub fn entries() -> Vec<UninstallEntry> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, location: Option<&str>, uninstall: Option<&str>) -> UninstallEntry {
        UninstallEntry {
            key: format!(
                r"HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\{PRODUCT_CODE}"
            ),
            display_name: Some(name.into()),
            display_version: Some("3.14.5".into()),
            install_location: location.map(Into::into),
            uninstall_string: uninstall.map(Into::into),
        }
    }

    #[test]
    fn the_root_is_the_quoted_uninstallers_folder_without_install_location() {
        let e = entry(
            "ZCode 3.14.5",
            None,
            Some(r#""C:\Program Files\ZCode\Uninstall ZCode.exe" /allusers"#),
        );
        assert_eq!(root_of(&e), Some(PathBuf::from(r"C:\Program Files\ZCode")));
        let e = entry("ZCode", None, Some(r#""D:\Apps\ZCode\Uninstall ZCode.exe" /currentuser"#));
        assert_eq!(root_of(&e), Some(PathBuf::from(r"D:\Apps\ZCode")));
        let e = entry("ZCode", Some(r"E:\ZCode\"), Some(r#""C:\x\Uninstall ZCode.exe""#));
        assert_eq!(root_of(&e), Some(PathBuf::from(r"E:\ZCode")), "InstallLocation wins");
        let e = entry("ZCode", Some("  "), Some(r"C:\ZCode\uninstall.exe /S"));
        assert_eq!(root_of(&e), Some(PathBuf::from(r"C:\ZCode")));
    }

    #[test]
    fn an_uninstall_string_that_names_no_folder_gives_no_root() {
        for uninstall in [
            r"C:\Program Files\ZCode\Uninstall ZCode.exe /allusers", // unquoted with spaces
            r#""Uninstall ZCode.exe""#,
            r#""C:\Uninstall ZCode.exe""#,
            r#""C:\ZCode\uninstall.bat""#,
            r#""C:\ZCode\Uninstall ZCode.exe"#, // unterminated quote
            "",
        ] {
            assert_eq!(root_of(&entry("ZCode", None, Some(uninstall))), None, "{uninstall}");
        }
        assert_eq!(root_of(&entry("ZCode", None, None)), None);
    }

    #[test]
    fn only_zcodes_entries_count() {
        let mut other = entry("ZCodeHelper 1.0", None, Some(r#""C:\Other\u.exe""#));
        other.key = r"HKCU\…\Uninstall\{1234}".into();
        assert!(!is_zcode(&other));
        let mut named = other.clone();
        named.display_name = Some("ZCode 3.14.5".into());
        assert!(is_zcode(&named));
        let mut keyed = other.clone();
        keyed.key = format!(r"HKCU\…\Uninstall\{{{}}}", PRODUCT_CODE.to_uppercase());
        assert!(is_zcode(&keyed));

        let registry = RecordedRegistry(vec![
            other,
            entry(
                "ZCode 3.14.5",
                None,
                Some(r#""D:\Program Files\ZCode\Uninstall ZCode.exe" /allusers"#),
            ),
            entry("ZCode 3.14.5", Some(r"D:\Program Files\ZCode"), None),
        ]);
        assert_eq!(zcode_roots(&registry), [PathBuf::from(r"D:\Program Files\ZCode")]);
    }

    #[test]
    fn recorded_entries_read_from_json() {
        let one = r#"{"key":"HKCU\\X","displayName":"ZCode","uninstallString":"\"/opt/z/Uninstall ZCode.exe\" /currentuser","installLocation":null}"#;
        let registry = RecordedRegistry::from_json(one).unwrap();
        assert_eq!(zcode_roots(&registry), [PathBuf::from("/opt/z")]);
        assert_eq!(RecordedRegistry::from_json(&format!("[{one},{one}]")).unwrap().0.len(), 2);
        assert!(RecordedRegistry::from_json("{\"key\":1}").is_err());
    }
}
