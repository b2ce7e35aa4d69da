//! Secrets never reach a log: prompt text, tool input, file contents, credentials, MCP server
//! headers and environment, provider runtime headers — at the default level, at `debug` and at
//! `trace` (the SDK's frame traces are capped), on stderr and in `ZCODE_ACP_LOG_FILE`. The log
//! file is created private (0600), only appended to, and refused when its path is relative.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;
use support::reliability::Invariants;
use support::*;

const SECRETS: [&str; 7] = [
    "PROMPT-SECRET-3f1a",
    "INPUT-SECRET-77c2",
    "FILE-SECRET-a9e0",
    "CRED-SECRET-51d4",
    "MCP-HEADER-SECRET-0b6e",
    "MCP-ENV-SECRET-c3f7",
    "ENV-SECRET-9d21",
];

/// Runs one session that carries every secret through the agent at log level `level`, with
/// the JSON log file at `log_file`; returns everything logged (stderr and the file).
fn session_with_secrets(level: &str) -> String {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    std::fs::write(workspace.join("README.md"), "FILE-SECRET-a9e0\n").unwrap();
    let credentials = env.path().join("home/.zcode/v2");
    std::fs::create_dir_all(&credentials).unwrap();
    std::fs::write(credentials.join("credentials.json"), r#"{"token":"CRED-SECRET-51d4"}"#)
        .unwrap();
    let log_file = env.path().join("agent.log");
    let log_path = log_file.to_str().unwrap();
    let mut agent = Agent::start_with_env(
        &env,
        policy::permission_kind("allow_once"),
        &[
            ("ZCODE_ACP_LOG", level),
            ("ZCODE_ACP_LOG_FILE", log_path),
            ("ZAI_API_KEY", "ENV-SECRET-9d21"),
            ("HTTPS_PROXY", "http://user:ENV-SECRET-9d21@proxy.invalid:3128"),
        ],
    );
    let mut capabilities = plain_client();
    capabilities["auth"] = json!({"terminal": true});
    agent.initialize(capabilities);
    let auth = agent.request("authenticate", json!({"methodId": "zcode-login"}));
    assert!(auth.get("result").is_some(), "signed in with the credentials file: {auth}");
    let mcp = json!([
        {"type": "http", "name": "remote", "url": "https://mcp.invalid/",
         "headers": [{"name": "Authorization", "value": "Bearer MCP-HEADER-SECRET-0b6e"}]},
        {"name": "local", "command": "/bin/true", "args": [],
         "env": [{"name": "TOKEN", "value": "MCP-ENV-SECRET-c3f7"}]}
    ]);
    let created = agent.call("session/new", json!({"cwd": workspace, "mcpServers": mcp}));
    let session = created["sessionId"].as_str().unwrap().to_string();
    agent.prompt_ok(&session, "PROMPT-SECRET-3f1a please", "end_turn");
    agent.prompt_ok(&session, "sim:read", "end_turn");
    agent.prompt_ok(&session, "sim:edit out.txt INPUT-SECRET-77c2", "end_turn");
    // Provider runtime headers cannot be supplied headlessly: the turn fails, nothing leaks.
    // (The Services Server supplies them itself: there the turn ends normally.)
    let headers = agent.prompt_when_idle_response(&session, "sim:headers");
    match generation() {
        Generation::ServicesServer => assert!(headers.get("result").is_some(), "{headers}"),
        _ => assert!(headers.get("error").is_some(), "{headers}"),
    }

    // The secrets the client may see did reach it: their absence from the logs means something.
    let wire: String = agent.transcript().frames.iter().map(|f| f.value.to_string()).collect();
    for seen in ["PROMPT-SECRET-3f1a", "INPUT-SECRET-77c2", "FILE-SECRET-a9e0"] {
        assert!(wire.contains(seen), "{seen} never reached the client");
    }
    let stderr = agent.stderr();
    Invariants::new(&env).tolerate_rejected_native_answers().finish(agent);
    let file = std::fs::read_to_string(&log_file).expect("the log file was written");
    assert!(file.lines().count() > 5, "the log file holds the session's logs at {level}");
    format!("{stderr}\n{file}")
}

fn assert_no_secret(level: &str, logs: &str) {
    assert!(logs.contains("prompt completed"), "no lifecycle logs at {level}");
    for secret in SECRETS {
        let line = logs.lines().find(|l| l.contains(secret));
        assert!(line.is_none(), "{secret} logged at {level}: {}", line.unwrap_or_default());
    }
}

#[test]
fn no_secret_is_logged_at_the_default_level() {
    assert_no_secret("info", &session_with_secrets("info"));
}

#[test]
fn no_secret_is_logged_at_debug() {
    assert_no_secret("debug", &session_with_secrets("debug"));
}

#[test]
fn no_secret_is_logged_at_trace_even_when_the_sdk_is_asked_for_trace() {
    let level = "trace,agent_client_protocol=trace,zcode_bridge=trace";
    assert_no_secret(level, &session_with_secrets(level));
}

/// Directives scoped to a span (the SDK logs inside its `connection` span) must not lift the
/// cap on the SDK's frame traces either.
#[test]
fn no_secret_is_logged_with_span_scoped_trace_directives() {
    for level in ["info,[connection]=trace", "info,agent_client_protocol[connection]=trace"] {
        assert_no_secret(level, &session_with_secrets(level));
    }
}

/// The default level is `info`: the SDK's per-frame debug lines belong to `debug` only.
#[test]
fn the_default_level_logs_nothing_below_info() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &[("ZCODE_ACP_LOG", "info")]);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "sim:stream 50", "end_turn");
    let (status, stderr) = agent.finish_with_stderr();
    assert!(status.success());
    let below: Vec<&str> =
        stderr.lines().filter(|l| l.contains(" DEBUG ") || l.contains(" TRACE ")).collect();
    assert!(
        below.is_empty(),
        "{} lines below info at the default level, e.g. {:?}",
        below.len(),
        below.first()
    );
}

