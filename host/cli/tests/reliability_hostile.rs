//! Hostile mappers, end to end: a drop-in mapper (`tests/hostile-mapper`, the ZCode 3.12.3
//! mapper with a wrapper that misbehaves on request) drives a simulated 3.12.3 install. Each
//! misbehaviour fails only what it should, with a clear error: a session fault fails that
//! session (its neighbour on the same host and mapper works on), a connection fault fails that
//! host (a new session gets a fresh one), a mapper that imports files or sockets never loads,
//! and a contract that claims every ZCode matches none. The sandbox limits themselves are
//! tested in `host/mapper-runtime/tests/sandbox.rs`.
//!
//! Independent of `ZCODE_ACP_E2E_SIMULATE_VERSION` (every test names 3.12.3): `scripts/test`
//! runs it once, not once per release.

#[allow(dead_code)] // the build helper has more than this test needs
#[path = "../../embedded-mappers/guest_build.rs"]
mod guest_build;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use support::reliability::{
    Bystander, Invariants, Reach, wait_native_resolution, warm_mapper_cache,
};
use support::*;

/// The hostile drop-in built with `features`, once per test binary and feature set.
fn component(features: &'static [&'static str]) -> &'static [u8] {
    static PLAIN: OnceLock<Vec<u8>> = OnceLock::new();
    static CAPABILITIES: OnceLock<Vec<u8>> = OnceLock::new();
    static EVERYTHING: OnceLock<Vec<u8>> = OnceLock::new();
    let cell = match features {
        [] => &PLAIN,
        ["capabilities"] => &CAPABILITIES,
        ["claims-everything"] => &EVERYTHING,
        other => panic!("no such build: {other:?}"),
    };
    cell.get_or_init(|| {
        let manifest =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/hostile-mapper/Cargo.toml");
        let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-dropin");
        let build = guest_build::GuestBuild {
            cargo: std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()),
            manifest: &manifest,
            target_dir: &target_dir,
            features,
        };
        let built = build.run().unwrap_or_else(|message| panic!("{message}"));
        std::fs::read(built).expect("read the hostile component")
    })
}

/// A mappers folder holding the hostile drop-in built with `features`, trusted (the tests
/// are about what the sandbox and the gate do with a mapper the user chose to load).
fn mappers_dir(env: &TestEnv, features: &'static [&'static str]) -> PathBuf {
    let dir = env.path().join("mappers");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hostile.wasm");
    std::fs::write(&file, component(features)).unwrap();
    trust_mapper(env, &file);
    dir
}

/// The agent on a simulated ZCode 3.12.3 with only the hostile drop-in able to drive it.
fn hostile_agent(env: &TestEnv, policy: Policy) -> Agent {
    let dir = mappers_dir(env, &[]);
    let args =
        ["--simulate", "--simulate-version", "3.12.3", "--mappers-dir", dir.to_str().unwrap()];
    warm_mapper_cache(env, &args);
    let mut agent = Agent::start_with_args(env, policy, &args, &[]);
    agent.initialize(plain_client());
    agent
}

/// `zcode-acp --simulate --simulate-version 3.12.3 --mappers-dir <dir> doctor --json`.
fn doctor(env: &TestEnv, dir: &Path) -> Value {
    let output = Command::new(agent_binary())
        .args(["--simulate", "--simulate-version", "3.12.3", "--mappers-dir"])
        .arg(dir)
        .args(["doctor", "--json"])
        .env("HOME", env.path().join("home"))
        .env("XDG_CONFIG_HOME", env.path().join("home").join(".config"))
        .env("XDG_CACHE_HOME", env.path().join("cache"))
        .env("ZCODE_SIM_STATE", env.sim_state())
        .stdin(Stdio::null())
        .output()
        .expect("run doctor");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("doctor printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr))
    })
}

