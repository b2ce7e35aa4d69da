//! The design's promise, proved with ZCode 3.12.3: a new ZCode generation is a drop-in mapper.
//!
//! The mapper `mappers/zcode-host-3-12` is built here for wasm32-wasip2 (as the runtime's tests
//! build their guests) and put in a temporary mappers folder. The same `zcode-acp` binary —
//! its SHA-256 unchanged, the 3.12 mapper not inside it — then
//! - accepts a simulated 3.12.3 install through the drop-in mapper, while its embedded
//!   `zcode-task-v1` mapper refuses it and says why (doctor);
//! - runs an ACP session end to end on it with the drop-in mapper (streamed prompt, a
//!   permission, `set_mode`, `set_config_option`, cancel);
//! - still gives a 3.11.2 install to the embedded mapper, with the drop-in one refusing it:
//!   with both mappers present each install is accepted by exactly one.
//!
//! A last test checks that no core crate names anything of ZCode 3.12.

#[allow(dead_code)] // shared with the embedded-mappers build script; this test builds one guest
#[path = "../../embedded-mappers/guest_build.rs"]
mod guest_build;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{HANG_GUARD, TestEnv, check_frame, chunk_text, initialize_params, kind, text_prompt};

const DROP_IN_PROTOCOL: &str = "zcode-host-3.12";
const EMBEDDED_SOURCE: &str = "embedded:zcode-task-v1";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn binary() -> &'static Path {
    support::agent_binary()
}

fn sha256_of(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read the zcode-acp binary");
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The 3.12 mapper component, built once per test binary.
fn drop_in_component() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let manifest = repo_root().join("mappers/zcode-host-3-12/Cargo.toml");
        let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dropin-guests");
        let build = guest_build::GuestBuild {
            cargo: std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()),
            manifest: &manifest,
            target_dir: &target_dir,
            features: &[],
        };
        let component = build.run().unwrap_or_else(|message| panic!("{message}"));
        std::fs::read(component).expect("read the built 3.12 mapper")
    })
}

/// A test environment plus a mappers folder holding only the 3.12 mapper.
struct DropIn {
    env: TestEnv,
    mappers: PathBuf,
    component: PathBuf,
}

impl DropIn {
    fn new() -> Self {
        let env = TestEnv::new();
        let mappers = env.path().join("mappers");
        std::fs::create_dir_all(&mappers).unwrap();
        let component = mappers.join("zcode_host_3_12.wasm");
        std::fs::write(&component, drop_in_component()).unwrap();
        let component = component.canonicalize().unwrap();
        let drop_in = Self { env, mappers, component };
        let trusted = drop_in.run(&["mapper", "trust", drop_in.component.to_str().unwrap()]);
        assert!(trusted.status.success(), "mapper trust: {trusted:?}");
        drop_in
    }

    /// `zcode-acp <args>` in this environment (no mappers folder unless `args` names one).
    fn command(&self) -> Command {
        let root = self.env.path();
        let mut command = Command::new(binary());
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", root.join("home"))
            .env("XDG_CACHE_HOME", shared_cache_dir())
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_CONFIG_HOME", root.join("home").join(".config"))
            .env("TMPDIR", root.join("tmp"))
            .env("ZCODE_SIM_STATE", self.env.sim_state());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).stdin(Stdio::null()).output().expect("run zcode-acp")
    }

    fn mappers_dir(&self) -> &str {
        self.mappers.to_str().unwrap()
    }

    /// `doctor --json` with `args` before it; the report and the exit code.
    fn doctor(&self, args: &[&str]) -> (Value, Option<i32>) {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["doctor", "--json"]);
        let output = self.run(&all);
        let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor --json printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
        (report, output.status.code())
    }

    /// Lays out a fake install of `version` with `zcode-acp simulator install`.
    fn fake_install(&self, name: &str, version: &str) -> String {
        let dir = self.env.path().join(name);
        let output =
            self.run(&["simulator", "install", dir.to_str().unwrap(), "--app-version", version]);
        assert!(output.status.success(), "simulator install: {output:?}");
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    }
}

/// Compiled mappers are cached by content: one cache for the whole binary.
fn shared_cache_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dropin-cache");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mapper_report<'a>(report: &'a Value, source: &str) -> &'a Value {
    report["mappers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["source"] == source)
        .unwrap_or_else(|| panic!("no mapper {source} in {report:#}"))
}

fn accepted_count(report: &Value) -> usize {
    report["mappers"].as_array().unwrap().iter().filter(|m| m["verdict"] == "accepted").count()
}

