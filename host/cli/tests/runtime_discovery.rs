//! Discovery of standalone ZCode runtimes, end to end through the binary: fake runtime roots
//! (`zcode-acp simulator install --layout runtime|paseo`), found as a user would point at them
//! — the folder with its Node, the runtime directory with `--zcode-node`, the Paseo plugin's
//! managed folder found by itself — and `doctor` saying what is missing. (The library-level
//! cases are `host/discovery/tests/runtime.rs`; these prove the binary wires them up and that a
//! session then runs.) Independent of `ZCODE_ACP_E2E_SIMULATE_VERSION`: each test lays out its
//! own install.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::reliability::Invariants;
use support::*;

const RELEASE: &str = "4.0.0";

/// Lays out a fake runtime install in `dir`; returns (what to point at, its Node).
fn install(env: &TestEnv, dir: &Path, layout: &str, variant: &str) -> (PathBuf, PathBuf) {
    let output = Command::new(agent_binary())
        .args(["simulator", "install"])
        .arg(dir)
        .args(["--layout", layout, "--app-version", RELEASE, "--variant", variant])
        .env("ZCODE_SIM_STATE", env.sim_state())
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp simulator install");
    assert!(output.status.success(), "simulator install {layout} {variant}: {output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let mut lines = text.lines();
    let root = PathBuf::from(lines.next().expect("the install root"));
    let node = lines.next().and_then(|l| l.strip_prefix("node ")).expect("the runtime's Node");
    (root, PathBuf::from(node))
}

/// `zcode-acp <args> doctor --json` in `env`'s home and data folders: (report, exit code).
fn doctor(env: &TestEnv, args: &[&str]) -> (Value, Option<i32>) {
    let output = Command::new(agent_binary())
        .args(args)
        .args(["doctor", "--json"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.path().join("home"))
        .env("XDG_DATA_HOME", env.path().join("data"))
        // The mapper cache the agents of the suite share (compiling the mapper is the slow part).
        .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-cache"))
        .env("ZCODE_SIM_STATE", env.sim_state())
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp doctor");
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("doctor --json is JSON ({e}): {output:?}"));
    (report, output.status.code())
}

fn selected_release(report: &Value) -> &str {
    report["selectedMapper"]["releaseId"].as_str().unwrap_or_default()
}

/// `session/new` and a prompt through the install the args name.
fn a_session_runs(env: &TestEnv, args: &[&str]) {
    let workspace = env.workspace("ws");
    let mut agent = Agent::start_with_args(env, policy::refuse_all(), args, &[]);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "found by discovery", "end_turn");
    Invariants::new(env).finish(agent);
}

#[test]
fn a_runtime_folder_with_its_node_is_found_and_serves_a_session() {
    let env = TestEnv::new();
    let (root, node) = install(&env, &env.path().join("runtime"), "runtime", "good");
    let root = root.to_str().unwrap();
    let (report, code) = doctor(&env, &["--zcode-install", root]);
    assert_eq!((report["ok"].as_bool(), code), (Some(true), Some(0)), "{report:#}");
    assert_eq!(report["layout"], "runtime");
    assert_eq!(selected_release(&report), format!("zcode-services-sim-{RELEASE}"));
    let tried = &report["node"]["tried"][0];
    assert_eq!(
        (tried["path"].as_str(), tried["source"].as_str()),
        (node.to_str(), Some("install"))
    );
    assert_eq!(tried["accepted"], true, "{tried}");
    a_session_runs(&env, &["--zcode-install", root]);
}

#[test]
fn the_runtime_directory_runs_on_the_node_zcode_node_names() {
    let env = TestEnv::new();
    let (root, node) = install(&env, &env.path().join("runtime"), "runtime", "good");
    let dir = root.join("zcode");
    let dir = dir.to_str().unwrap();
    // The runtime directory alone holds no Node: doctor says how to name one.
    let (report, _) = doctor(&env, &["--zcode-install", dir]);
    assert_eq!(report["ok"], false, "{report:#}");
    let reason = report["mappers"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("--zcode-node"), "says how to name a Node: {reason}");
    // Named, the Node is verified and used.
    let args = ["--zcode-install", dir, "--zcode-node", node.to_str().unwrap()];
    let (report, code) = doctor(&env, &args);
    assert_eq!((report["ok"].as_bool(), code), (Some(true), Some(0)), "{report:#}");
    assert_eq!(report["node"]["tried"][0]["source"], "flag", "{report:#}");
    a_session_runs(&env, &args);
}

#[test]
fn the_paseo_managed_folder_is_found_without_being_named() {
    let env = TestEnv::new();
    let runtimes = env.path().join("data/paseo-plugin-zcode-provider/runtimes");
    let (entry, node) = install(&env, &runtimes, "paseo", "good");
    let (report, code) = doctor(&env, &[]);
    assert_eq!((report["ok"].as_bool(), code), (Some(true), Some(0)), "{report:#}");
    assert_eq!(report["install"]["resolvedRoot"].as_str(), entry.to_str(), "{report:#}");
    let tried = &report["node"]["tried"][0];
    assert_eq!(
        (tried["path"].as_str(), tried["source"].as_str()),
        (node.to_str(), Some("managed"))
    );
    assert_eq!(selected_release(&report), format!("zcode-services-sim-{RELEASE}"));
    a_session_runs(&env, &[]);
}

#[test]
fn doctor_says_what_is_missing_node_too_old_or_electron() {
    for (variant, says) in
        [("node-too-old", "Node 22 found, 24 needed"), ("electron-node", "is Electron")]
    {
        let env = TestEnv::new();
        let (root, _) = install(&env, &env.path().join("runtime"), "runtime", variant);
        let (report, code) = doctor(&env, &["--zcode-install", root.to_str().unwrap()]);
        assert_eq!(report["ok"], false, "{variant}: {report:#}");
        assert_ne!(code, Some(0), "{variant}");
        let problem = report["node"]["tried"][0]["problem"].as_str().unwrap_or_default();
        assert!(problem.contains(says), "{variant}: {problem}");
        assert_eq!(report["mappers"][0]["refusedBy"], "node", "{variant}: {report:#}");
        // A session is refused with the same reason, and nothing starts.
        let workspace = env.workspace("ws");
        let args = ["--zcode-install", root.to_str().unwrap()];
        let mut agent = Agent::start_with_args(&env, policy::refuse_all(), &args, &[]);
        agent.initialize(plain_client());
        let response =
            agent.request("session/new", serde_json::json!({"cwd": workspace, "mcpServers": []}));
        let (_, message) = agent.error_of(&response, variant);
        let text = format!("{message} {}", response["error"]["data"]);
        assert!(text.contains(says), "{variant}: {text}");
        assert!(agent.live_descendants().is_empty(), "{variant}: a Server was started");
        Invariants::new(&env).finish(agent);
    }
}
