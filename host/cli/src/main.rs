//! `zcode-acp`: an ACP agent (v1, and v2 for clients that ask for it) that drives ZCode.
//!
//! With no subcommand it serves ACP on stdin/stdout. Everything else is a tool around that:
//! checking an install (`doctor`), signing in, inspecting and testing mappers, and the
//! embedded simulator.

mod account;
mod agent;
mod demo;
mod doctor;
mod heap;
mod install;
mod launcher;
mod logging;
mod mapper_cmd;
mod mappers;
mod paths;
mod relocations;
mod simulator;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "zcode-acp", version, about = "Drive ZCode from any Agent Client Protocol client")]
struct Cli {
    #[command(flatten)]
    target: Target,
    /// Seconds ZCode may take to end a turn after `session/cancel`; the prompt is then answered
    /// `cancelled` anyway and the session waits no longer for that turn (default 30).
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    cancel_grace: u64,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Which ZCode to drive and which mappers may drive it.
#[derive(Args, Clone, Debug, Default)]
pub struct Target {
    /// Absolute path of the ZCode install (default: $ZCODE_ACP_ZCODE_INSTALL, then the OS
    /// default location).
    #[arg(long, global = true, value_name = "PATH")]
    pub zcode_install: Option<PathBuf>,
    /// Absolute path of the Node a standalone ZCode runtime runs on (default:
    /// $ZCODE_ACP_ZCODE_NODE, then a Node inside the install or its managed folder; never
    /// PATH). Verified by running it.
    #[arg(long, global = true, value_name = "PATH")]
    pub zcode_node: Option<PathBuf>,
    /// Folder of drop-in mapper components (*.wasm) (default: $ZCODE_ACP_MAPPERS, then the
    /// OS data folder).
    #[arg(long, global = true, value_name = "DIR")]
    pub mappers_dir: Option<PathBuf>,
    /// Use the built-in ZCode host simulator instead of an installed ZCode.
    #[arg(long, global = true)]
    pub simulate: bool,
    /// The ZCode release the simulator plays (default desktop-4.0.0, the newest Desktop;
    /// `zcode-acp version` lists them: `desktop-3.18.2`, `runtime-4.0.0`, `3.11.2`, ...).
    #[arg(long, global = true, value_name = "VERSION", requires = "simulate")]
    pub simulate_version: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Check the ZCode install and whether a session could start.
    Doctor {
        /// Print the report as JSON (stable field names, see docs/doctor.md).
        #[arg(long)]
        json: bool,
    },
    /// Print versions: zcode-acp, ACP, the WIT contract, mappers and the detected ZCode.
    Version,
    /// Sign in with ZCode's own login (prints a URL to open in a browser).
    Login,
    /// Sign out with ZCode's own logout.
    Logout,
    /// Inspect, test, trust or install mapper components.
    #[command(subcommand)]
    Mapper(mapper_cmd::MapperCommand),
    /// Run a session against the embedded simulator and show it in the terminal.
    Demo(demo::DemoArgs),
    /// The ZCode host simulator (used by `--simulate` and tests).
    #[command(subcommand, hide = true)]
    Simulator(simulator::SimulatorCommand),
}

fn main() -> ExitCode {
    relocations::release();
    let cli = Cli::parse();
    // The agent logs its lifecycle; one-shot commands only problems.
    let level = if cli.command.is_none() { "info" } else { "warn" };
    if let Err(error) = logging::init(level) {
        eprintln!("zcode-acp: {error}");
        return ExitCode::from(2);
    }
    match cli.command {
        None => agent::run(cli.target, Duration::from_secs(cli.cancel_grace)),
        Some(Command::Doctor { json }) => doctor::run(&cli.target, json),
        Some(Command::Version) => doctor::version(&cli.target),
        Some(Command::Login) => {
            account::run_command(&cli.target, zcode_contract::AuthCommand::Login)
        }
        Some(Command::Logout) => {
            account::run_command(&cli.target, zcode_contract::AuthCommand::Logout)
        }
        Some(Command::Mapper(command)) => mapper_cmd::run(&cli.target, command),
        Some(Command::Demo(args)) => demo::run(&cli.target, args),
        Some(Command::Simulator(command)) => simulator::run(command),
    }
}
