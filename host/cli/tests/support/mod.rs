//! A raw JSON-RPC driver for end-to-end tests of `zcode-acp --simulate`.
//!
//! No ACP SDK on purpose: the tests see (and check) the exact frames on the wire. The driver
//! - spawns the agent with stdin/stdout piped, stderr captured, and an isolated environment
//!   (a per-test home, data and simulator state; one mapper cache shared by every test so the
//!   mapper is compiled once);
//! - reads stdout on a background thread and holds every frame to the global invariant: each
//!   line is one JSON-RPC 2.0 request, notification or response;
//! - answers the agent's own requests (`session/request_permission`, `elicitation/create`)
//!   through a per-test policy, and records them;
//! - watches the agent's process tree so a test can prove nothing of ours is left behind.
//!
//! Every wait is bounded by a generous hang guard; no test asserts on elapsed time.

#![allow(dead_code)] // each test binary uses a different part of the driver

mod acp;
pub mod generation;
pub mod policy;
mod processes;
pub mod reliability;
mod wire;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use acp::*;
#[allow(unused_imports)] // each test binary uses a different part
pub use generation::{
    Generation, Point, applies, fault_at, fault_point, generation, skip, skip_unless,
};
pub use policy::{AgentRequest, Policy, Reply};
use processes::{SeenProcess, descendants, is_alive, scan_tree, spawn_watcher};
use wire::shorten;
pub use wire::{Frame, Transcript, check_frame};

/// How long any single wait may take before the test is declared hung.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// The zcode-acp binary under test: the one cargo built for these tests, or the absolute path in
/// `ZCODE_ACP_E2E_BIN` (CI points it at the static musl build of `scripts/dist`, so the same
/// suite proves the binary that ships).
pub fn agent_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| match std::env::var_os("ZCODE_ACP_E2E_BIN") {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(path.is_absolute(), "ZCODE_ACP_E2E_BIN must be absolute: {}", path.display());
            assert!(path.is_file(), "ZCODE_ACP_E2E_BIN names no file: {}", path.display());
            path
        }
        None => PathBuf::from(env!("CARGO_BIN_EXE_zcode-acp")),
    })
}

/// The release the simulator plays when a test does not name one: the binary's own default
/// (`zcode-acp --simulate` without `--simulate-version`).
pub const DEFAULT_RELEASE: &str = "desktop-4.0.0";

/// The release `--simulate` plays in these tests: `ZCODE_ACP_E2E_SIMULATE_VERSION` (CI runs the
/// suite once per protocol generation, e.g. `3.11.2`, `desktop-3.18.2`, `runtime-4.0.0`), else
/// [`DEFAULT_RELEASE`].
pub fn simulated_release() -> &'static str {
    static RELEASE: OnceLock<String> = OnceLock::new();
    RELEASE.get_or_init(|| {
        std::env::var("ZCODE_ACP_E2E_SIMULATE_VERSION").unwrap_or_else(|_| DEFAULT_RELEASE.into())
    })
}

/// The simulator switch that batches the app-server's notifications as JSON array lines; passed
/// on to every agent when the suite runs with it (docs/simulator.md §7).
pub const ARRAY_LINES: &str = "ZCODE_SIM_ARRAY_LINES";

/// `--simulate --simulate-version <the release under test>`.
pub fn simulate_args() -> Vec<&'static str> {
    vec!["--simulate", "--simulate-version", simulated_release()]
}

// ----- the per-test environment --------------------------------------------------------------

