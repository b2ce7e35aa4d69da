//! How a tool call looks in ACP, the same whichever ZCode generation it comes from: its kind
//! from the tool's name, its locations from the input's path keys, a title naming what it acts
//! on, and text content.

use serde_json::{Value, json};

use crate::uri::{is_absolute_path, join_path};

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
pub const PATH_KEYS: [&str; 5] = ["file_path", "filePath", "path", "notebook_path", "notebookPath"];

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

/// Input keys that say what a tool that names no file acts on, most telling first.
const SUBJECT_KEYS: [&str; 5] = ["command", "pattern", "query", "url", "description"];
/// A title shows at most this many characters of its subject.
const TITLE_SUBJECT_CHARS: usize = 80;

/// A title for a tool call the agent gave none: the tool and what it acts on, as an editor shows it
/// on the tool's card (`Read src/main.rs`, `Bash: cargo test`), else the tool's name.
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

/// The first line of `text`, cut to [`TITLE_SUBJECT_CHARS`] characters.
fn shorten(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    let mut shown: String = line.chars().take(TITLE_SUBJECT_CHARS).collect();
    if shown.len() < line.len() || line.len() < text.trim().len() {
        shown.push('…');
    }
    shown
}

/// ACP tool-call content holding `text`.
pub fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// ACP content of a failed tool: its error message (an object's `message`, or a string), else
/// `fallback`.
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
    fn classifies_tool_names() {
        let cases = [
            ("Read", "read"),
            ("Write", "edit"),
            ("MultiEdit", "edit"),
            ("TodoWrite", "edit"),
            ("DeleteFile", "delete"),
            ("Rename", "move"),
            ("Grep", "search"),
            ("WebSearch", "search"),
            ("Bash", "execute"),
            ("WebFetch", "fetch"),
            ("ExitPlanMode", "think"),
            ("AskUserQuestion", "other"),
        ];
        for (name, kind) in cases {
            assert_eq!(tool_kind(name), kind, "{name}");
        }
    }

    #[test]
    fn locates_files_named_by_the_input() {
        let input = json!({"file_path": "/w/a.rs", "path": "src/b.rs", "notebook_path": "/w/a.rs", "command": "ls"});
        assert_eq!(
            locations(Some(&input), "/w"),
            [json!({"path": "/w/a.rs"}), json!({"path": "/w/src/b.rs"})]
        );
        assert!(locations(Some(&json!("text")), "/w").is_empty());
        assert!(locations(None, "/w").is_empty());
    }

    #[test]
    fn titles_name_what_the_tool_acts_on() {
        let title = |name, input: Value| default_title(name, Some(&input), "/w");
        assert_eq!(
            title("Write", json!({"file_path": "/w/src/a.rs", "content": "x"})),
            "Write src/a.rs"
        );
        assert_eq!(title("Read", json!({"file_path": "/etc/hosts"})), "Read /etc/hosts");
        assert_eq!(title("Read", json!({"file_path": "/wx/a.rs"})), "Read /wx/a.rs");
        assert_eq!(title("Edit", json!({"path": "b.rs", "command": "x"})), "Edit b.rs");
        assert_eq!(title("Bash", json!({"command": "cargo test\nrm -rf /"})), "Bash: cargo test…");
        assert_eq!(title("Grep", json!({"pattern": "fn main", "path": ""})), "Grep: fn main");
        let long = "x".repeat(200);
        assert_eq!(title("Bash", json!({"command": long})), format!("Bash: {}…", "x".repeat(80)));
        assert_eq!(title("Task", json!({"other": 1})), "Task");
        assert_eq!(default_title("Task", Some(&json!("text")), "/w"), "Task");
        assert_eq!(default_title("Task", None, "/w"), "Task");
    }

    #[test]
    fn errors_show_their_message_or_the_fallback() {
        let error = json!({"code": "x", "message": "denied"});
        assert_eq!(error_content(Some(&error), "failed"), [text_content("denied")]);
        assert_eq!(error_content(Some(&json!("gone")), "failed"), [text_content("gone")]);
        assert_eq!(
            error_content(Some(&json!({"message": ""})), "failed"),
            [text_content("failed")]
        );
        assert_eq!(error_content(None, "failed"), [text_content("failed")]);
    }
}
