//! Memory: peak RSS (VmHWM) of zcode-acp with 1 and with 10 sessions, each of which ran a
//! streamed turn; and how much one long turn adds to it, with a client that reads as fast as
//! it can and with one that reads slowly.

use std::time::{Duration, Instant};

use crate::acp::{Agent, Pace};
use crate::env::{BenchEnv, SIMULATE_3_11};
use crate::procfs;
use crate::relay::{Generation, check_received};
use crate::stats::{Summary, fixed, table};

const MIB: f64 = 1024.0 * 1024.0;

pub fn run(env: &BenchEnv, repeats: usize) -> Result<String, String> {
    // Warm the mapper cache: compiling the mapper costs about 20 MB of peak memory once, which
    // a user pays on the first start only.
    peak_with(env, 1)?;
    let mut one = Vec::new();
    let mut ten = Vec::new();
    for round in 0..repeats {
        let order = if round % 2 == 0 { [1, 10] } else { [10, 1] };
        for sessions in order {
            let peak = peak_with(env, sessions)?;
            if sessions == 1 { one.push(peak) } else { ten.push(peak) }
        }
    }
    let per_extra: Vec<f64> = one.iter().zip(&ten).map(|(a, b)| (b - a) / 9.0).collect();
    let [one, ten, per_extra] = [&one, &ten, &per_extra].map(|v| Summary::of(v));
    let rows = vec![
        vec!["1 session".into(), one.show(1)],
        vec!["10 sessions".into(), ten.show(1)],
        vec!["per extra session".into(), per_extra.show(2)],
    ];
    let mut out = format!(
        "### memory: peak RSS of zcode-acp (VmHWM, MiB), {repeats} runs each, mapper cache warm; \
         every session streamed 1,000 deltas\n\n"
    );
    out.push_str(&table(&["sessions", "MiB"], &rows));
    out.push_str(&format!(
        "\ntargets: ≤ 25 MB (1 session: {} MiB), ≤ 1 MB per extra session ({} MiB)\n",
        fixed(one.median, 1),
        fixed(per_extra.median, 2)
    ));
    Ok(out)
}

fn peak_with(env: &BenchEnv, sessions: usize) -> Result<f64, String> {
    let mut agent = Agent::spawn(env.zcode_acp(&SIMULATE_3_11))?;
    agent.initialize()?;
    for _ in 0..sessions {
        let session = agent.new_session(&env.workspace())?;
        agent.call("session/prompt", Agent::prompt_params(&session, "sim:stream 1000"))?;
    }
    let peak = procfs::status_bytes(agent.pid(), "VmHWM").ok_or("cannot read VmHWM")?;
    agent.finish()?;
    Ok(peak as f64 / MIB)
}

/// How a long turn's client reads.
#[derive(Clone, Copy)]
pub struct LongTurn {
    pub deltas: u64,
    pub pace: Option<Pace>,
}

/// The slow client: a 1 ms pause after every 4 KiB, at most ~4 MB/s, about 20 000 chunk frames
/// a second: several times slower than zcode-acp writes them.
pub const SLOW: Pace = Pace { every: 4096, pause: Duration::from_millis(1) };

/// Peak RSS growth of one long turn over the same session idle, per generation and client,
/// runs interleaved.
pub fn long_turns(
    env: &BenchEnv,
    generations: &[Generation],
    turns: &[(&str, LongTurn)],
    runs: usize,
) -> Result<String, String> {
    let mut rows = Vec::new();
    let mut results: Vec<Vec<(f64, f64, f64)>> = Vec::new();
    // A turn that fails is a finding to report, not the end of the benchmark.
    let mut failures: Vec<Option<String>> = Vec::new();
    let mut labels = Vec::new();
    for generation in generations {
        for (client, turn) in turns {
            labels.push((generation.name, *client, turn.deltas));
            results.push(Vec::new());
            failures.push(None);
        }
    }
    for round in 0..runs {
        let count = results.len();
        for step in 0..count {
            let index = (step + round) % count;
            let generation = &generations[index / turns.len()];
            let (_, turn) = turns[index % turns.len()];
            if failures[index].is_some() {
                continue;
            }
            match long_turn(env, generation, turn) {
                Ok(run) => results[index].push(run),
                Err(error) => failures[index] = Some(error),
            }
        }
    }
    for (((generation, client, deltas), runs), failure) in
        labels.iter().zip(&results).zip(&failures)
    {
        if let Some(error) = failure {
            let mut cells =
                vec![generation.to_string(), client.to_string(), fixed(*deltas as f64, 0)];
            let error: String = error.chars().take(200).collect();
            cells.extend([
                "–".into(),
                "–".into(),
                format!("**the turn failed**: {error}"),
                "–".into(),
            ]);
            rows.push(cells);
            continue;
        }
        let idle = Summary::of(&runs.iter().map(|r| r.0).collect::<Vec<_>>());
        let after = Summary::of(&runs.iter().map(|r| r.1).collect::<Vec<_>>());
        let growth = Summary::of(&runs.iter().map(|r| r.1 - r.0).collect::<Vec<_>>());
        let seconds = Summary::of(&runs.iter().map(|r| r.2).collect::<Vec<_>>());
        rows.push(vec![
            generation.to_string(),
            client.to_string(),
            fixed(*deltas as f64, 0),
            idle.show(1),
            after.show(1),
            growth.show(1),
            seconds.show(1),
        ]);
    }
    let mut out = format!(
        "### memory: peak RSS growth of one long turn over the same session idle (VmHWM, MiB), \
         {runs} runs each, interleaved\n\n"
    );
    out.push_str(&table(
        &[
            "generation",
            "client",
            "deltas",
            "idle MiB",
            "after the turn MiB",
            "growth MiB",
            "turn s",
        ],
        &rows,
    ));
    out.push_str(
        "\ntarget: growth ≤ 5 MB (4.8 MiB) for a 1,000,000-delta turn, fast and slow client\n",
    );
    Ok(out)
}

/// (idle peak MiB, peak after the turn MiB, turn seconds). The session first streams a short
/// turn, so what the idle figure holds (mapper instance, buffers at their working size) is
/// not counted as growth.
fn long_turn(
    env: &BenchEnv,
    generation: &Generation,
    turn: LongTurn,
) -> Result<(f64, f64, f64), String> {
    let mut agent = Agent::spawn_paced(env.zcode_acp(generation.args), turn.pace)?;
    agent.initialize()?;
    let session = agent.new_session(&env.workspace())?;
    agent.call("session/prompt", Agent::prompt_params(&session, "sim:stream 1000"))?;
    let idle = procfs::status_bytes(agent.pid(), "VmHWM").ok_or("cannot read VmHWM")?;
    let started = Instant::now();
    let prompt = format!("sim:stream {}", turn.deltas);
    let id = agent.send_request("session/prompt", Agent::prompt_params(&session, &prompt))?;
    let (result, received) = agent.read_until_response(id, None)?;
    let seconds = started.elapsed().as_secs_f64();
    if result["stopReason"] != "end_turn" {
        return Err(format!("{}: the long turn ended with {result}", generation.name));
    }
    check_received(generation.name, received, turn.deltas)?;
    let after = procfs::status_bytes(agent.pid(), "VmHWM").ok_or("cannot read VmHWM")?;
    agent.finish()?;
    Ok((idle as f64 / MIB, after as f64 / MIB, seconds))
}