// ----- a small ACP client ------------------------------------------------------------------------

/// `zcode-acp` serving ACP with the drop-in mapper; answers permissions with `allow_once`.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    frames: Receiver<Value>,
    updates: Vec<Value>,
    permissions: usize,
    next_id: u64,
}

impl Acp {
    fn start(drop_in: &DropIn, args: &[&str]) -> Acp {
        let mut child = drop_in
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zcode-acp");
        let stdout = child.stdout.take().unwrap();
        let (sender, frames) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let frame = check_frame(&line)
                    .unwrap_or_else(|problem| panic!("not ACP on stdout ({problem}): {line}"));
                if sender.send(frame).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        Acp { child, stdin, frames, updates: Vec::new(), permissions: 0, next_id: 1 }
    }

    fn write(&mut self, frame: &Value) {
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Reads one frame: updates are kept, permission requests answered `allow_once`.
    fn read(&mut self) -> Option<Value> {
        let frame = self.frames.recv_timeout(HANG_GUARD).expect("hang guard: the agent went quiet");
        match frame["method"].as_str() {
            Some("session/update") => {
                self.updates.push(frame["params"]["update"].clone());
                None
            }
            Some("session/request_permission") => {
                self.permissions += 1;
                let options = frame["params"]["options"].as_array().unwrap();
                let allow = options.iter().find(|o| o["kind"] == "allow_once").expect("allow_once");
                let answer =
                    json!({"outcome": {"outcome": "selected", "optionId": allow["optionId"]}});
                self.write(&json!({"jsonrpc": "2.0", "id": frame["id"], "result": answer}));
                None
            }
            Some(other) => panic!("unexpected request from the agent: {other}"),
            None => Some(frame),
        }
    }

    fn wait_response(&mut self, id: u64) -> Value {
        loop {
            if let Some(frame) = self.read()
                && frame["id"] == id
            {
                return frame;
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let response = self.wait_response(id);
        response.get("result").cloned().unwrap_or_else(|| panic!("{method} failed: {response}"))
    }

    fn wait_update(&mut self, what: &str, pred: impl Fn(&Value) -> bool) {
        while !self.updates.iter().any(&pred) {
            assert!(self.read().is_none(), "a response arrived while waiting for {what}");
        }
    }

    fn finish(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "zcode-acp exited with {status}");
        while self.frames.recv_timeout(HANG_GUARD).is_ok() {}
    }
}

fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options.as_array().unwrap().iter().find(|o| o["id"] == id).unwrap_or_else(|| panic!("no {id}"))
}

// ----- the tests -----------------------------------------------------------------------------------

#[test]
fn the_binary_does_not_embed_the_3_12_mapper() {
    let drop_in = DropIn::new();
    let output = drop_in.run(&["mapper", "list"]);
    assert!(output.status.success(), "{output:?}");
    let listed = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "without a mappers folder only the embedded mapper exists: {listed}"
    );
    assert!(lines[0].starts_with("embedded:zcode-task-v1\tzcode-task-v1\t"), "{listed}");
    assert!(
        lines[0].contains("zcode-sim-3.11.2 (desktop 3.11.2 / CLI 0.16.5, pinned, simulated)"),
        "{listed}"
    );
    assert_eq!(lines[1], "drop-in folder: none");
    // Names only the 3.12 mapper holds (its protocol, its artifact, a function of its bridge
    // script): in the component, not in the binary. (The binary does contain the simulator,
    // which plays 3.12.3 too, so host method names prove nothing.)
    let contains = |bytes: &[u8], name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    let bytes = std::fs::read(binary()).unwrap();
    for name in [DROP_IN_PROTOCOL.as_bytes(), b"zcode-sim-3.12.3", b"projectModelSelectionView"] {
        let shown = String::from_utf8_lossy(name);
        assert!(contains(drop_in_component(), name), "the 3.12 mapper lacks {shown}");
        assert!(!contains(&bytes, name), "the binary contains {shown}");
    }
    let with_folder = drop_in.run(&["--mappers-dir", drop_in.mappers_dir(), "mapper", "list"]);
    let listed = String::from_utf8(with_folder.stdout).unwrap();
    let component = drop_in.component.display();
    let loaded = format!("{component}\t{DROP_IN_PROTOCOL}\t");
    assert!(listed.lines().any(|line| line.starts_with(&loaded)), "{listed}");
    let trusted = format!("{component}\ttrusted, loaded");
    assert!(listed.lines().any(|line| line == trusted), "{listed}");

