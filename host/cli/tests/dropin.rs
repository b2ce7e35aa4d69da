//! The design's promise: a new protocol is a drop-in mapper, and a drop-in runs only once the
//! user trusted it.
//!
//! The subject is the SDK's example, `echo-v1` (`mappers/examples/echo-v1`): built with the
//! mappers workspace, never embedded, for a made-up protocol whose host is a small Node server in
//! a standalone-runtime folder. Through the real binary, a trusted copy of it drives that host,
//! and every capability of WIT `zcode:mapper@0.4.0` is on the path: a runtime install found with
//! `--zcode-node` and verified by running the Node, an unpinned file with the identity the host
//! reports, a credential the core fills into the handshake, binary frames and events, a request
//! made while mapping events (a gap in the event sequence), an untracked write (the answer to a
//! host's ping), and a load that streams its history page by page before it is done. Untrusted
//! or changed, the same file is listed and never loaded; `mapper install` verifies, copies and
//! trusts it.
//!
//! Independent of `ZCODE_ACP_E2E_SIMULATE_VERSION` (the echo host is the only ZCode here):
//! `scripts/test` runs it once, not once per release.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{
    Agent, TestEnv, agent_binary, chunk_text, kind, plain_client, policy, shared_cache_dir,
};

const TOKEN: &str = "echo-token-never-logged-4b1e";

/// A test environment with an echo host install, its Node, and a mappers folder holding a copy
/// of the echo component.
struct Echo {
    env: TestEnv,
    install: PathBuf,
    node: PathBuf,
    mappers: PathBuf,
    component: PathBuf,
}

impl Echo {
    fn new() -> Self {
        let env = TestEnv::new();
        let install = env.path().join("echo-host");
        std::fs::create_dir_all(&install).unwrap();
        let host = repository().join("mappers/examples/echo-v1/host/server.mjs");
        std::fs::copy(host, install.join("server.mjs")).unwrap();
        let package = json!({"name": "zcode-echo-host", "version": "1.0.0"});
        std::fs::write(install.join("package.json"), package.to_string()).unwrap();
        let mappers = env.path().join("mappers");
        std::fs::create_dir_all(&mappers).unwrap();
        let component = mappers.join("echo_v1.wasm");
        std::fs::copy(built_echo(), &component).unwrap();
        let node = system_node();
        Self { env, install, node, mappers, component: component.canonicalize().unwrap() }
    }

    /// Puts the host's token where the echo mapper's credential source says it is.
    fn sign_in(&self) {
        let dir = self.env.path().join("home/.echo-host");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("credentials.json"), json!({"token": TOKEN}).to_string()).unwrap();
    }

    /// `--zcode-install <echo host> --zcode-node <node> --mappers-dir <folder>`.
    fn target(&self) -> Vec<String> {
        let text = |path: &Path| path.to_str().unwrap().to_string();
        vec![
            "--zcode-install".into(),
            text(&self.install),
            "--zcode-node".into(),
            text(&self.node),
            "--mappers-dir".into(),
            text(&self.mappers),
        ]
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with_cache(args, &shared_cache_dir())
    }

    /// With `cache` as the cache folder (the mapper cache is `<cache>/zcode-acp/mappers`) and
    /// debug logs on stderr.
    fn run_with_cache(&self, args: &[&str], cache: &Path) -> Output {
        let root = self.env.path();
        Command::new(agent_binary())
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", root.join("home"))
            .env("XDG_CACHE_HOME", cache)
            .env("ZCODE_ACP_LOG", "debug")
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_CONFIG_HOME", root.join("home").join(".config"))
            .env("TMPDIR", root.join("tmp"))
            .stdin(Stdio::null())
            .output()
            .expect("run zcode-acp")
    }

    fn run_ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(output.status.success(), "zcode-acp {args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    fn component(&self) -> &str {
        self.component.to_str().unwrap()
    }

    fn doctor(&self) -> Value {
        let mut args: Vec<String> = self.target();
        args.extend(["doctor".into(), "--json".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = self.run(&args);
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!("doctor --json: {e}: {}", String::from_utf8_lossy(&output.stderr))
        })
    }

    fn agent(&self) -> Agent {
        let target = self.target();
        let args: Vec<&str> = target.iter().map(String::as_str).collect();
        Agent::start_with_args(&self.env, policy::refuse_all(), &args, &[])
    }
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The echo component the mappers workspace built with the embedded ones.
fn built_echo() -> &'static Path {
    zcode_embedded_mappers::example("echo-v1").expect("the mappers workspace builds echo-v1")
}

