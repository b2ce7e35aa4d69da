//! `zcode-acp demo [PROMPT]`: a real ACP client showing a session in the terminal.
//!
//! It starts this same executable as `zcode-acp --simulate` over stdio with the official
//! SDK's client and renders what the agent sends. Without a prompt it tours the simulator's
//! built-in scenarios in one session. Stdout carries only human text, never ACP JSON.

mod answer;
mod client;
mod render;

use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use agent_client_protocol::AcpAgentConfig;
use clap::Args;

use crate::Target;
use answer::Policy;
use client::{Ending, Failure, Setup, Step};
use render::Renderer;

/// Exit code after Ctrl-C, as shells report a SIGINT death.
const INTERRUPTED: u8 = 130;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// The prompt to send (default: a short tour of the simulator's scenarios).
    pub prompt: Option<String>,
    /// Answer every permission with its first allow option and every question with its
    /// first option.
    #[arg(long, conflicts_with = "no")]
    pub yes: bool,
    /// Reject every permission and decline every question.
    #[arg(long)]
    pub no: bool,
    /// Run the session in this folder instead of a temporary one (the tour's edit step
    /// writes a file there when allowed).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// The tour: one prompt per built-in scenario (triggers: `docs/simulator.md`).
const TOUR: &[(&str, &str)] = &[
    ("a plain reply", "Hello! What can you do?"),
    ("reasoning, then a reply", "sim:reason"),
    ("a tool that reads a file", "sim:read README.md"),
    ("an edit that needs permission", "sim:edit notes.txt Written during the zcode-acp demo."),
    ("a question", "sim:question"),
    ("a plan to approve", "sim:plan"),
];

/// What the tour's temporary workspace starts with, so the read step has a file to read.
const SEED_README: &str =
    "# Demo workspace\n\nA temporary folder made by `zcode-acp demo`; it is removed at the end.\n";

pub fn run(target: &Target, args: DemoArgs) -> ExitCode {
    match demo(target, args) {
        Ok(Ending::Finished) => ExitCode::SUCCESS,
        Ok(Ending::Interrupted) => ExitCode::from(INTERRUPTED),
        Err(Failure::Quit) => {
            eprintln!("zcode-acp demo: interrupted");
            ExitCode::from(INTERRUPTED)
        }
        Err(failure) => {
            eprintln!("zcode-acp demo: {failure}");
            ExitCode::FAILURE
        }
    }
}

fn demo(target: &Target, args: DemoArgs) -> Result<Ending, Failure> {
    let policy = Policy::new(args.yes, args.no, io::stdin().is_terminal());
    let steps = match args.prompt {
        Some(prompt) => vec![Step { caption: None, prompt }],
        None => TOUR
            .iter()
            .map(|(caption, prompt)| Step {
                caption: Some(caption.to_string()),
                prompt: prompt.to_string(),
            })
            .collect(),
    };
    let workspace = match args.cwd {
        Some(dir) => Workspace::existing(&dir),
        None => Workspace::temporary(),
    }
    .map_err(Failure::Setup)?;
    let setup = Setup {
        agent: agent_command(target).map_err(Failure::Setup)?,
        cwd: workspace.path.clone(),
        steps,
        policy,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Setup(format!("cannot start the async runtime: {e}")))?;
    let mut renderer =
        Renderer::new(io::stdout(), io::stdout().is_terminal()).relative_to(&workspace.path);
    runtime.block_on(client::run(setup, &mut renderer))
    // `workspace` is dropped here, after the agent has shut down.
}

/// `zcode-acp --simulate [--simulate-version V] [--mappers-dir DIR]`: this executable
/// serving ACP on stdio.
fn agent_command(target: &Target) -> Result<AcpAgentConfig, String> {
    if let Some(install) = &target.zcode_install {
        return Err(format!(
            "the demo drives the built-in simulator; --zcode-install {} does not apply",
            install.display()
        ));
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this executable to start the agent: {e}"))?;
    let mut agent = AcpAgentConfig::new(exe).arg("--simulate");
    if let Some(version) = &target.simulate_version {
        agent = agent.arg("--simulate-version").arg(version);
    }
    if let Some(dir) = &target.mappers_dir {
        let dir = dir
            .to_str()
            .ok_or_else(|| format!("the mappers folder is not valid UTF-8: {}", dir.display()))?;
        agent = agent.arg("--mappers-dir").arg(dir);
    }
    Ok(agent)
}

/// The session's folder; a temporary one is removed when this is dropped.
struct Workspace {
    path: PathBuf,
    temporary: bool,
}

impl Workspace {
    fn temporary() -> Result<Self, String> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let name = format!("zcode-acp-demo-{}-{nanos:08x}", std::process::id());
        let path = std::env::temp_dir().join(name);
        // `create_dir`, not `create_dir_all`: never adopt (and later delete) an existing folder.
        std::fs::create_dir(&path)
            .map_err(|e| format!("cannot create the workspace {}: {e}", path.display()))?;
        // Canonical, so paths the agent reports (macOS: /private/var/...) show relative to it.
        let path = path.canonicalize().unwrap_or(path);
        let workspace = Workspace { path, temporary: true };
        std::fs::write(workspace.path.join("README.md"), SEED_README).map_err(|e| {
            format!("cannot prepare the workspace {}: {e}", workspace.path.display())
        })?;
        Ok(workspace)
    }

    fn existing(dir: &Path) -> Result<Self, String> {
        let path = dir.canonicalize().map_err(|e| format!("--cwd {}: {e}", dir.display()))?;
        if !path.is_dir() {
            return Err(format!("--cwd {}: not a folder", dir.display()));
        }
        Ok(Workspace { path, temporary: false })
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if self.temporary
            && let Err(error) = std::fs::remove_dir_all(&self.path)
        {
            eprintln!("zcode-acp demo: cannot remove {}: {error}", self.path.display());
        }
    }
}
