//! The reliability suite's additions to the driver: the global invariants every fault case
//! ends with, a healthy bystander session, raw byte input, the simulator's persisted native
//! state (what the host was really told), simulated installs with defects, and memory figures.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use serde_json::{Value, json};

use super::{Agent, TestEnv, chunk_text, kind, plain_client, text_prompt};

// ----- raw input and process figures ---------------------------------------------------------

impl Agent {
    /// Writes `bytes` and a newline as they are (they may be invalid UTF-8). False when the
    /// agent no longer reads its stdin.
    pub fn send_bytes(&self, bytes: &[u8]) -> bool {
        self.shared.transcript.lock().unwrap().sent.push(String::from_utf8_lossy(bytes).into());
        let mut stdin = self.shared.stdin.lock().unwrap();
        let Some(pipe) = stdin.as_mut() else { return false };
        pipe.write_all(bytes)
            .and_then(|()| pipe.write_all(b"\n"))
            .and_then(|()| pipe.flush())
            .is_ok()
    }

    /// Resident memory of the agent process (not its children), in KiB.
    pub fn vm_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read the agent's /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc status")
    }

    /// Waits (hang guard only) until the agent's stderr contains `needle`.
    pub fn wait_stderr(&self, needle: &str) {
        self.wait_stderr_any(&[needle]);
    }

    /// Waits (hang guard only) until the agent's stderr contains one of `needles`; the first
    /// of them it contains.
    pub fn wait_stderr_any<'a>(&self, needles: &[&'a str]) -> &'a str {
        let deadline = std::time::Instant::now() + super::HANG_GUARD;
        loop {
            let stderr = self.stderr();
            if let Some(needle) = needles.iter().find(|needle| stderr.contains(**needle)) {
                return needle;
            }
            if std::time::Instant::now() >= deadline {
                panic!("hang guard: the agent never logged any of {needles:?}\n{}", self.report());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Ids of every request this client sent, in order.
    pub fn sent_request_ids(&self) -> Vec<u64> {
        let transcript = self.transcript();
        transcript
            .sent
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|frame| frame.get("method").is_some())
            .filter_map(|frame| frame.get("id").and_then(Value::as_u64))
            .collect()
    }

    /// Frames that answer request `id` (a correct agent writes exactly one).
    pub fn answers_to(&self, id: u64) -> usize {
        let transcript = self.transcript();
        transcript
            .frames
            .iter()
            .filter(|f| f.value.get("method").is_none() && f.value["id"] == id)
            .count()
    }

    /// Every request sent so far was answered exactly once, and the agent never asked the
    /// client twice about the same tool call.
    pub fn assert_requests_answered_once(&self) {
        for id in self.sent_request_ids() {
            let answers = self.answers_to(id);
            assert_eq!(answers, 1, "request {id} was answered {answers} times\n{}", self.report());
        }
        let mut asked = BTreeSet::new();
        for request in self.agent_requests() {
            if request.method != "session/request_permission" {
                continue;
            }
            let key = (
                request.params["sessionId"].to_string(),
                request.params["toolCall"]["toolCallId"].to_string(),
            );
            assert!(asked.insert(key), "the client was asked twice: {:#?}", request.params);
        }
    }
}

// ----- what the host was told ------------------------------------------------------------------

/// One native permission request as the simulator recorded it, with how it was resolved.
#[derive(Clone, Debug)]
pub struct NativePermission {
    pub session: String,
    pub request_id: String,
    /// The decisions the host applied (`allow`, `deny`, ...), in order.
    pub resolutions: Vec<String>,
}

/// Every permission request the simulator persisted in `env`, across sessions. (The host
/// simulator saves a session's recent events when a turn ends; a host that died mid-turn loses
/// the unsaved tail, which can only hide requests, never invent resolutions. The Desktop Agent
/// simulator records each one as it happens. The Services Server profiles keep theirs as
/// `permissions` in `services/sessions/<id>.json`: each answer that reached ZCode, applied
/// (`allow`, `deny`) or not (`ignored:<reason>`).)
pub fn native_permissions(env: &TestEnv) -> Vec<NativePermission> {
    // Whichever simulator ran (a test may play another release than the suite's).
    let mut found = app_server_permissions(env);
    found.extend(services_permissions(env));
    let Ok(files) = std::fs::read_dir(env.sim_state().join("sessions")) else { return found };
    for file in files.flatten() {
        let Ok(text) = std::fs::read_to_string(file.path()) else { continue };
        let Ok(stored) = serde_json::from_str::<Value>(&text) else { continue };
        let session = stored["sessionId"].as_str().unwrap_or_default().to_string();
        let mut requests: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for event in stored["recentEvents"].as_array().into_iter().flatten() {
            let request_id = event["payload"]["requestId"].as_str().unwrap_or_default();
            match event["type"].as_str() {
                Some("permission.requested") => {
                    requests.entry(request_id.to_string()).or_default();
                }
                Some("permission.resolved") => {
                    let decision = event["payload"]["decision"].as_str().unwrap_or("?");
                    requests.entry(request_id.to_string()).or_default().push(decision.into());
                }
                _ => {}
            }
        }
        for (request_id, resolutions) in requests {
            found.push(NativePermission { session: session.clone(), request_id, resolutions });
        }
    }
    found
}

