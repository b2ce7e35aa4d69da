//! Identity and compatibility: which installs a mapper drives, and how they are started.

use serde::{Deserialize, Serialize};

use crate::platform::Os;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayoutKind {
    Desktop,
    Runtime,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesktopLayout {
    pub os: Os,
    pub executable: String,
    pub cli_entry: String,
    pub metadata: String,
    pub metadata_pairs: Vec<(String, String)>,
    pub metadata_platform_key: String,
    pub metadata_entry_key: String,
    pub host_archive: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeLayout {
    pub runtime_dir: String,
    pub package_file: String,
    pub package_pairs: Vec<(String, String)>,
    pub cli_entry: String,
    pub node_candidates: Vec<String>,
    pub min_node_version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    Desktop(DesktopLayout),
    Runtime(RuntimeLayout),
}

impl Layout {
    pub fn kind(&self) -> LayoutKind {
        match self {
            Layout::Desktop(_) => LayoutKind::Desktop,
            Layout::Runtime(_) => LayoutKind::Runtime,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePin {
    pub role: String,
    pub path: String,
    pub sha256: Option<String>,
    pub required_exports: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    pub id: String,
    pub kind: LayoutKind,
    pub app_version: String,
    pub cli_version: String,
    pub files: Vec<FilePin>,
    pub identity: Option<String>,
    pub simulated: bool,
    #[serde(default)]
    pub data_files: Vec<crate::DataFile>,
}

impl Release {
    /// Every file of the release has a pinned hash.
    pub fn pinned(&self) -> bool {
        self.files.iter().all(|file| file.sha256.is_some())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionProbe {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialSource {
    pub name: String,
    pub file: String,
    pub key: String,
    pub lookups: Vec<CredentialLookup>,
    pub encodings: Vec<CredentialEncoding>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialLookup {
    pub name: String,
    pub key: String,
    pub field: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CredentialEncoding {
    Plain,
    AesGcm(AesGcmEncoding),
    Unreadable(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AesGcmEncoding {
    pub prefix: String,
    pub key_env: String,
    pub fallback_seed: String,
}

/// `Default` is empty, for `..Contract::default()` after the fields a mapper sets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    pub protocol_id: String,
    pub description: String,
    pub layouts: Vec<Layout>,
    pub releases: Vec<Release>,
    pub cli_version_probe: VersionProbe,
    pub credentials_file: String,
    pub credential_sources: Vec<CredentialSource>,
    /// Optional ACP methods the mapper serves ([`FORK_METHOD`]); absent in a serialized
    /// contract of a mapper that offers none.
    #[serde(default)]
    pub offers: Vec<String>,
    #[serde(default)]
    pub facts: Vec<crate::FactSource>,
}

/// The ACP method a mapper offers when it can open a session as a fork of another.
pub const FORK_METHOD: &str = "session/fork";

impl Contract {
    /// Whether the mapper serves the optional ACP `method`.
    pub fn offers(&self, method: &str) -> bool {
        self.offers.iter().any(|offered| offered == method)
    }
}

impl Contract {
    /// The desktop layout for `os`, if the mapper drives desktop installs there.
    pub fn desktop_layout(&self, os: Os) -> Option<&DesktopLayout> {
        self.layouts.iter().find_map(|layout| match layout {
            Layout::Desktop(desktop) if desktop.os == os => Some(desktop),
            _ => None,
        })
    }

    /// The standalone-runtime layout, if the mapper drives runtime installs.
    pub fn runtime_layout(&self) -> Option<&RuntimeLayout> {
        self.layouts.iter().find_map(|layout| match layout {
            Layout::Runtime(runtime) => Some(runtime),
            _ => None,
        })
    }

    pub fn release(&self, id: &str) -> Option<&Release> {
        self.releases.iter().find(|release| release.id == id)
    }

    pub fn credential_source(&self, name: &str) -> Option<&CredentialSource> {
        self.credential_sources.iter().find(|source| source.name == name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifiedInstall {
    pub install_root: String,
    pub kind: LayoutKind,
    pub executable: String,
    pub cli_entry: String,
    pub host_archive: String,
    pub release_id: String,
    pub app_version: String,
    pub cli_version: String,
    pub files: Vec<(String, String)>,
    pub unpinned: Vec<String>,
    pub home: String,
    #[serde(default)]
    pub facts: crate::Facts,
}

impl VerifiedInstall {
    /// The absolute path of the file with `role`.
    pub fn file(&self, role: &str) -> Option<&str> {
        self.files.iter().find(|(r, _)| r == role).map(|(_, path)| path.as_str())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchPlan {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
    pub cwd: String,
    pub stdin_preamble: Vec<u8>,
    pub needs_handshake: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthCommand {
    Login,
    Logout,
}
