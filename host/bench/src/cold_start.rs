//! Cold start: process start → `initialize` answered; `session/new` over the simulator with a
//! warm mapper cache, against the simulator's own time for the same native work; and the first
//! `session/new` with the mapper cache emptied before each run (a first run, or the first run
//! after an upgrade) against the same with the cache warm, with the peak RSS of each.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::acp::Agent;
use crate::env::{BenchEnv, SIMULATE_3_11};
use crate::procfs;
use crate::simhost::{NativeHost, SimulatedInstall, create_op};
use crate::stats::{Summary, fixed, table};

pub fn run(env: &BenchEnv, runs: usize) -> Result<String, String> {
    // Fill the mapper cache: every timed start below is a warm one.
    let mut warm = Agent::spawn(env.zcode_acp(&SIMULATE_3_11))?;
    warm.initialize()?;
    warm.new_session(&env.workspace())?;
    warm.finish()?;
    let install = SimulatedInstall::prepare(env)?;

    let mut initialize = Vec::new();
    let mut echo = Vec::new();
    let mut first_session = Vec::new();
    let mut second_session = Vec::new();
    let mut native_first = Vec::new();
    let mut native_second = Vec::new();
    let (mut cold, mut warm) = (FirstSession::default(), FirstSession::default());
    for round in 0..runs {
        let workspace = env.workspace();
        let mut measure = |which: usize| -> Result<(), String> {
            match which {
                0 => initialize.push(ms(time_initialize(env)?)),
                1 => echo.push(ms(time_echo()?)),
                2 => {
                    let (first, second) = time_sessions(env)?;
                    first_session.push(ms(first));
                    second_session.push(ms(second));
                }
                3 => cold.push(first_session_with(env, Cache::Emptied)?),
                4 => warm.push(first_session_with(env, Cache::Warm)?),
                _ => {
                    let (first, second) = time_native_sessions(&install, &workspace)?;
                    native_first.push(ms(first));
                    native_second.push(ms(second));
                }
            }
            Ok(())
        };
        // Rotate the order so no variant always follows another.
        for step in 0..6 {
            measure((step + round) % 6)?;
        }
    }
    let mut out = report(
        runs,
        &initialize,
        &echo,
        [&first_session, &second_session],
        [&native_first, &native_second],
    );
    out.push_str(&report_cold(runs, &cold, &warm));
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cache {
    /// The mapper cache is deleted before the run.
    Emptied,
    /// Whatever the runs before left (every run stores what it compiled).
    Warm,
}

/// The first `session/new` (ms) and the peak RSS of zcode-acp right after it (MiB).
#[derive(Default)]
struct FirstSession {
    ms: Vec<f64>,
    peak_mib: Vec<f64>,
}

impl FirstSession {
    fn push(&mut self, (ms, peak_mib): (f64, f64)) {
        self.ms.push(ms);
        self.peak_mib.push(peak_mib);
    }
}

/// Spawn, `initialize`, then the timed first `session/new`; the simulated install and the
/// discovery caches stay warm in both cases, only the mapper cache differs.
fn first_session_with(env: &BenchEnv, cache: Cache) -> Result<(f64, f64), String> {
    if cache == Cache::Emptied {
        let mappers = env.path("cache").join("zcode-acp/mappers");
        match std::fs::remove_dir_all(&mappers) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot empty {}: {err}", mappers.display()));
            }
            _ => {}
        }
    }
    let mut agent = Agent::spawn(env.zcode_acp(&SIMULATE_3_11))?;
    agent.initialize()?;
    let started = Instant::now();
    agent.new_session(&env.workspace())?;
    let seconds = started.elapsed().as_secs_f64();
    let peak = procfs::status_bytes(agent.pid(), "VmHWM").ok_or("cannot read VmHWM")?;
    agent.finish()?;
    Ok((ms(seconds), peak as f64 / (1024.0 * 1024.0)))
}

fn report_cold(runs: usize, cold: &FirstSession, warm: &FirstSession) -> String {
    let [cold_ms, warm_ms, cold_peak, warm_peak] =
        [&cold.ms, &warm.ms, &cold.peak_mib, &warm.peak_mib].map(|v| Summary::of(v));
    let rows = vec![
        vec!["mapper cache emptied before each run".into(), cold_ms.show(2), cold_peak.show(1)],
        vec!["mapper cache warm".into(), warm_ms.show(2), warm_peak.show(1)],
    ];
    let mut out = format!(
        "\n### cold start: the first `session/new`, mapper cache empty against warm, {runs} runs \
         each, interleaved with the above (median (min–max))\n\n"
    );
    out.push_str(&table(&["first `session/new`", "ms", "peak RSS (VmHWM, MiB)"], &rows));
    out.push_str(&format!(
        "\ntargets: an empty cache adds ≤ 10 ms ({} − {} = **{} ms** added); peak RSS with an \
         empty cache ≤ 20 MiB (**{} MiB**)\n",
        fixed(cold_ms.median, 2),
        fixed(warm_ms.median, 2),
        fixed(cold_ms.median - warm_ms.median, 2),
        fixed(cold_peak.median, 1),
    ));
    out
}