    let info = drop_in.run(&["mapper", "info", drop_in.component.to_str().unwrap()]);
    let info = String::from_utf8(info.stdout).unwrap();
    assert!(info.contains("protocol: zcode-host-3.12"), "{info}");
    assert!(info.contains("release: zcode-sim-3.12.3 (simulator)"), "{info}");
    assert!(info.contains("ZCode 3.12.3 / CLI 0.16.5"), "{info}");
}

#[test]
fn a_3_12_3_install_is_driven_by_the_drop_in_mapper() {
    let before = sha256_of(binary());
    let drop_in = DropIn::new();
    let target =
        ["--simulate", "--simulate-version", "3.12.3", "--mappers-dir", drop_in.mappers_dir()];

    // doctor: the drop-in accepts, the embedded mapper refuses and says why.
    let (report, code) = drop_in.doctor(&target);
    assert_eq!((report["ok"].as_bool(), code), (Some(true), Some(0)), "{report:#}");
    let component = drop_in.component.to_str().unwrap();
    assert_eq!(report["selectedMapper"]["source"], component);
    assert_eq!(report["selectedMapper"]["protocolId"], DROP_IN_PROTOCOL);
    assert_eq!(report["selectedMapper"]["releaseId"], "zcode-sim-3.12.3");
    assert_eq!(report["appVersion"], "3.12.3");
    let embedded = mapper_report(&report, EMBEDDED_SOURCE);
    assert_eq!(
        (embedded["verdict"].as_str(), embedded["refusedBy"].as_str()),
        (Some("refused"), Some("versions"))
    );
    let reason = embedded["reason"].as_str().unwrap();
    assert!(
        reason.contains("found app 3.12.3") && reason.contains("expected app 3.11.2"),
        "{reason}"
    );
    assert_eq!(accepted_count(&report), 1);
    let mut text_args = target.to_vec();
    text_args.push("doctor");
    let text = String::from_utf8(drop_in.run(&text_args).stdout).unwrap();
    assert!(text.contains("mapper embedded:zcode-task-v1 (zcode-task-v1): refused:"), "{text}");
    assert!(
        text.contains(&format!("mapper {component} (zcode-host-3.12): accepted zcode-sim-3.12.3")),
        "{text}"
    );

    // An ACP session, end to end, with the drop-in mapper.
    let workspace = drop_in.env.workspace("project");
    let mut acp = Acp::start(&drop_in, &target);
    acp.call("initialize", initialize_params(support::plain_client()));
    let created = acp.call("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let session = created["sessionId"].as_str().unwrap().to_string();
    let modes: Vec<&str> = created["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["build", "edit", "yolo", "plan"], "the 3.12 mapper's modes");
    let options = &created["configOptions"];
    assert_eq!(option(options, "zcode.plan")["type"], "boolean");
    assert_eq!(
        option(options, "zcode.model")["currentValue"],
        "[\"builtin:zai-coding-plan\",\"GLM-5.2\"]"
    );
    assert_eq!(option(options, "zcode.thought_level")["currentValue"], "high");

    // A streamed prompt.
    let result =
        acp.call("session/prompt", text_prompt(&session, "sim:reply Hello from a drop-in mapper."));
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(chunk_text(&acp.updates, "agent_message_chunk"), "Hello from a drop-in mapper.");

    // A permission: the edit happens only because the client allowed it.
    let result = acp.call("session/prompt", text_prompt(&session, "sim:edit dropin.txt written"));
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(acp.permissions, 1);
    assert_eq!(std::fs::read_to_string(workspace.join("dropin.txt")).unwrap(), "written\n");

    // set_mode: plan is a flag that keeps the editing mode.
    acp.call("session/set_mode", json!({"sessionId": session, "modeId": "yolo"}));
    acp.call("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));
    acp.wait_update("plan as the current mode", |u| {
        kind(u) == "current_mode_update" && u["currentModeId"] == "plan"
    });
    acp.wait_update("the plan option on", |u| {
        kind(u) == "config_option_update"
            && option(&u["configOptions"], "zcode.plan")["currentValue"] == true
    });

    // set_config_option: plan off returns to the kept editing mode; then another model.
    let off = acp.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "zcode.plan", "type": "boolean", "value": false}),
    );
    assert_eq!(option(&off["configOptions"], "zcode.plan")["currentValue"], false);
    acp.wait_update("yolo again", |u| {
        kind(u) == "current_mode_update" && u["currentModeId"] == "yolo"
    });
    let model = acp.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "zcode.model", "value": "[\"builtin:zai-coding-plan\",\"GLM-4.7\"]"}),
    );
    assert_eq!(
        option(&model["configOptions"], "zcode.model")["currentValue"],
        "[\"builtin:zai-coding-plan\",\"GLM-4.7\"]"
    );
    let levels = &option(&model["configOptions"], "zcode.thought_level")["options"];
    assert_eq!(levels.as_array().unwrap().len(), 2, "GLM-4.7's own reasoning levels");

    // Cancel while the turn streams.
    let id = acp.send("session/prompt", text_prompt(&session, "sim:slow 600000"));
    acp.wait_update("the first chunk of the slow turn", |u| {
        kind(u) == "agent_message_chunk" && u["content"]["text"] == "Working on it"
    });
    acp.write(
        &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let cancelled = acp.wait_response(id);
    assert_eq!(cancelled["result"]["stopReason"], "cancelled", "{cancelled}");
    acp.finish();

    assert_eq!(sha256_of(binary()), before, "the core binary is the same before and after");
}

