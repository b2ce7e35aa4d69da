//! How a tool call looks in ACP: the SDK's rules for every generation (`tool_view`: kind,
//! locations, title, text), and the diff and finished content of this generation's tool rows.

use serde_json::{Value, json};
pub use zcode_mapper_sdk::tool_view::{
    default_title, error_content, locations, text_content, tool_kind,
};

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

#[cfg(test)]
mod tests {
    use super::*;

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
