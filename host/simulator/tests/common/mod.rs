//! Test harness: a temporary fake install and the `zcode-sim` binary driven over real stdio.
#![allow(dead_code)] // Each test crate uses a different part of the harness.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Hang guard only: no assertion depends on timing.
const HANG_GUARD: Duration = Duration::from_secs(30);

pub const PROTOCOL: &str = r#"{"id":"zcode-task-v1","serviceChannels":{"agent":"zcode-agent","task":"zcode-task"},"operations":{"cancelGeneration":{"method":"stopGeneration","service":"task","sessionParameter":"taskId"},"respondStructuredInput":{"method":"respondElicitation","service":"task","sessionParameter":"taskId"},"respondPermission":{"method":"respondPermission","service":"task","sessionParameter":"taskId"}}}"#;
pub const ARTIFACT: &str = r#"{"id":"zcode-host-3.11.2","appVersion":"3.11.2","cliVersion":"0.16.5","protocolId":"zcode-task-v1"}"#;
/// The descriptors the `zcode-host-3.12` mapper launches its bridge with.
pub const PROTOCOL_3_12: &str = r#"{"id":"zcode-host-3.12","serviceChannels":{"agent":"zcode-agent","task":"zcode-task","modelSelection":"model-selection"},"operations":{"cancelGeneration":{"method":"stopGeneration","service":"task","sessionParameter":"taskId"},"respondStructuredInput":{"method":"respondElicitation","service":"task","sessionParameter":"taskId"},"respondPermission":{"method":"respondPermission","service":"task","sessionParameter":"taskId"}}}"#;
pub const ARTIFACT_3_12: &str = r#"{"id":"zcode-sim-3.12.3","appVersion":"3.12.3","cliVersion":"0.16.5","protocolId":"zcode-host-3.12"}"#;

/// A fake install root (Linux layout), a workspace, a state directory and a home.
pub struct Install {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub workspace: PathBuf,
    pub state: PathBuf,
    pub home: PathBuf,
    /// Bridge variables beyond the 3.11.2 ones (see [`Install::zcode_3_12_3`]).
    bridge_env: Vec<(String, String)>,
}

impl Install {
    pub fn new() -> Install {
        Install::with_version("3.11.2")
    }

    pub fn with_version(version: &str) -> Install {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ZCode");
        let archive = root.join("resources/app.asar");
        std::fs::create_dir_all(archive.join("out/host")).unwrap();
        std::fs::create_dir_all(root.join("resources/glm")).unwrap();
        std::fs::write(
            archive.join("package.json"),
            json!({"name": "zcode", "version": version}).to_string(),
        )
        .unwrap();
        std::fs::write(archive.join("out/host/index.js"), "// host index\n").unwrap();
        std::fs::write(archive.join("out/host/chunk-KGXW6KHC.js"), "// rpc module\n").unwrap();
        std::fs::write(root.join("resources/glm/zcode.cjs"), "// cli\n").unwrap();
        let workspace = base.join("workspace");
        let state = base.join("state");
        let home = base.join("home");
        for dir in [&workspace, &state, &home] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Install { _dir: dir, root, workspace, state, home, bridge_env: Vec::new() }
    }

