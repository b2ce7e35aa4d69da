//! The bundled CLI of ZCode 3.11.2 and 3.12.3 (`zcode.cjs version | doctor | login |
//! logout`), run by the install's Electron as Node.

use std::process::ExitCode;

use super::profile::Profile;
use crate::common::auth;
use crate::common::process::{cli_version, fail, platform};

/// Node version the bundled runtime reports in `doctor`.
const NODE_VERSION: &str = "24.14.0";

pub fn run(profile: &Profile, args: &[String]) -> ExitCode {
    let command = args.first().map(String::as_str);
    let flags = args.get(1..).unwrap_or_default();
    let flags_are = |allowed: &[&str]| flags.iter().all(|flag| allowed.contains(&flag.as_str()));
    match command {
        Some("version") if flags.is_empty() => {
            println!("{}", cli_version(profile.cli_version));
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

fn doctor(profile: &Profile, json: bool) -> ExitCode {
    let report = serde_json::json!({
        "version": cli_version(profile.cli_version),
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
