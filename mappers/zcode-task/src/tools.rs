//! Tool-call lifecycle: ACP `tool_call` / `tool_call_update` objects from the native tool
//! stream, with kinds, locations and content (text, and diffs when a result carries file text).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_mapper_sdk::contract::MapperError;

use zcode_mapper_sdk::acp::update::{ToolCall, ToolCallUpdate};
use zcode_mapper_sdk::json::{canonical, protocol};
use zcode_mapper_sdk::tool_view::{self, PATH_KEYS, text_content};
pub use zcode_mapper_sdk::tool_view::{default_title, locations, tool_kind};
use zcode_mapper_sdk::uri::{is_absolute_path, join_path};

/// What a failed tool shows when its error says nothing.
pub const FAILED_TOOL: &str = "Tool execution failed";

/// The readable text of a tool result: `result.content` if it is a string, the result itself
/// if it is a string, else its JSON (unless a diff already shows it).
fn result_text(result: &Value, has_diff: bool) -> String {
    match result {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Object(map) if map.get("content").is_some_and(Value::is_string) => {
            map["content"].as_str().unwrap_or_default().to_string()
        }
        _ if has_diff => String::new(),
        other => canonical(other),
    }
}

fn first_string<'a>(map: &'a serde_json::Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|key| map.get(*key).and_then(Value::as_str))
}

/// A diff when the result carries the file's new text (and optionally its old text):
/// `newText`/`new_string`/`newContent`, `oldText`/`old_string`/`oldContent`/`originalContent`,
/// with the path from the result or else the tool input. No path, no diff.
fn diff(result: &Value, input: Option<&Value>, workspace: &str) -> Option<Value> {
    let Value::Object(map) = result else {
        return None;
    };
    let new_text = first_string(map, &["newText", "new_string", "newContent"])?;
    let path = first_string(map, &PATH_KEYS)
        .map(
            |path| {
                if is_absolute_path(path) { path.to_string() } else { join_path(workspace, path) }
            },
        )
        .or_else(|| {
            locations(input, workspace).first().and_then(|l| l["path"].as_str().map(str::to_string))
        })?;
    let mut diff = json!({"type": "diff", "path": path, "newText": new_text});
    if let Some(old_text) =
        first_string(map, &["oldText", "old_string", "oldContent", "originalContent"])
    {
        diff["oldText"] = json!(old_text);
    }
    Some(diff)
}

/// The change an editing tool's input describes, as ACP `diff` content, so the client can
/// show it before the tool runs (with the permission question) and after: `Edit`'s replaced
/// text (`old_string` → `new_string`), or a written file's whole text (`content`; its old text
/// is not in the input, so none is claimed). Only for tools of kind `edit` that name a file.
pub fn input_diff(name: &str, input: Option<&Value>, workspace: &str) -> Option<Value> {
    let Some(Value::Object(map)) = input else {
        return None;
    };
    if tool_kind(name) != "edit" {
        return None;
    }
    let path = locations(input, workspace).first()?["path"].as_str()?.to_string();
    match (first_string(map, &["old_string"]), first_string(map, &["new_string", "content"])) {
        (Some(old), Some(new)) if map.contains_key("new_string") => {
            Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
        }
        (None, Some(new)) if map.contains_key("content") => {
            Some(json!({"type": "diff", "path": path, "newText": new}))
        }
        _ => None,
    }
}

/// ACP content of a completed tool `name`: the result's diff, else the input's, then the
/// result's text (if any).
pub fn completed_content(
    name: &str,
    result: &Value,
    input: Option<&Value>,
    workspace: &str,
) -> Vec<Value> {
    let mut content = result_content(result, input, workspace);
    if !content.iter().any(|c| c["type"] == "diff")
        && let Some(diff) = input_diff(name, input, workspace)
    {
        content.insert(0, diff);
    }
    content
}

