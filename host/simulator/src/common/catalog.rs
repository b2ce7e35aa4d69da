//! What the simulated 3.11/3.12 installs and runtime archives offer: models, thought levels
//! and slash commands, and the `SessionSettings` / `modelCatalog` objects built from them
//! (reference §4.2). Releases with models as selections (3.12.3's `ModelShape::Selection`, the
//! runtime archives) see the same models as `ModelSelection`s with reasoning levels per model,
//! and a `model-selection` view.

use serde_json::{Value, json};

pub struct Model {
    provider_id: &'static str,
    provider_label: &'static str,
    model_id: &'static str,
    label: &'static str,
    /// Reasoning levels of the model where levels are per model (3.12.3); the last is its
    /// default.
    reasoning_levels: &'static [&'static str],
}

/// Two providers, so one model id exists under two providers (the ref is what identifies it).
const MODELS: &[Model] = &[
    Model {
        provider_id: "builtin:zai-coding-plan",
        provider_label: "Z.ai - Coding Plan",
        model_id: "GLM-5.2",
        label: "GLM-5.2",
        reasoning_levels: &["low", "medium", "high"],
    },
    Model {
        provider_id: "builtin:zai-coding-plan",
        provider_label: "Z.ai - Coding Plan",
        model_id: "GLM-4.7",
        label: "GLM-4.7",
        reasoning_levels: &["low", "high"],
    },
    Model {
        provider_id: "builtin:bigmodel-coding-plan",
        provider_label: "BigModel - Coding Plan",
        model_id: "GLM-5.2",
        label: "GLM-5.2",
        reasoning_levels: &["low", "medium", "high"],
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

// ----- ModelSelection (3.12.3) -----------------------------------------------------------------

/// Stands in for the provider credentials a real `getView` carries, so tests can prove the
/// bridge never lets them out.
pub const SIMULATED_API_KEY: &str = "sim-api-key-never-leaves-the-bridge";

impl Model {
    pub fn default_level(&self) -> &'static str {
        self.reasoning_levels.last().copied().unwrap_or_default()
    }

    pub fn offers(&self, level: &str) -> bool {
        self.reasoning_levels.contains(&level)
    }

    /// The model ref without a level (what the host stores).
    pub fn reference(&self) -> Value {
        model_ref(self)
    }

    pub fn provider_id(&self) -> &'static str {
        self.provider_id
    }

    pub fn model_id(&self) -> &'static str {
        self.model_id
    }

    pub fn reasoning_levels(&self) -> &'static [&'static str] {
        self.reasoning_levels
    }
}

/// The model a `ModelSelection` (or a stored ref) names. A `variant` — gone in 3.12.3 — names
/// none.
pub fn find_selected_model(requested: &Value) -> Option<&'static Model> {
    let provider = requested.get("providerId")?.as_str()?;
    let model_id = requested.get("modelId")?.as_str()?;
    if requested.get("variant").is_some_and(|variant| !variant.is_null()) {
        return None;
    }
    MODELS.iter().find(|model| model.provider_id == provider && model.model_id == model_id)
}

/// Every model as a `ZCodeModelOption` with its reasoning levels (`{ref, label, providerLabel,
/// reasoning: {levels: [{value, label}], defaultLevel}}`), the way the Agent's session
/// snapshots list the registry in `settings.model.available` (ZCode 3.15.1
/// `zcode-agent-model-state.ts` reads those fields to build its model picker).
pub fn model_options() -> Vec<Value> {
    MODELS
        .iter()
        .map(|model| {
            let levels: Vec<Value> = model
                .reasoning_levels
                .iter()
                .map(|value| json!({"value": value, "label": level_label(value)}))
                .collect();
            json!({
                "ref": model_ref(model),
                "label": model.label,
                "providerLabel": model.provider_label,
                "reasoning": {"levels": levels, "defaultLevel": model.default_level()},
            })
        })
        .collect()
}

pub fn default_selected_model() -> &'static Model {
    &MODELS[0]
}

/// `ModelSelection {providerId, modelId, options: {reasoningLevel}}`.
pub fn selection(model: &Model, level: &str) -> Value {
    json!({"providerId": model.provider_id, "modelId": model.model_id, "options": {"reasoningLevel": level}})
}

fn level_label(level: &str) -> String {
    THOUGHT_LEVELS
        .iter()
        .find(|(value, _)| *value == level)
        .map_or_else(|| level.to_owned(), |(_, label)| (*label).to_owned())
}

