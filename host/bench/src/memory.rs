//! Memory: peak RSS (VmHWM) of zcode-acp with 1 and with 10 sessions, each of which ran a
//! streamed turn.

use crate::acp::Agent;
use crate::env::BenchEnv;
use crate::procfs;
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
    let mut agent = Agent::spawn(env.zcode_acp(&["--simulate"]))?;
    agent.initialize()?;
    for _ in 0..sessions {
        let session = agent.new_session(&env.workspace())?;
        agent.call("session/prompt", Agent::prompt_params(&session, "sim:stream 1000"))?;
    }
    let peak = procfs::status_bytes(agent.pid(), "VmHWM").ok_or("cannot read VmHWM")?;
    agent.finish()?;
    Ok(peak as f64 / MIB)
}
