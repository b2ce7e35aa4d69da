//! Bounded property test of the zcode-task-v1 event mapping (the CI share of the
//! `native_events` fuzz target): random scripts of mutated native events, answers, cancels and
//! prompts against a session with a running turn.

use proptest::prelude::*;
use zcode_acp_fuzz::events::{Move, run, script};

proptest! {
    #![proptest_config(ProptestConfig { cases: 800, ..ProptestConfig::default() })]

    #[test]
    fn any_event_script_keeps_the_mapping_properties(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let script = script(&mut arbitrary::Unstructured::new(&bytes));
        run(&script);
    }
}

/// Every real payload of the golden traces, unchanged, passes the checks (the templates are
/// not broken to begin with).
#[test]
fn the_trace_payloads_pass_unchanged() {
    let templates = zcode_acp_fuzz::event_templates();
    assert!(templates.len() > 20, "too few templates: {}", templates.len());
    let script: Vec<Move> = templates
        .iter()
        .map(|t| Move::Event { payload: t.to_string(), must_break: false })
        .collect();
    run(&script);
}

/// The checks can fail: an event type no release has must break the stream, and the checker
/// notices when it does not (here: a known, ignorable event claimed to be unknown).
#[test]
fn the_errors_are_not_silence_check_can_fail() {
    let unknown = r#"{"type":"fuzz.invented.1","detail":{}}"#;
    run(&[Move::Event { payload: unknown.into(), must_break: true }]);
    let ignorable = r#"{"type":"state.updated","notification":{"status":"idle"}}"#;
    let caught = std::panic::catch_unwind(|| {
        run(&[Move::Event { payload: ignorable.into(), must_break: true }]);
    });
    assert!(caught.is_err(), "the checker accepted silence for a must-break event");
}

/// The input with which `native_events` found F-1 (docs/reliability.md): a mutation renames
/// the allowing option `deny`, beside the real deny option. The mapper must not declare an
/// ambiguous deny option (it fails until F-1 is fixed).
#[test]
fn finding_f1_an_ambiguous_deny_option_is_never_declared() {
    zcode_acp_fuzz::events::check_events(&[
        0x2e, 0x25, 0x95, 0x01, 0x94, 0x95, 0x01, 0x94, 0x3c, 0xad, 0x66, 0x87, 0x3c, 0x3c, 0x6e,
        0x65, 0x00, 0x00, 0x00, 0x2d,
    ]);
}