/// ACP content of a completed tool: its diff first (if any), then its text (if any).
pub fn result_content(result: &Value, input: Option<&Value>, workspace: &str) -> Vec<Value> {
    let mut content: Vec<Value> = diff(result, input, workspace).into_iter().collect();
    let text = result_text(result, !content.is_empty());
    if !text.is_empty() {
        content.push(text_content(&text));
    }
    content
}

/// ACP tool-call status.
pub use zcode_mapper_sdk::acp::update::ToolStatus as Status;

/// One complete `tool_call` (announcement or history replay).
pub struct ToolCallView<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub title: Option<&'a str>,
    pub status: Status,
    pub raw_input: Option<&'a Value>,
    pub raw_output: Option<&'a Value>,
    pub content: Vec<Value>,
}

impl ToolCallView<'_> {
    /// The `tool_call` update: a title naming what the tool acts on when the agent gave none,
    /// the kind from its name, the files its input names.
    pub fn to_update(&self, workspace: &str) -> String {
        let title = match self.title.filter(|title| !title.is_empty()) {
            Some(title) => title.to_string(),
            None => default_title(self.name, self.raw_input, workspace),
        };
        let locations = locations(self.raw_input, workspace);
        let call = ToolCall {
            status: self.status,
            raw_input: self.raw_input,
            raw_output: self.raw_output,
            content: &self.content,
            locations: &locations,
            ..ToolCall::new(self.id, &title, tool_kind(self.name))
        };
        call.to_json()
    }
}

#[derive(Default)]
struct ToolState {
    name: Option<String>,
    /// Streamed input text (`tool_input_delta`), parsed when the call is announced.
    input_text: String,
    raw_input: Option<Value>,
    announced: bool,
    status: Option<Status>,
}

/// Tool calls of the current turn, keyed by native tool-call id.
#[derive(Default)]
pub struct Tools {
    calls: BTreeMap<String, ToolState>,
}

impl Tools {
    pub fn clear(&mut self) {
        self.calls.clear();
    }

    fn state(&mut self, id: &str) -> &mut ToolState {
        self.calls.entry(id.to_string()).or_default()
    }

    /// `tool_input_start`: the tool's name is known; its input starts over.
    pub fn input_started(&mut self, id: &str, name: Option<&str>) {
        let state = self.state(id);
        if let Some(name) = name {
            state.name = Some(name.to_string());
        }
        state.input_text.clear();
    }

    pub fn input_delta(&mut self, id: &str, delta: &str) {
        self.state(id).input_text.push_str(delta);
    }

    /// The native input is known (from the stream's `tool_call` or a permission request).
    pub fn set_input(&mut self, id: &str, name: Option<&str>, input: Option<&Value>) {
        let state = self.state(id);
        if let Some(name) = name {
            state.name = Some(name.to_string());
        }
        if let Some(input) = input {
            state.raw_input = Some(input.clone());
        }
    }

    /// The `tool_call` announcement, once per tool.
    pub fn announce(&mut self, id: &str, name: Option<&str>, workspace: &str) -> Option<String> {
        let state = self.state(id);
        if let Some(name) = name
            && state.name.is_none()
        {
            state.name = Some(name.to_string());
        }
        if state.announced {
            return None;
        }
        state.announced = true;
        state.status.get_or_insert(Status::Pending);
        if state.raw_input.is_none() && !state.input_text.is_empty() {
            let parsed =
                serde_json::from_str(&state.input_text).unwrap_or_else(|_| json!(state.input_text));
            state.raw_input = Some(parsed);
        }
        let name = state.name.as_deref().unwrap_or("tool");
        let view = ToolCallView {
            id,
            name,
            title: None,
            status: Status::Pending,
            raw_input: state.raw_input.as_ref(),
            raw_output: None,
            content: input_diff(name, state.raw_input.as_ref(), workspace).into_iter().collect(),
        };
        Some(view.to_update(workspace))
    }

