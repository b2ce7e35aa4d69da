//! The install defects a fake install can carry.

use std::fmt;
use std::str::FromStr;

/// App version written by [`Variant::WrongAppVersion`].
pub const WRONG_APP_VERSION: &str = "0.0.1";
/// CLI version the runner is told to report for [`Variant::WrongCliVersion`].
pub const WRONG_CLI_VERSION: &str = "0.0.2";

/// What is wrong with a fake install, if anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Variant {
    /// A faithful install of the simulator's files.
    #[default]
    Good,
    /// One byte appended to `out/host/index.js`.
    TamperedHostHash,
    /// The bundle metadata names another platform than the one requested.
    WrongPlatform,
    /// `package.json` in the host archive holds [`WRONG_APP_VERSION`].
    WrongAppVersion,
    /// The launcher sets `ZCODE_SIM_CLI_VERSION` to [`WRONG_CLI_VERSION`].
    WrongCliVersion,
    /// The host RPC module (`out/host/chunk-KGXW6KHC.js`) is absent.
    MissingFile,
    /// The bundle metadata holds one key more than ZCode writes.
    ExtraMetadataKey,
    /// `zcode.cjs` differs from the simulator's; the host files still match.
    ModifiedCli,
}

impl Variant {
    pub const ALL: [Variant; 8] = [
        Variant::Good,
        Variant::TamperedHostHash,
        Variant::WrongPlatform,
        Variant::WrongAppVersion,
        Variant::WrongCliVersion,
        Variant::MissingFile,
        Variant::ExtraMetadataKey,
        Variant::ModifiedCli,
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
