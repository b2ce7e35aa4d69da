//! An isolated place to run `zcode-acp`: its own home, data, mapper cache, simulator state and
//! workspace, kept for the whole benchmark run (so the mapper cache is warm after the first
//! start).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `--simulate` on ZCode 3.11.2: the release the benchmarks that name no generation have always
/// measured (the simulator's default was 3.11.2 until it became desktop-4.0.0), so their figures
/// stay comparable across runs; the relay benchmark measures every generation.
pub const SIMULATE_3_11: [&str; 3] = ["--simulate", "--simulate-version", "3.11.2"];

pub struct BenchEnv {
    root: tempfile::TempDir,
    binary: PathBuf,
}

impl BenchEnv {
    pub fn new(binary: PathBuf) -> Result<Self, String> {
        let root = tempfile::Builder::new()
            .prefix("zcode-acp-bench-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
        for dir in ["home", "data", "cache", "state", "workspace"] {
            std::fs::create_dir_all(root.path().join(dir))
                .map_err(|e| format!("cannot create {dir}: {e}"))?;
        }
        Ok(Self { root, binary })
    }

    pub fn binary(&self) -> &Path {
        &self.binary
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// The workspace sessions are opened in (canonical, as the agent canonicalizes it).
    pub fn workspace(&self) -> PathBuf {
        self.path("workspace").canonicalize().unwrap_or_else(|_| self.path("workspace"))
    }

    /// `zcode-acp <args>` with this environment only (no inherited settings, no logging).
    pub fn zcode_acp(&self, args: &[&str]) -> Command {
        self.command(&self.binary, args)
    }

    /// Another zcode-acp build (a variant under comparison) in the same environment.
    pub fn command(&self, binary: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(binary);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", self.path("home"))
            .env("XDG_CACHE_HOME", self.path("cache"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("ZCODE_SIM_STATE", self.path("state"))
            .env("ZCODE_ACP_LOG", "error");
        command
    }
}
