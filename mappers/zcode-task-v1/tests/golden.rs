//! The golden traces in `traces/` replayed through the native mapper (the same replayer
//! `zcode-acp mapper test` runs through the WebAssembly component).

use std::fs;
use std::path::{Path, PathBuf};

use zcode_contract::golden;
use zcode_task_v1::TaskV1Mapper;

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

fn traces() -> Vec<PathBuf> {
    golden::trace_files(&traces_dir()).expect("traces directory")
}

#[test]
fn every_trace_replays() {
    let paths = traces();
    assert!(paths.len() >= 12, "expected the full trace set, found {}", paths.len());
    for path in paths {
        let text = fs::read_to_string(&path).expect("trace text");
        let report = golden::replay(&TaskV1Mapper, &text);
        assert!(report.passed(), "{}:\n{}", path.display(), report.render());
        assert!(report.matched > 0, "{} checks nothing", path.display());
    }
}

#[test]
fn a_changed_expectation_shows_a_diff() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/turn-text.jsonl");
    let text = fs::read_to_string(path).expect("trace text");
    // Only the expectation spells the chunk this way (the event carries it as `delta`).
    let original = r#""text":"parse() reads ""#;
    assert_eq!(text.matches(original).count(), 1);
    let at = text.find(original).expect("expectation");
    let edited =
        format!("{}\"text\":\"parse() writes \"{}", &text[..at], &text[at + original.len()..]);
    let report = golden::replay(&TaskV1Mapper, &edited);
    assert_eq!(report.mismatches.len(), 1, "{}", report.render());
    let diff = &report.mismatches[0].diff;
    let changed = |sign: char, text: &str| {
        diff.lines().any(|line| line.starts_with(sign) && line.trim_end().ends_with(text))
    };
    assert!(changed('-', "\"text\": \"parse() writes \","), "{diff}");
    assert!(changed('+', "\"text\": \"parse() reads \","), "{diff}");
    assert_eq!(report.exit_code(), 1);
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
    golden::bless_files(&TaskV1Mapper, &traces_dir()).unwrap_or_else(|e| panic!("{e}"));
}
