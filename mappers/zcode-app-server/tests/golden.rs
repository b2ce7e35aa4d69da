//! The golden traces in `traces/` replayed through the native mapper, with the shared replayer
//! (`zcode_golden`, the one `zcode-acp mapper test` runs through the WebAssembly
//! component). Where each trace comes from: `traces/README.md`.

use std::path::{Path, PathBuf};

use zcode_app_server::AppServerMapper;
use zcode_golden as golden;

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

#[test]
fn every_trace_replays() {
    let traces =
        golden::replay_files(&AppServerMapper, &traces_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert!(traces >= 3, "expected the full trace set, found {traces}");
}

/// Rewrites the expectations of marked lines from the native mapper:
/// `ZCODE_BLESS=1 cargo test --test golden -- --ignored bless`. Review the diff afterwards.
#[test]
#[ignore = "rewrites traces/; run explicitly with ZCODE_BLESS=1"]
fn bless() {
    golden::bless_files_if_asked(&AppServerMapper, &traces_dir()).unwrap_or_else(|e| panic!("{e}"));
}
