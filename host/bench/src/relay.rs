//! Relay: the simulator streams N text deltas through the whole stack (zcode-acp --simulate,
//! real bridge, WebAssembly mapper, ACP on stdout) to a client that counts the
//! `agent_message_chunk` frames until the prompt's response. The limit is `cat` relaying the
//! same ACP frames, captured from a real run, to the same reader.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::acp::{Agent, FrameReader};
use crate::env::BenchEnv;
use crate::procfs;
use crate::stats::{Summary, fixed, table};

struct AdapterRun {
    seconds: f64,
    agent_cpu: f64,
    simulator_cpu: f64,
}

/// `variants`: other zcode-acp builds to compare with the one under test, in the same rounds.
pub fn run(
    env: &BenchEnv,
    events: u64,
    rounds: usize,
    variants: &[PathBuf],
) -> Result<String, String> {
    let frames = env.path("relay-frames.ndjson");
    capture_frames(env, events, &frames)?;
    let binaries: Vec<&Path> =
        std::iter::once(env.binary()).chain(variants.iter().map(PathBuf::as_path)).collect();
    let mut adapters: Vec<Vec<AdapterRun>> = binaries.iter().map(|_| Vec::new()).collect();
    let mut limit = Vec::new();
    for round in 0..rounds {
        // Rotate the order so no variant always runs first, or in the same speed state.
        let count = binaries.len() + 1;
        for step in 0..count {
            match (step + round) % count {
                0 => limit.push(cat_run(&frames, events)?),
                index => adapters[index - 1].push(adapter_run(env, binaries[index - 1], events)?),
            }
        }
    }
    Ok(report(events, &binaries, &adapters, &limit))
}

/// One untimed run whose ACP output (the prompt's frames) becomes the `cat` input.
fn capture_frames(env: &BenchEnv, events: u64, path: &Path) -> Result<(), String> {
    let mut agent = Agent::spawn(env.zcode_acp(&["--simulate"]))?;
    agent.initialize()?;
    let session = agent.new_session(&env.workspace())?;
    let id = agent.send_request(
        "session/prompt",
        Agent::prompt_params(&session, &format!("sim:stream {events}")),
    )?;
    let file = File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut capture = BufWriter::new(file);
    let (_, chunks) = agent.read_until_response(id, Some(&mut capture))?;
    drop(capture);
    agent.finish()?;
    check_count("capture run", chunks, events)
}

fn adapter_run(env: &BenchEnv, binary: &Path, events: u64) -> Result<AdapterRun, String> {
    let mut agent = Agent::spawn(env.command(binary, &["--simulate"]))?;
    agent.initialize()?;
    let session = agent.new_session(&env.workspace())?;
    // The host (simulator) is running now; it and the shell that started it are descendants.
    let simulator = procfs::descendants(agent.pid());
    let agent_cpu = procfs::cpu_seconds(agent.pid()).ok_or("cannot read zcode-acp's CPU time")?;
    let simulator_cpu = procfs::cpu_seconds_of(&simulator);
    let started = Instant::now();
    let id = agent.send_request(
        "session/prompt",
        Agent::prompt_params(&session, &format!("sim:stream {events}")),
    )?;
    let (result, chunks) = agent.read_until_response(id, None)?;
    let seconds = started.elapsed().as_secs_f64();
    let agent_cpu =
        procfs::cpu_seconds(agent.pid()).ok_or("cannot read zcode-acp's CPU time")? - agent_cpu;
    let simulator_cpu = procfs::cpu_seconds_of(&simulator) - simulator_cpu;
    agent.finish()?;
    if result["stopReason"] != "end_turn" {
        return Err(format!("the streamed turn ended with {result}"));
    }
    check_count("zcode-acp", chunks, events)?;
    Ok(AdapterRun { seconds, agent_cpu, simulator_cpu })
}

fn cat_run(frames: &Path, events: u64) -> Result<f64, String> {
    let started = Instant::now();
    let mut cat = Command::new("cat")
        .arg(frames)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cat: {e}"))?;
    let chunks = FrameReader::new(cat.stdout.take().expect("piped")).count_to_end()?;
    let seconds = started.elapsed().as_secs_f64();
    cat.wait().map_err(|e| e.to_string())?;
    check_count("cat", chunks, events)?;
    Ok(seconds)
}

fn check_count(what: &str, chunks: u64, events: u64) -> Result<(), String> {
    if chunks == events {
        Ok(())
    } else {
        Err(format!("{what}: {chunks} agent_message_chunk frames for {events} deltas"))
    }
}

fn report(events: u64, binaries: &[&Path], adapters: &[Vec<AdapterRun>], limit: &[f64]) -> String {
    let n = events as f64;
    let rate = |seconds: f64| n / seconds;
    let limit_rate = Summary::of(&limit.iter().map(|&s| rate(s)).collect::<Vec<_>>());
    let mut rows = Vec::new();
    let mut headline = None;
    for (binary, runs) in binaries.iter().zip(adapters) {
        let adapter_rate = Summary::of(&runs.iter().map(|r| rate(r.seconds)).collect::<Vec<_>>());
        let agent_cpu =
            Summary::of(&runs.iter().map(|r| r.agent_cpu / n * 1e6).collect::<Vec<_>>());
        let simulator_cpu =
            Summary::of(&runs.iter().map(|r| r.simulator_cpu / n * 1e6).collect::<Vec<_>>());
        // Paired per round: both ran in the same round, close in time.
        let ratio =
            Summary::of(&runs.iter().zip(limit).map(|(a, &l)| a.seconds / l).collect::<Vec<_>>());
        headline.get_or_insert((adapter_rate.median, agent_cpu.median, ratio.median));
        rows.push(vec![
            format!("`{}` --simulate", binary.display()),
            adapter_rate.show(0),
            agent_cpu.show(2),
            simulator_cpu.show(2),
            format!("{}×", ratio.show(1)),
        ]);
    }
    rows.push(vec![
        "limit: `cat` of the same ACP frames".into(),
        limit_rate.show(0),
        "–".into(),
        "–".into(),
        "1×".into(),
    ]);
    let mut out = format!(
        "### relay: {} streamed text deltas end to end, {} rounds (median (min–max))\n\n",
        fixed(n, 0),
        limit.len()
    );
    out.push_str(&table(
        &[
            "variant",
            "events/s",
            "zcode-acp CPU µs/event",
            "simulator CPU µs/event",
            "wall / `cat` (paired)",
        ],
        &rows,
    ));
    let (rate, cpu, ratio) = headline.expect("at least one variant");
    out.push_str(&format!(
        "\ntargets: ≥ 150,000 events/s (median {}), ≤ 6 µs CPU/event (median {}), within 3× of the \
         limit (median {}×)\n",
        fixed(rate, 0),
        fixed(cpu, 2),
        fixed(ratio, 1)
    ));
    out
}
