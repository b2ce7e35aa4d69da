//! Relay: the simulator streams N text deltas through the whole stack (zcode-acp --simulate,
//! real bridge, WebAssembly mapper, ACP on stdout) to a client that counts the
//! `agent_message_chunk` frames and their text bytes until the prompt's response, once per
//! protocol generation. The limit is `cat` relaying the same ACP frames, captured from a real
//! run, to the same reader.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::acp::{Agent, FrameReader, Received};
use crate::env::BenchEnv;
use crate::procfs;
use crate::stats::{Summary, fixed, table};

/// The text of one simulated delta (`sim:stream`).
pub const DELTA_TEXT: &str = "lorem ipsum ";

/// A ZCode protocol generation the simulator plays.
#[derive(Clone, Copy)]
pub struct Generation {
    pub name: &'static str,
    pub args: &'static [&'static str],
}

/// One release per generation: the 3.11 host bridge, the Desktop app-server (V4 rows and
/// legacy events; 3.18.2 and the newest Desktop, 4.0.0), the Services Server (binary IPC, V4
/// deltas).
pub const GENERATIONS: [Generation; 4] = [
    Generation { name: "3.11.2 host", args: &["--simulate", "--simulate-version", "3.11.2"] },
    Generation {
        name: "desktop-3.18.2 app-server",
        args: &["--simulate", "--simulate-version", "desktop-3.18.2"],
    },
    Generation {
        name: "desktop-4.0.0 app-server",
        args: &["--simulate", "--simulate-version", "desktop-4.0.0"],
    },
    Generation {
        name: "runtime-4.0.0 services",
        args: &["--simulate", "--simulate-version", "runtime-4.0.0"],
    },
];

struct AdapterRun {
    seconds: f64,
    agent_cpu: f64,
    simulator_cpu: f64,
    received: Received,
}

/// `variants`: other zcode-acp builds to compare with the one under test, in the same rounds.
pub fn run(
    env: &BenchEnv,
    events: u64,
    rounds: usize,
    variants: &[PathBuf],
    generations: &[Generation],
) -> Result<String, String> {
    let binaries: Vec<&Path> =
        std::iter::once(env.binary()).chain(variants.iter().map(PathBuf::as_path)).collect();
    let mut frames = Vec::new();
    for (index, generation) in generations.iter().enumerate() {
        let path = env.path(&format!("relay-frames-{index}.ndjson"));
        capture_frames(env, generation, events, &path)?;
        frames.push(path);
    }
    // runs[generation][binary]; limit[generation]
    let mut adapters: Vec<Vec<Vec<AdapterRun>>> =
        generations.iter().map(|_| binaries.iter().map(|_| Vec::new()).collect()).collect();
    let mut limit: Vec<Vec<f64>> = generations.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        // Rotate the order so no variant always runs first, or in the same speed state.
        for (g, generation) in generations.iter().enumerate() {
            let count = binaries.len() + 1;
            for step in 0..count {
                match (step + round) % count {
                    0 => limit[g].push(cat_run(&frames[g], events)?),
                    index => adapters[g][index - 1].push(adapter_run(
                        env,
                        generation,
                        binaries[index - 1],
                        events,
                    )?),
                }
            }
        }
    }
    Ok(report(events, generations, &binaries, &adapters, &limit))
}

fn prompt(events: u64) -> String {
    format!("sim:stream {events}")
}

/// One untimed run whose ACP output (the prompt's frames) becomes the `cat` input.
fn capture_frames(
    env: &BenchEnv,
    generation: &Generation,
    events: u64,
    path: &Path,
) -> Result<(), String> {
    let mut agent = Agent::spawn(env.zcode_acp(generation.args))?;
    agent.initialize()?;
    let session = agent.new_session(&env.workspace())?;
    let id =
        agent.send_request("session/prompt", Agent::prompt_params(&session, &prompt(events)))?;
    let file = File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut capture = BufWriter::new(file);
    let (_, received) = agent.read_until_response(id, Some(&mut capture))?;
    drop(capture);
    agent.finish()?;
    check_received(generation.name, received, events)
}

fn adapter_run(
    env: &BenchEnv,
    generation: &Generation,
    binary: &Path,
    events: u64,
) -> Result<AdapterRun, String> {
    let mut agent = Agent::spawn(env.command(binary, generation.args))?;
    agent.initialize()?;
    let session = agent.new_session(&env.workspace())?;
    // The host (simulator) is running now; it and the shell that started it are descendants.
    let simulator = procfs::descendants(agent.pid());
    let agent_cpu = procfs::cpu_seconds(agent.pid()).ok_or("cannot read zcode-acp's CPU time")?;
    let simulator_cpu = procfs::cpu_seconds_of(&simulator);
    let started = Instant::now();
    let id =
        agent.send_request("session/prompt", Agent::prompt_params(&session, &prompt(events)))?;
    let (result, received) = agent.read_until_response(id, None)?;
    let seconds = started.elapsed().as_secs_f64();
    let agent_cpu =
        procfs::cpu_seconds(agent.pid()).ok_or("cannot read zcode-acp's CPU time")? - agent_cpu;
    let simulator_cpu = procfs::cpu_seconds_of(&simulator) - simulator_cpu;
    agent.finish()?;
    if result["stopReason"] != "end_turn" {
        return Err(format!("{}: the streamed turn ended with {result}", generation.name));
    }
    check_received(generation.name, received, events)?;
    Ok(AdapterRun { seconds, agent_cpu, simulator_cpu, received })
}