fn ms(seconds: f64) -> f64 {
    seconds * 1e3
}

/// Spawn → `initialize` response.
fn time_initialize(env: &BenchEnv) -> Result<f64, String> {
    let started = Instant::now();
    let mut agent = Agent::spawn(env.zcode_acp(&[]))?;
    agent.initialize()?;
    let seconds = started.elapsed().as_secs_f64();
    agent.finish()?;
    Ok(seconds)
}

/// The floor for any process answering on stdio: spawn `cat`, write a line, read it back.
fn time_echo() -> Result<f64, String> {
    let started = Instant::now();
    let mut cat = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cat: {e}"))?;
    let mut stdin = cat.stdin.take().expect("piped");
    stdin.write_all(b"{}\n").and_then(|()| stdin.flush()).map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(cat.stdout.take().expect("piped"))
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    drop(stdin);
    cat.wait().map_err(|e| e.to_string())?;
    Ok(seconds)
}

/// The simulator alone, driven natively: start + the first session's requests, then a second
/// session's requests on the running host.
fn time_native_sessions(
    install: &SimulatedInstall,
    workspace: &Path,
) -> Result<(f64, f64), String> {
    let init = zcode_contract::SessionInit {
        workspace: workspace.display().to_string(),
        client: Default::default(),
        facts: Default::default(),
    };
    let started = Instant::now();
    let mut host = NativeHost::start(install)?;
    host.session_op(&init, create_op(workspace))?;
    let first = started.elapsed().as_secs_f64();
    let started = Instant::now();
    host.session_op(&init, create_op(workspace))?;
    let second = started.elapsed().as_secs_f64();
    host.finish()?;
    Ok((first, second))
}

/// The first `session/new` (starts the host) and a second one (host running).
fn time_sessions(env: &BenchEnv) -> Result<(f64, f64), String> {
    let mut agent = Agent::spawn(env.zcode_acp(&SIMULATE_3_11))?;
    agent.initialize()?;
    let started = Instant::now();
    agent.new_session(&env.workspace())?;
    let first = started.elapsed().as_secs_f64();
    let started = Instant::now();
    agent.new_session(&env.workspace())?;
    let second = started.elapsed().as_secs_f64();
    agent.finish()?;
    Ok((first, second))
}

fn report(
    runs: usize,
    initialize: &[f64],
    echo: &[f64],
    [first, second]: [&[f64]; 2],
    [native_first, native_second]: [&[f64]; 2],
) -> String {
    let [initialize, echo, first, second, native_first, native_second] =
        [initialize, echo, first, second, native_first, native_second].map(Summary::of);
    let rows = vec![
        vec!["`zcode-acp`: spawn → `initialize` answered".into(), initialize.show(2)],
        vec!["floor: spawn `cat` → a line echoed back".into(), echo.show(2)],
        vec!["`session/new`, first: starts the host (mapper cache warm)".into(), first.show(2)],
        vec!["simulator alone: start + the same session requests".into(), native_first.show(2)],
        vec!["`session/new`, second: host running".into(), second.show(2)],
        vec!["simulator alone: the same session requests".into(), native_second.show(2)],
    ];
    let mut out = format!(
        "### cold start: {runs} runs each, interleaved (ms, median (min–max))\n\n\
         The session requests are those `session/new` makes: initialize, workspace state, \
         createSession, subscribe. \"Simulator alone\" drives them from a native mapper over \
         plain pipes.\n\n"
    );
    out.push_str(&table(&["what", "ms"], &rows));
    out.push_str(&format!(
        "\ntargets: `initialize` ≤ 15 ms (median {} ms); `session/new` adds ≤ 20 ms to the \
         simulator's own time (first session: {} − {} = **{} ms** added; host running: {} − {} = \
         **{} ms** added)\n",
        fixed(initialize.median, 2),
        fixed(first.median, 2),
        fixed(native_first.median, 2),
        fixed(first.median - native_first.median, 2),
        fixed(second.median, 2),
        fixed(native_second.median, 2),
        fixed(second.median - native_second.median, 2),
    ));
    out
}
