//! End to end: `zcode-acp --simulate` with `ZCODE_ACP_RECORD` set records a short ACP session
//! (new session with credentials, a prompt, a file read, a file edit with permission), and
//! `zcode-acp mapper test embedded:zcode-task-v1 <recording>` replays it green. The redacted
//! recording holds none of the secrets put into the prompt, the file and the headers. The
//! same session is recorded redacted on the V4 releases (Services Server, Desktop app-server)
//! and the task protocol v2: the mapper fed the redacted input (the recording's expectations)
//! must end each turn as the live one did, `end_turn`.
//!
//! Needs the `zcode-acp` binary of the same build profile: `cargo build -p zcode-acp` first
//! (a workspace-wide `cargo test` builds it), or point `ZCODE_ACP_BIN` at one.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// A release recorded and the mapper that replays it: named together, since each release
/// speaks its own protocol.
#[derive(Clone, Copy)]
struct Target {
    release: &'static str,
    mapper: &'static str,
}

/// The task protocol v1 (ZCode 3.11.2 host service).
const TASK_V1: Target = Target { release: "3.11.2", mapper: "embedded:zcode-task-v1" };

/// Hang guard for one response; never a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(120);

const SECRET_PROMPT: &str = "PROMPT-SECRET-7f2c91";
const SECRET_FILE: &str = "FILE-SECRET-4b8d02";
const SECRET_EDIT: &str = "EDIT-SECRET-a93e55";
const SECRET_HEADER: &str = "HEADER-SECRET-0c6f1d";
const SECRET_ENV: &str = "ENV-SECRET-e51b77";
const SECRETS: [&str; 5] = [SECRET_PROMPT, SECRET_FILE, SECRET_EDIT, SECRET_HEADER, SECRET_ENV];

fn zcode_acp() -> PathBuf {
    if let Some(path) = std::env::var_os("ZCODE_ACP_BIN") {
        return PathBuf::from(path);
    }
    // target/<profile>/deps/<this test> -> target/<profile>/zcode-acp
    let exe = std::env::current_exe().expect("test executable");
    let path = exe.parent().and_then(Path::parent).expect("target dir").join("zcode-acp");
    assert!(
        path.is_file(),
        "{} is missing: build it first (`cargo build -p zcode-acp` with the same profile and \
         CARGO_TARGET_DIR) or set ZCODE_ACP_BIN",
        path.display()
    );
    path
}

struct Env {
    root: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let root = tempfile::Builder::new().prefix("zcode-recorder-e2e-").tempdir().unwrap();
        for dir in ["home", "data", "state", "workspace"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        Self { root }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn workspace(&self) -> PathBuf {
        self.path("workspace").canonicalize().unwrap()
    }

    fn command(&self, record: &str, unredacted: bool) -> Command {
        let mut command = Command::new(zcode_acp());
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", self.path("home"))
            // One mapper cache for every run: compiling the mapper is the slow part.
            .env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("recorder-cache"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("ZCODE_SIM_STATE", self.path("state"))
            .env("ZCODE_ACP_RECORD", record);
        if unredacted {
            command.env("ZCODE_ACP_RECORD_UNREDACTED", "1");
        }
        command
    }
}

/// A minimal ACP client: sends requests, answers permission requests with `allow_once`.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: Receiver<Value>,
    next_id: u64,
    permissions: usize,
}

impl Client {
    fn start(mut command: Command, release: &str) -> Self {
        let mut child = command
            .args(["--simulate", "--simulate-version", release])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zcode-acp");
        let stdout = child.stdout.take().unwrap();
        let (sender, frames) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let frame = serde_json::from_str(&line).expect("stdout carries JSON frames only");
                if sender.send(frame).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self { child, stdin, frames, next_id: 1, permissions: 0 }
    }

    fn send(&mut self, frame: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{frame}").and_then(|()| stdin.flush()).expect("write to zcode-acp");
    }

