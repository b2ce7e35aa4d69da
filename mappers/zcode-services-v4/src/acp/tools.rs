//! How a tool call looks in ACP, by the same rules as the desktop-host generations
//! (`mappers/zcode-host-common/src/tools.rs`): the kind from the tool's name, locations from the
//! input's path keys, a title naming what the tool acts on, and a diff for editing tools.

use serde_json::{Value, json};

use crate::text::{is_absolute_path, join_path};

/// ACP tool kind from a native tool name (case-insensitive substring rules, first match wins).
pub fn tool_kind(name: &str) -> &'static str {
    const RULES: [(&[&str], &str); 8] = [
        (&["read"], "read"),
        (&["write", "edit"], "edit"),
        (&["delete", "remove"], "delete"),
        (&["move", "rename"], "move"),
        (&["search", "grep", "glob"], "search"),
        (&["bash", "shell", "command"], "execute"),
        (&["fetch", "web"], "fetch"),
        (&["think", "plan"], "think"),
    ];
    let name = name.to_ascii_lowercase();
    RULES
        .iter()
        .find(|(needles, _)| needles.iter().any(|needle| name.contains(needle)))
        .map_or("other", |(_, kind)| kind)
}

/// Input keys that name the file a tool works on.
const PATH_KEYS: [&str; 5] = ["file_path", "filePath", "path", "notebook_path", "notebookPath"];
/// Input keys that say what a tool that names no file acts on, most telling first.
const SUBJECT_KEYS: [&str; 5] = ["command", "pattern", "query", "url", "description"];
const TITLE_SUBJECT_CHARS: usize = 80;

/// Files a tool input names, made absolute against the workspace.
pub fn locations(input: Option<&Value>, workspace: &str) -> Vec<Value> {
    let Some(Value::Object(input)) = input else {
        return Vec::new();
    };
    let mut paths: Vec<String> = Vec::new();
    for key in PATH_KEYS {
        if let Some(Value::String(path)) = input.get(key)
            && !path.is_empty()
        {
            let path =
                if is_absolute_path(path) { path.clone() } else { join_path(workspace, path) };
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths.into_iter().map(|path| json!({"path": path})).collect()
}

/// A title for a tool call ZCode gave none: the tool and what it acts on (`Read src/main.rs`,
/// `Bash: cargo test`), else the tool's name.
pub fn default_title(name: &str, input: Option<&Value>, workspace: &str) -> String {
    let Some(Value::Object(input)) = input else {
        return name.to_string();
    };
    let text =
        |key: &&str| input.get(*key).and_then(Value::as_str).filter(|t| !t.trim().is_empty());
    if let Some(path) = PATH_KEYS.iter().find_map(text) {
        let shown = path
            .strip_prefix(workspace)
            .and_then(|rest| rest.strip_prefix(['/', '\\']))
            .filter(|rest| !rest.is_empty())
            .unwrap_or(path);
        return format!("{name} {}", shorten(shown));
    }
    match SUBJECT_KEYS.iter().find_map(text) {
        Some(subject) => format!("{name}: {}", shorten(subject)),
        None => name.to_string(),
    }
}

fn shorten(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    let mut shown: String = line.chars().take(TITLE_SUBJECT_CHARS).collect();
    if shown.len() < line.len() || line.len() < text.trim().len() {
        shown.push('…');
    }
    shown
}

pub fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// The change an editing tool's input describes, as ACP `diff` content: `Edit`'s replaced text
/// (`old_string` → `new_string`), or a written file's whole text (`content`). Only for tools of
/// kind `edit` that name a file.
pub fn input_diff(name: &str, input: Option<&Value>, workspace: &str) -> Option<Value> {
    let Some(Value::Object(map)) = input else {
        return None;
    };
    if tool_kind(name) != "edit" {
        return None;
    }
    let path = locations(input, workspace).first()?["path"].as_str()?.to_string();
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    match (text("old_string"), text("new_string"), text("content")) {
        (Some(old), Some(new), _) => {
            Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
        }
        (None, None, Some(new)) => Some(json!({"type": "diff", "path": path, "newText": new})),
        _ => None,
    }
}

/// ACP content of a finished tool: the input's diff (if any), then the output's text (if any).
pub fn completed_content(
    name: &str,
    output_text: Option<&str>,
    input: Option<&Value>,
    workspace: &str,
) -> Vec<Value> {
    let mut content: Vec<Value> = input_diff(name, input, workspace).into_iter().collect();
    if let Some(text) = output_text.filter(|text| !text.is_empty()) {
        content.push(text_content(text));
    }
    content
}

/// ACP content of a failed tool: its error message.
pub fn error_content(error: Option<&Value>, fallback: &str) -> Vec<Value> {
    let message = match error {
        Some(Value::Object(map)) => map.get("message").and_then(Value::as_str),
        Some(Value::String(text)) => Some(text.as_str()),
        _ => None,
    }
    .filter(|message| !message.is_empty())
    .unwrap_or(fallback);
    vec![text_content(message)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_and_titles_like_the_desktop_generations() {
        for (name, kind) in [
            ("Read", "read"),
            ("Write", "edit"),
            ("MultiEdit", "edit"),
            ("Grep", "search"),
            ("Bash", "execute"),
            ("WebFetch", "fetch"),
            ("ExitPlanMode", "think"),
            ("AskUserQuestion", "other"),
        ] {
            assert_eq!(tool_kind(name), kind, "{name}");
        }
        let title = |name, input: Value| default_title(name, Some(&input), "/w");
        assert_eq!(title("Write", json!({"file_path": "/w/src/a.rs"})), "Write src/a.rs");
        assert_eq!(title("Bash", json!({"command": "cargo test\nrm -rf /"})), "Bash: cargo test…");
        assert_eq!(title("Task", json!({})), "Task");
        assert_eq!(
            locations(Some(&json!({"path": "b.rs", "file_path": "/w/b.rs"})), "/w"),
            [json!({"path": "/w/b.rs"})]
        );
    }

    #[test]
    fn edits_become_diffs_and_results_text() {
        let edit = json!({"file_path": "a.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(
            input_diff("Edit", Some(&edit), "/w"),
            Some(json!({"type": "diff", "path": "/w/a.rs", "oldText": "a", "newText": "b"}))
        );
        let write = json!({"file_path": "/w/n.md", "content": "hi"});
        assert_eq!(
            input_diff("Write", Some(&write), "/w"),
            Some(json!({"type": "diff", "path": "/w/n.md", "newText": "hi"}))
        );
        assert_eq!(input_diff("Read", Some(&write), "/w"), None);
        let done = completed_content("Write", Some("Wrote 2 bytes"), Some(&write), "/w");
        assert_eq!(done.len(), 2);
        assert_eq!(done[1], text_content("Wrote 2 bytes"));
        assert_eq!(
            error_content(Some(&json!({"code": "x", "message": "denied"})), "failed"),
            [text_content("denied")]
        );
        assert_eq!(error_content(None, "failed"), [text_content("failed")]);
    }
}
