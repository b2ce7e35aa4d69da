//! `zcode-acp simulator …`: the simulator's entry points, so the single binary can act as the
//! ZCode runtime of a simulated install.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum SimulatorCommand {
    /// Act as the ZCode runtime of a fake install (what its executable runs).
    Runtime {
        /// Folder for the simulator's sessions (default: $ZCODE_SIM_STATE, then inside the
        /// install).
        #[arg(long)]
        state: Option<PathBuf>,
        #[arg(long)]
        install_root: PathBuf,
        /// The arguments the ZCode executable received.
        #[arg(last = true)]
        argv: Vec<OsString>,
    },
    /// Lay out a fake ZCode install (see `docs/simulator.md`).
    Install {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

pub fn run(command: SimulatorCommand) -> ExitCode {
    match command {
        SimulatorCommand::Runtime { state, install_root, argv } => {
            if let Some(state) = state
                && std::env::var_os("ZCODE_SIM_STATE").is_none()
            {
                // SAFETY: called before the simulator starts any thread; nothing else reads
                // or writes the environment concurrently.
                unsafe { std::env::set_var("ZCODE_SIM_STATE", state) };
            }
            zcode_sim::run_runtime(&install_root, argv)
        }
        SimulatorCommand::Install { mut args } => {
            if !args.iter().any(|arg| arg == "--runner") {
                // By default the install's runtime is this binary's simulator.
                let Ok(exe) = std::env::current_exe() else {
                    eprintln!("zcode-acp: cannot find this executable");
                    return ExitCode::FAILURE;
                };
                args.extend(["--runner".into(), exe.display().to_string()]);
                args.extend(["simulator".into(), "runtime".into()]);
            }
            zcode_fake_install::main_with_args(args)
        }
    }
}
