//! History load: `session/load` of a long conversation against the Services Server generation
//! (`--simulate-version runtime-4.0.0`), whose mapper pages the history (200 rows a page, oldest
//! first) and streams each page to the client. Peak RSS (VmHWM) of the zcode-acp process that
//! loads a session of N messages, against the same for an empty session, in the same run and
//! interleaved: the difference is what the history costs. Every load must stream every message.

use std::io::Write;
use std::time::Instant;

use memchr::memmem;
use serde_json::json;

use crate::acp::Agent;
use crate::env::BenchEnv;
use crate::procfs;
use crate::stats::{Summary, fixed, table};

const MIB: f64 = 1024.0 * 1024.0;
const RELEASE: &str = "runtime-4.0.0";

/// Counts the `user_message_chunk` lines written to it (the bench reader counts agent chunks).
#[derive(Default)]
struct UserChunks {
    count: u64,
}

impl Write for UserChunks {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.count += memmem::find_iter(bytes, b"\"user_message_chunk\"").count() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Load {
    peak_mib: f64,
    millis: f64,
    user_chunks: u64,
    agent_chunks: u64,
}

fn agent(env: &BenchEnv) -> Result<Agent, String> {
    let mut agent = Agent::spawn(env.zcode_acp(&["--simulate", "--simulate-version", RELEASE]))?;
    agent.initialize()?;
    Ok(agent)
}

/// An empty session and one of `messages` messages (`sim:history`), saved by the simulator.
fn seed(env: &BenchEnv, messages: u64) -> Result<(String, String), String> {
    let mut agent = agent(env)?;
    let empty = agent.new_session(&env.workspace())?;
    let long = agent.new_session(&env.workspace())?;
    let prompt = format!("sim:history {messages}");
    agent.call("session/prompt", Agent::prompt_params(&long, &prompt))?;
    agent.finish()?;
    Ok((empty, long))
}

/// Loads `session` in a fresh zcode-acp and reads its peak RSS once the answer is in.
fn load(env: &BenchEnv, session: &str) -> Result<Load, String> {
    let mut agent = agent(env)?;
    let started = Instant::now();
    let params = json!({"sessionId": session, "cwd": env.workspace(), "mcpServers": []});
    let id = agent.send_request("session/load", params)?;
    let mut users = UserChunks::default();
    let agent_chunks = agent.read_until_response(id, Some(&mut users))?.1.chunks;
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    let peak = procfs::status_bytes(agent.pid(), "VmHWM").ok_or("cannot read VmHWM")?;
    agent.finish()?;
    Ok(Load { peak_mib: peak as f64 / MIB, millis, user_chunks: users.count, agent_chunks })
}

pub fn run(env: &BenchEnv, messages: u64, repeats: usize) -> Result<String, String> {
    let (empty, long) = seed(env, messages)?;
    // Warm the mapper cache (its first compilation costs peak memory once).
    load(env, &empty)?;
    // `sim:history n` alternates user and assistant messages; the seeding prompt adds its own
    // message and reply.
    let (users, replies) = (messages.div_ceil(2) + 1, messages / 2 + 1);
    let (mut bare, mut full, mut growth, mut bare_ms, mut full_ms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..repeats {
        let mut pair = [None, None];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let session = if which == 0 { &empty } else { &long };
            pair[which] = Some(load(env, session)?);
        }
        let [Some(empty_load), Some(long_load)] = pair else { unreachable!("both loaded") };
        if (long_load.user_chunks, long_load.agent_chunks) != (users, replies) {
            return Err(format!(
                "the load streamed {} user and {} agent chunks, not {users} and {replies}",
                long_load.user_chunks, long_load.agent_chunks
            ));
        }
        if empty_load.user_chunks + empty_load.agent_chunks != 0 {
            return Err("the empty session streamed messages".into());
        }
        growth.push(long_load.peak_mib - empty_load.peak_mib);
        bare.push(empty_load.peak_mib);
        full.push(long_load.peak_mib);
        bare_ms.push(empty_load.millis);
        full_ms.push(long_load.millis);
    }
    let [bare, full, growth, bare_ms, full_ms] =
        [&bare, &full, &growth, &bare_ms, &full_ms].map(|v| Summary::of(v));
    let rows = vec![
        vec!["empty session".into(), bare.show(1), bare_ms.show(0)],
        vec![format!("{} messages", fixed(messages as f64, 0)), full.show(1), full_ms.show(0)],
        vec!["growth (paired per round)".into(), growth.show(1), "–".into()],
    ];
    let mut out = format!(
        "### history load: `session/load` on {RELEASE}, peak RSS of zcode-acp (VmHWM, MiB) \
         and time to the answer (ms), {repeats} runs each, interleaved; every run streamed \
         {users} user and {replies} agent message chunks\n\n"
    );
    out.push_str(&table(&["session", "peak MiB", "load ms"], &rows));
    out.push_str(&format!(
        "\ntarget: ≤ 10 MB above an empty session (median {} MiB)\n",
        fixed(growth.median, 1)
    ));
    Ok(out)
}