#[test]
fn every_session_fault_of_a_mapper_fails_only_that_session() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = hostile_agent(&env, policy::refuse_all());
    let bystander = Bystander::open(&mut agent, &env);
    for (mode, says) in [
        ("trap", "wasm `unreachable` executed"),
        ("spin", "all fuel consumed"),
        ("grow", "memory limit"),
        ("huge", "memory limit"),
        ("env", "unknown import: `wasi:cli/environment"),
        ("print", "unknown import: `wasi:cli/"),
    ] {
        let session = agent.new_session(&workspace);
        let response = agent.prompt(&session, &format!("hostile:{mode} now"));
        let (code, message) = agent.error_of(&response, mode);
        assert_eq!(code, INTERNAL_ERROR, "{mode}: {message}");
        assert!(message.contains(says), "{mode} should say {says:?}: {message}");
        // The faulty session is done for; nothing of it is reused.
        let again = agent.prompt(&session, "are you there?");
        let (_, message) = agent.error_of(&again, "a prompt on the failed session");
        assert!(message.contains("can no longer be used"), "{mode}: {message}");
        bystander.check(&mut agent, Reach::SessionOnly);
    }
    // Whatever the mapper printed, stdout carried only ACP (checked by `finish`).
    Invariants::new(&env).finish(agent);
}

#[test]
fn invalid_acp_from_the_mapper_fails_only_that_session_with_a_clear_error() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = hostile_agent(&env, policy::refuse_all());
    let bystander = Bystander::open(&mut agent, &env);
    let session = agent.new_session(&workspace);
    let response = agent.prompt(&session, "hostile:invalid-acp please");
    let (code, message) = agent.error_of(&response, "a turn with a non-ACP update");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("invalid ACP session update from the mapper"), "{message}");
    let leaked = agent.updates(&session).iter().any(|u| u.to_string().contains("no_such_update"));
    assert!(!leaked, "the invalid update reached the client");
    bystander.check(&mut agent, Reach::SessionOnly);
    Invariants::new(&env).finish(agent);
}

#[test]
fn an_invalid_permission_from_the_mapper_is_denied_natively_and_never_asked() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = hostile_agent(&env, policy::permission_kind("allow_once"));
    let bystander = Bystander::open(&mut agent, &env);
    let session = agent.new_session(&workspace);
    let response = agent.prompt(&session, "sim:edit hostile.txt hostile:invalid-permission");
    let (code, message) = agent.error_of(&response, "a turn with a non-ACP permission");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("invalid ACP permission request"), "{message}");
    assert!(
        agent.agent_requests().is_empty(),
        "the client was asked: {:#?}",
        agent.agent_requests()
    );
    bystander.check(&mut agent, Reach::SessionOnly);
    // ZCode was told "deny" for the question nobody could be asked, exactly once.
    let hostile = wait_native_resolution(&env, &session);
    assert_eq!(hostile.len(), 1, "{hostile:?}");
    assert_eq!(hostile[0].resolutions, ["deny"], "{hostile:?}");
    agent.finish_with_stderr();
    assert!(!workspace.join("hostile.txt").exists(), "the edit ran");
}

/// The mapper fails (invalid output) while a question is open: the session fails, and ZCode
/// is still told "deny" for the open question, exactly once (architecture §3: pending
/// permissions are answered deny when a session fails and the mapper can still answer).
#[test]
fn a_session_failing_with_an_open_question_still_denies_it_natively() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = hostile_agent(&env, policy::hold());
    let session = agent.new_session(&workspace);
    let id = agent.send_request(
        "session/prompt",
        text_prompt(&session, "sim:edit open.txt hostile:invalid-after-question"),
    );
    let response = agent.wait_response(id);
    let (code, message) = agent.error_of(&response, "a turn failing with an open question");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    // Whatever the client says now changes nothing.
    for question in agent.agent_requests() {
        agent.respond(&question.id, policy::selected(&serde_json::json!("allow")));
    }
    // The simulator records the resolution when the (denied) turn ends natively.
    let resolved = wait_native_resolution(&env, &session);
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0].resolutions, ["deny"], "{resolved:?}");
    agent.finish_with_stderr();
    assert!(!workspace.join("open.txt").exists(), "the edit ran");
}

#[test]
fn a_connection_fault_fails_that_host_and_a_new_session_gets_a_fresh_one() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = hostile_agent(&env, policy::refuse_all());
    let bystander = Bystander::open(&mut agent, &env);
    let session = agent.new_session(&workspace);
    let first_host = agent.live_descendants();
    // The host echoes the prompt in its events: the connection decodes the marker and traps.
    let response = agent.prompt(&session, "hostile:conn-trap please");
    let (code, message) = agent.error_of(&response, "a turn whose decoder trapped");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("unreachable") || message.contains("mapper"), "{message}");
    bystander.check(&mut agent, Reach::WholeHost);
    let second_host = agent.live_descendants();
    assert!(!second_host.is_empty() && second_host != first_host, "a fresh host: {second_host:?}");
    Invariants::new(&env).finish(agent);
}

