//! The install defects a fake install can carry.

use std::fmt;
use std::str::FromStr;

/// App version written by [`Variant::WrongAppVersion`].
pub const WRONG_APP_VERSION: &str = "0.0.1";
/// CLI version the runner is told to report for [`Variant::WrongCliVersion`].
pub const WRONG_CLI_VERSION: &str = "0.0.2";
/// App version written by [`Variant::NewerVersion`]: a ZCode no mapper knows yet.
pub const NEWER_APP_VERSION: &str = "3.19.0";
/// The Node version a fake runtime's `node` reports.
pub const NODE_VERSION: &str = "24.21.0";
/// The Node version it reports for [`Variant::NodeTooOld`].
pub const OLD_NODE_VERSION: &str = "22.12.0";
/// What a fake Electron executable reports as its Electron version (run as Node).
pub const FAKE_ELECTRON_VERSION: &str = "33.4.11";

/// What is wrong with a fake install, if anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Variant {
    /// A faithful install of the simulator's files.
    #[default]
    Good,
    /// One byte appended to a pinned host file: `out/host/index.js` of a desktop install, the
    /// Services Server entry of a runtime.
    TamperedHostHash,
    /// The bundle metadata names another platform than the one requested (desktop only).
    WrongPlatform,
    /// The app version (host archive or runtime package file) is [`WRONG_APP_VERSION`].
    WrongAppVersion,
    /// The launcher sets `ZCODE_SIM_CLI_VERSION` to [`WRONG_CLI_VERSION`].
    WrongCliVersion,
    /// A pinned host file is absent: the host RPC module (`out/host/chunk-KGXW6KHC.js`) of a
    /// desktop install, the Services Server entry of a runtime.
    MissingFile,
    /// The bundle metadata holds one key more than ZCode writes (desktop only).
    ExtraMetadataKey,
    /// The CLI / Agent entry `zcode.cjs` differs from the simulator's; the host files match.
    ModifiedCli,
    /// The app version is [`NEWER_APP_VERSION`], newer than any release a mapper knows.
    NewerVersion,
    /// The runtime's Node reports [`OLD_NODE_VERSION`] (runtime layouts only).
    NodeTooOld,
    /// The runtime's "Node" is an Electron executable (runtime layouts only).
    ElectronNode,
}

impl Variant {
    pub const ALL: [Variant; 11] = [
        Variant::Good,
        Variant::TamperedHostHash,
        Variant::WrongPlatform,
        Variant::WrongAppVersion,
        Variant::WrongCliVersion,
        Variant::MissingFile,
        Variant::ExtraMetadataKey,
        Variant::ModifiedCli,
        Variant::NewerVersion,
        Variant::NodeTooOld,
        Variant::ElectronNode,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Good => "good",
            Variant::TamperedHostHash => "tampered-host-hash",
            Variant::WrongPlatform => "wrong-platform",
            Variant::WrongAppVersion => "wrong-app-version",
            Variant::WrongCliVersion => "wrong-cli-version",
            Variant::MissingFile => "missing-file",
            Variant::ExtraMetadataKey => "extra-metadata-key",
            Variant::ModifiedCli => "modified-cli",
            Variant::NewerVersion => "newer-version",
            Variant::NodeTooOld => "node-too-old",
            Variant::ElectronNode => "electron-node",
        }
    }

    /// Whether the variant means something for a desktop install (bundle metadata) or for a
    /// runtime (its Node).
    pub fn applies_to(self, desktop: bool) -> bool {
        match self {
            Variant::WrongPlatform | Variant::ExtraMetadataKey => desktop,
            Variant::NodeTooOld | Variant::ElectronNode => !desktop,
            _ => true,
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Variant::ALL.into_iter().find(|v| v.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
            format!("unknown variant `{name}` (expected one of: {})", names.join(", "))
        })
    }
}
