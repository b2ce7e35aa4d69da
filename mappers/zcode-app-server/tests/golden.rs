//! The golden traces in `traces/` replayed through the native mapper, with the shared replayer
//! (`zcode_contract::golden`, the one `zcode-acp mapper test` runs through the WebAssembly
//! component). Where each trace comes from: `traces/README.md`.

use std::fs;
use std::path::{Path, PathBuf};

use zcode_app_server::AppServerMapper;
use zcode_contract::golden;

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

#[test]
fn every_trace_replays() {
    let paths = golden::trace_files(&traces_dir()).expect("traces directory");
    assert!(paths.len() >= 3, "expected the trace set, found {}", paths.len());
    for path in paths {
        let text = fs::read_to_string(&path).expect("trace text");
        let report = golden::replay(&AppServerMapper, &text);
        assert!(report.passed(), "{}:\n{}", path.display(), report.render());
        assert!(report.matched > 0, "{} checks nothing", path.display());
    }
}

/// Rewrites the expectations of marked lines from the native mapper:
/// `ZCODE_BLESS=1 cargo test --test golden -- --ignored bless`. Review the diff afterwards.
#[test]
#[ignore = "rewrites traces/; run explicitly with ZCODE_BLESS=1"]
fn bless() {
    assert_eq!(
        std::env::var("ZCODE_BLESS").as_deref(),
        Ok("1"),
        "set ZCODE_BLESS=1 to rewrite traces"
    );
    golden::bless_files(&AppServerMapper, &traces_dir()).unwrap_or_else(|e| panic!("{e}"));
}
