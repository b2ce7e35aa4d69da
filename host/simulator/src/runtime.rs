//! The simulated runtime child: dispatches the argv the ZCode executable received, as the
//! real Electron-run-as-Node runtime would (a bundled CLI command, or `-e <script>`).

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use crate::app_server;
use crate::common::auth;
use crate::common::process::{fail, platform};
use crate::task::bridge_script as bridge;
use crate::task::profile::{Profile, Release};

/// Name of the bundled CLI entry inside the install.
const CLI_ENTRY: &str = "zcode.cjs";
/// Node version the bundled runtime reports in `doctor`.
const NODE_VERSION: &str = "24.14.0";
/// Set by the launcher of a fake install that must report another CLI version.
const CLI_VERSION_ENV: &str = "ZCODE_SIM_CLI_VERSION";

/// Runs the simulated runtime for `argv` (the arguments after the executable's name).
pub fn run_runtime(install_root: &Path, argv: Vec<OsString>) -> ExitCode {
    // A zcode-runtime root (plain Node, Services Server) rather than a Desktop install.
    if let Some(code) = crate::services::run_if_runtime(install_root, &argv) {
        return code;
    }
    let release = match Release::detect(install_root) {
        Ok(release) => release,
        Err(message) => return fail(1, &format!("zcode-sim: {message}")),
    };
    if std::env::var("ELECTRON_RUN_AS_NODE").as_deref() != Ok("1") {
        return fail(
            1,
            "zcode-sim: ELECTRON_RUN_AS_NODE=1 is required (without it the real executable \
             would start the desktop app instead of running Node)",
        );
    }
    let args: Vec<String> = argv.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
    match args.first().map(String::as_str) {
        Some("-e") if args.len() >= 2 => match release {
            Release::Host(profile) => bridge::run(install_root, profile),
            Release::AppServer(profile) => fail(
                2,
                &format!(
                    "zcode-sim: the host bridge (-e) is not simulated for ZCode {}; run \
                     zcode.cjs app-server --stdio",
                    profile.app_version
                ),
            ),
        },
        Some("-e") => fail(9, "zcode-sim: -e requires an argument"),
        Some(entry) if Path::new(entry).file_name().is_some_and(|name| name == CLI_ENTRY) => {
            if !Path::new(entry).is_file() {
                return fail(1, &format!("Error: Cannot find module '{entry}'"));
            }
            match release {
                Release::Host(profile) => cli(profile, &args[1..]),
                Release::AppServer(profile) => app_server::run(install_root, profile, &args[1..]),
            }
        }
        _ => fail(2, &format!("zcode-sim: unsupported runtime arguments: {args:?}")),
    }
}

/// Parses `--install-root <root> -- <argv...>` (the runner's own command line, without the
/// program name) and runs the runtime.
pub fn run_runner(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let mut args = args.into_iter();
    let usage = "usage: zcode-sim --install-root <root> -- <runtime argv...>";
    let (Some(flag), Some(root), Some(separator)) = (args.next(), args.next(), args.next()) else {
        return fail(2, usage);
    };
    if flag != "--install-root" || separator != "--" {
        return fail(2, usage);
    }
    run_runtime(Path::new(&root), args.collect())
}

fn cli(profile: &Profile, args: &[String]) -> ExitCode {
    let command = args.first().map(String::as_str);
    let flags = args.get(1..).unwrap_or_default();
    let flags_are = |allowed: &[&str]| flags.iter().all(|flag| allowed.contains(&flag.as_str()));
    match command {
        Some("version") if flags.is_empty() => {
            println!("{}", cli_version(profile));
            ExitCode::SUCCESS
        }
        Some("doctor") if flags_are(&["--json"]) => doctor(profile, !flags.is_empty()),
        Some("login") if flags_are(&["--no-browser"]) => match auth::login() {
            Ok(url) => {
                println!("Open this URL to sign in: {url}");
                println!("Signed in.");
                ExitCode::SUCCESS
            }
            Err(message) => fail(1, &format!("error: {message}")),
        },
        Some("logout") if flags.is_empty() => match auth::logout() {
            Ok(()) => {
                println!("Signed out.");
                ExitCode::SUCCESS
            }
            Err(message) => fail(1, &format!("error: {message}")),
        },
        Some(known @ ("version" | "doctor" | "login" | "logout")) => {
            fail(2, &format!("error: unexpected arguments for {known}: {flags:?}"))
        }
        Some(other) => fail(2, &format!("error: unknown command '{other}'")),
        None => fail(2, "error: a command is required (version, doctor, login, logout)"),
    }
}

/// The version the CLI reports: the profile's, unless a fake install's launcher asks for another
/// (the wrong-CLI-version variant, which the compatibility gate must refuse).
fn cli_version(profile: &Profile) -> String {
    std::env::var(CLI_VERSION_ENV).unwrap_or_else(|_| profile.cli_version.to_string())
}

fn doctor(profile: &Profile, json: bool) -> ExitCode {
    let report = serde_json::json!({
        "version": cli_version(profile),
        "appVersion": profile.app_version,
        "runtime": "electron-node",
        "node": NODE_VERSION,
        "platform": platform(),
        "authentication": auth::credentials_state(),
        "simulated": true,
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serializable"));
    } else if let Some(fields) = report.as_object() {
        for (key, value) in fields {
            println!(
                "{key}: {}",
                value.as_str().map(str::to_owned).unwrap_or_else(|| value.to_string())
            );
        }
    }
    ExitCode::SUCCESS
}