/// `SessionSettings` where the level travels with the model: the snapshot lists only the
/// current model; its levels are the thought-level choices.
pub fn selection_settings(model: &Model, level: &str, mode: &str, signed_out: bool) -> Value {
    let current = selection(model, level);
    let model_settings = if signed_out {
        json!({"available": []})
    } else {
        json!({"current": current, "available": [
            {"ref": current, "label": model.label, "providerLabel": model.provider_label}
        ]})
    };
    let levels: Vec<Value> = model
        .reasoning_levels
        .iter()
        .map(|value| json!({"value": value, "label": level_label(value)}))
        .collect();
    json!({
        "model": model_settings,
        "thoughtLevel": {"enabled": true, "current": level, "defaultLevel": model.default_level(), "available": levels},
        "mode": {"current": mode},
    })
}

/// The raw `model-selection.getView` result, credentials included (services-v4 §3.2):
/// `{revision, providers: [{providerId, providerName, config, models: [{modelId, config:
/// {optionSpecs: {reasoningLevel: {values}}}}]}], preferredSelection?, effectiveSelection?,
/// selectionIssue?}`. With `selection`, the effective selection is its resolution: an unknown
/// model is an issue, an unknown level resolves to the model's default level.
pub fn model_selection_view(
    signed_out: bool,
    preferred: (&Model, &str),
    selection_request: Option<&Value>,
) -> Value {
    if signed_out {
        return json!({"revision": 1, "providers": []});
    }
    let mut providers: Vec<Value> = Vec::new();
    for model in MODELS {
        let entry = json!({
            "modelId": model.model_id,
            "config": {
                "optionSpecs": {"reasoningLevel": {"values": model.reasoning_levels}},
                "headers": {"x-simulated-model": model.model_id},
            },
        });
        match providers.iter_mut().find(|provider| provider["providerId"] == model.provider_id) {
            Some(provider) => provider["models"].as_array_mut().expect("models array").push(entry),
            None => providers.push(json!({
                "providerId": model.provider_id,
                "providerName": model.provider_label,
                "config": {"apiKey": SIMULATED_API_KEY, "baseUrl": "https://sim.invalid/v1"},
                "models": [entry],
            })),
        }
    }
    let (preferred_model, preferred_level) = preferred;
    let preferred = selection(preferred_model, preferred_level);
    let mut view = json!({"revision": 1, "providers": providers, "preferredSelection": preferred});
    match selection_request {
        None => view["effectiveSelection"] = preferred,
        Some(requested) => match find_selected_model(requested) {
            None => {
                view["effectiveSelection"] = Value::Null;
                view["selectionIssue"] = json!("model_not_found");
            }
            Some(model) => {
                let asked = requested.pointer("/options/reasoningLevel").and_then(Value::as_str);
                let level = asked.filter(|level| model.offers(level));
                view["effectiveSelection"] =
                    selection(model, level.unwrap_or_else(|| model.default_level()));
            }
        },
    }
    view
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
    fn selections_carry_levels_per_model() {
        let glm47 = find_selected_model(
            &json!({"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.7", "options": {"reasoningLevel": "low"}}),
        )
        .unwrap();
        assert_eq!((glm47.reasoning_levels, glm47.default_level()), (&["low", "high"][..], "high"));
        assert!(
            find_selected_model(&json!({"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.7", "variant": "fast"}))
                .is_none()
        );
        let settings = selection_settings(glm47, "low", "edit", false);
        assert_eq!(settings["model"]["current"]["options"]["reasoningLevel"], "low");
        assert_eq!(settings["model"]["available"].as_array().unwrap().len(), 1);
        assert_eq!(settings["thoughtLevel"]["available"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn the_raw_view_resolves_selections_and_holds_credentials() {
        let preferred = (default_selected_model(), "high");
        let view = model_selection_view(false, preferred, None);
        assert_eq!(view["providers"][0]["config"]["apiKey"], SIMULATED_API_KEY);
        assert_eq!(view["effectiveSelection"], view["preferredSelection"]);
        let unknown_level = json!({"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.7", "options": {"reasoningLevel": "medium"}});
        let view = model_selection_view(false, preferred, Some(&unknown_level));
        assert_eq!(view["effectiveSelection"]["options"]["reasoningLevel"], "high");
        let unknown_model = json!({"providerId": "x", "modelId": "y"});
        let view = model_selection_view(false, preferred, Some(&unknown_model));
        assert_eq!(view["selectionIssue"], "model_not_found");
        assert_eq!(model_selection_view(true, preferred, None)["providers"], json!([]));
    }

    #[test]
    fn signed_out_settings_offer_nothing() {
        assert_eq!(model_catalog(true)["providers"], json!([]));
        let settings = settings(&default_model(), "low", "build", true);
        assert!(settings["model"].get("current").is_none());
        assert_eq!(model_catalog(false)["providers"].as_array().unwrap().len(), 2);
    }
}