/// This machine's Node (20 or newer), which the echo host's contract accepts.
fn system_node() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH");
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|node| node.is_file())
        .expect("the tests need Node 20 or newer on PATH")
        .canonicalize()
        .unwrap()
}

#[test]
fn an_untrusted_drop_in_is_listed_with_the_command_that_trusts_it_and_never_loaded() {
    let echo = Echo::new();
    let report = echo.doctor();
    assert_eq!(report["ok"], false, "{report:#}");
    let drop_in = &report["dropIns"][0];
    assert_eq!(drop_in["path"], echo.component());
    assert_eq!(
        (drop_in["trust"].as_str(), drop_in["loaded"].as_bool()),
        (Some("untrusted"), Some(false))
    );
    assert_eq!(drop_in["trustCommand"], format!("zcode-acp mapper trust {}", echo.component()));
    assert!(
        report["mappers"].as_array().unwrap().iter().all(|m| m["protocolId"] != "echo-v1"),
        "an untrusted drop-in is not loaded: {report:#}"
    );
    let listed = echo.run_ok(&["--mappers-dir", echo.mappers.to_str().unwrap(), "mapper", "list"]);
    assert!(listed.contains("untrusted") && listed.contains("zcode-acp mapper trust"), "{listed}");

    let mut agent = echo.agent();
    agent.initialize(plain_client());
    let workspace = echo.env.workspace("ws");
    let response = agent.request("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let (_, message) = agent.error_of(&response, "session/new with an untrusted mapper");
    assert!(message.starts_with("No usable ZCode install"), "{message}");
    assert!(agent.live_descendants().is_empty(), "nothing of the untrusted mapper ran");
    agent.finish();
}

#[test]
fn a_trusted_drop_in_drives_a_new_protocol_through_every_capability_of_the_contract() {
    let echo = Echo::new();
    echo.sign_in();
    echo.run_ok(&["mapper", "trust", echo.component()]);

    // Discovery found the runtime folder, ran its Node, and took the unpinned release on the
    // identity the host reports; the smoke start shows the credential reached the host.
    let report = echo.doctor();
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["selectedMapper"]["source"], echo.component(), "{report:#}");
    assert_eq!(report["selectedMapper"]["pinning"], "unpinned", "{report:#}");
    assert_eq!(report["smoke"]["probe"]["authenticated"], true, "{report:#}");

    let mut agent = echo.agent();
    agent.initialize(plain_client());
    let workspace = echo.env.workspace("ws");
    let session = agent.new_session(&workspace);
    // `[gap]`: the host drops the second word's event; mapping asks for what it missed.
    // `[ping]`: the host asks mid-turn; the mapper answers with an untracked write.
    let said = "one [gap] two three [ping] four";
    agent.prompt_ok(&session, said, "end_turn");
    let echoed = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert_eq!(echoed.trim_end(), said, "every word, in order, none twice");
    agent.prompt_ok(&session, "second turn", "end_turn");

    // Loading the session again replays both turns, page by page, before the answer.
    let before = agent.updates(&session).len();
    let loaded = agent
        .request("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    agent.result_of(&loaded, "session/load");
    let replay: Vec<Value> = agent.updates(&session)[before..].to_vec();
    let kinds: Vec<&str> = replay.iter().map(kind).collect();
    assert_eq!(
        kinds,
        ["user_message_chunk", "agent_message_chunk", "user_message_chunk", "agent_message_chunk"],
        "{replay:#?}"
    );
    assert_eq!(chunk_text(&replay, "user_message_chunk"), format!("{said}second turn"));
    let stderr = agent.stderr();
    assert!(!stderr.contains(TOKEN), "the credential never reaches a log");
    agent.finish();
}

#[test]
fn without_the_credential_the_mapper_s_refusal_is_written_instead() {
    let echo = Echo::new();
    echo.run_ok(&["mapper", "trust", echo.component()]);
    let report = echo.doctor();
    assert_eq!(report["smoke"]["probe"]["authenticated"], false, "{report:#}");
}

#[test]
fn a_changed_drop_in_is_refused_until_trusted_again_and_install_trusts_its_copy() {
    let echo = Echo::new();
    echo.run_ok(&["mapper", "trust", echo.component()]);
    assert_eq!(echo.doctor()["dropIns"][0]["trust"], "trusted");
    let mut bytes = std::fs::read(&echo.component).unwrap();
    bytes.push(0);
    std::fs::write(&echo.component, bytes).unwrap();
    let report = echo.doctor();
    assert_eq!(report["dropIns"][0]["trust"], "changed", "{report:#}");
    assert!(report["selectedMapper"].is_null(), "{report:#}");

    // `mapper install` checks the component, copies it into the folder and trusts the copy.
    std::fs::remove_file(&echo.component).unwrap();
    let mappers = echo.mappers.to_str().unwrap();
    echo.run_ok(&["--mappers-dir", mappers, "mapper", "install", built_echo().to_str().unwrap()]);
    let report = echo.doctor();
    assert_eq!(report["dropIns"][0]["trust"], "trusted", "{report:#}");
    assert_eq!(report["selectedMapper"]["protocolId"], "echo-v1", "{report:#}");
    let trust_file = echo.env.path().join("home/.config/zcode-acp/trusted-mappers.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&trust_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the trust file is the user's alone");

    let garbage = echo.env.path().join("garbage.wasm");
    std::fs::write(&garbage, b"not a component").unwrap();
    let refused =
        echo.run(&["--mappers-dir", mappers, "mapper", "install", garbage.to_str().unwrap()]);
    assert!(!refused.status.success(), "a file that is no mapper is not installed");
}

/// The debug line of each load of `source` (`mapper loaded`, with what the cache did).
fn loads_of<'a>(stderr: &'a str, source: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|line| line.contains("mapper loaded") && line.contains(&format!("mapper={source}")))
        .collect()
}