    /// Sends a request and returns its response, answering the agent's requests meanwhile.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let frame = match self.frames.recv_timeout(HANG_GUARD) {
                Ok(frame) => frame,
                Err(RecvTimeoutError::Timeout) => panic!("no response to {method} (hang guard)"),
                Err(RecvTimeoutError::Disconnected) => panic!("zcode-acp exited during {method}"),
            };
            if frame["id"] == id && frame.get("method").is_none() {
                return frame;
            }
            if frame["method"] == "session/request_permission" {
                self.permissions += 1;
                let options = frame["params"]["options"].as_array().cloned().unwrap_or_default();
                let allow = options.iter().find(|o| o["kind"] == "allow_once").expect("allow");
                let outcome =
                    json!({"outcome": {"outcome": "selected", "optionId": allow["optionId"]}});
                self.send(&json!({"jsonrpc": "2.0", "id": frame["id"], "result": outcome}));
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait for zcode-acp");
        assert!(status.success(), "zcode-acp exited with {status}");
    }
}

/// The short session: credentials in session/new, a prompt, a read, an edit with permission,
/// and a session listing.
fn run_session(env: &Env, target: Target, record: &Path, unredacted: bool) {
    let workspace = env.workspace();
    std::fs::write(workspace.join("notes.txt"), format!("the file says {SECRET_FILE}\n")).unwrap();
    let mut client =
        Client::start(env.command(record.to_str().unwrap(), unredacted), target.release);
    client.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let servers = json!([
        {"type": "http", "name": "docs", "url": "https://mcp.example/docs",
         "headers": [{"name": "Authorization", "value": format!("Bearer {SECRET_HEADER}")}]},
        {"name": "local", "command": "/bin/true", "args": [],
         "env": [{"name": "API_TOKEN", "value": SECRET_ENV}]}
    ]);
    let session = client.call("session/new", json!({"cwd": workspace, "mcpServers": servers}));
    let session = session["sessionId"].as_str().expect("session id").to_string();
    let prompt =
        |text: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    for text in [
        format!("Please remember {SECRET_PROMPT}"),
        "sim:read notes.txt".to_string(),
        format!("sim:edit edited.txt {SECRET_EDIT}"),
        // Deltas written together: a mapper may hand several to its session as one input.
        "sim:stream 64".to_string(),
    ] {
        let result = client.call("session/prompt", prompt(&text));
        assert_eq!(result["stopReason"], "end_turn", "{text}: {result}");
    }
    assert_eq!(client.permissions, 1, "the edit asked for permission once");
    // A connection-level operation with native round trips (`connection.start`/`resume`).
    let listed = client.call("session/list", json!({"cwd": workspace}));
    assert!(listed["sessions"].as_array().is_some_and(|s| !s.is_empty()), "{listed}");
    let edited = std::fs::read_to_string(workspace.join("edited.txt")).expect("edit was allowed");
    assert!(edited.contains(SECRET_EDIT));
    client.finish();
}

fn mapper_test(env: &Env, mapper: &str, recording: &Path) -> (bool, String) {
    let output = env
        .command("", false)
        .args(["mapper", "test", mapper])
        .arg(recording)
        .output()
        .expect("run zcode-acp mapper test");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn a_recorded_simulator_session_replays_green_without_its_secrets() {
    let env = Env::new();
    let recording = env.path("session.jsonl");
    run_session(&env, TASK_V1, &recording, false);

    let text = std::fs::read_to_string(&recording).expect("the recording exists");
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} leaked into the recording");
    }
    for call in [
        "connection.new",
        "connection.push",
        "connection.start",
        "connection.resume",
        "connection.identity",
        "session.new",
        "session.start",
        "session.resume",
        "session.map",
    ] {
        assert!(text.contains(&format!("{{\"call\":\"{call}\"")), "no {call} line recorded");
    }
    assert!(text.contains("\"permission\":{"), "the permission request was recorded");
    assert!(!text.contains("# redaction changed"), "redaction changed a result:\n{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&recording).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the recording is owner-only");
    }

    let (passed, report) = mapper_test(&env, TASK_V1.mapper, &recording);
    assert!(passed, "the recording does not replay:\n{report}");
    assert!(report.starts_with("golden OK: "), "{report}");

    // The expectations are checked: a changed one fails the replay.
    let stop = "{\"terminal\":{\"stop\":\"end_turn\"}}";
    assert!(text.contains(stop), "a turn end was recorded");
    let tampered = env.path("tampered.jsonl");
    std::fs::write(&tampered, text.replacen(stop, &stop.replace("end_turn", "refusal"), 1))
        .unwrap();
    let (passed, report) = mapper_test(&env, TASK_V1.mapper, &tampered);
    assert!(!passed && report.contains("golden FAILED: 1 of "), "{report}");
}