    pub fn raw_input(&self, id: &str) -> Option<&Value> {
        self.calls.get(id).and_then(|state| state.raw_input.as_ref())
    }

    /// `started`/`progress`: `in_progress` once; never after the tool finished.
    pub fn progressed(&mut self, id: &str, kind: &str) -> Result<Option<String>, MapperError> {
        let state = self.state(id);
        match state.status {
            Some(status) if status.is_final() => {
                Err(protocol(format!("Invalid tool transition: {kind} after {}", status.name())))
            }
            Some(Status::InProgress) => Ok(None),
            _ => {
                state.status = Some(Status::InProgress);
                Ok(Some(ToolCallUpdate::status(id, Status::InProgress).to_json()))
            }
        }
    }

    /// `result`: completed with the raw output and its content.
    pub fn completed(&mut self, id: &str, result: &Value, workspace: &str) -> String {
        let name = self.calls.get(id).and_then(|state| state.name.as_deref()).unwrap_or("tool");
        let content = completed_content(name, result, self.raw_input(id), workspace);
        self.state(id).status = Some(Status::Completed);
        let update = ToolCallUpdate {
            raw_output: Some(result),
            content: Some(&content),
            ..ToolCallUpdate::status(id, Status::Completed)
        };
        update.to_json()
    }

