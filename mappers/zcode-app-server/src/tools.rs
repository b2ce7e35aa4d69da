//! Tool calls as ACP shows them: the same kinds, titles and diff rules as the host generations,
//! so a client sees one surface whichever ZCode it drives.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_mapper_sdk::acp::update::{ToolCall, ToolCallUpdate, ToolStatus};
pub use zcode_mapper_sdk::tool_view::{PATH_KEYS, default_title, text_content, tool_kind};
use zcode_v4::acp::with_fields;

fn is_absolute(path: &str) -> bool {
    path.starts_with('/')
        || path.starts_with('\\')
        || path.get(1..3) == Some(":\\")
        || path.get(1..3) == Some(":/")
}

fn absolute(path: &str, workspace: &str) -> String {
    if is_absolute(path) {
        path.to_string()
    } else {
        format!("{}/{}", workspace.trim_end_matches('/'), path.trim_start_matches("./"))
    }
}

/// Files a tool input names, absolute against the workspace.
pub fn locations(input: Option<&Value>, workspace: &str) -> Vec<Value> {
    let mut out: Vec<String> = Vec::new();
    if let Some(Value::Object(map)) = input {
        for key in PATH_KEYS {
            if let Some(path) = map.get(key).and_then(Value::as_str).filter(|p| !p.is_empty()) {
                let path = absolute(path, workspace);
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    out.into_iter().map(|path| json!({"path": path})).collect()
}

/// The change an editing tool's input describes (`Edit`'s `old_string` → `new_string`, a
/// written file's `content`), shown with the permission question and after the tool ran.
pub fn input_diff(name: &str, input: Option<&Value>, workspace: &str) -> Option<Value> {
    let Some(Value::Object(map)) = input else { return None };
    if tool_kind(name) != "edit" {
        return None;
    }
    let path = locations(input, workspace).first()?["path"].as_str()?.to_string();
    let s = |key: &str| map.get(key).and_then(Value::as_str);
    match (s("old_string"), s("new_string"), s("content")) {
        (Some(old), Some(new), _) => {
            Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
        }
        (None, None, Some(new)) => Some(json!({"type": "diff", "path": path, "newText": new})),
        _ => None,
    }
}

/// Readable text of a legacy tool result (`content` when it is text, else the JSON).
pub fn result_text(result: &Value) -> String {
    match result {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Object(map) => match map.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => map
                .get("output")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| result.to_string()),
        },
        other => other.to_string(),
    }
}

#[derive(Default)]
struct Call {
    name: Option<String>,
    input_text: String,
    input: Option<Value>,
    announced: bool,
    done: bool,
}

/// Tool calls of the current turn, by ZCode tool-call id.
#[derive(Default)]
pub struct Tools {
    calls: BTreeMap<String, Call>,
}

impl Tools {
    pub fn clear(&mut self) {
        self.calls.clear();
    }

    fn call(&mut self, id: &str) -> &mut Call {
        self.calls.entry(id.to_string()).or_default()
    }

    pub fn input_started(&mut self, id: &str, name: Option<&str>) {
        let call = self.call(id);
        if let Some(name) = name {
            call.name = Some(name.to_string());
        }
        call.input_text.clear();
    }

    pub fn input_delta(&mut self, id: &str, delta: &str) {
        self.call(id).input_text.push_str(delta);
    }

    /// Streamed input is complete: parse it (a tool whose text is not JSON keeps none).
    pub fn input_ended(&mut self, id: &str) {
        let call = self.call(id);
        if call.input.is_none() && !call.input_text.is_empty() {
            call.input = serde_json::from_str(&call.input_text).ok();
        }
    }

    pub fn set(&mut self, id: &str, name: Option<&str>, input: Option<&Value>) {
        let call = self.call(id);
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            call.name = Some(name.to_string());
        }
        if let Some(input) = input.filter(|i| !i.is_null()) {
            call.input = Some(input.clone());
        }
    }

    pub fn input(&self, id: &str) -> Option<&Value> {
        self.calls.get(id).and_then(|c| c.input.as_ref())
    }

    /// What the `tool_call` announces, once per call (None when already announced).
    pub fn announced(&mut self, id: &str, workspace: &str) -> Option<Announced> {
        let call = self.call(id);
        if call.announced {
            return None;
        }
        call.announced = true;
        let name = call.name.clone().unwrap_or_else(|| "Tool".to_string());
        let input = call.input.clone();
        Some(Announced {
            id: id.to_string(),
            title: default_title(&name, input.as_ref(), workspace),
            kind: tool_kind(&name),
            locations: locations(input.as_ref(), workspace),
            diff: input_diff(&name, input.as_ref(), workspace).into_iter().collect(),
            input,
        })
    }

    /// The `tool_call` announcement, once per call (None when already announced).
    pub fn announce(&mut self, id: &str, workspace: &str) -> Option<String> {
        self.announced(id, workspace).map(|announced| announced.call().to_json())
    }

    pub fn started(&mut self, id: &str) -> String {
        ToolCallUpdate::status(id, ToolStatus::InProgress).to_json()
    }

    /// Progress of a running tool: ZCode's tails are cumulative, so the content is replaced.
    pub fn progress(&mut self, id: &str, tail: &str) -> String {
        ToolCallUpdate {
            content: Some(&[text_content(tail)]),
            ..ToolCallUpdate::status(id, ToolStatus::InProgress)
        }
        .to_json()
    }

    /// The final update, once (None for a repeated end).
    pub fn finished(&mut self, id: &str, outcome: Outcome<'_>, workspace: &str) -> Option<String> {
        let call = self.call(id);
        if call.done {
            return None;
        }
        call.done = true;
        let name = call.name.clone().unwrap_or_default();
        let input = call.input.clone();
        Some(match outcome {
            Outcome::Done { text, raw } => {
                let mut content: Vec<Value> =
                    input_diff(&name, input.as_ref(), workspace).into_iter().collect();
                if !text.is_empty() {
                    content.push(text_content(&text));
                }
                drop(text);
                let content = (!content.is_empty()).then_some(Value::Array(content));
                // The output, twice: written at its exact size, the native result not copied.
                with_fields(
                    ToolCallUpdate::status(id, ToolStatus::Completed).to_json(),
                    &[("rawOutput", Some(raw)), ("content", content.as_ref())],
                )
            }
            Outcome::Failed(message) => ToolCallUpdate {
                content: Some(&[text_content(if message.is_empty() {
                    "Tool execution failed"
                } else {
                    message
                })]),
                ..ToolCallUpdate::status(id, ToolStatus::Failed)
            }
            .to_json(),
        })
    }
}

