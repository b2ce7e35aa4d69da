//! Rough costs of the runtime, printed rather than asserted (machines are noisy). Run with
//! `cargo test --release -p zcode-mapper-runtime --test measure -- --ignored --nocapture`.

mod support;

use std::time::{Duration, Instant};

use support::{hostile, runtime, runtime_with, session};
use zcode_contract::Action;
use zcode_mapper_runtime::{CacheOutcome, RuntimeConfig};

/// A 300-byte streaming text delta, mapped by the guest with serde_json into an ACP
/// `agent_message_chunk` update (the shape of the wasm-mappers study's benchmark event).
const EVENT: &str = concat!(
    "json:{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",",
    "\"text\":\"The quick brown fox jumps over the lazy dog while the mapper turns native ",
    "events into ACP updates; this sentence pads the event to about three hundred bytes ",
    "so that it resembles a typical streamed chunk of model output text.\"},",
    "\"session\":\"s-1\",\"seq\":42}"
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
    let bytes = hostile();
    println!("component: {} bytes, event: {} bytes", bytes.len(), EVENT.len() - "json:".len());

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

    let mut s = session(&mapper);
    let Ok(actions) = s.map_event(EVENT) else { panic!("mapping failed") };
    let [Action::Update(update)] = actions.as_slice() else { panic!("{actions:?}") };
    println!("update: {} bytes", update.len());

    for (name, payload) in
        [("map-event, 300-byte JSON event", EVENT), ("map-event, echo:x", "echo:x")]
    {
        for _ in 0..10_000 {
            s.map_event(payload).unwrap();
        }
        let per_call = time_each(100_000, || drop(s.map_event(payload).unwrap()));
        let calls = 100_000;
        let start = Instant::now();
        for _ in 0..calls {
            s.map_event(payload).unwrap();
        }
        let throughput = calls as f64 / start.elapsed().as_secs_f64();
        println!("{name}: median {per_call:?} per call, {throughput:.0} calls/s");
    }
}
