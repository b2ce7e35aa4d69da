//! The bridge script: ZCode's Electron executable runs it as Node (`-e <script>`); it starts the
//! official host service in a worker and serves the NDJSON envelope ([`crate::envelope`]) on
//! stdin/stdout. One core (`bridge/core.js`) for every generation; a generation's release file
//! (`<generation>/bridge/release.js`) goes in front of it and defines `RELEASE`, what that
//! generation's host differs in. `bridge/README.md` has the contract, `bridge/test/` the tests.

/// The core of the script, shared by every generation.
pub const CORE: &str = include_str!("../bridge/core.js");

/// The script a generation launches: its release file, then the core.
pub fn script(release: &str) -> String {
    format!("{release}\n{CORE}")
}