#[test]
fn an_unredacted_recording_keeps_the_secrets_and_replays_green() {
    let env = Env::new();
    let recording = env.path("session.jsonl");
    run_session(&env, TASK_V1, &recording, true);
    let text = std::fs::read_to_string(&recording).expect("the recording exists");
    for secret in SECRETS {
        assert!(text.contains(secret), "{secret} missing from the unredacted recording");
    }
    let (passed, report) = mapper_test(&env, TASK_V1.mapper, &recording);
    assert!(passed, "the recording does not replay:\n{report}");
}

#[test]
fn a_relative_recording_path_fails_session_setup_clearly() {
    let env = Env::new();
    let mut client = Client::start(env.command("relative/session.jsonl", false), TASK_V1.release);
    client.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let response = client.request("session/new", json!({"cwd": env.workspace(), "mcpServers": []}));
    let message = response["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.contains("ZCODE_ACP_RECORD must be an absolute path, got `relative/session.jsonl`"),
        "{response}"
    );
    assert!(!env.workspace().join("relative").exists());
    client.finish();
}

/// A redacted recording of the session on `target`: it holds no secret and no part of the
/// workspace path, redaction changed no mapper result, the shadow mapper ended the four turns
/// `end_turn` as the live one did, and the recording replays green.
fn redacted_recording_ends_its_turns(target: Target) {
    let env = Env::new();
    let recording = env.path("session.jsonl");
    run_session(&env, target, &recording, false);
    let text = std::fs::read_to_string(&recording).expect("the recording exists");
    let release = target.release;
    for secret in SECRETS {
        assert!(!text.contains(secret), "{release}: {secret} leaked into the recording");
    }
    // The session's folders (home, workspace) are below this uniquely named one.
    let root = env.root.path().file_name().and_then(|name| name.to_str()).unwrap();
    for part in [root, "notes.txt"] {
        assert!(!text.contains(part), "{release}: the path part {part} leaked into the recording");
    }
    // Redaction used to rewrite V4 enum values, the log epoch and the topic, and streamed
    // text piece by piece: the shadow then ignored the frames as another conversation's
    // (runtime 4.0.0) or broke the turn (Desktop 4.0.0), and never ended it.
    // (The Services Server's binary IPC frames are not JSON lines: the redacted bytes of the
    // connection's stdout are a placeholder its shadow rejects, see docs/recording.md. Sessions
    // get the frames decoded.)
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("# redaction changed") {
            let next = lines.next().unwrap_or_default();
            assert!(
                next.starts_with("{\"call\":\"connection.push\""),
                "{release}: redaction changed a result:\n{next}"
            );
        }
    }
    let ends = text.matches("{\"terminal\":{\"stop\":\"end_turn\"}}").count();
    assert_eq!(ends, 4, "{release}: the redacted turns did not all end end_turn:\n{text}");
    assert!(!text.contains("\"broken\""), "{release}: a redacted turn broke:\n{text}");
    let (passed, report) = mapper_test(&env, target.mapper, &recording);
    assert!(passed, "{release}: the recording does not replay:\n{report}");
    assert!(report.starts_with("golden OK: "), "{release}: {report}");
}

#[test]
fn a_redacted_services_v4_recording_ends_its_turns() {
    redacted_recording_ends_its_turns(Target {
        release: "runtime-4.0.0",
        mapper: "embedded:zcode-services-v4",
    });
}

#[test]
fn a_redacted_desktop_v4_recording_ends_its_turns() {
    redacted_recording_ends_its_turns(Target {
        release: "desktop-4.0.0",
        mapper: "embedded:zcode-app-server",
    });
}

#[test]
fn a_redacted_desktop_3_18_recording_ends_its_turns() {
    redacted_recording_ends_its_turns(Target {
        release: "desktop-3.18.2",
        mapper: "embedded:zcode-app-server",
    });
}

#[test]
fn a_redacted_task_v2_recording_ends_its_turns() {
    redacted_recording_ends_its_turns(Target {
        release: "3.12.3",
        mapper: "embedded:zcode-task-v2",
    });
}
