//! `zcode-acp-bench`: throughput, per-event cost, start-up time and memory of zcode-acp.
//!
//! Never timed assertions: every benchmark prints figures with a baseline measured in the same
//! run, variants interleaved round by round (this VM switches between a fast and a slow
//! state), medians and ranges. Build and run on release builds:
//!
//! ```sh
//! cargo build --release -p zcode-acp -p zcode-bench
//! target/release/zcode-acp-bench all
//! ```
//!
//! See `docs/performance.md` for the figures and what bounds them.

mod acp;
mod cold_start;
mod env;
mod history_load;
mod mapper;
mod memory;
mod procfs;
mod relay;
mod simhost;
mod stats;
mod trace;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

use crate::env::BenchEnv;

#[derive(Parser)]
#[command(name = "zcode-acp-bench", about = "Benchmarks of zcode-acp (release builds)")]
struct Args {
    /// Which benchmark to run.
    #[arg(value_enum, default_value = "all")]
    which: Which,
    /// The zcode-acp binary (default: next to this one).
    #[arg(long, value_name = "PATH")]
    zcode_acp: Option<PathBuf>,
    /// Relay: text deltas streamed per run.
    #[arg(long, default_value_t = 100_000)]
    events: u64,
    /// Relay: rounds (one run per zcode-acp build and one `cat` run each).
    #[arg(long, default_value_t = 9)]
    relay_rounds: usize,
    /// Relay: another zcode-acp build to compare in the same rounds (repeatable).
    #[arg(long, value_name = "PATH")]
    variant: Vec<PathBuf>,
    /// Mapper: text deltas in the recorded turn.
    #[arg(long, default_value_t = 5_000)]
    deltas: u64,
    /// Mapper: rounds (one replay per variant each).
    #[arg(long, default_value_t = 30)]
    mapper_rounds: usize,
    /// Mapper: another build of the mapper component to compare (repeatable).
    #[arg(long, value_name = "FILE")]
    component: Vec<PathBuf>,
    /// Cold start: runs of each measurement.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Memory: runs with 1 and with 10 sessions.
    #[arg(long, default_value_t = 5)]
    memory_runs: usize,
    /// Memory: deltas of the long turn read by a fast client.
    #[arg(long, default_value_t = 1_000_000)]
    long_deltas: u64,
    /// Memory: deltas of the long turn read by a slow client (0: none).
    #[arg(long, default_value_t = 200_000)]
    slow_deltas: u64,
    /// Memory: runs of each long turn (a 1,000,000-delta turn of the Desktop generation takes
    /// about a minute here).
    #[arg(long, default_value_t = 2)]
    long_runs: usize,
    /// Relay and long-turn memory: only these generations (default: all four), by the name
    /// the tables use: `3.11.2`, `desktop-3.18.2`, `desktop-4.0.0`, `runtime-4.0.0` (a prefix
    /// is enough).
    #[arg(long, value_name = "NAME")]
    generation: Vec<String>,
    /// History load: messages in the long session.
    #[arg(long, default_value_t = 10_000)]
    history_messages: u64,
    /// History load: runs of each load (empty and long, interleaved).
    #[arg(long, default_value_t = 5)]
    history_runs: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Which {
    All,
    Relay,
    Mapper,
    ColdStart,
    Memory,
    HistoryLoad,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("zcode-acp-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let binary = match &args.zcode_acp {
        Some(path) => path.clone(),
        None => std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("zcode-acp"),
    };
    if !binary.is_file() {
        return Err(format!(
            "{} not found: `cargo build --release -p zcode-acp` (or pass --zcode-acp)",
            binary.display()
        ));
    }
    if binary.components().any(|c| c.as_os_str() == "debug") {
        eprintln!("zcode-acp-bench: warning: {} looks like a debug build", binary.display());
    }
    println!("{}", machine_facts(&binary));
    let env = BenchEnv::new(binary)?;
    let all = args.which == Which::All;
    if all || args.which == Which::Relay {
        let generations = generations(&args.generation)?;
        println!(
            "{}",
            relay::run(&env, args.events, args.relay_rounds, &args.variant, &generations)?
        );
    }
    if all || args.which == Which::Mapper {
        println!("{}", mapper::run(&env, args.mapper_rounds, args.deltas, &args.component)?);
    }
    if all || args.which == Which::ColdStart {
        println!("{}", cold_start::run(&env, args.runs)?);
    }
    if all || args.which == Which::Memory {
        println!("{}", memory::run(&env, args.memory_runs)?);
        let mut turns = vec![("fast", memory::LongTurn { deltas: args.long_deltas, pace: None })];
        if args.slow_deltas > 0 {
            let slow = memory::LongTurn { deltas: args.slow_deltas, pace: Some(memory::SLOW) };
            turns.push(("slow (≤ 4 MB/s)", slow));
        }
        let generations = generations(&args.generation)?;
        println!("{}", memory::long_turns(&env, &generations, &turns, args.long_runs)?);
    }
    if all || args.which == Which::HistoryLoad {
        println!("{}", history_load::run(&env, args.history_messages, args.history_runs)?);
    }
    println!("load average at the end: {}", load_average());
    Ok(())
}

fn generations(names: &[String]) -> Result<Vec<relay::Generation>, String> {
    if names.is_empty() {
        return Ok(relay::GENERATIONS.to_vec());
    }
    names
        .iter()
        .map(|name| {
            relay::GENERATIONS
                .iter()
                .find(|g| g.name.starts_with(name.as_str()))
                .copied()
                .ok_or_else(|| format!("unknown generation `{name}`"))
        })
        .collect()
}

fn machine_facts(binary: &std::path::Path) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines().next().map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string())
        })
        .and_then(|kib| kib.parse::<f64>().ok())
        .map(|kib| format!("{:.0} GiB", kib / 1024.0 / 1024.0))
        .unwrap_or_default();
    let size = std::fs::metadata(binary).map(|m| m.len() as f64 / 1e6).unwrap_or(0.0);
    format!(
        "## zcode-acp benchmarks\n\nmachine: {cpu}, {cores} cores, {memory}, Linux {}; binary {} \
         ({size:.1} MB); load average at the start: {}\n",
        kernel.trim(),
        binary.display(),
        load_average()
    )
}

/// Other work on the machine skews everything: the 1, 5 and 15 minute load averages.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
