//! `--simulate`: a fake ZCode install whose runtime is this binary's simulator, so a simulated
//! session goes through the same discovery, gate, bridge and mapper path as a real one.

use std::path::PathBuf;

use zcode_fake_install::{FakeInstall, FakeLayout, Runner};
use zcode_sim::InstallKind;

use crate::paths;

/// The ZCode release the simulator plays by default: the newest Desktop, the ZCode most users
/// run (the older releases are one `--simulate-version` away).
pub const DEFAULT_SIMULATED_VERSION: &str = "desktop-4.0.0";

/// A simulated install that lives as long as this value (a temporary folder).
pub struct SimulatedInstall {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

/// Lays out a fresh simulated install of `release` (a name `--simulate-version` takes: `desktop-4.0.0`,
/// `3.11.2`, `runtime-4.0.0`, ...). Its sessions persist in the cache folder, so they
/// can be listed and loaded by later processes like those of a real install.
pub fn prepare(release: &str) -> Result<SimulatedInstall, String> {
    let release = zcode_sim::simulated_release(release).ok_or_else(|| {
        format!(
            "the simulator plays no release `{release}`; it plays {}",
            zcode_sim::profile_names().join(", ")
        )
    })?;
    let layout = match release.kind {
        InstallKind::Desktop => FakeLayout::Desktop,
        InstallKind::Runtime => FakeLayout::Runtime,
    };
    let dir = tempfile::Builder::new()
        .prefix("zcode-acp-sim-")
        .tempdir()
        .map_err(|e| format!("cannot create the simulated install: {e}"))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut args = vec!["simulator".to_string(), "runtime".to_string()];
    if let Some(state) = paths::cache_dir().map(|dir| dir.join("simulator-state")) {
        args.extend(["--state".to_string(), state.display().to_string()]);
    }
    let root = FakeInstall::builder(dir.path().join("ZCode"))
        .app_version(release.app_version)
        .layout(layout)
        .runner(Runner { program: exe, args })
        .build()
        .map_err(|e| format!("cannot create the simulated install: {e}"))?;
    Ok(SimulatedInstall { _dir: dir, root })
}
