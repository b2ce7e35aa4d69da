//! Rough costs of the runtime, printed rather than asserted (machines are noisy). Run with
//! `cargo test --release -p zcode-mapper-runtime --test measure -- --ignored --nocapture`.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{conformance, event, hostile, runtime, runtime_with, session};
use zcode_contract::{Action, Mapper, SessionOp, Step};
use zcode_mapper_runtime::{CacheOutcome, RuntimeConfig};

/// A 300-byte streaming text delta, mapped by the conformance guest with serde_json into an ACP
/// `agent_message_chunk` update (the shape of the wasm-mappers study's benchmark event).
const EVENT: &str = concat!(
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":\"The quick brown fox jumps over ",
    "the lazy dog while the mapper turns native events into ACP updates; this sentence pads ",
    "the event to about three hundred bytes so that it resembles a typical streamed chunk of ",
    "model output text.\",\"session\":\"s-1\",\"seq\":42,\"turn\":\"turn-7\",\"kind\":\"text\"}"
);

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time_each(rounds: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..rounds)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

#[test]
#[ignore = "measurement; run explicitly with --release"]
fn measure_runtime_costs() {
    let bytes = conformance();
    println!("component: {} bytes, event: {} bytes", bytes.len(), EVENT.len());

    let compile = time_each(5, || drop(runtime().load_bytes("m", bytes).unwrap()));
    println!("load with compilation (no cache):   {compile:?} (median of 5)");

    let dir = tempfile::tempdir().unwrap();
    let cached =
        || runtime_with(RuntimeConfig { cache_dir: Some(dir.path().into()), ..Default::default() });
    let first = cached().load_bytes("m", bytes).unwrap();
    assert_eq!(first.cache_outcome(), &CacheOutcome::Miss);
    let hit = time_each(20, || {
        let mapper = cached().load_bytes("m", bytes).unwrap();
        assert_eq!(mapper.cache_outcome(), &CacheOutcome::Hit);
    });
    println!("load from the cache (engine + hit): {hit:?} (median of 20)");

    let mapper = runtime().load_bytes("m", bytes).unwrap();
    let new_session = time_each(1000, || drop(session(&mapper)));
    println!("new session (store + instance + constructor): {new_session:?} (median of 1000)");

    let trivial = runtime().load_bytes("h", hostile()).unwrap();
    let mut s = session(&mapper);
    let effects = s.map(vec![event(EVENT)]).unwrap();
    let [Action::Update(update)] = effects.actions.as_slice() else { panic!("{effects:?}") };
    println!("update: {} bytes", update.len());

    let mut t = session(&trivial);
    for (name, session, input) in [
        ("map, one 300-byte JSON event", &mut s, event(EVENT)),
        ("map, one trivial event (echo:x)", &mut t, event("echo:x")),
    ] {
        let batch = [input];
        for _ in 0..10_000 {
            session.map(batch.to_vec()).unwrap();
        }
        let per_call = time_each(100_000, || drop(session.map(batch.to_vec()).unwrap()));
        let calls = 100_000;
        let start = Instant::now();
        for _ in 0..calls {
            session.map(batch.to_vec()).unwrap();
        }
        let throughput = calls as f64 / start.elapsed().as_secs_f64();
        println!("{name}: median {per_call:?} per call, {throughput:.0} calls/s");
    }

    // The boundary alone: a batch of nothing (one update back), and a call with no input
    // returning an empty list.
    let mut empty = session(&trivial);
    let per_call = time_each(100_000, || drop(empty.map(vec![]).unwrap()));
    println!("map, an empty batch: median {per_call:?} per call");
    let mut connection = trivial.connection().unwrap();
    let per_call = time_each(100_000, || drop(connection.finish().unwrap()));
    println!("connection finish (empty list back): median {per_call:?} per call");

    let batch: Vec<_> = (0..100).map(|_| event(EVENT)).collect();
    let per_batch = time_each(1000, || drop(s.map(batch.to_vec()).unwrap()));
    println!("map, a batch of 100 such events: median {per_batch:?} per call");

    // How long a loop runs before its budget stops it, with nothing and with a lot handed in.
    for mib in [0, 1, 12] {
        let batch = [event("spin"), event(&"x".repeat(mib << 20))];
        let mut spinner = session(&trivial);
        let start = Instant::now();
        let fault = spinner.map(batch.to_vec()).unwrap_err();
        println!("a loop handed {mib} MiB stopped after {:?}: {fault}", start.elapsed());
    }

    for mib in [1, 12] {
        let text = "The quick \"brown\" fox\njumps over the lazy dog. ".repeat((mib << 20) / 48);
        let params = json!({ "prompt": [{ "type": "text", "text": text }] }).to_string();
        let mut prompt = session(&mapper);
        let start = Instant::now();
        let step = prompt.start(1, &SessionOp::Prompt(params.clone()), 1).unwrap();
        let elapsed = start.elapsed();
        assert!(matches!(step, Step::Wait(_)));
        println!("prompt of {} bytes -> native request: {elapsed:?}", params.len());
    }
}
