//! The golden traces in `traces/` replayed through the native mapper (the same replayer
//! `zcode-acp mapper test` runs through the WebAssembly component).

use std::fs;
use std::path::{Path, PathBuf};

use zcode_golden as golden;
use zcode_task_v1::TaskV1Mapper;

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

#[test]
fn every_trace_replays() {
    let traces =
        golden::replay_files(&TaskV1Mapper, &traces_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert!(traces >= 12, "expected the full trace set, found {traces}");
}

#[test]
fn a_changed_expectation_shows_a_diff() {
    let path = traces_dir().join("turn-text.jsonl");
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
    golden::bless_files_if_asked(&TaskV1Mapper, &traces_dir()).unwrap_or_else(|e| panic!("{e}"));
}