    /// A ZCode 3.12.3 install with its bundled provider config, launched the way the
    /// `zcode-host-3.12` mapper launches it.
    pub fn zcode_3_12_3() -> Install {
        let mut install = Install::with_version("3.12.3");
        let config = install.root.join("resources/config/provider/zcode-builtin.json");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(&config, r#"{"revision": 1}"#).unwrap();
        install.bridge_env = vec![
            ("ZCODE_ACP_HOST_PROTOCOL".into(), PROTOCOL_3_12.into()),
            ("ZCODE_ACP_HOST_ARTIFACT".into(), ARTIFACT_3_12.into()),
            ("ZCODE_ACP_HOST_PROVIDER_CONFIG".into(), config.to_str().unwrap().into()),
        ];
        install
    }

    pub fn ws(&self) -> String {
        self.workspace.to_str().unwrap().to_owned()
    }

    pub fn cli_entry(&self) -> String {
        self.root.join("resources/glm/zcode.cjs").to_str().unwrap().to_owned()
    }

    /// The base command with the bridge environment of a real launch.
    pub fn command(&self, argv: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zcode-sim"));
        command
            .arg("--install-root")
            .arg(&self.root)
            .arg("--")
            .args(argv)
            .current_dir(&self.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("ZCODE_SIM_STATE", &self.state)
            .env("ELECTRON_RUN_AS_NODE", "1")
            .env("ZCODE_ACP_HOST_INDEX", self.root.join("resources/app.asar/out/host/index.js"))
            .env(
                "ZCODE_ACP_HOST_RPC_MODULE",
                self.root.join("resources/app.asar/out/host/chunk-KGXW6KHC.js"),
            )
            .env("ZCODE_ACP_HOST_ARTIFACT", ARTIFACT)
            .env("ZCODE_ACP_HOST_PROTOCOL", PROTOCOL);
        for (key, value) in &self.bridge_env {
            command.env(key, value);
        }
        command
    }

    /// Starts bridge mode.
    pub fn spawn(&self) -> Sim {
        self.spawn_with(&[])
    }

    pub fn spawn_with(&self, env: &[(&str, &str)]) -> Sim {
        let mut command = self.command(&["-e", "/* bridge script */"]);
        for (key, value) in env {
            command.env(key, value);
        }
        Sim::start(command)
    }

    /// Runs a non-bridge runtime command to completion.
    pub fn run(&self, argv: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let mut command = self.command(argv);
        for (key, value) in env {
            command.env(key, value);
        }
        command.stdin(Stdio::null()).output().unwrap()
    }
}

/// One line of simulator stdout.
#[derive(Debug, Clone)]
pub enum Frame {
    Json(Value),
    /// Not UTF-8 or not JSON.
    Raw(Vec<u8>),
}

impl Frame {
    pub fn json(&self) -> &Value {
        match self {
            Frame::Json(value) => value,
            Frame::Raw(bytes) => panic!("expected JSON, got raw line of {} bytes", bytes.len()),
        }
    }
}

pub struct Sim {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    backlog: VecDeque<Frame>,
    next_id: u64,
}

impl Sim {
    fn start(mut command: Command) -> Sim {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if line.ends_with(b"\n") {
                            line.pop();
                        }
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Sim { child, stdin, lines, backlog: VecDeque::new(), next_id: 1 }
    }

    pub fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes bytes as they are (no newline added).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, value: &Value) {
        self.send_line(value.to_string().as_bytes());
    }

    /// Writes a request with the next id and returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}));
        id
    }

    pub fn request_call(&mut self, service: &str, method: &str, params: Value) -> u64 {
        self.request("__call", json!({"service": service, "method": method, "params": params}))
    }

    /// `__call` and wait for its answer: `Ok(result)` or `Err(error message)`.
    pub fn call(&mut self, service: &str, method: &str, params: Value) -> Result<Value, String> {
        let id = self.request_call(service, method, params);
        outcome(&self.response(id))
    }

    pub fn agent(&mut self, method: &str, params: Value) -> Value {
        self.call("agent", method, params)
            .unwrap_or_else(|error| panic!("{method} failed: {error}"))
    }

    pub fn task(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.call("task", method, params)
    }

    /// Waits for the response with `id`; everything else read meanwhile stays queued in order.
    pub fn response(&mut self, id: u64) -> Value {
        if let Some(position) = self.backlog.iter().position(|frame| is_response(frame, id)) {
            return self.backlog.remove(position).unwrap().json().clone();
        }
        loop {
            let frame = self.read_frame();
            if is_response(&frame, id) {
                return frame.json().clone();
            }
            self.backlog.push_back(frame);
        }
    }

    pub fn next_frame(&mut self) -> Frame {
        self.backlog.pop_front().unwrap_or_else(|| self.read_frame())
    }

