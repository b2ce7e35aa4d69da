//! Where zcode-acp keeps its own files (never inside a ZCode install).

use std::path::PathBuf;

const APP: &str = "zcode-acp";

/// Precompiled mappers and the simulator's state: safe to delete at any time.
pub fn cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|dir| dir.join(APP))
}

/// The default drop-in mapper folder (`~/.local/share/zcode-acp/mappers` on Linux).
pub fn default_mappers_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join(APP).join("mappers"))
}

/// The user-only trust file of drop-in mappers (`~/.config/zcode-acp/trusted-mappers.json`
/// on Linux).
pub fn trust_file() -> Option<PathBuf> {
    dirs::config_dir().map(|dir| dir.join(APP).join(zcode_mapper_trust::TRUST_FILE))
}