/// Folders of one test: home, data, temp and the simulator's session store, plus workspaces.
/// Several agent processes may run in one environment one after the other (sessions persist).
pub struct TestEnv {
    root: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> Self {
        let root = tempfile::Builder::new().prefix("zcode-acp-e2e-").tempdir().expect("temp dir");
        for dir in ["home", "data", "tmp", "sim-state"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("create test dir");
        }
        Self { root }
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// A fresh workspace folder, canonical (the agent canonicalizes cwds too).
    pub fn workspace(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join("workspaces").join(name);
        std::fs::create_dir_all(&dir).expect("create workspace");
        dir.canonicalize().expect("canonical workspace")
    }

    pub fn sim_state(&self) -> PathBuf {
        self.root.path().join("sim-state")
    }
}

/// `zcode-acp mapper trust <file>` with the home and config folder every agent of `env` uses:
/// a drop-in mapper is loaded only once trusted.
pub fn trust_mapper(env: &TestEnv, file: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_zcode-acp"))
        .args(["mapper", "trust"])
        .arg(file)
        .env("HOME", env.path().join("home"))
        .env("XDG_CONFIG_HOME", env.path().join("home").join(".config"))
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp mapper trust");
    assert!(output.status.success(), "mapper trust: {output:?}");
}

/// One mapper cache for every test of every binary: compiling the mapper is the slow part of
/// starting a session, and the cache is keyed by the component's hash, so sharing is safe.
pub fn shared_cache_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-cache");
    std::fs::create_dir_all(&dir).expect("create shared cache dir");
    dir
}

// ----- the agent process -----------------------------------------------------------------------

struct Shared {
    transcript: Mutex<Transcript>,
    changed: Condvar,
    stdin: Mutex<Option<ChildStdin>>,
    policy: Mutex<Policy>,
}

impl Shared {
    fn write_line(&self, line: &str) -> bool {
        self.transcript.lock().unwrap().sent.push(line.to_string());
        let mut stdin = self.stdin.lock().unwrap();
        let Some(pipe) = stdin.as_mut() else { return false };
        pipe.write_all(line.as_bytes()).and_then(|()| pipe.write_all(b"\n")).is_ok()
            && pipe.flush().is_ok()
    }
}

/// A running `zcode-acp --simulate` and the client end of its stdio.
pub struct Agent {
    child: Child,
    shared: Arc<Shared>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: u64,
    threads: Vec<JoinHandle<()>>,
    watching: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<u32, SeenProcess>>>,
    exit: Option<ExitStatus>,
}

impl Agent {
    /// Starts the agent in `env` with a client that refuses every agent request.
    pub fn start(env: &TestEnv) -> Self {
        Self::start_with(env, policy::refuse_all())
    }

    pub fn start_with(env: &TestEnv, policy: Policy) -> Self {
        Self::start_with_env(env, policy, &[])
    }

    /// Starts the agent with extra environment variables (simulator faults, sign-out, ...),
    /// simulating the release of [`simulated_release`].
    pub fn start_with_env(env: &TestEnv, policy: Policy, extra: &[(&str, &str)]) -> Self {
        Self::start_with_args(env, policy, &simulate_args(), extra)
    }

    /// Starts `zcode-acp <args>` (no `--simulate` unless `args` has it) in `env`'s isolated
    /// environment, with stdout checking, the client `policy` and process watching.
    pub fn start_with_args(
        env: &TestEnv,
        policy: Policy,
        args: &[&str],
        extra: &[(&str, &str)],
    ) -> Self {
        let root = env.path();
        let mut command = Command::new(agent_binary());
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", root.join("home"))
            .env("XDG_CACHE_HOME", shared_cache_dir())
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_CONFIG_HOME", root.join("home").join(".config"))
            .env("TMPDIR", root.join("tmp"))
            .env("ZCODE_SIM_STATE", env.sim_state())
            .env("ZCODE_ACP_LOG", "debug")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // `ZCODE_SIM_ARRAY_LINES=1` (scripts/test sets it for some runs): the simulated Agent
        // writes its notifications as JSON array lines, as a real one was seen doing.
        if let Some(value) = std::env::var_os(ARRAY_LINES) {
            command.env(ARRAY_LINES, value);
        }
        command.envs(extra.iter().copied());
        let mut child = command.spawn().expect("spawn zcode-acp");
        let shared = Arc::new(Shared {
            transcript: Mutex::new(Transcript::default()),
            changed: Condvar::new(),
            stdin: Mutex::new(child.stdin.take()),
            policy: Mutex::new(policy),
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let watching = Arc::new(AtomicBool::new(true));
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let stdout = child.stdout.take().expect("stdout piped");
        let stderr_pipe = child.stderr.take().expect("stderr piped");
        let threads = vec![
            spawn_reader(stdout, shared.clone()),
            spawn_stderr(stderr_pipe, stderr.clone()),
            spawn_watcher(child.id(), watching.clone(), seen.clone()),
        ];
        Self { child, shared, stderr, next_id: 1, threads, watching, seen, exit: None }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn set_policy(&self, policy: Policy) {
        *self.shared.policy.lock().unwrap() = policy;
    }

    // ----- sending ---------------------------------------------------------------------------

    /// Sends a request and returns its id without waiting.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        assert!(self.shared.write_line(&line.to_string()), "cannot write {method} to the agent");
        id
    }

    /// Writes one raw line (for malformed input).
    pub fn send_raw(&self, line: &str) {
        assert!(self.shared.write_line(line), "cannot write to the agent");
    }

    pub fn notify(&self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        assert!(self.shared.write_line(&line.to_string()), "cannot write {method} to the agent");
    }

    /// Sends a request and waits for its response frame (result or error).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait_response(id)
    }

    /// Sends a request that must succeed; returns its `result`.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        self.result_of(&response, method)
    }

