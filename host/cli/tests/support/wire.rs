//! What the agent wrote: the frames in order, and the JSON-RPC 2.0 invariant every line must
//! satisfy.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::policy::AgentRequest;

/// One line the agent wrote to stdout, with its position.
#[derive(Clone, Debug)]
pub struct Frame {
    pub seq: usize,
    pub value: Value,
}

#[derive(Default)]
pub struct Transcript {
    /// Every valid frame from the agent, in arrival order.
    pub frames: Vec<Frame>,
    /// Lines that broke the JSON-RPC 2.0 invariant, with the reason.
    pub violations: Vec<String>,
    /// Responses to our requests, by id.
    pub(super) responses: HashMap<u64, Frame>,
    pub agent_requests: Vec<AgentRequest>,
    /// Lines we wrote, for failure reports.
    pub(super) sent: Vec<String>,
    /// stdout reached EOF.
    pub stdout_closed: bool,
}

impl Transcript {
    /// `session/update` params for `session_id`, in order: (seq, update object).
    pub fn updates(&self, session_id: &str) -> Vec<(usize, Value)> {
        self.frames
            .iter()
            .filter(|f| f.value["method"] == "session/update")
            .filter(|f| f.value["params"]["sessionId"] == session_id)
            .map(|f| (f.seq, f.value["params"]["update"].clone()))
            .collect()
    }

    pub fn notifications(&self, method: &str) -> Vec<Frame> {
        self.frames
            .iter()
            .filter(|f| f.value["method"] == method && f.value.get("id").is_none())
            .cloned()
            .collect()
    }

    pub fn response(&self, id: u64) -> Option<&Frame> {
        self.responses.get(&id)
    }

    /// A readable tail of both directions for failure messages.
    pub(super) fn report(&self) -> String {
        let mut text = String::from("--- last frames from the agent ---\n");
        let start = self.frames.len().saturating_sub(40);
        for frame in &self.frames[start..] {
            text.push_str(&format!("#{} {}\n", frame.seq, shorten(&frame.value.to_string())));
        }
        text.push_str("--- last lines sent ---\n");
        let start = self.sent.len().saturating_sub(15);
        for line in &self.sent[start..] {
            text.push_str(&shorten(line));
            text.push('\n');
        }
        if !self.violations.is_empty() {
            text.push_str(&format!("--- invariant violations ---\n{:#?}\n", self.violations));
        }
        text
    }
}

pub(super) fn shorten(line: &str) -> String {
    if line.chars().count() > 600 {
        format!("{}…", line.chars().take(600).collect::<String>())
    } else {
        line.to_string()
    }
}

/// The global invariant: a line is one JSON-RPC 2.0 request, notification or response.
pub fn check_frame(line: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err("missing \"jsonrpc\":\"2.0\"".into());
    }
    let valid_id = |id: &Value| id.is_string() || id.is_i64() || id.is_u64();
    let has = |key: &str| object.contains_key(key);
    if let Some(method) = object.get("method") {
        if !method.is_string() {
            return Err("method is not a string".into());
        }
        if has("result") || has("error") {
            return Err("a request/notification carries result or error".into());
        }
        if let Some(params) = object.get("params")
            && !(params.is_object() || params.is_array())
        {
            return Err("params is neither an object nor an array".into());
        }
        if let Some(id) = object.get("id")
            && !valid_id(id)
        {
            return Err("request id is neither a string nor an integer".into());
        }
        return Ok(value);
    }
    let id = object.get("id").ok_or("neither a request, a notification nor a response")?;
    if !(valid_id(id) || id.is_null()) {
        return Err("response id is neither a string, an integer nor null".into());
    }
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => Ok(value),
        (None, Some(error)) => {
            if !error["code"].is_i64() || !error["message"].is_string() {
                return Err("error without an integer code and a string message".into());
            }
            Ok(value)
        }
        _ => Err("a response must carry exactly one of result and error".into()),
    }
}