// ----- the log file ----------------------------------------------------------------------------

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_log_file_is_created_private_and_only_appended_to() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let log_file = env.path().join("logs/zcode-acp.log");
    std::fs::create_dir_all(log_file.parent().unwrap()).unwrap();
    let log = [("ZCODE_ACP_LOG_FILE", log_file.to_str().unwrap())];

    // Created by the agent: 0600, JSON lines.
    let (mut agent, session) =
        support::reliability::agent_with_session(&env, policy::refuse_all(), &log, &workspace);
    agent.prompt_ok(&session, "first process", "end_turn");
    assert!(agent.finish().success());
    assert_eq!(mode_of(&log_file), 0o600, "created private");
    let first = std::fs::read_to_string(&log_file).unwrap();
    assert!(!first.is_empty());
    for line in first.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
    }

    // A second process appends: everything already there is kept, byte for byte.
    let (mut agent, session) =
        support::reliability::agent_with_session(&env, policy::refuse_all(), &log, &workspace);
    agent.prompt_ok(&session, "second process", "end_turn");
    assert!(agent.finish().success());
    let second = std::fs::read_to_string(&log_file).unwrap();
    assert!(second.starts_with(&first), "earlier content was rewritten");
    assert!(second.len() > first.len(), "nothing appended");
    assert_eq!(mode_of(&log_file), 0o600);
}

#[test]
fn a_relative_log_file_is_refused_before_anything_starts() {
    let env = TestEnv::new();
    let output = Command::new(agent_binary())
        .arg("--simulate")
        .env("HOME", env.path().join("home"))
        .env("ZCODE_ACP_LOG_FILE", "relative/agent.log")
        .current_dir(env.path())
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp");
    assert!(!output.status.success(), "a relative log file was accepted");
    assert!(output.stdout.is_empty(), "stdout carries ACP only: {:?}", output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ZCODE_ACP_LOG_FILE must be an absolute path"), "{stderr}");
    assert!(!env.path().join("relative").exists(), "the relative file was created");
}