    /// `error`: failed with the native error as raw output.
    pub fn failed(&mut self, id: &str, error: Option<&Value>) -> String {
        self.state(id).status = Some(Status::Failed);
        let content = tool_view::error_content(error, FAILED_TOOL);
        let update = ToolCallUpdate {
            raw_output: error,
            content: Some(&content),
            ..ToolCallUpdate::status(id, Status::Failed)
        };
        update.to_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zcode_mapper_sdk::acp_check;

    fn parsed(update: String) -> Value {
        serde_json::from_str(&update).unwrap()
    }

    #[test]
    fn editing_inputs_become_diffs() {
        let diff = |name, input: Value| input_diff(name, Some(&input), "/w");
        assert_eq!(
            diff("Edit", json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"})),
            Some(json!({"type": "diff", "path": "/w/src/a.rs", "oldText": "a", "newText": "b"}))
        );
        assert_eq!(
            diff("Write", json!({"file_path": "/w/n.md", "content": "hi"})),
            Some(json!({"type": "diff", "path": "/w/n.md", "newText": "hi"}))
        );
        assert_eq!(diff("Read", json!({"file_path": "/w/n.md", "content": "hi"})), None);
        assert_eq!(diff("Write", json!({"content": "no file"})), None);
        assert_eq!(diff("Edit", json!({"file_path": "/w/a", "old_string": "a"})), None);
        assert_eq!(input_diff("Write", None, "/w"), None);

        let mut tools = Tools::default();
        let input = json!({"file_path": "/w/n.md", "content": "hi"});
        tools.set_input("t", Some("Write"), Some(&input));
        let announced = parsed(tools.announce("t", None, "/w").unwrap());
        assert_eq!(
            announced["content"],
            json!([{"type": "diff", "path": "/w/n.md", "newText": "hi"}])
        );
        acp_check::session_update(&announced);
        // The diff stays on the card after the tool ran, before the result's text.
        let done = parsed(tools.completed("t", &json!("Wrote 2 bytes"), "/w"));
        assert_eq!(done["content"][0]["type"], "diff");
        assert_eq!(done["content"][1]["content"]["text"], "Wrote 2 bytes");
        acp_check::session_update(&done);
    }

    #[test]
    fn announces_once_with_streamed_input() {
        let mut tools = Tools::default();
        tools.input_started("t1", Some("Read"));
        tools.input_delta("t1", "{\"file_path\":");
        tools.input_delta("t1", "\"/w/a.rs\"}");
        let update = parsed(tools.announce("t1", None, "/w").unwrap());
        assert_eq!(
            update,
            json!({
                "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.rs", "kind": "read",
                "status": "pending", "rawInput": {"file_path": "/w/a.rs"}, "locations": [{"path": "/w/a.rs"}]
            })
        );
        acp_check::session_update(&update);
        assert_eq!(tools.announce("t1", Some("Read"), "/w"), None);
        tools.input_delta("t2", "not json");
        assert_eq!(parsed(tools.announce("t2", None, "/w").unwrap())["rawInput"], "not json");
        assert_eq!(
            parsed(tools.announce("t3", None, "/w").unwrap()),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t3", "title": "tool", "kind": "other", "status": "pending"})
        );
    }

    #[test]
    fn reports_progress_once_and_refuses_it_after_the_end() {
        let mut tools = Tools::default();
        assert!(tools.progressed("t", "started").unwrap().is_some());
        assert_eq!(tools.progressed("t", "progress").unwrap(), None);
        tools.completed("t", &json!("ok"), "/w");
        assert_eq!(
            tools.progressed("t", "progress").unwrap_err().message,
            "Invalid tool transition: progress after completed"
        );
        tools.failed("u", None);
        assert_eq!(
            tools.progressed("u", "started").unwrap_err().message,
            "Invalid tool transition: started after failed"
        );
    }

    #[test]
    fn renders_results_errors_and_diffs() {
        let mut tools = Tools::default();
        let update =
            parsed(tools.completed("t", &json!({"content": "3 files", "exitCode": 0}), "/w"));
        assert_eq!(
            update["content"],
            json!([{"type": "content", "content": {"type": "text", "text": "3 files"}}])
        );
        assert_eq!(update["rawOutput"], json!({"content": "3 files", "exitCode": 0}));
        acp_check::session_update(&update);
        assert_eq!(
            parsed(tools.completed("t", &json!({"n": 1}), "/w"))["content"][0]["content"]["text"],
            "{\"n\":1}"
        );
        let unordered: Value = serde_json::from_str(r#"{"z":1,"a":{"y":2,"b":3}}"#).unwrap();
        assert_eq!(
            result_text(&unordered, false),
            r#"{"a":{"b":3,"y":2},"z":1}"#,
            "keys sorted in every build"
        );
        assert_eq!(parsed(tools.completed("t", &json!(""), "/w"))["content"], json!([]));
        assert_eq!(parsed(tools.completed("t", &Value::Null, "/w"))["content"], json!([]));

        tools.set_input("e", Some("Edit"), Some(&json!({"file_path": "src/a.rs"})));
        let edit = parsed(tools.completed("e", &json!({"oldText": "a", "newText": "b"}), "/w"));
        assert_eq!(
            edit["content"],
            json!([{"type": "diff", "path": "/w/src/a.rs", "oldText": "a", "newText": "b"}])
        );
        let described = parsed(tools.completed(
            "e",
            &json!({"oldText": "a", "newText": "b", "content": "Edited"}),
            "/w",
        ));
        assert_eq!(described["content"][1]["content"]["text"], "Edited");
        acp_check::session_update(&edit);
        let created = result_content(
            &json!({"filePath": "/w/new.rs", "newContent": "fn x() {}"}),
            None,
            "/w",
        );
        assert_eq!(
            created[0],
            json!({"type": "diff", "path": "/w/new.rs", "newText": "fn x() {}"})
        );
        assert!(
            result_content(&json!({"newText": "x"}), None, "/w")
                .iter()
                .all(|c| c["type"] == "content")
        );

        let failed = parsed(tools.failed("f", Some(&json!({"message": "denied", "code": 1}))));
        assert_eq!(
            failed["content"],
            json!([{"type": "content", "content": {"type": "text", "text": "denied"}}])
        );
        assert_eq!(failed["rawOutput"], json!({"message": "denied", "code": 1}));
        acp_check::session_update(&failed);
        assert_eq!(
            parsed(tools.failed("g", None))["content"][0]["content"]["text"],
            "Tool execution failed"
        );
    }
}
