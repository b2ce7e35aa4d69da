//! The bundle metadata check (`.node-bundle-meta.json`): a strict JSON object holding
//! exactly the keys the contract names, with exactly the values it names.

use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use zcode_contract::DesktopLayout;

use crate::verdict::{GateRule, Refusal};

/// Largest metadata file accepted (the real one is ~150 bytes).
pub const MAX_METADATA: u64 = 64 * 1024;

/// The metadata's entries in file order. Duplicate keys are kept so that they can be refused
/// (a JSON map would silently keep the last one).
#[derive(Debug)]
pub struct MetadataEntries(pub Vec<(String, String)>);

impl<'de> Deserialize<'de> for MetadataEntries {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = MetadataEntries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object with string values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetadataEntries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, String>()? {
                    entries.push(entry);
                }
                Ok(MetadataEntries(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// Parses the metadata file strictly.
pub fn parse_metadata(bytes: &[u8]) -> Result<MetadataEntries, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("bundle metadata is not valid: {e}"))
}

/// The value the metadata gives for `key`, if any (for reports).
pub fn value_of<'a>(entries: &'a MetadataEntries, key: &str) -> Option<&'a str> {
    entries.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Applies the layout's metadata rules in the gate's order: keys and literal values, then the
/// platform, then the entry name.
pub fn check_metadata(
    entries: &MetadataEntries,
    layout: &DesktopLayout,
    platform_tag: &str,
    cli_file_name: &str,
) -> Result<(), Refusal> {
    let refuse = |reason: String| Refusal::new(GateRule::Metadata, reason);
    let platform_key = layout.metadata_platform_key.as_str();
    let mut seen = HashSet::new();
    for (key, value) in &entries.0 {
        if !seen.insert(key.as_str()) {
            return Err(refuse(format!("bundle metadata holds key `{key}` twice")));
        }
        if !platform_key.is_empty() && key == platform_key {
            continue;
        }
        match layout.metadata_pairs.iter().find(|(k, _)| k == key) {
            None => return Err(refuse(format!("bundle metadata holds unexpected key `{key}`"))),
            Some((_, expected)) if expected != value => {
                return Err(refuse(format!(
                    "bundle metadata `{key}` is `{value}`, expected `{expected}`"
                )));
            }
            Some(_) => {}
        }
    }
    let platform_keys = Some(platform_key).filter(|k| !k.is_empty());
    let expected_keys = layout.metadata_pairs.iter().map(|(k, _)| k.as_str()).chain(platform_keys);
    for key in expected_keys {
        if !seen.contains(key) {
            return Err(refuse(format!("bundle metadata lacks key `{key}`")));
        }
    }

    let bundle_platform = value_of(entries, platform_key).unwrap_or_default();
    if !platform_key.is_empty() && bundle_platform != platform_tag {
        return Err(Refusal::new(
            GateRule::Platform,
            format!(
                "ZCode bundle platform does not match the current process: the install is \
                 built for `{bundle_platform}`, this process is `{platform_tag}`"
            ),
        ));
    }

    let entry_key = layout.metadata_entry_key.as_str();
    if !entry_key.is_empty() {
        let entry = value_of(entries, entry_key).unwrap_or_default();
        if entry != cli_file_name {
            return Err(Refusal::new(
                GateRule::MetadataEntry,
                format!(
                    "bundle entry `{entry}` does not match the resolved CLI entry `{cli_file_name}`"
                ),
            ));
        }
    }
    Ok(())
}