#[test]
fn a_mapper_that_imports_files_or_sockets_never_loads() {
    let env = TestEnv::new();
    let dir = mappers_dir(&env, &["capabilities"]);
    // `mapper list` and `doctor` say which drop-in was refused and why.
    let listed = Command::new(agent_binary())
        .arg("--mappers-dir")
        .arg(&dir)
        .args(["mapper", "list"])
        .env("HOME", env.path().join("home"))
        .env("XDG_CONFIG_HOME", env.path().join("home").join(".config"))
        .env("XDG_CACHE_HOME", env.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .expect("run mapper list");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let refused = listed.lines().find(|l| l.contains("hostile.wasm")).unwrap_or_default();
    assert!(refused.contains("trusted, not loaded"), "trusted, yet refused: {listed}");
    for import in ["wasi:filesystem/preopens", "wasi:sockets/tcp"] {
        assert!(refused.contains(import), "names the refused import {import}: {listed}");
    }
    // The refused drop-in takes nothing over: the embedded 3.12 mapper drives the install.
    let report = doctor(&env, &dir);
    assert_eq!(accepted_by(&report), ["embedded:zcode-task-v2"], "{report:#}");
    let drop_ins = &report["dropIns"];
    assert_eq!(drop_ins.as_array().map(Vec::len), Some(1), "{report:#}");
    assert!(drop_ins[0]["path"].as_str().unwrap().ends_with("hostile.wasm"), "{drop_ins}");
    assert_eq!(
        (drop_ins[0]["trust"].as_str(), drop_ins[0]["loaded"].as_bool()),
        (Some("trusted"), Some(false))
    );
    assert!(drop_ins[0]["error"].as_str().unwrap().contains("wasi:sockets/tcp"), "{drop_ins}");

    // Over ACP the session is the embedded mapper's.
    assert_session_is_embedded(&env, &dir);
}

/// Sources of the mappers doctor says accept the install.
fn accepted_by(report: &serde_json::Value) -> Vec<String> {
    let mappers = report["mappers"].as_array().expect("mappers in the report");
    mappers
        .iter()
        .filter(|m| m["verdict"] == "accepted")
        .map(|m| m["source"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A session on the simulated 3.12.3 install with `dir` as the drop-in folder works, driven by
/// the embedded mapper: the refused drop-in never runs.
fn assert_session_is_embedded(env: &TestEnv, dir: &std::path::Path) {
    let workspace = env.workspace("ws");
    let args =
        ["--simulate", "--simulate-version", "3.12.3", "--mappers-dir", dir.to_str().unwrap()];
    let mut agent = Agent::start_with_args(env, policy::refuse_all(), &args, &[]);
    agent.initialize(plain_client());
    let response =
        agent.request("session/new", serde_json::json!({"cwd": workspace, "mcpServers": []}));
    assert!(response["result"]["sessionId"].is_string(), "{response}");
    // Logged before the answer, but read on another thread than it (F-37): wait for it.
    agent.wait_stderr("embedded:zcode-task-v2");
    Invariants::new(env).finish(agent);
}

#[test]
fn a_contract_that_claims_every_zcode_is_refused_by_the_gate() {
    let env = TestEnv::new();
    let dir = mappers_dir(&env, &["claims-everything"]);
    let report = doctor(&env, &dir);
    assert_eq!(accepted_by(&report), ["embedded:zcode-task-v2"], "{report:#}");
    let hostile = report["mappers"]
        .as_array()
        .expect("mappers in the report")
        .iter()
        .find(|m| m["protocolId"] == "hostile-dropin")
        .unwrap_or_else(|| panic!("the hostile mapper is reported: {report:#}"));
    assert_eq!(hostile["verdict"], "refused", "{hostile:#}");
    let reason = hostile["reason"].as_str().unwrap_or_default();
    assert!(!reason.is_empty(), "a clear reason: {hostile:#}");

    assert_session_is_embedded(&env, &dir);
}
