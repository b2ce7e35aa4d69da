//! The operating system and CPU of this process, in the spellings installs use.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Macos,
    Linux,
    Windows,
}

/// `<os>-<arch>` as Node spells it (`darwin-arm64`, `linux-x64`, `win32-x64`), which is what
/// ZCode's bundle metadata records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    pub os: Option<Os>,
    /// Node's name for this process's OS (`darwin`, `linux`, `win32`, or Rust's name if other).
    pub node_os: String,
    /// Node's name for this process's CPU (`x64`, `arm64`, or Rust's name if other).
    pub node_arch: String,
}

impl Platform {
    pub fn current() -> Self {
        Self::from_rust(std::env::consts::OS, std::env::consts::ARCH)
    }

    pub fn from_rust(os: &str, arch: &str) -> Self {
        let (os, node_os) = match os {
            "macos" => (Some(Os::Macos), "darwin"),
            "linux" => (Some(Os::Linux), "linux"),
            "windows" => (Some(Os::Windows), "win32"),
            other => (None, other),
        };
        let node_arch = match arch {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            "x86" => "ia32",
            other => other,
        };
        Self { os, node_os: node_os.to_string(), node_arch: node_arch.to_string() }
    }

    /// The metadata spelling, e.g. `linux-x64`.
    pub fn tag(&self) -> String {
        format!("{}-{}", self.node_os, self.node_arch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spells_platforms_as_node_does() {
        assert_eq!(Platform::from_rust("macos", "aarch64").tag(), "darwin-arm64");
        assert_eq!(Platform::from_rust("linux", "x86_64").tag(), "linux-x64");
        assert_eq!(Platform::from_rust("windows", "x86_64").tag(), "win32-x64");
        assert_eq!(Platform::from_rust("freebsd", "x86_64").os, None);
    }
}
