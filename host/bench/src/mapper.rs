//! Mapper: the same recorded session — a streamed turn and a tool lifecycle with a permission —
//! replayed through the WebAssembly component (`zcode-mapper-runtime`, as zcode-acp runs it) and
//! through the same mapper compiled natively (`TaskV1Mapper`). Only `map-event` calls are timed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use zcode_contract::{Action, Mapper, MapperSession, NativeData, SessionInput};
use zcode_mapper_runtime::{MapperRuntime, RuntimeConfig};
use zcode_task_v1::TaskV1Mapper;

use crate::acp::Agent;
use crate::env::{BenchEnv, SIMULATE_3_11};
use crate::stats::{Summary, fixed, table};
use crate::trace::{SessionCall, session_calls};

/// How the events of one replay split up, and what they cost.
#[derive(Default, Clone, Copy, Debug)]
struct Timing {
    text_seconds: f64,
    text_events: u64,
    other_seconds: f64,
    other_events: u64,
}

impl Timing {
    fn all_ns(&self) -> f64 {
        (self.text_seconds + self.other_seconds) / (self.text_events + self.other_events) as f64
            * 1e9
    }
    fn text_ns(&self) -> f64 {
        self.text_seconds / self.text_events as f64 * 1e9
    }
    fn other_ns(&self) -> f64 {
        self.other_seconds / self.other_events.max(1) as f64 * 1e9
    }
}

/// The embedded task-v1 mapper loaded as zcode-acp loads it: from the artifact the build
/// compiled into the binary (with settings a compile at run time does not use).
fn built_in(runtime: &MapperRuntime) -> Result<Arc<dyn Mapper>, String> {
    let name = "zcode-task-v1";
    let artifact = zcode_precompiled_mappers::precompiled(name)
        .ok_or_else(|| format!("the build made no artifact of {name}"))?;
    let bytes = zcode_embedded_mappers::ZCODE_TASK_V1;
    // SAFETY: an artifact this binary's build wrote and embeds, in read-only data.
    let mapper =
        unsafe { runtime.load_embedded(&format!("embedded:{name}"), bytes, Some(artifact)) }
            .map_err(|e| e.to_string())?;
    Ok(mapper)
}

pub fn run(
    env: &BenchEnv,
    rounds: usize,
    deltas: u64,
    extra_components: &[PathBuf],
) -> Result<String, String> {
    let recording = record_fixture(env, deltas)?;
    let calls = session_calls(&recording, "s1")?;
    let runtime = MapperRuntime::new(RuntimeConfig::default()).map_err(|e| e.to_string())?;
    let mut variants: Vec<(String, Arc<dyn Mapper>)> = vec![
        ("native `TaskV1Mapper`".into(), Arc::new(TaskV1Mapper)),
        ("WebAssembly, embedded component (as zcode-acp runs it)".into(), built_in(&runtime)?),
    ];
    for path in extra_components {
        let mapper = runtime.load_file(path).map_err(|e| e.to_string())?;
        variants.push((format!("WebAssembly, `{}`", path.display()), mapper));
    }

    // Every variant must map the recording as the native mapper does, or comparing them
    // means nothing.
    let (_, expected) = replay(variants[0].1.as_ref(), &calls)?;
    let expected: Vec<Value> = expected.iter().map(|actions| canonical(actions)).collect();
    for (label, mapper) in &variants[1..] {
        let (_, actual) = replay(mapper.as_ref(), &calls)?;
        let actual: Vec<Value> = actual.iter().map(|actions| canonical(actions)).collect();
        if let Some(at) = (0..expected.len()).find(|&i| expected.get(i) != actual.get(i)) {
            return Err(format!(
                "{label} maps event {at} of the recording differently:\nnative: {:?}\nthis: {:?}",
                expected.get(at),
                actual.get(at)
            ));
        }
    }
    let mut runs: Vec<Vec<Timing>> = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        // Rotate the order so no variant always runs first.
        for step in 0..variants.len() {
            let index = (step + round) % variants.len();
            runs[index].push(replay(variants[index].1.as_ref(), &calls)?.0);
        }
    }
    let labels: Vec<&str> = variants.iter().map(|(label, _)| label.as_str()).collect();
    Ok(report(&labels, &runs))
}

/// Actions as JSON with every JSON text parsed, so key order and spacing do not count.
fn canonical(actions: &[Action]) -> Value {
    fn parse_texts(value: Value) -> Value {
        match value {
            Value::String(text) if text.starts_with(['{', '[']) => {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            }
            Value::Array(items) => Value::Array(items.into_iter().map(parse_texts).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, parse_texts(v))).collect())
            }
            other => other,
        }
    }
    parse_texts(serde_json::to_value(actions).unwrap_or(Value::Null))
}