    pub fn wait_response(&self, id: u64) -> Value {
        self.wait_for(&format!("the response to request {id}"), |t| {
            t.response(id).map(|f| f.value.clone())
        })
    }

    /// The `result` of a response frame, or a failure that shows the error and the transcript.
    pub fn result_of(&self, response: &Value, what: &str) -> Value {
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{what} failed: {response}\n{}", self.report()),
        }
    }

    /// The error (code, message) of a response frame that must have failed.
    pub fn error_of(&self, response: &Value, what: &str) -> (i64, String) {
        match response.get("error") {
            Some(error) => (
                error["code"].as_i64().expect("integer code"),
                error["message"].as_str().expect("string message").to_string(),
            ),
            None => panic!("{what} should have failed: {response}\n{}", self.report()),
        }
    }

    /// Answers a held agent request.
    pub fn respond(&self, id: &Value, result: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.record_reply(id, &line);
        assert!(self.shared.write_line(&line.to_string()), "cannot answer the agent");
    }

    fn record_reply(&self, id: &Value, line: &Value) {
        let mut transcript = self.shared.transcript.lock().unwrap();
        if let Some(request) = transcript.agent_requests.iter_mut().find(|r| r.id == *id) {
            request.reply = Some(line.clone());
        }
    }

    // ----- observing -------------------------------------------------------------------------

    pub fn transcript(&self) -> MutexGuard<'_, Transcript> {
        self.shared.transcript.lock().unwrap()
    }

    /// The update objects of `session_id`, in order.
    pub fn updates(&self, session_id: &str) -> Vec<Value> {
        self.transcript().updates(session_id).into_iter().map(|(_, u)| u).collect()
    }

    pub fn agent_requests(&self) -> Vec<AgentRequest> {
        self.transcript().agent_requests.clone()
    }

    /// `$/cancel_request` notifications the agent sent: the request ids they name.
    pub fn cancel_requests(&self) -> Vec<Value> {
        let transcript = self.transcript();
        transcript
            .notifications("$/cancel_request")
            .iter()
            .map(|f| f.value["params"]["requestId"].clone())
            .collect()
    }

    /// Waits until `probe` returns something; fails the test (with the transcript) if the
    /// agent hangs or exits first.
    pub fn wait_for<T>(&self, what: &str, mut probe: impl FnMut(&Transcript) -> Option<T>) -> T {
        let deadline = Instant::now() + HANG_GUARD;
        let mut transcript = self.shared.transcript.lock().unwrap();
        loop {
            if let Some(found) = probe(&transcript) {
                return found;
            }
            if transcript.stdout_closed {
                drop(transcript);
                panic!("the agent closed stdout while waiting for {what}\n{}", self.report());
            }
            let now = Instant::now();
            if now >= deadline {
                drop(transcript);
                panic!("hang guard: no {what} within {HANG_GUARD:?}\n{}", self.report());
            }
            transcript = self.shared.changed.wait_timeout(transcript, deadline - now).unwrap().0;
        }
    }

    /// Waits for the first agent request with `method` (beyond the first `skip`).
    pub fn wait_agent_request(&self, method: &str, skip: usize) -> AgentRequest {
        self.wait_for(&format!("a {method} request from the agent"), |t| {
            t.agent_requests.iter().filter(|r| r.method == method).nth(skip).cloned()
        })
    }

    /// Waits until `session_id` has received an update matching `pred`.
    pub fn wait_update(
        &self,
        session_id: &str,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.wait_for(what, |t| t.updates(session_id).into_iter().map(|(_, u)| u).find(&pred))
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// The transcript and the tail of the agent's stderr. With `ZCODE_ACP_E2E_LOG_DIR` set, the
    /// whole stderr is kept there too (a race's cause is seldom in the last 40 lines).
    pub fn report(&self) -> String {
        let stderr = self.stderr();
        let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let kept = match std::env::var_os("ZCODE_ACP_E2E_LOG_DIR") {
            Some(dir) => {
                let path = PathBuf::from(dir).join(format!("zcode-acp-{}.log", self.pid()));
                match std::fs::write(&path, &stderr) {
                    Ok(()) => format!("--- agent stderr kept whole in {} ---\n", path.display()),
                    Err(error) => format!("--- keeping the agent stderr failed: {error} ---\n"),
                }
            }
            None => String::new(),
        };
        let transcript = self.transcript().report();
        format!("{transcript}{kept}--- agent stderr (tail) ---\n{}\n", tail.join("\n"))
    }

    /// Fails if any stdout line so far broke the JSON-RPC invariant.
    pub fn assert_wire_clean(&self) {
        let violations = self.transcript().violations.clone();
        assert!(
            violations.is_empty(),
            "stdout invariant broken: {violations:#?}\n{}",
            self.report()
        );
    }

    // ----- processes -------------------------------------------------------------------------

    /// Every process seen in the agent's tree so far (the host child, probes, ...).
    pub fn seen_processes(&self) -> Vec<SeenProcess> {
        scan_tree(self.pid(), &self.seen);
        self.seen.lock().unwrap().values().copied().collect()
    }

    /// The agent's descendants alive right now.
    pub fn live_descendants(&self) -> Vec<u32> {
        descendants(self.pid())
    }

    // ----- ending ----------------------------------------------------------------------------

    pub fn close_stdin(&self) {
        self.shared.stdin.lock().unwrap().take();
    }

    /// Waits for the agent to exit (after stdin was closed).
    pub fn wait_exit(&mut self) -> ExitStatus {
        if let Some(status) = self.exit {
            return status;
        }
        // One last look at the tree before the agent's pid disappears.
        scan_tree(self.pid(), &self.seen);
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the agent") {
                self.exit = Some(status);
                break;
            }
            if Instant::now() >= deadline {
                panic!(
                    "hang guard: the agent did not exit within {HANG_GUARD:?}\n{}",
                    self.report()
                );
            }
            scan_tree(self.pid(), &self.seen);
            std::thread::sleep(Duration::from_millis(10));
        }
        self.watching.store(false, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        self.exit.unwrap()
    }

    /// Closes stdin, waits for the exit, and checks the end-of-connection invariants: a clean
    /// exit, a valid wire, and no process of ours left. Returns the exit status.
    pub fn finish(mut self) -> ExitStatus {
        self.close_stdin();
        let status = self.wait_exit();
        self.assert_wire_clean();
        self.assert_no_process_left();
        status
    }

    /// `finish`, also returning everything the agent wrote to stderr.
    pub fn finish_with_stderr(self) -> (ExitStatus, String) {
        let stderr = self.stderr.clone();
        let status = self.finish();
        let text = String::from_utf8_lossy(&stderr.lock().unwrap()).into_owned();
        (status, text)
    }

    /// Every process seen in the agent's tree is gone (or a zombie: dead, only unreaped) by the
    /// time the agent has exited. Call after `wait_exit`.
    pub fn assert_no_process_left(&self) {
        assert!(self.exit.is_some(), "the agent is still running");
        let seen: Vec<SeenProcess> = self.seen.lock().unwrap().values().copied().collect();
        let alive: Vec<SeenProcess> = seen.iter().copied().filter(is_alive).collect();
        assert!(
            alive.is_empty(),
            "processes left behind by the agent: {alive:?}\n{}",
            self.report()
        );
    }
}

