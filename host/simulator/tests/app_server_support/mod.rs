//! Test harness for the app-server profiles: a throwaway Desktop install root and the
//! simulated Agent (`zcode.cjs app-server --stdio`) driven over real NDJSON stdio.
#![allow(dead_code)] // Each test crate uses a different part of the harness.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Hang guard only: no assertion depends on timing.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// One profile per CLI family of the app-server: the full suite runs against these.
pub const CLI_FAMILIES: [&str; 3] = ["3.14.5", "3.15.1", "3.18.2"];

/// Every app-server release with its CLI version.
pub const RELEASES: [(&str, &str); 11] = [
    ("3.14.3", "0.16.9"),
    ("3.14.4", "0.16.9"),
    ("3.14.5", "0.16.9"),
    ("3.15.1", "0.16.9"),
    ("3.15.3", "0.16.9"),
    ("3.16.2", "0.17.0"),
    ("3.17.1", "0.17.1"),
    ("3.17.2", "0.17.1"),
    ("3.18.2", "0.17.2"),
    ("3.19.1", "0.17.2"),
    ("4.0.0", "0.18.0"),
];

/// Whether a release carries the 3.15 deltas.
pub fn has_315(version: &str) -> bool {
    !version.starts_with("3.14.")
}

/// Whether a release runs CLI 0.17 or later.
pub fn is_017(version: &str) -> bool {
    !version.starts_with("3.14.") && !version.starts_with("3.15.")
}

/// A fake Desktop install (Linux layout), a workspace, a state directory and a home.
pub struct Desktop {
    _dir: tempfile::TempDir,
    pub version: String,
    pub root: PathBuf,
    pub workspace: PathBuf,
    pub state: PathBuf,
    pub home: PathBuf,
}

impl Desktop {
    pub fn new(version: &str) -> Desktop {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ZCode");
        std::fs::create_dir_all(root.join("resources/app.asar")).unwrap();
        std::fs::create_dir_all(root.join("resources/glm")).unwrap();
        std::fs::write(
            root.join("resources/app.asar/package.json"),
            json!({"name": "zcode", "version": version}).to_string(),
        )
        .unwrap();
        std::fs::write(root.join("resources/glm/zcode.cjs"), "// agent\n").unwrap();
        let table = root.join("resources/config/provider/zcode-builtin.json");
        std::fs::create_dir_all(table.parent().unwrap()).unwrap();
        std::fs::write(&table, r#"{"revision": 30, "config": {}}"#).unwrap();
        let workspace = base.join("workspace");
        let state = base.join("state");
        let home = base.join("home");
        for dir in [&workspace, &state, &home] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::create_dir_all(home.join(".zcode/v2")).unwrap();
        std::fs::write(home.join(".zcode/v2/provider_config.json"), "{}").unwrap();
        Desktop { _dir: dir, version: version.to_owned(), root, workspace, state, home }
    }

    /// The bundled built-in provider table the launcher points the Agent at.
    pub fn builtin_table(&self) -> PathBuf {
        self.root.join("resources/config/provider/zcode-builtin.json")
    }

    /// The `basedOnZCodeBuiltinRevision` the Agent accepts: the table's revision and the
    /// SHA-256 of its path.
    pub fn builtin_revision(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.builtin_table().to_str().unwrap().as_bytes());
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("zcode-builtin:30:{hex}")
    }

    /// An account push that entitles `providers`, based on this install's table.
    pub fn account_push(&self, revision: &str, providers: &[&str]) -> Value {
        let mut push = account_push(revision, providers);
        push["basedOnZCodeBuiltinRevision"] = json!(self.builtin_revision());
        push
    }

    /// The `ZCodeWorkspaceRef` of the workspace.
    pub fn ws(&self) -> Value {
        let path = self.workspace.to_str().unwrap();
        json!({"workspacePath": path, "workspaceKey": path})
    }

    pub fn cli_entry(&self) -> String {
        self.root.join("resources/glm/zcode.cjs").to_str().unwrap().to_owned()
    }

    /// Stores an account provider's API key in the fake home's credentials file.
    pub fn store_key(&self, provider: &str, key: &str) {
        self.store_credential(
            &format!("account-provider:coding-plan:{provider}:account:u-1:api-key"),
            key,
        );
    }

