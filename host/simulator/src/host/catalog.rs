//! What the simulated install offers: models, thought levels and slash commands, and the
//! `SessionSettings` / `modelCatalog` objects built from them (reference §4.2).

use serde_json::{Value, json};

struct Model {
    provider_id: &'static str,
    provider_label: &'static str,
    model_id: &'static str,
    label: &'static str,
}

/// Two providers, so one model id exists under two providers (the ref is what identifies it).
const MODELS: &[Model] = &[
    Model {
        provider_id: "builtin:zai-coding-plan",
        provider_label: "Z.ai - Coding Plan",
        model_id: "GLM-5.2",
        label: "GLM-5.2",
    },
    Model {
        provider_id: "builtin:zai-coding-plan",
        provider_label: "Z.ai - Coding Plan",
        model_id: "GLM-4.7",
        label: "GLM-4.7",
    },
    Model {
        provider_id: "builtin:bigmodel-coding-plan",
        provider_label: "BigModel - Coding Plan",
        model_id: "GLM-5.2",
        label: "GLM-5.2",
    },
];

/// `(value, label)` of each thought level.
pub const THOUGHT_LEVELS: &[(&str, &str)] =
    &[("low", "Low"), ("medium", "Medium"), ("high", "High")];
pub const DEFAULT_THOUGHT_LEVEL: &str = "medium";
pub const DEFAULT_MODE: &str = "build";
/// Context window reported in `runtime.contextUsage.size`.
pub const CONTEXT_WINDOW: u64 = 200_000;
/// Simulated price, USD per token, for `contextUsage.cost`.
pub const USD_PER_TOKEN: f64 = 0.000_002;

fn model_ref(model: &Model) -> Value {
    json!({"providerId": model.provider_id, "modelId": model.model_id})
}

pub fn default_model() -> Value {
    model_ref(&MODELS[0])
}

/// The advertised model matching `requested` by provider and model id (and variant, if any).
pub fn find_model(requested: &Value) -> Option<Value> {
    let provider = requested.get("providerId")?.as_str()?;
    let model_id = requested.get("modelId")?.as_str()?;
    if requested.get("variant").is_some_and(|variant| !variant.is_null()) {
        return None; // No simulated model has variants.
    }
    MODELS
        .iter()
        .find(|model| model.provider_id == provider && model.model_id == model_id)
        .map(model_ref)
}

pub fn is_thought_level(value: &str) -> bool {
    THOUGHT_LEVELS.iter().any(|(level, _)| *level == value)
}

fn available_models() -> Vec<Value> {
    MODELS
        .iter()
        .map(|model| {
            let reference = model_ref(model);
            json!({"ref": reference, "label": model.label, "providerLabel": model.provider_label})
        })
        .collect()
}

/// `SessionSettings`. Signed out there are no models to offer and no current one.
pub fn settings(model: &Value, thought_level: &str, mode: &str, signed_out: bool) -> Value {
    let model_settings = if signed_out {
        json!({"available": []})
    } else {
        json!({"current": model, "available": available_models()})
    };
    let levels: Vec<Value> = THOUGHT_LEVELS
        .iter()
        .map(|(value, label)| json!({"value": value, "label": label}))
        .collect();
    json!({
        "model": model_settings,
        "thoughtLevel": {"enabled": true, "current": thought_level, "available": levels},
        "mode": {"current": mode},
    })
}

/// `modelCatalog` of `readWorkspaceState`: providers with their models, and the flat list.
pub fn model_catalog(signed_out: bool) -> Value {
    if signed_out {
        return json!({"providers": [], "available": []});
    }
    let mut providers: Vec<Value> = Vec::new();
    for model in MODELS {
        let entry = json!({"modelId": model.model_id, "label": model.label});
        match providers.iter_mut().find(|provider| provider["providerId"] == model.provider_id) {
            Some(provider) => provider["models"].as_array_mut().expect("models array").push(entry),
            None => providers.push(json!({
                "providerId": model.provider_id, "label": model.provider_label, "models": [entry],
            })),
        }
    }
    json!({"providers": providers, "available": available_models()})
}

pub fn slash_commands() -> Value {
    json!([
        {"name": "init", "description": "Create an AGENTS.md file with instructions for ZCode"},
        {"name": "compact", "description": "Summarize the conversation to free context"},
        {"name": "review", "description": "Review the current changes", "inputHint": "[focus]"},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_models_by_full_ref_only() {
        let found = find_model(
            &json!({"providerId": "builtin:bigmodel-coding-plan", "modelId": "GLM-5.2"}),
        );
        assert_eq!(found.unwrap()["providerId"], "builtin:bigmodel-coding-plan");
        assert!(
            find_model(&json!({"providerId": "builtin:zai-coding-plan", "modelId": "GPT"}))
                .is_none()
        );
        assert!(find_model(&json!({"modelId": "GLM-5.2"})).is_none());
        assert!(
            find_model(&json!({"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2", "variant": "x"}))
                .is_none()
        );
    }

    #[test]
    fn signed_out_settings_offer_nothing() {
        assert_eq!(model_catalog(true)["providers"], json!([]));
        let settings = settings(&default_model(), "low", "build", true);
        assert!(settings["model"].get("current").is_none());
        assert_eq!(model_catalog(false)["providers"].as_array().unwrap().len(), 2);
    }
}