impl Drop for Agent {
    /// A failed test must not leak processes: kill the agent and whatever it started.
    fn drop(&mut self) {
        if self.exit.is_some() {
            return;
        }
        let seen: Vec<SeenProcess> = self.seen_processes();
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.watching.store(false, Ordering::SeqCst);
        for process in seen.into_iter().filter(is_alive) {
            let _ = Command::new("kill").arg("-KILL").arg(process.pid.to_string()).status();
        }
    }
}

fn spawn_reader(stdout: std::process::ChildStdout, shared: Arc<Shared>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut seq = 0;
        loop {
            let mut bytes = Vec::new();
            match reader.read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if bytes.last() == Some(&b'\n') {
                bytes.pop();
            }
            let line = match String::from_utf8(bytes) {
                Ok(line) => line,
                Err(error) => {
                    let mut transcript = shared.transcript.lock().unwrap();
                    transcript.violations.push(format!("invalid UTF-8 on stdout: {error}"));
                    shared.changed.notify_all();
                    continue;
                }
            };
            seq += 1;
            on_line(&shared, seq, &line);
        }
        shared.transcript.lock().unwrap().stdout_closed = true;
        shared.changed.notify_all();
    })
}

fn on_line(shared: &Shared, seq: usize, line: &str) {
    let value = match check_frame(line) {
        Ok(value) => value,
        Err(reason) => {
            let mut transcript = shared.transcript.lock().unwrap();
            transcript.violations.push(format!("{reason}: {}", shorten(line)));
            shared.changed.notify_all();
            return;
        }
    };
    let frame = Frame { seq, value: value.clone() };
    let is_request = value.get("method").is_some() && value.get("id").is_some();
    let is_response = value.get("method").is_none();
    {
        let mut transcript = shared.transcript.lock().unwrap();
        transcript.frames.push(frame.clone());
        if is_response {
            match value["id"].as_u64() {
                Some(id) => {
                    if transcript.responses.insert(id, frame).is_some() {
                        transcript.violations.push(format!("second response to request {id}"));
                    }
                }
                // An error about a line without a usable id (a parse error) answers `null`.
                None if value["id"].is_null() && value.get("error").is_some() => {}
                None => {
                    transcript.violations.push(format!("response to no request of ours: {line}"))
                }
            }
        }
        if is_request {
            transcript.agent_requests.push(AgentRequest {
                seq,
                id: value["id"].clone(),
                method: value["method"].as_str().unwrap_or_default().to_string(),
                params: value["params"].clone(),
                reply: None,
            });
        }
        shared.changed.notify_all();
    }
    if is_request {
        let policy = shared.policy.lock().unwrap().clone();
        let method = value["method"].as_str().unwrap_or_default();
        let reply = match policy(method, &value["params"]) {
            Reply::Result(result) => json!({"jsonrpc": "2.0", "id": value["id"], "result": result}),
            Reply::Error { code, message } => json!({"jsonrpc": "2.0", "id": value["id"],
                "error": {"code": code, "message": message}}),
            Reply::Hold => return,
        };
        {
            let mut transcript = shared.transcript.lock().unwrap();
            if let Some(request) = transcript.agent_requests.iter_mut().rev().find(|r| r.seq == seq)
            {
                request.reply = Some(reply.clone());
            }
        }
        shared.write_line(&reply.to_string());
    }
}

fn spawn_stderr(mut pipe: std::process::ChildStderr, sink: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => sink.lock().unwrap().extend_from_slice(&buffer[..n]),
            }
        }
    })
}