/// An unredacted recording of: a streamed turn of `deltas` text deltas, a shell tool that asks
/// permission (allowed) and reports progress, a file read.
fn record_fixture(env: &BenchEnv, deltas: u64) -> Result<String, String> {
    let path = env.path("mapper-fixture.jsonl");
    std::fs::write(env.workspace().join("notes.txt"), "a small file\n".repeat(20))
        .map_err(|e| e.to_string())?;
    let mut command = env.zcode_acp(&SIMULATE_3_11);
    command.env("ZCODE_ACP_RECORD", &path).env("ZCODE_ACP_RECORD_UNREDACTED", "1");
    let mut agent = Agent::spawn(command)?;
    agent.initialize()?;
    let session = agent.new_session(&env.workspace())?;
    for prompt in
        [format!("sim:stream {deltas}"), "sim:shell cargo test".into(), "sim:read notes.txt".into()]
    {
        agent.call("session/prompt", Agent::prompt_params(&session, &prompt))?;
    }
    agent.finish()?;
    std::fs::read_to_string(&path).map_err(|e| format!("no recording at {}: {e}", path.display()))
}

/// Replays the session through `mapper`; times the map-event calls, grouped by kind.
fn replay(
    mapper: &dyn Mapper,
    calls: &[SessionCall],
) -> Result<(Timing, Vec<Vec<Action>>), String> {
    let mut session: Option<Box<dyn MapperSession>> = None;
    let mut timing = Timing::default();
    let mut actions = Vec::new();
    for call in calls {
        match call {
            SessionCall::New(init) => {
                session = Some(mapper.session(init).map_err(|e| e.to_string())?)
            }
            SessionCall::Start { op_id, op, first_request_id } => {
                let session = session.as_mut().ok_or("no session")?;
                session.start(*op_id, op, *first_request_id).map_err(|e| e.to_string())?;
            }
            SessionCall::Resume { op_id, reply, first_request_id } => {
                let session = session.as_mut().ok_or("no session")?;
                session
                    .resume(*op_id, reply.as_ref(), *first_request_id)
                    .map_err(|e| e.to_string())?;
            }
            SessionCall::Issue { first_request_id } => {
                let session = session.as_mut().ok_or("no session")?;
                session.issue(*first_request_id).map_err(|e| e.to_string())?;
            }
            SessionCall::Map(inputs) => {
                let session = session.as_mut().ok_or("no session")?;
                let text = inputs.iter().any(|input| match input {
                    SessionInput::Event(NativeData::Text(text)) => text.contains("\"text_delta\""),
                    _ => false,
                });
                // The batch is handed over, as the core hands it: copied before the clock starts.
                let batch = inputs.clone();
                let started = Instant::now();
                let mapped = session.map(batch);
                let seconds = started.elapsed().as_secs_f64();
                if text {
                    timing.text_seconds += seconds;
                    timing.text_events += inputs.len() as u64;
                } else {
                    timing.other_seconds += seconds;
                    timing.other_events += inputs.len() as u64;
                }
                actions.push(mapped.map_err(|e| e.to_string())?.actions);
            }
        }
    }
    if timing.text_events == 0 {
        return Err("the recording has no streamed text".into());
    }
    Ok((timing, actions))
}

fn report(labels: &[&str], runs: &[Vec<Timing>]) -> String {
    type Measure = fn(&Timing) -> f64;
    let measures: [(&str, Measure); 3] = [
        ("all events", Timing::all_ns),
        ("text deltas", Timing::text_ns),
        ("other events", Timing::other_ns),
    ];
    let summary =
        |runs: &[Timing], f: Measure| Summary::of(&runs.iter().map(f).collect::<Vec<_>>());
    let native = &runs[0];
    let mut rows = Vec::new();
    for (index, label) in labels.iter().enumerate() {
        let mut row = vec![label.to_string()];
        for (_, f) in measures {
            let cost = summary(&runs[index], f);
            if index == 0 {
                row.push(cost.show(0));
            } else {
                let paired: Vec<f64> =
                    runs[index].iter().zip(native).map(|(r, n)| f(r) / f(n)).collect();
                row.push(format!(
                    "{} (**{}×**)",
                    cost.show(0),
                    fixed(Summary::of(&paired).median, 2)
                ));
            }
        }
        rows.push(row);
    }
    let first = native[0];
    let mut out = format!(
        "### mapper: one recorded session ({} text deltas + {} other events: turn, shell tool \
         with permission and progress, file read), {} rounds\n\n\
         ns per `map-event` call, median (min–max); in parentheses the median of the per-round \
         ratio to native\n\n",
        first.text_events,
        first.other_events,
        native.len()
    );
    let mut headers = vec!["mapper"];
    headers.extend(measures.iter().map(|(name, _)| *name));
    out.push_str(&table(&headers, &rows));
    let paired: Vec<f64> =
        runs[1].iter().zip(native).map(|(r, n)| r.all_ns() / n.all_ns()).collect();
    out.push_str(&format!(
        "\ntarget ≤ 1.5× (embedded component, all events: {}×)\n",
        fixed(Summary::of(&paired).median, 2)
    ));
    out
}
