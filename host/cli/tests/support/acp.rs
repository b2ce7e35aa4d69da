//! ACP shorthands: client capabilities, request params, and helpers over session updates.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Agent, HANG_GUARD, Policy, TestEnv};

/// Client capabilities of a plain client (no fs, no terminal, no elicitation).
pub fn plain_client() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false})
}

/// A client that renders form elicitation.
pub fn form_client() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false,
           "elicitation": {"form": {}}})
}

pub fn initialize_params(capabilities: Value) -> Value {
    json!({"protocolVersion": 1, "clientCapabilities": capabilities,
           "clientInfo": {"name": "zcode-acp-e2e", "version": "0"}})
}

pub fn text_prompt(session_id: &str, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

impl Agent {
    /// `initialize` that must succeed; returns the result.
    pub fn initialize(&mut self, capabilities: Value) -> Value {
        self.call("initialize", initialize_params(capabilities))
    }

    /// `session/new` in `cwd` that must succeed; returns the session id.
    /// An agent whose simulator arms `faults` (`ZCODE_SIM_FAULT`), refusing every permission,
    /// initialized as a plain client, with one session in `workspace`.
    pub fn with_faults_in_session(
        env: &TestEnv,
        workspace: &Path,
        faults: &str,
    ) -> (Agent, String) {
        let mut agent =
            Agent::start_with_env(env, super::policy::refuse_all(), &[("ZCODE_SIM_FAULT", faults)]);
        agent.initialize(plain_client());
        let session = agent.new_session(workspace);
        (agent, session)
    }

    pub fn new_session(&mut self, cwd: &Path) -> String {
        let result = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        result["sessionId"].as_str().expect("sessionId is a string").to_string()
    }

    /// A started agent, initialized as `capabilities`, with one session in `cwd`.
    pub fn with_session(
        env: &TestEnv,
        policy: Policy,
        capabilities: Value,
        cwd: &Path,
    ) -> (Self, String) {
        let mut agent = Self::start_with(env, policy);
        agent.initialize(capabilities);
        let session = agent.new_session(cwd);
        (agent, session)
    }

    /// `session/prompt` with one text block; returns the response frame.
    pub fn prompt(&mut self, session_id: &str, text: &str) -> Value {
        self.request("session/prompt", text_prompt(session_id, text))
    }

    /// A prompt that must end with `stop_reason`; returns its result.
    pub fn prompt_ok(&mut self, session_id: &str, text: &str, stop_reason: &str) -> Value {
        let response = self.prompt(session_id, text);
        let result = self.result_of(&response, &format!("prompt {text:?}"));
        assert_eq!(
            result["stopReason"],
            stop_reason,
            "prompt {text:?}: {result}\n{}",
            self.report()
        );
        result
    }

    /// Prompts until the session takes the prompt (a broken or cancelled turn may still be
    /// ending natively: "still stopping" is retried), then returns the response frame.
    pub fn prompt_when_idle_response(&mut self, session_id: &str, text: &str) -> Value {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let response = self.prompt(session_id, text);
            let message = response["error"]["message"].as_str().unwrap_or_default();
            if !message.contains("still stopping") {
                return response;
            }
            if Instant::now() >= deadline {
                panic!("hang guard: the session stayed busy\n{}", self.report());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Like `prompt_when_idle_response`, for a prompt that must succeed: returns its result.
    pub fn prompt_when_idle(&mut self, session_id: &str, text: &str) -> Value {
        let response = self.prompt_when_idle_response(session_id, text);
        self.result_of(&response, &format!("prompt {text:?}"))
    }

    /// Like `prompt_when_idle_response`, for a prompt that must fail: returns its error.
    pub fn prompt_when_idle_error(&mut self, session_id: &str, text: &str) -> (i64, String) {
        let response = self.prompt_when_idle_response(session_id, text);
        self.error_of(&response, &format!("prompt {text:?}"))
    }

    /// The seq of the response to request `id`.
    pub fn response_seq(&self, id: u64) -> usize {
        self.transcript().response(id).map(|f| f.seq).expect("response received")
    }
}

// ----- update helpers --------------------------------------------------------------------------

pub fn kind(update: &Value) -> &str {
    update["sessionUpdate"].as_str().unwrap_or("")
}

/// The concatenated text of the updates of `kind` (message or thought chunks).
pub fn chunk_text(updates: &[Value], chunk_kind: &str) -> String {
    updates
        .iter()
        .filter(|u| kind(u) == chunk_kind)
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect()
}

pub fn count(updates: &[Value], update_kind: &str) -> usize {
    updates.iter().filter(|u| kind(u) == update_kind).count()
}

/// The updates of one tool call (`tool_call` and `tool_call_update`), in order.
pub fn tool_updates<'a>(updates: &'a [Value], tool_call_id: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| matches!(kind(u), "tool_call" | "tool_call_update"))
        .filter(|u| u["toolCallId"] == tool_call_id)
        .collect()
}

/// The final status of a tool call (the last status any of its updates carried).
pub fn final_status(updates: &[&Value]) -> String {
    updates.iter().filter_map(|u| u["status"].as_str()).next_back().unwrap_or_default().to_string()
}

/// All text in a tool call's content entries.
pub fn tool_content_text(updates: &[&Value]) -> String {
    let mut text = String::new();
    for update in updates {
        for entry in update["content"].as_array().into_iter().flatten() {
            if let Some(t) = entry["content"]["text"].as_str() {
                text.push_str(t);
            }
        }
    }
    text
}
