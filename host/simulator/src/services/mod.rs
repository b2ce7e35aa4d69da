//! The ZCode Services Server runtime (zcode-runtime 3.14.3 – 4.0.0): what the runtime's plain
//! Node runs. `node <root>/zcode/server/remote/zcode-server.cjs` is the stdio Services Server
//! (a JSON hello line each way, then binary channel IPC carrying the V4 conversation); the
//! version probes of Node, the server and the Agent answer as the real ones do.
//!
//! The V4 conversation is `crate::v4`'s publisher and wire; this server adds its session state
//! (`conversation`), its commands, and its transport (`router`: channel events to the listens
//! of a workspace). Facts and their sources: `docs/simulator.md` §13. Layout of a runtime
//! root: [`layout`].

mod channels;
mod commands;
mod conversation;
pub mod fault;
pub mod ipc;
pub mod launch;
pub mod layout;
mod out;
pub mod profile;
mod router;
mod server;
mod store;
mod turn;

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use crate::common::process::{cli_version, fail, node_arch, node_platform};
use profile::RuntimeProfile;

/// Overrides the Node version `node --version` prints (a too-old-Node variant).
const NODE_VERSION_ENV: &str = "ZCODE_SIM_NODE_VERSION";

/// Runs what the runtime's Node was asked to run, if `root` is a runtime root at all.
pub fn run_if_runtime(root: &Path, argv: &[OsString]) -> Option<ExitCode> {
    let (dir, profile) = match layout::detect(root)? {
        Ok(found) => found,
        Err(message) => return Some(fail(1, &format!("zcode-sim: {message}"))),
    };
    Some(run_node(root, &dir, profile, argv))
}

/// `root` is what the launcher names (sessions are kept under it), `dir` its runtime directory.
fn run_node(
    root: &Path,
    dir: &Path,
    profile: &'static RuntimeProfile,
    argv: &[OsString],
) -> ExitCode {
    let args: Vec<String> = argv.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
    let node_version =
        std::env::var(NODE_VERSION_ENV).unwrap_or_else(|_| profile.node_version.to_owned());
    match args.first().map(String::as_str) {
        Some("--version" | "-v") => {
            println!("v{node_version}");
            ExitCode::SUCCESS
        }
        // Identification scripts (`node -e …`); the script text is not evaluated.
        Some("-e" | "--eval" | "-p" | "--print") if args.len() >= 2 => {
            let identity = serde_json::json!({"node": node_version, "platform": node_platform(),
                                              "arch": node_arch()});
            println!("{identity}");
            ExitCode::SUCCESS
        }
        Some(script) if is_entry(script, &layout::server_entry(dir)) => {
            if args.iter().any(|arg| arg == "--version") {
                println!("{}", profile.server_version);
                return ExitCode::SUCCESS;
            }
            server::run(root, profile)
        }
        Some(script) if is_entry(script, &layout::agent_entry(dir)) => {
            match args.get(1).map(String::as_str) {
                Some("--version") if args.len() == 2 => {
                    println!("{}", cli_version(profile.agent_version));
                    ExitCode::SUCCESS
                }
                _ => fail(
                    2,
                    &format!(
                        "zcode-sim: the runtime profile only answers `zcode.cjs --version` (got {:?})",
                        &args[1..]
                    ),
                ),
            }
        }
        Some(script) if !script.starts_with('-') && !Path::new(script).exists() => {
            fail(1, &format!("Error: Cannot find module '{script}'"))
        }
        _ => fail(2, &format!("zcode-sim: unsupported runtime arguments: {args:?}")),
    }
}

/// `script` names the runtime file `entry` (the same file, however it is spelled).
fn is_entry(script: &str, entry: &Path) -> bool {
    let script = Path::new(script);
    match (script.canonicalize(), entry.canonicalize()) {
        (Ok(script), Ok(entry)) => script == entry,
        _ => false,
    }
}
