//! The bundled CLI's command line (3.15.1 source `apps/zcode-cli/packages/cli/src/run.ts`,
//! `arguments.ts`; the 3.14.0 copy in `zzycxz/FreeCodeZ` has the same two files): `--version` /
//! `-v` and the `version` subcommand print the version and a newline; `--disallowed-tools` (or
//! `--disallowedTools`, also with `=`) is taken out of the arguments before anything else is
//! parsed, with every value up to the next option; `app-server` (alias `agent-server`) starts
//! the Agent on stdio; an unknown command or option prints a message and the help on stderr and
//! exits 1.

use std::path::Path;
use std::process::ExitCode;

use super::fault::AppFaults;
use super::profile::AppServerProfile;
use super::provider_config::ProviderConfig;
use super::server::{Options, Server};
use super::store::AppStore;
use crate::common::output::Output;
use crate::common::process::{block_on, cli_version, platform};

const HELP: &str = "Usage: zcode <command> [options]

Commands:
  app-server [--stdio]   Run the Agent, speaking the ZCode protocol on stdin/stdout
  doctor [--json]        Report the CLI and its runtime
  version                Print the version

Options:
  -v, --version          Print the version
  -h, --help             Print this help";

/// Runs the CLI for `args` (the arguments after `zcode.cjs`).
pub fn run(install_root: &Path, profile: &'static AppServerProfile, args: &[String]) -> ExitCode {
    let args = match without_disallowed_tools(args) {
        Ok(args) => args,
        Err(message) => return usage_error(&message),
    };
    let command = args.first().map(String::as_str);
    let rest = args.get(1..).unwrap_or_default();
    match command {
        Some("--version" | "-v") => print_version(profile),
        Some("version") => print_version(profile),
        Some("--help" | "-h") => {
            println!("{HELP}");
            ExitCode::SUCCESS
        }
        Some("app-server" | "agent-server") => match ServerFlags::parse(rest) {
            Ok(flags) => serve(install_root, profile, flags),
            Err(message) => usage_error(&message),
        },
        Some("doctor") => match rest {
            [] => doctor(profile, false),
            [flag] if flag == "--json" => doctor(profile, true),
            _ => usage_error(&format!("Unknown option: {}", rest[0])),
        },
        Some(other) => usage_error(&format!("Unknown command: {other}")),
        None => {
            // The real CLI opens its terminal UI here; nothing a host drives.
            eprintln!("zcode-sim: the interactive terminal UI is not simulated");
            ExitCode::from(2)
        }
    }
}

/// The arguments without the tool disallow list (`extractDisallowedToolsArgs`): the flag takes
/// every following argument that is not an option, and at least one. The list itself changes
/// nothing here: the scripted model never calls the Cron tools a host hides this way.
fn without_disallowed_tools(args: &[String]) -> Result<Vec<String>, String> {
    const FLAGS: [&str; 2] = ["--disallowed-tools", "--disallowedTools"];
    let is_option = |arg: &str| arg.starts_with('-');
    let mut kept = Vec::new();
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        if FLAGS.iter().any(|flag| arg.strip_prefix(flag).is_some_and(|rest| rest.starts_with('=')))
        {
            continue;
        }
        if !FLAGS.contains(&arg.as_str()) {
            kept.push(arg.clone());
            continue;
        }
        let mut consumed = false;
        while args.next_if(|next| !is_option(next)).is_some() {
            consumed = true;
        }
        if !consumed {
            return Err(format!("{arg} requires at least one tool."));
        }
    }
    Ok(kept)
}

fn print_version(profile: &AppServerProfile) -> ExitCode {
    println!("{}", cli_version(profile.cli_version));
    ExitCode::SUCCESS
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("{message}\n\n{HELP}");
    ExitCode::from(1)
}

fn doctor(profile: &AppServerProfile, json: bool) -> ExitCode {
    let report = serde_json::json!({
        "cli": {"name": "zcode", "processName": "zcode", "version": cli_version(profile.cli_version)},
        "runtime": {"node": "v24.14.0", "platform": platform()},
        "packaging": {"default": "node-bundle", "sea": "optional"},
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serializable"));
    } else {
        println!("zcode {}", cli_version(profile.cli_version));
        println!("runtime: node v24.14.0 ({})", platform());
        println!("packaging: node-bundle");
    }
    ExitCode::SUCCESS
}

/// `app-server` options.
#[derive(Debug, Default, PartialEq, Eq)]
struct ServerFlags {
    prepare_storage: bool,
}

impl ServerFlags {
    fn parse(args: &[String]) -> Result<ServerFlags, String> {
        let mut flags = ServerFlags::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--stdio" => {}
                "--prepare-storage" => flags.prepare_storage = true,
                "--surface" => {
                    args.next().ok_or("Option --surface needs a value")?;
                }
                other if other.starts_with("--surface=") => {}
                other => return Err(format!("Unknown option: {other}")),
            }
        }
        Ok(flags)
    }
}

fn serve(install_root: &Path, profile: &'static AppServerProfile, flags: ServerFlags) -> ExitCode {
    let options = match Options::from_env() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("zcode-sim: {message}");
            return ExitCode::from(2);
        }
    };
    let faults = match AppFaults::from_env(&[]) {
        Ok(faults) => faults,
        Err(message) => {
            eprintln!("zcode-sim: invalid ZCODE_SIM_FAULT: {message}");
            return ExitCode::from(2);
        }
    };
    // The real CLI exits during boot when it cannot locate its built-in provider table.
    let provider = match ProviderConfig::from_env() {
        Ok(provider) => provider,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(1);
        }
    };
    let store = AppStore::for_install(install_root);
    block_on(async move {
        let out = Output::start(false);
        let server = Server::new(profile, options, faults, store, provider, out);
        super::stdio::serve(server, flags.prepare_storage).await
    });
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn the_tool_disallow_list_is_taken_out_before_parsing() {
        let args = strings(&["app-server", "--stdio", "--disallowed-tools", "CronCreate CronList"]);
        assert_eq!(without_disallowed_tools(&args), Ok(strings(&["app-server", "--stdio"])));
        let args = strings(&["--disallowedTools", "A", "B", "app-server", "--stdio"]);
        // Every value up to the next option is a tool, the command included (as in ZCode).
        assert_eq!(without_disallowed_tools(&args), Ok(strings(&["--stdio"])));
        let args = strings(&["app-server", "--disallowed-tools=CronCreate", "--stdio"]);
        assert_eq!(without_disallowed_tools(&args), Ok(strings(&["app-server", "--stdio"])));
        assert_eq!(
            without_disallowed_tools(&strings(&["app-server", "--disallowed-tools", "--stdio"])),
            Err("--disallowed-tools requires at least one tool.".into())
        );
    }

    #[test]
    fn server_flags_accept_the_hosts_argv_and_refuse_others() {
        assert_eq!(ServerFlags::parse(&strings(&["--stdio"])), Ok(ServerFlags::default()));
        let prepared = ServerFlags::parse(&strings(&["--stdio", "--prepare-storage"])).unwrap();
        assert!(prepared.prepare_storage);
        assert!(ServerFlags::parse(&strings(&["--surface", "desktop", "--stdio"])).is_ok());
        assert!(ServerFlags::parse(&strings(&["--surface"])).is_err());
        assert_eq!(
            ServerFlags::parse(&strings(&["--jsonrpc"])),
            Err("Unknown option: --jsonrpc".into())
        );
    }
}
