//! What the bridge scripts make of results before they leave ZCode's runtime:
//! - the 3.12.3 script, of `model-selection.getView` (`mappers/zcode-task-v2/bridge`,
//!   `projectModelSelectionView`): ids, names, reasoning levels and the resolution, picked field
//!   by field — never the provider configuration with its credentials. A view shaped otherwise
//!   fails the call;
//! - every script, of `agent.readSession` (`mappers/zcode-task/bridge/core.js`,
//!   `projectSessionRead`): each message part cut down to its type, so a long turn's whole text
//!   never crosses the pipe again.

use serde_json::{Map, Value, json};

/// The bridge service name of channel `model-selection`.
pub const SERVICE: &str = "modelSelection";

const UNEXPECTED: &str = "ZCode model selection view has an unexpected shape";

fn non_empty(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|text| !text.is_empty())
}

pub fn model_selection_view(view: &Value) -> Result<Value, String> {
    let revision = view.get("revision").and_then(Value::as_u64).ok_or(UNEXPECTED)?;
    let providers = view.get("providers").and_then(Value::as_array).ok_or(UNEXPECTED)?;
    let mut models = Vec::new();
    for provider in providers {
        let provider_id = non_empty(provider.get("providerId")).ok_or(UNEXPECTED)?;
        let entries = provider.get("models").and_then(Value::as_array).ok_or(UNEXPECTED)?;
        for model in entries {
            let model_id = non_empty(model.get("modelId")).ok_or(UNEXPECTED)?;
            let levels = match model.pointer("/config/optionSpecs/reasoningLevel/values") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(values)) => values
                    .iter()
                    .map(|value| non_empty(Some(value)).map(str::to_owned).ok_or(UNEXPECTED))
                    .collect::<Result<Vec<_>, _>>()?,
                Some(_) => return Err(UNEXPECTED.to_owned()),
            };
            let mut entry = json!({
                "ref": {"providerId": provider_id, "modelId": model_id},
                "label": model_id,
                "reasoningLevels": levels,
            });
            if let Some(name) = non_empty(provider.get("providerName")) {
                entry["providerLabel"] = json!(name);
            }
            models.push(entry);
        }
    }
    let mut projected = Map::new();
    projected.insert("revision".into(), json!(revision));
    projected.insert("models".into(), Value::Array(models));
    for key in ["preferredSelection", "effectiveSelection"] {
        if let Some(selection) = view.get(key).filter(|value| !value.is_null()) {
            projected.insert(key.into(), selection_of(selection)?);
        }
    }
    if let Some(issue) = view.get("selectionIssue").filter(|value| !value.is_null()) {
        projected.insert("selectionIssue".into(), json!(issue_text(issue)));
    }
    Ok(Value::Object(projected))
}

/// `readSession`'s result with each message part cut to `{type}` (`{}` where it has no string
/// type); a result of another shape as it came.
pub fn session_read(mut result: Value) -> Value {
    let Some(messages) = result.get_mut("messages").and_then(Value::as_array_mut) else {
        return result;
    };
    for parts in messages.iter_mut().filter_map(|message| message.get_mut("parts")) {
        let Some(parts) = parts.as_array_mut() else { continue };
        for part in parts {
            *part = match part.get("type").filter(|kind| kind.is_string()) {
                Some(kind) => json!({"type": kind}),
                None => json!({}),
            };
        }
    }
    result
}

fn selection_of(selection: &Value) -> Result<Value, String> {
    let provider_id = non_empty(selection.get("providerId")).ok_or(UNEXPECTED)?;
    let model_id = non_empty(selection.get("modelId")).ok_or(UNEXPECTED)?;
    let mut projected = json!({"providerId": provider_id, "modelId": model_id});
    match selection.pointer("/options/reasoningLevel") {
        None | Some(Value::Null) => {}
        Some(level) => {
            let level = non_empty(Some(level)).ok_or(UNEXPECTED)?;
            projected["options"] = json!({"reasoningLevel": level});
        }
    }
    Ok(projected)
}

fn issue_text(issue: &Value) -> String {
    non_empty(Some(issue))
        .or_else(|| non_empty(issue.get("code")))
        .unwrap_or("unresolved")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::catalog;

    #[test]
    fn a_session_read_keeps_each_message_part_s_type_only() {
        let read = json!({"session": {"title": "t"}, "messages": [
            {"info": {"role": "user"}, "parts": [{"type": "text", "text": "hi"}, {"text": "x"}, 3]},
            {"info": {"role": "assistant"}},
            {"parts": "not a list"},
        ]});
        assert_eq!(
            session_read(read),
            json!({"session": {"title": "t"}, "messages": [
                {"info": {"role": "user"}, "parts": [{"type": "text"}, {}, {}]},
                {"info": {"role": "assistant"}},
                {"parts": "not a list"},
            ]})
        );
        assert_eq!(session_read(json!([1])), json!([1]));
    }

    #[test]
    fn keeps_ids_names_levels_and_the_resolution_only() {
        let preferred = (catalog::default_selected_model(), "high");
        let raw = catalog::model_selection_view(false, preferred, None);
        let projected = model_selection_view(&raw).unwrap();
        assert!(!projected.to_string().contains(catalog::SIMULATED_API_KEY));
        assert!(!projected.to_string().contains("baseUrl"));
        assert_eq!(
            projected["models"][1],
            json!({"ref": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.7"}, "label": "GLM-4.7",
                   "providerLabel": "Z.ai - Coding Plan", "reasoningLevels": ["low", "high"]})
        );
        assert_eq!(projected["effectiveSelection"], projected["preferredSelection"]);
        // Sorted: key order depends on serde_json's `preserve_order`, which the ACP SDK turns on.
        let mut keys: Vec<&String> = projected.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["effectiveSelection", "models", "preferredSelection", "revision"]);
    }

    #[test]
    fn fails_on_shapes_it_cannot_vouch_for() {
        for raw in [
            json!({"providers": []}),
            json!({"revision": 1, "providers": [{"models": []}]}),
            json!({"revision": 1, "providers": [{"providerId": "p", "models": [{"modelId": "m", "config": {"optionSpecs": {"reasoningLevel": {"values": [1]}}}}]}]}),
            json!({"revision": 1, "providers": [], "effectiveSelection": {"modelId": "m"}}),
        ] {
            assert_eq!(model_selection_view(&raw).unwrap_err(), UNEXPECTED, "{raw}");
        }
        let issue = json!({"revision": 1, "providers": [], "selectionIssue": {"code": "model_not_found", "detail": "x"}});
        assert_eq!(model_selection_view(&issue).unwrap()["selectionIssue"], "model_not_found");
    }
}