/// What a `tool_call` announces.
pub struct Announced {
    pub id: String,
    pub title: String,
    pub kind: &'static str,
    pub input: Option<Value>,
    /// The input's diff, if it describes one.
    pub diff: Vec<Value>,
    pub locations: Vec<Value>,
}

impl Announced {
    /// The pending `tool_call`.
    pub fn call(&self) -> ToolCall<'_> {
        ToolCall {
            raw_input: self.input.as_ref(),
            content: &self.diff,
            locations: &self.locations,
            ..ToolCall::new(&self.id, &self.title, self.kind)
        }
    }
}

/// How a tool call ended: its readable output and the native result it came from, or why not.
pub enum Outcome<'a> {
    Done { text: String, raw: &'a Value },
    Failed(&'a str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_titles_and_diffs_follow_the_host_generations() {
        assert_eq!(tool_kind("Bash"), "execute");
        assert_eq!(tool_kind("MultiEdit"), "edit");
        assert_eq!(tool_kind("Glob"), "search");
        assert_eq!(tool_kind("TodoWrite"), "edit");
        assert_eq!(tool_kind("Agent"), "other");
        let input = json!({"file_path": "/w/src/a.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(default_title("Edit", Some(&input), "/w"), "Edit src/a.rs");
        assert_eq!(
            default_title("Bash", Some(&json!({"command": "cargo test\nmore"})), "/w"),
            "Bash: cargo test…"
        );
        assert_eq!(
            input_diff("Edit", Some(&input), "/w"),
            Some(json!({"type": "diff", "path": "/w/src/a.rs", "oldText": "a", "newText": "b"}))
        );
        assert_eq!(input_diff("Read", Some(&input), "/w"), None);
        assert_eq!(
            locations(Some(&json!({"path": "b.txt"})), "/w"),
            vec![json!({"path": "/w/b.txt"})]
        );
    }

    #[test]
    fn announces_and_finishes_each_call_once() {
        let mut tools = Tools::default();
        tools.input_started("t1", Some("Bash"));
        tools.input_delta("t1", "{\"command\":");
        tools.input_delta("t1", "\"ls\"}");
        tools.input_ended("t1");
        let read = |update: String| serde_json::from_str::<Value>(&update).unwrap();
        let call = read(tools.announce("t1", "/w").unwrap());
        assert_eq!(call["title"], "Bash: ls");
        assert_eq!(call["rawInput"], json!({"command": "ls"}));
        assert!(tools.announce("t1", "/w").is_none());
        let raw = json!({"content": "a\nb"});
        let done = read(
            tools
                .finished("t1", Outcome::Done { text: result_text(&raw), raw: &raw }, "/w")
                .unwrap(),
        );
        assert_eq!(done["content"][0]["content"]["text"], "a\nb");
        assert!(tools.finished("t1", Outcome::Failed("late"), "/w").is_none());
    }
}