#[test]
fn each_install_is_accepted_by_exactly_one_mapper() {
    let drop_in = DropIn::new();
    let v3_11 = drop_in.fake_install("zcode-3.11.2", "3.11.2");
    let v3_12 = drop_in.fake_install("zcode-3.12.3", "3.12.3");
    let component = drop_in.component.to_str().unwrap();

    // 3.11.2 with the drop-in present: the embedded mapper takes it, the drop-in refuses.
    let (report, code) =
        drop_in.doctor(&["--zcode-install", &v3_11, "--mappers-dir", drop_in.mappers_dir()]);
    assert_eq!((report["ok"].as_bool(), code), (Some(true), Some(0)), "{report:#}");
    assert_eq!(report["selectedMapper"]["source"], EMBEDDED_SOURCE);
    assert_eq!(report["selectedMapper"]["releaseId"], "zcode-sim-3.11.2");
    let refused = mapper_report(&report, component);
    assert_eq!(
        (refused["verdict"].as_str(), refused["refusedBy"].as_str()),
        (Some("refused"), Some("versions"))
    );
    let reason = refused["reason"].as_str().unwrap();
    assert!(
        reason.contains("found app 3.11.2") && reason.contains("expected app 3.12.3"),
        "{reason}"
    );
    assert_eq!(accepted_count(&report), 1);

    // 3.12.3 with both: the drop-in takes it.
    let (report, _) =
        drop_in.doctor(&["--zcode-install", &v3_12, "--mappers-dir", drop_in.mappers_dir()]);
    assert_eq!(report["selectedMapper"]["source"], component);
    assert_eq!(mapper_report(&report, EMBEDDED_SOURCE)["verdict"], "refused");
    assert_eq!(accepted_count(&report), 1);

    // 3.12.3 with the embedded mapper only: nothing accepts it, and doctor says so.
    let (report, code) = drop_in.doctor(&["--zcode-install", &v3_12]);
    assert_eq!((report["ok"].as_bool(), code), (Some(false), Some(1)));
    assert!(report["selectedMapper"].is_null());
    assert_eq!(accepted_count(&report), 0);
    assert_eq!(mapper_report(&report, EMBEDDED_SOURCE)["refusedBy"], "versions");
    assert!(report["selectionError"].is_string(), "{report:#}");
}