#[test]
fn trust_and_install_precompile_the_drop_in_so_its_first_use_skips_the_compiler() {
    let echo = Echo::new();
    let cache = echo.env.path().join("cache-trust");
    let trusted = echo.run_with_cache(&["mapper", "trust", echo.component()], &cache);
    assert!(trusted.status.success(), "{trusted:?}");
    assert!(
        String::from_utf8_lossy(&trusted.stdout).contains("precompiled into the mapper cache"),
        "{trusted:?}"
    );
    let entries = std::fs::read_dir(cache.join("zcode-acp/mappers")).unwrap().count();
    assert_eq!(entries, 2, "one artifact and its sidecar");

    let mut args = echo.target();
    args.extend(["mapper".into(), "list".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let listed = echo.run_with_cache(&args, &cache);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(loads_of(&stderr, echo.component()).len(), 1, "{stderr}");
    assert!(loads_of(&stderr, echo.component())[0].contains("cache=Hit"), "{stderr}");
    // Discovery reads the embedded mappers' contracts from the binary: none is loaded until a
    // session selects it.
    for (name, _) in zcode_embedded_mappers::EMBEDDED {
        assert_eq!(loads_of(&stderr, &format!("embedded:{name}")), [""; 0], "{name}: {stderr}");
    }

    // `mapper install` compiles while it checks the file: its copy is warm too.
    let cache = echo.env.path().join("cache-install");
    std::fs::remove_file(&echo.component).unwrap();
    let mappers = echo.mappers.to_str().unwrap();
    let install = ["--mappers-dir", mappers, "mapper", "install", built_echo().to_str().unwrap()];
    let installed = echo.run_with_cache(&install, &cache);
    assert!(installed.status.success(), "{installed:?}");
    let copy = echo.mappers.join(built_echo().file_name().unwrap()).canonicalize().unwrap();
    let listed = echo.run_with_cache(&args, &cache);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    let loads = loads_of(&stderr, copy.to_str().unwrap());
    assert!(loads.len() == 1 && loads[0].contains("cache=Hit"), "{stderr}");
}

#[test]
fn with_an_empty_cache_a_session_loads_only_the_selected_embedded_mapper_from_the_binary() {
    let echo = Echo::new();
    let cache = echo.env.path().join("cache-empty");
    // `doctor` runs discovery and starts the selected host, as a first session does.
    let output = echo.run_with_cache(&["--simulate", "doctor", "--json"], &cache);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}: {stderr}"));
    let selected = report["selectedMapper"]["source"].as_str().expect("a selected mapper");
    assert!(selected.starts_with("embedded:"), "{report:#}");
    let loads: Vec<&str> = stderr.lines().filter(|line| line.contains("mapper loaded")).collect();
    assert_eq!(loads.len(), 1, "{stderr}");
    assert!(loads[0].contains(&format!("mapper={selected} ")), "{stderr}");
    assert!(loads[0].contains("cache=Embedded"), "{stderr}");
    assert!(!cache.join("zcode-acp/mappers").exists(), "nothing was compiled: {stderr}");
}