fn cat_run(frames: &Path, events: u64) -> Result<f64, String> {
    let started = Instant::now();
    let mut cat = Command::new("cat")
        .arg(frames)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cat: {e}"))?;
    let received = FrameReader::new(cat.stdout.take().expect("piped")).count_to_end()?;
    let seconds = started.elapsed().as_secs_f64();
    cat.wait().map_err(|e| e.to_string())?;
    check_received("cat", received, events)?;
    Ok(seconds)
}

/// Every byte of text must arrive; consecutive deltas may arrive merged into fewer frames.
pub fn check_received(what: &str, received: Received, events: u64) -> Result<(), String> {
    let expected = events * DELTA_TEXT.len() as u64;
    if received.text_bytes == expected && (1..=events).contains(&received.chunks) {
        Ok(())
    } else {
        Err(format!(
            "{what}: {} text bytes in {} agent_message_chunk frames for {events} deltas ({expected} \
             bytes)",
            received.text_bytes, received.chunks
        ))
    }
}

fn report(
    events: u64,
    generations: &[Generation],
    binaries: &[&Path],
    adapters: &[Vec<Vec<AdapterRun>>],
    limit: &[Vec<f64>],
) -> String {
    let n = events as f64;
    let rate = |seconds: f64| n / seconds;
    let mut rows = Vec::new();
    let mut headlines = Vec::new();
    for (g, generation) in generations.iter().enumerate() {
        for (b, (binary, runs)) in binaries.iter().zip(&adapters[g]).enumerate() {
            let summary = |f: &dyn Fn(&AdapterRun) -> f64| {
                Summary::of(&runs.iter().map(f).collect::<Vec<_>>())
            };
            let deltas = summary(&|r| rate(r.seconds));
            let frames = summary(&|r| r.received.chunks as f64 / r.seconds);
            let megabytes = summary(&|r| r.received.text_bytes as f64 / r.seconds / 1e6);
            let agent_cpu = summary(&|r| r.agent_cpu / n * 1e6);
            let simulator_cpu = summary(&|r| r.simulator_cpu / n * 1e6);
            // Paired per round: both ran in the same round, close in time.
            let ratio = Summary::of(
                &runs.iter().zip(&limit[g]).map(|(a, &l)| a.seconds / l).collect::<Vec<_>>(),
            );
            if b == 0 {
                headlines.push((generation.name, deltas, agent_cpu));
            }
            let variant = if b == 0 && binaries.len() == 1 {
                String::from("zcode-acp")
            } else {
                format!("`{}`", binary.display())
            };
            rows.push(vec![
                generation.name.to_string(),
                variant,
                deltas.show(0),
                frames.show(0),
                megabytes.show(2),
                agent_cpu.show(2),
                simulator_cpu.show(2),
                format!("{}×", ratio.show(1)),
            ]);
        }
        let limit_rate = Summary::of(&limit[g].iter().map(|&s| rate(s)).collect::<Vec<_>>());
        rows.push(vec![
            generation.name.to_string(),
            "limit: `cat` of the same ACP frames".into(),
            limit_rate.show(0),
            "–".into(),
            "–".into(),
            "–".into(),
            "–".into(),
            "1×".into(),
        ]);
    }
    let mut out = format!(
        "### relay: {} streamed text deltas end to end, {} rounds (median (min–max))\n\n",
        fixed(n, 0),
        limit.first().map_or(0, Vec::len)
    );
    out.push_str(&table(
        &[
            "generation",
            "variant",
            "deltas/s",
            "frames/s",
            "text MB/s",
            "zcode-acp CPU µs/delta",
            "simulator CPU µs/delta",
            "wall / `cat` (paired)",
        ],
        &rows,
    ));
    out.push_str(
        "\ntargets: ≥ 150,000 deltas/s and ≤ 5 µs zcode-acp CPU per delta (stretch 3 µs)\n",
    );
    for (name, deltas, cpu) in headlines {
        let verdict = |met: bool| if met { "met" } else { "missed" };
        out.push_str(&format!(
            "- {name}: {} deltas/s ({}), {} µs/delta ({})\n",
            deltas.show(0),
            verdict(deltas.median >= 150_000.0),
            cpu.show(2),
            verdict(cpu.median <= 5.0)
        ));
    }
    out
}