#[test]
fn an_untrusted_or_changed_drop_in_is_listed_and_never_loaded() {
    let drop_in = DropIn::new();
    let component = drop_in.component.to_str().unwrap();
    let target =
        ["--simulate", "--simulate-version", "3.12.3", "--mappers-dir", drop_in.mappers_dir()];
    let untrust = drop_in.run(&["mapper", "untrust", component]);
    assert!(untrust.status.success(), "{untrust:?}");

    let (report, code) = drop_in.doctor(&target);
    assert_eq!((report["ok"].as_bool(), code), (Some(false), Some(1)), "{report:#}");
    assert_eq!(report["dropIns"][0]["path"], component);
    assert_eq!(report["dropIns"][0]["trust"], "untrusted");
    assert_eq!(report["dropIns"][0]["loaded"], false);
    assert_eq!(report["dropIns"][0]["trustCommand"], format!("zcode-acp mapper trust {component}"));
    assert!(mapper_report_of(&report, component).is_none(), "an untrusted drop-in is not loaded");
    assert!(report["hint"].as_str().unwrap().contains("not loaded until trusted"), "{report:#}");

    // Trusted, it loads; changed afterwards, it is refused again.
    let trust = drop_in.run(&["mapper", "trust", component]);
    assert!(trust.status.success(), "{trust:?}");
    let (report, _) = drop_in.doctor(&target);
    assert_eq!(report["dropIns"][0]["trust"], "trusted");
    assert_eq!(report["selectedMapper"]["source"], component);
    let mut bytes = std::fs::read(component).unwrap();
    bytes.extend_from_slice(b"\0");
    std::fs::write(component, bytes).unwrap();
    let (report, _) = drop_in.doctor(&target);
    assert_eq!(report["dropIns"][0]["trust"], "changed");
    assert!(report["selectedMapper"].is_null(), "{report:#}");

    // `mapper install` checks the component, copies it into the folder and trusts the copy.
    let elsewhere = drop_in.env.path().join("zcode_host_3_12.wasm");
    std::fs::write(&elsewhere, drop_in_component()).unwrap();
    let installed = drop_in.run(&[
        "--mappers-dir",
        drop_in.mappers_dir(),
        "mapper",
        "install",
        elsewhere.to_str().unwrap(),
    ]);
    assert!(installed.status.success(), "{installed:?}");
    let (report, _) = drop_in.doctor(&target);
    assert_eq!(report["dropIns"][0]["trust"], "trusted");
    assert_eq!(report["selectedMapper"]["source"], component);
    let trust_file = drop_in.env.path().join("home/.config/zcode-acp/trusted-mappers.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&trust_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let garbage = drop_in.env.path().join("garbage.wasm");
    std::fs::write(&garbage, b"not a component").unwrap();
    let refused = drop_in.run(&["mapper", "install", garbage.to_str().unwrap()]);
    assert!(!refused.status.success(), "a file that is no mapper is not installed");
}

fn mapper_report_of<'a>(report: &'a Value, source: &str) -> Option<&'a Value> {
    report["mappers"].as_array().unwrap().iter().find(|m| m["source"] == source)
}

/// Names only ZCode 3.12 has. `3.12` counts as a version only when it is not part of a longer
/// number (`0.3.12`, `3.120`).
const NAMES_OF_3_12: [&str; 6] = [
    "readWorkspacePresentation",
    "model-selection",
    "modelSelection",
    "planEnabled",
    "zcode-host-3",
    "getView",
];

fn names_3_12(text: &str) -> Vec<String> {
    let mut found: Vec<String> =
        NAMES_OF_3_12.iter().filter(|name| text.contains(*name)).map(|n| n.to_string()).collect();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("3.12") {
        let start = from + at;
        let end = start + 4;
        let before = start.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(end).copied();
        let part_of_number = before.is_some_and(|b| b.is_ascii_digit() || b == b'.')
            || after.is_some_and(|b| b.is_ascii_digit());
        if !part_of_number {
            found.push("3.12".to_string());
            break;
        }
        from = end;
    }
    found
}

fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "target" && name != "tests" {
                source_files(&path, files);
            }
        } else if name.ends_with(".rs") || name.ends_with(".toml") || name.ends_with(".js") {
            files.push(path);
        }
    }
}

#[test]
fn no_core_crate_names_zcode_3_12() {
    assert_eq!(
        names_3_12("model-selection planEnabled ZCode 3.12.3"),
        ["model-selection", "planEnabled", "3.12"]
    );
    assert!(names_3_12("serde 0.3.12 or 3.120").is_empty());
    let host = repo_root().join("host");
    let mut offenders = Vec::new();
    let mut scanned = 0;
    for entry in std::fs::read_dir(&host).unwrap() {
        let crate_dir = entry.unwrap().path();
        let name = crate_dir.file_name().unwrap().to_string_lossy().to_string();
        // The simulator plays every release and the fake installs lay them out; neither is core.
        if !crate_dir.is_dir() || name == "simulator" || name == "fake-install" {
            continue;
        }
        let mut files = Vec::new();
        source_files(&crate_dir, &mut files);
        for file in files {
            scanned += 1;
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let found = names_3_12(&text);
            if !found.is_empty() {
                offenders.push(format!("{}: {found:?}", file.display()));
            }
        }
    }
    assert!(scanned > 50, "expected to scan the core's sources, scanned {scanned}");
    assert!(offenders.is_empty(), "core files name ZCode 3.12:\n{}", offenders.join("\n"));
}