fn services_permissions(env: &TestEnv) -> Vec<NativePermission> {
    let mut found = Vec::new();
    let dir = env.sim_state().join("services").join("sessions");
    let Ok(files) = std::fs::read_dir(dir) else { return found };
    for file in files.flatten() {
        let Ok(text) = std::fs::read_to_string(file.path()) else { continue };
        let Ok(stored) = serde_json::from_str::<Value>(&text) else { continue };
        let session = stored["sessionId"].as_str().unwrap_or_default().to_string();
        for permission in stored["permissions"].as_array().into_iter().flatten() {
            let answers = permission["answers"].as_array().into_iter().flatten();
            found.push(NativePermission {
                session: session.clone(),
                request_id: permission["interactionId"].as_str().unwrap_or_default().into(),
                resolutions: answers.filter_map(Value::as_str).map(str::to_string).collect(),
            });
        }
    }
    found
}

/// The Desktop Agent simulator's own record of each permission it asked and decided
/// (`app-server/permissions.jsonl`, written as it happens).
fn app_server_permissions(env: &TestEnv) -> Vec<NativePermission> {
    let path = env.sim_state().join("app-server").join("permissions.jsonl");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut requests: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else { continue };
        let key = (
            entry["sessionId"].as_str().unwrap_or_default().to_string(),
            entry["requestId"].as_str().unwrap_or_default().to_string(),
        );
        let resolutions = requests.entry(key).or_default();
        if let Some(decision) = entry["decision"].as_str() {
            resolutions.push(decision.to_string());
        }
    }
    requests
        .into_iter()
        .map(|((session, request_id), resolutions)| NativePermission {
            session,
            request_id,
            resolutions,
        })
        .collect()
}