    /// Adds one entry to the fake home's `~/.zcode/v2/credentials.json`.
    pub fn store_credential(&self, name: &str, value: &str) {
        let path = self.home.join(".zcode/v2/credentials.json");
        let mut entries: Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_else(|| json!({}));
        entries[name] = json!(value);
        std::fs::write(path, entries.to_string()).unwrap();
    }

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
            // What a Desktop (or a careful host) hands the Agent; the CLI dies without the
            // first and ignores account pushes without the second.
            .env("ZCODE_BUILTIN_PROVIDER_CONFIG_FILE", self.builtin_table())
            .env(
                "ZCODE_PERSONAL_PROVIDER_CONFIG_FILE",
                self.home.join(".zcode/v2/provider_config.json"),
            )
            // Tests wait for re-announcements; a short first interval keeps them quick.
            .env("ZCODE_SIM_REANNOUNCE_MS", "50");
        command
    }

    /// Runs the bundled CLI to completion.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        let entry = self.cli_entry();
        let mut argv = vec![entry.as_str()];
        argv.extend_from_slice(args);
        let mut command = self.command(&argv);
        for (key, value) in env {
            command.env(key, value);
        }
        command.stdin(Stdio::null()).output().unwrap()
    }

    /// Starts `zcode.cjs app-server --stdio`.
    pub fn spawn(&self) -> Agent {
        self.spawn_with(&[])
    }

    pub fn spawn_with(&self, env: &[(&str, &str)]) -> Agent {
        self.spawn_args(&["app-server", "--stdio"], env)
    }

    /// Starts the CLI with other arguments (after `zcode.cjs`).
    pub fn spawn_args(&self, args: &[&str], env: &[(&str, &str)]) -> Agent {
        let entry = self.cli_entry();
        let mut argv = vec![entry.as_str()];
        argv.extend_from_slice(args);
        let mut command = self.command(&argv);
        for (key, value) in env {
            command.env(key, value);
        }
        Agent::start(command)
    }
}

/// One stdout line.
#[derive(Debug, Clone)]
pub enum Frame {
    Json(Value),
    Raw(Vec<u8>),
}

pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    backlog: VecDeque<Frame>,
    /// Every JSON frame read so far, in wire order.
    pub log: Vec<Value>,
    next_id: u64,
    /// The answer given to `session/requestRuntimePreferences` without a test's help.
    pub auto_preferences: Option<Value>,
}

/// Preferences that keep AskUserQuestion waiting for an answer.
pub fn preferences() -> Value {
    json!({"nativeSearchEnhancementsEnabled": false, "memoryEnabled": false,
           "askUserQuestionAutoResolutionEnabled": false})
}

impl Agent {
    fn start(mut command: Command) -> Agent {
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
        Agent {
            child,
            stdin,
            lines,
            backlog: VecDeque::new(),
            log: Vec::new(),
            next_id: 1,
            auto_preferences: Some(preferences()),
        }
    }