    /// The next frame, or `None` if stdout closed.
    pub fn try_next_frame(&mut self) -> Option<Frame> {
        if let Some(frame) = self.backlog.pop_front() {
            return Some(frame);
        }
        match self.lines.recv_timeout(HANG_GUARD) {
            Ok(line) => Some(parse_frame(line)),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                panic!("the simulator wrote nothing for {HANG_GUARD:?}")
            }
        }
    }

    fn read_frame(&mut self) -> Frame {
        match self.lines.recv_timeout(HANG_GUARD) {
            Ok(line) => parse_frame(line),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("simulator stdout closed: {}", self.stderr_text())
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!("the simulator wrote nothing for {HANG_GUARD:?}")
            }
        }
    }

    /// The next event notification's `params.event`, asserting the frame is an event.
    pub fn next_event(&mut self) -> Value {
        let frame = self.next_frame();
        let value = frame.json();
        assert_eq!(value["method"], "event", "expected an event, got {value}");
        value["params"]["event"].clone()
    }

    /// Events (dynamic event objects) up to and including the turn's terminal session event.
    pub fn events_until_terminal(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let event = self.next_event();
            let done = is_terminal(&event);
            events.push(event);
            if done {
                return events;
            }
        }
    }

    /// Events up to and including the first one `predicate` accepts.
    pub fn events_until(&mut self, predicate: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let event = self.next_event();
            let done = predicate(&event);
            events.push(event);
            if done {
                return events;
            }
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit (hang-guarded).
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the simulator did not exit within {HANG_GUARD:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Remaining stdout frames after the process closed stdout.
    pub fn drain(&mut self) -> Vec<Frame> {
        let mut frames: Vec<Frame> = self.backlog.drain(..).collect();
        while let Some(frame) = self.try_next_frame() {
            frames.push(frame);
        }
        frames
    }

    pub fn stderr_text(&mut self) -> String {
        let mut text = String::new();
        if self.child.try_wait().ok().flatten().is_some()
            && let Some(mut stderr) = self.child.stderr.take()
        {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        }
        text
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn parse_frame(line: Vec<u8>) -> Frame {
    match std::str::from_utf8(&line).ok().and_then(|text| serde_json::from_str(text).ok()) {
        Some(value) => Frame::Json(value),
        None => Frame::Raw(line),
    }
}

fn is_response(frame: &Frame, id: u64) -> bool {
    matches!(frame, Frame::Json(value) if value.get("method").is_none() && value["id"] == id)
}

pub fn outcome(response: &Value) -> Result<Value, String> {
    if let Some(error) = response.get("error") {
        assert_eq!(error["code"], -32000, "bridge errors use code -32000: {response}");
        return Err(error["message"].as_str().unwrap().to_owned());
    }
    assert!(response.get("result").is_some(), "a response has result or error: {response}");
    Ok(response["result"].clone())
}

pub fn is_terminal(event: &Value) -> bool {
    event["type"] == "session.event"
        && matches!(event["event"]["type"].as_str(), Some("turn.completed" | "turn.failed"))
}

/// A short label per event: the dynamic type, or the session-event type (with its kind).
pub fn label(event: &Value) -> String {
    if event["type"] != "session.event" {
        return event["type"].as_str().unwrap().to_owned();
    }
    let inner = &event["event"];
    let kind = inner["type"].as_str().unwrap();
    match inner["payload"]["kind"].as_str() {
        Some(sub) => format!("{kind}:{sub}"),
        None => kind.to_owned(),
    }
}

/// Labels with consecutive repeats collapsed (`model.streaming:text_delta` × n → once).
pub fn labels(events: &[Value]) -> Vec<String> {
    let mut labels: Vec<String> = events.iter().map(label).collect();
    labels.dedup();
    labels
}

pub fn session_events(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|event| event["type"] == "session.event")
        .map(|event| &event["event"])
        .collect()
}

/// Concatenated `delta`s of one stream kind.
pub fn streamed(events: &[Value], kind: &str) -> String {
    session_events(events)
        .into_iter()
        .filter(|event| event["type"] == "model.streaming" && event["payload"]["kind"] == kind)
        .map(|event| event["payload"]["delta"].as_str().unwrap())
        .collect()
}

/// The terminal session event of a turn.
pub fn terminal(events: &[Value]) -> &Value {
    &events.last().unwrap()["event"]
}

/// Creates a session and subscribes to it; returns `(sessionId, subscriptionId)` with the
/// initial snapshot already consumed.
pub fn open_session(sim: &mut Sim, workspace: &str) -> (String, String) {
    let snapshot = sim.agent(
        "createSession",
        json!({"workspacePath": workspace, "persistence": "immediate", "mcpServers": []}),
    );
    let session_id = snapshot["session"]["sessionId"].as_str().unwrap().to_owned();
    let subscription = subscribe(sim, workspace, &session_id);
    (session_id, subscription)
}

/// Subscribes and checks the snapshot arrives first; returns the subscription id.
pub fn subscribe(sim: &mut Sim, workspace: &str, session_id: &str) -> String {
    let subscription = format!("sub-{}", uuid_like());
    let id = sim.request(
        "__subscribe",
        json!({"subscriptionId": subscription, "target": {"workspacePath": workspace, "sessionId": session_id,
               "deliveryKind": "desktop-continuous", "includeSnapshot": true}}),
    );
    let response = sim.response(id);
    assert_eq!(outcome(&response).unwrap(), json!({"subscribed": true}));
    let snapshot = sim.next_event();
    assert_eq!(snapshot["type"], "snapshot", "the first event is the snapshot");
    assert_eq!(snapshot["snapshot"]["session"]["sessionId"], session_id);
    subscription
}

/// Sends a prompt and returns the acknowledgement.
pub fn prompt(
    sim: &mut Sim,
    workspace: &str,
    session_id: &str,
    content: &str,
) -> Result<Value, String> {
    sim.call(
        "agent",
        "sendPrompt",
        json!({"workspacePath": workspace, "sessionId": session_id, "inputId": format!("input-{}", uuid_like()),
               "content": content, "attachments": []}),
    )
}

pub fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst))
}

pub fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}