/// Waits (hang guard only) until the simulator has saved an answer to a permission of
/// `session` (it saves when the turn ends natively), and returns that session's permissions.
pub fn wait_native_resolution(env: &TestEnv, session: &str) -> Vec<NativePermission> {
    let deadline = std::time::Instant::now() + super::HANG_GUARD;
    loop {
        let mine: Vec<NativePermission> =
            native_permissions(env).into_iter().filter(|p| p.session == session).collect();
        if mine.iter().any(|p| !p.resolutions.is_empty()) {
            return mine;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "hang guard: ZCode was never told anything about the question: {mine:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

// ----- the global invariants -------------------------------------------------------------------

/// What a fault case promises beyond its own outcome.
pub struct Invariants<'a> {
    /// Files the faulty turn would have written had anything allowed it.
    pub never_written: Vec<PathBuf>,
    /// The host may reject a native answer (e.g. it withdrew the question when it stopped);
    /// otherwise a rejected answer is a second answer and fails the case.
    pub rejected_native_answer_ok: bool,
    pub env: &'a TestEnv,
}

impl<'a> Invariants<'a> {
    pub fn new(env: &'a TestEnv) -> Self {
        Self { never_written: Vec::new(), rejected_native_answer_ok: false, env }
    }

    pub fn never_written(mut self, path: PathBuf) -> Self {
        self.never_written.push(path);
        self
    }

    pub fn tolerate_rejected_native_answers(mut self) -> Self {
        self.rejected_native_answer_ok = true;
        self
    }

    /// Ends the connection and checks, for the whole case:
    /// - every ACP request was answered exactly once, the client never asked twice;
    /// - every stdout line was a JSON-RPC 2.0 frame (UTF-8, one object per line);
    /// - the agent exited cleanly and left no process behind;
    /// - no native permission was resolved twice, and none the case forbids was allowed;
    /// - no file the faulty turn would have written exists.
    pub fn finish(self, agent: Agent) -> ExitStatus {
        agent.assert_requests_answered_once();
        let stderr = agent.stderr.clone();
        let status = agent.finish();
        assert!(status.success(), "the agent did not exit cleanly: {status:?}");
        let stderr = String::from_utf8_lossy(&stderr.lock().unwrap()).into_owned();
        if !self.rejected_native_answer_ok {
            let rejected = stderr.lines().find(|l| l.contains("answering ZCode failed"));
            assert!(rejected.is_none(), "the host rejected a native answer: {rejected:?}");
        }
        for permission in native_permissions(self.env) {
            assert!(
                permission.resolutions.len() <= 1,
                "native permission answered more than once: {permission:?}"
            );
        }
        for path in &self.never_written {
            assert!(!path.exists(), "{} was written: something allowed it", path.display());
        }
        status
    }
}

// ----- a healthy session beside the faulty one -------------------------------------------------

/// A second session in its own workspace, opened before the fault.
pub struct Bystander {
    pub session: String,
    pub workspace: PathBuf,
}

/// What the fault may do to the bystander.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// A session-level fault: the bystander must work as if nothing happened.
    SessionOnly,
    /// A host-level fault: every session of the failed host ends with an error (never
    /// silently reconnected); a new session on a fresh host must work.
    WholeHost,
}

impl Bystander {
    pub fn open(agent: &mut Agent, env: &TestEnv) -> Self {
        let workspace = env.workspace("bystander");
        let session = agent.new_session(&workspace);
        agent.prompt_ok(&session, "bystander before the fault", "end_turn");
        Self { session, workspace }
    }

    /// After the fault: the bystander is unaffected (or, for a host fault, failed with an error
    /// and replaceable by a fresh session).
    pub fn check(&self, agent: &mut Agent, reach: Reach) {
        let before = agent.updates(&self.session).len();
        let response = agent.prompt_when_idle_response(&self.session, "bystander after the fault");
        match reach {
            Reach::SessionOnly => {
                let result = agent.result_of(&response, "the bystander's prompt");
                assert_eq!(result["stopReason"], "end_turn", "{result}");
                let updates = agent.updates(&self.session)[before..].to_vec();
                let text = chunk_text(&updates, "agent_message_chunk");
                assert!(text.contains("bystander after the fault"), "{text:?}");
                assert!(!text.contains("Before the fault"), "the fault's text leaked: {text:?}");
            }
            Reach::WholeHost => {
                let (_, message) = agent.error_of(&response, "a session of the failed host");
                assert!(!message.is_empty());
                let fresh = agent.new_session(&self.workspace);
                agent.prompt_ok(&fresh, "a fresh session after the host failed", "end_turn");
            }
        }
        // Nothing of the faulty turn ever reached the bystander.
        let all = agent.updates(&self.session);
        let text = chunk_text(&all, "agent_message_chunk");
        assert!(!text.contains("Before the fault"), "the faulty turn's text leaked: {text:?}");
        assert!(all.iter().all(|u| !kind(u).is_empty()), "an update without a kind: {all:#?}");
    }
}

/// Loads (and so compiles and caches) the mappers `target_args` name, with the cache every
/// agent of the tests uses: a cold compile of a drop-in mapper must not eat a hang guard.
pub fn warm_mapper_cache(env: &TestEnv, target_args: &[&str]) {
    let output = Command::new(super::agent_binary())
        .args(target_args)
        .args(["mapper", "list"])
        .env("XDG_CACHE_HOME", super::shared_cache_dir())
        // The agents' trust file: only trusted drop-ins are loaded (and so compiled).
        .env("HOME", env.path().join("home"))
        .env("XDG_CONFIG_HOME", env.path().join("home").join(".config"))
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp mapper list");
    assert!(output.status.success(), "mapper list: {output:?}");
}

// ----- simulated installs with defects ---------------------------------------------------------

/// `zcode-acp simulator install <dir> --variant <variant>`: a fake ZCode 3.11.2 install whose
/// runtime is this binary's simulator. Returns the install root.
pub fn fake_install(env: &TestEnv, name: &str, variant: &str) -> PathBuf {
    let dir = env.path().join(name);
    let output = Command::new(super::agent_binary())
        .args(["simulator", "install"])
        .arg(&dir)
        .args(["--variant", variant])
        .env("ZCODE_SIM_STATE", env.sim_state())
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp simulator install");
    assert!(output.status.success(), "simulator install --variant {variant}: {output:?}");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// A session/new request for `cwd`.
pub fn new_session_params(cwd: &Path) -> Value {
    json!({"cwd": cwd, "mcpServers": []})
}

/// A started agent with a session, initialized as a plain client, bound to `workspace`.
pub fn agent_with_session(
    env: &TestEnv,
    policy: super::Policy,
    extra_env: &[(&str, &str)],
    workspace: &Path,
) -> (Agent, String) {
    let mut agent = Agent::start_with_env(env, policy, extra_env);
    agent.initialize(plain_client());
    let session = agent.new_session(workspace);
    (agent, session)
}

/// Sends a prompt without waiting; returns its id.
pub fn send_prompt(agent: &mut Agent, session: &str, text: &str) -> u64 {
    agent.send_request("session/prompt", text_prompt(session, text))
}
