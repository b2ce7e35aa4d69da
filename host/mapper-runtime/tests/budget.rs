//! The CPU budget grows with the work: input the agent accepts (a 12 MiB prompt, a 12 MiB event,
//! a frame of that size pushed in pieces, a batch of thousands of events) never traps a mapper
//! that does proportional work, while a loop is still stopped, however large its input. Each
//! large case also runs under the old fixed budget, which must trap: the cases are large enough
//! to need the scaling.

mod support;

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use support::{
    event, load_conformance, load_hostile, runtime, runtime_with, session, within_bound,
};
use zcode_contract::{
    Action, Effects, Inbound, Mapper, MapperFault, NativeData, SessionInput, SessionOp, Step,
};
use zcode_mapper_runtime::{FuelBudget, RuntimeConfig, WasmMapper};

const MIB: usize = 1 << 20;

/// The conformance guest under the default budget.
fn scaled() -> Arc<WasmMapper> {
    static MAPPER: OnceLock<Arc<WasmMapper>> = OnceLock::new();
    MAPPER.get_or_init(|| load_conformance(&runtime())).clone()
}

/// The conformance guest under the budget before it grew with the work: 50 M for every call.
fn fixed() -> Arc<WasmMapper> {
    static MAPPER: OnceLock<Arc<WasmMapper>> = OnceLock::new();
    MAPPER
        .get_or_init(|| {
            let fuel = FuelBudget { base: 50_000_000, per_byte: 0, per_input: 0 };
            load_conformance(&runtime_with(RuntimeConfig { fuel, ..RuntimeConfig::default() }))
        })
        .clone()
}

/// About `bytes` of prose with characters JSON must escape.
fn prose(bytes: usize) -> String {
    let line = "The quick \"brown\" fox\njumps over the lazy dog; ünïcödé text. ";
    line.repeat(bytes / line.len() + 1)
}

fn assert_out_of_fuel(fault: MapperFault) {
    assert!(fault.0.starts_with("mapper trapped: all fuel consumed"), "{fault}");
}

fn prompt_of(text: &str) -> SessionOp {
    SessionOp::Prompt(json!({ "prompt": [{ "type": "text", "text": text }] }).to_string())
}

fn prompt(mapper: Arc<WasmMapper>, op: SessionOp) -> Result<Step, MapperFault> {
    within_bound(move || session(&mapper).start(1, &op, 1))
}

fn map(mapper: Arc<WasmMapper>, batch: Vec<SessionInput>) -> Result<Effects, MapperFault> {
    within_bound(move || session(&mapper).map(batch.to_vec()))
}

#[test]
fn a_12_mib_prompt_becomes_a_native_request() {
    let text = prose(12 * MIB);
    let op = prompt_of(&text);
    let step = prompt(scaled(), op.clone());
    let Ok(Step::Wait(outgoing)) = step else { panic!("{:?}", step.map(|_| ())) };
    let request: Value = serde_json::from_slice(&outgoing.requests[0].bytes).expect("JSON line");
    assert_eq!(request["params"]["content"].as_str(), Some(text.as_str()));

    assert_out_of_fuel(prompt(fixed(), op).unwrap_err());
}

#[test]
fn a_12_mib_event_maps_to_an_update() {
    let delta = prose(12 * MIB);
    let batch = vec![event(&json!({ "delta": delta }).to_string())];
    let effects = map(scaled(), batch.clone()).expect("mapped");
    let [Action::Update(update)] = effects.actions.as_slice() else {
        panic!("one update expected")
    };
    let update: Value = serde_json::from_str(update).unwrap();
    assert_eq!(update["content"]["text"].as_str(), Some(delta.as_str()));

    assert_out_of_fuel(map(fixed(), batch).unwrap_err());
}

/// Each input has a cost of its own besides its bytes: tiny events need the per-input share.
#[test]
fn a_batch_of_many_tiny_events_maps() {
    let batch: Vec<_> = (0..20_000).map(|_| event("x")).collect();
    assert_eq!(map(scaled(), batch.clone()).expect("mapped").actions.len(), 20_000);

    assert_out_of_fuel(map(fixed(), batch).unwrap_err());
}

/// Pushes a 12 MiB frame in the 64 KiB pieces the core reads, and returns what the last piece
/// completed. Only the last push parses the frame, with 64 KiB of input of its own: its budget
/// must come from the memory the buffered frame holds.
fn push_in_pieces(mapper: Arc<WasmMapper>, frame: Vec<u8>) -> Result<Vec<Inbound>, String> {
    within_bound(move || {
        let mut connection = mapper.connection().unwrap();
        let mut last = Vec::new();
        for piece in frame.chunks(64 * 1024) {
            last = connection.push(piece).map_err(|error| error.message)?;
        }
        Ok(last)
    })
}

#[test]
fn a_12_mib_frame_pushed_in_pieces_is_parsed() {
    let delta = prose(12 * MIB);
    let frame = format!("{}\n", json!({ "route": "s1", "payload": { "delta": delta } }));
    let inbound = push_in_pieces(scaled(), frame.clone().into_bytes());
    let inbound = inbound.expect("parsed");
    let [Inbound::Event(routed)] = inbound.as_slice() else { panic!("one event expected") };
    assert_eq!(routed.route, "s1");
    let NativeData::Text(payload) = &routed.payload else { panic!("text payload") };
    let payload: Value = serde_json::from_str(payload).unwrap();
    assert_eq!(payload["delta"].as_str(), Some(delta.as_str()));

    let fault = push_in_pieces(fixed(), frame.into_bytes()).unwrap_err();
    assert!(fault.contains("all fuel consumed"), "{fault}");
}

/// A large event that a connection hands on in pieces is joined by its session, which makes
/// nothing until it has it all. The call that maps it then has almost no input of its own: it
/// is budgeted for what the calls that made nothing handed in (issue 27). Before, it ran out of
/// fuel.
#[test]
fn a_24_mib_event_joined_from_pieces_maps() {
    let text = "lorem ipsum ".repeat(2 * MIB);
    let expected = text.clone();
    let effects = within_bound(move || {
        let mut session = session(&scaled());
        for piece in text.as_bytes().chunks(64 * 1024) {
            let piece = std::str::from_utf8(piece).expect("ASCII");
            let held = session.map(vec![event(&format!("hold:{piece}"))]).expect("held");
            assert_eq!(held, Effects::default(), "a piece makes nothing");
        }
        session.map(vec![event("release")])
    })
    .expect("the whole event mapped");
    let [Action::Update(update)] = effects.actions.as_slice() else { panic!("one update") };
    let update: Value = serde_json::from_str(update).unwrap();
    assert_eq!(update["content"]["text"].as_str(), Some(expected.as_str()));
}

#[test]
fn a_loop_is_stopped_however_large_its_input() {
    let batch = vec![event("spin"), event(&prose(4 * MIB))];
    let fault = map(load_hostile(&runtime()), batch).unwrap_err();
    assert_out_of_fuel(fault.clone());
    // The limit it hit grew with the input: more than the base, by at least the input's share.
    let limit: u64 = fault
        .0
        .split("CPU limit of ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next().and_then(|n| n.parse().ok()))
        .expect("the message names the limit");
    let budget = FuelBudget::default();
    assert!(limit >= budget.base + budget.per_byte * (4 * MIB) as u64, "{limit}");
}