    pub fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, value: &Value) {
        self.send_line(value.to_string().as_bytes());
    }

    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}));
        id
    }

    /// Answers one of the Agent's requests.
    pub fn answer(&mut self, id: &Value, result: Value) {
        self.send(&json!({"id": id, "result": result}));
    }

    pub fn answer_error(&mut self, id: &Value, code: i64, message: &str) {
        self.send(&json!({"id": id, "error": {"code": code, "message": message}}));
    }

    /// Reads one line (hang-guarded); runtime preferences are answered on the way.
    fn read(&mut self) -> Frame {
        let line = match self.lines.recv_timeout(HANG_GUARD) {
            Ok(line) => line,
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the Agent closed stdout: {}", self.stderr_text())
            }
            Err(RecvTimeoutError::Timeout) => panic!("the Agent wrote nothing for {HANG_GUARD:?}"),
        };
        let frame = match serde_json::from_slice::<Value>(&line) {
            Ok(value) => Frame::Json(value),
            Err(_) => Frame::Raw(line),
        };
        if let Frame::Json(value) = &frame {
            self.log.push(value.clone());
            if value["method"] == "session/requestRuntimePreferences"
                && let Some(answer) = self.auto_preferences.clone()
            {
                let id = value["id"].clone();
                self.answer(&id, answer);
            }
        }
        frame
    }

    /// The first frame (read before or now) that `predicate` accepts; others stay queued.
    pub fn take(&mut self, predicate: impl Fn(&Value) -> bool) -> Value {
        let found = self
            .backlog
            .iter()
            .position(|frame| matches!(frame, Frame::Json(value) if predicate(value)));
        if let Some(position) = found {
            let Some(Frame::Json(value)) = self.backlog.remove(position) else { unreachable!() };
            return value;
        }
        loop {
            match self.read() {
                Frame::Json(value) if predicate(&value) => return value,
                other => self.backlog.push_back(other),
            }
        }
    }

    /// The next frame in wire order (queued ones first).
    pub fn next_frame(&mut self) -> Frame {
        match self.backlog.pop_front() {
            Some(frame) => frame,
            None => self.read(),
        }
    }

    pub fn response(&mut self, id: u64) -> Value {
        self.take(|value| value.get("method").is_none() && value["id"] == id)
    }

    /// A request and its response (`{id, result}` or `{id, error}`).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id)
    }

    /// A request that must succeed; returns its result.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// A request that must fail; returns its error object.
    pub fn err(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("result").is_none(), "{method} should fail: {response}");
        response["error"].clone()
    }

    /// The next request the Agent sends with `method`.
    pub fn reverse(&mut self, method: &str) -> Value {
        self.take(|value| value["method"] == method && value["id"].is_string())
    }

    /// The next notification with `method`.
    pub fn notification(&mut self, method: &str) -> Value {
        self.take(|value| value["method"] == method && value.get("id").is_none())
    }

    /// Creates a session in the workspace and subscribes to its legacy events.
    pub fn session(&mut self, workspace: &Value, extra: Value) -> String {
        let mut params = json!({"workspace": workspace});
        if let (Some(target), Some(fields)) = (params.as_object_mut(), extra.as_object()) {
            target.extend(fields.clone());
        }
        let created = self.ok("session/create", params);
        let id = created["session"]["sessionId"].as_str().unwrap().to_owned();
        self.ok(
            "session/subscribe",
            json!({"sessionId": id, "deliveryKind": "desktop-continuous"}),
        );
        id
    }

    /// The session's events up to and including its terminal `turn.completed` / `turn.failed`.
    pub fn turn_events(&mut self, session_id: &str) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let frame = self.take(|value| {
                value["method"] == "session/event" && value["params"]["sessionId"] == session_id
            });
            let event = frame["params"].clone();
            let done = matches!(event["type"].as_str(), Some("turn.completed" | "turn.failed"));
            events.push(event);
            if done {
                return events;
            }
        }
    }

    /// Sends a prompt with `session/send` and returns its result.
    pub fn prompt(&mut self, session_id: &str, text: &str) -> Value {
        self.ok("session/send", json!({"sessionId": session_id, "content": text}))
    }

    /// A V4 command; returns its ACK.
    pub fn command(&mut self, session_id: &str, kind: &str, payload: Value, extra: Value) -> Value {
        let mut params = json!({
            "commandId": uuid_like(self.next_id), "clientId": "client-test", "sessionId": session_id,
            "type": kind, "payload": payload, "issuedAt": 1,
        });
        if let (Some(target), Some(fields)) = (params.as_object_mut(), extra.as_object()) {
            target.extend(fields.clone());
        }
        self.ok("v4/command", params)
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the Agent did not exit within {HANG_GUARD:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
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
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 32-hex command id that differs per call.
pub fn uuid_like(n: u64) -> String {
    format!("{n:032x}")
}

/// Event types, with `model.streaming` / `tool.updated` kinds, consecutive repeats collapsed.
pub fn labels(events: &[Value]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap_or_default();
        let label = match (kind, event["payload"]["kind"].as_str()) {
            ("model.streaming" | "tool.updated", Some(sub)) => format!("{kind}:{sub}"),
            _ => kind.to_owned(),
        };
        if labels.last() != Some(&label) {
            labels.push(label);
        }
    }
    labels
}

/// The text a turn streamed.
pub fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|event| {
            event["type"] == "model.streaming" && event["payload"]["kind"] == "text_delta"
        })
        .filter_map(|event| event["payload"]["delta"].as_str())
        .collect()
}

/// An account-config push that entitles `providers`.
pub fn account_push(revision: &str, providers: &[&str]) -> Value {
    let mut entries = serde_json::Map::new();
    let mut states = serde_json::Map::new();
    for provider in providers {
        entries.insert(
            (*provider).to_owned(),
            json!({"access": {"type": "zhipu-account", "entitled": true}}),
        );
        states.insert(
            (*provider).to_owned(),
            json!({"availability": "available", "entitled": true, "current": true}),
        );
    }
    json!({"revision": revision, "basedOnZCodeBuiltinRevision": "zcode-builtin:1:abc",
           "providers": entries, "states": states})
}
