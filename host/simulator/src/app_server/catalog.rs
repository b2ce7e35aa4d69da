//! The simulated provider registry: which models exist, which are usable, the settings shape
//! sessions report and the account credentials the Agent checks runtime headers against.
//!
//! Account (`account:*`, `zhipu-account` access) models are usable only after the host pushed
//! an entitled account state with `provider/updateAccountConfig` (reference APP §4.3: without
//! the push they are missing from `settings.model.available`). The local provider is always
//! usable, as a keyed custom provider from `provider_config.json` would be.

use std::collections::HashMap;

use serde_json::{Value, json};

/// A `zhipu-account` access class (`zcodeProviderAccountAccessSchema`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountAccess {
    pub account_type: &'static str,
    pub mode: &'static str,
}

impl AccountAccess {
    /// Start Plan (the free allowance): authorised by the account's business JWT, and on
    /// 3.14.3 by a captcha only the Desktop renderer can solve (reference APP §3.4).
    pub fn is_start_plan(&self) -> bool {
        self.mode == "start-plan"
    }
}

#[derive(Debug)]
pub struct Model {
    pub provider_id: &'static str,
    pub provider_label: &'static str,
    pub model_id: &'static str,
    pub label: &'static str,
    pub context_window: u64,
    pub max_output_tokens: u64,
    /// Reasoning levels; empty = no reasoning control.
    pub levels: &'static [&'static str],
    pub default_level: Option<&'static str>,
    pub account: Option<AccountAccess>,
}

const GLM_LEVELS: &[&str] = &["low", "high", "max"];
const BIGMODEL_PLAN: AccountAccess =
    AccountAccess { account_type: "bigmodel", mode: "individual-coding-plan" };
const ZAI_PLAN: AccountAccess =
    AccountAccess { account_type: "zai", mode: "individual-coding-plan" };
const ZAI_START: AccountAccess = AccountAccess { account_type: "zai", mode: "start-plan" };

pub const LOCAL_PROVIDER: &str = "sim-local";

/// The registry, in the order new sessions try them for a default.
pub const MODELS: &[Model] = &[
    Model {
        provider_id: "account:bigmodel-individual-coding-plan",
        provider_label: "BigModel",
        model_id: "GLM-5.3",
        label: "GLM-5.3",
        context_window: 200_000,
        max_output_tokens: 32_768,
        levels: GLM_LEVELS,
        default_level: Some("max"),
        account: Some(BIGMODEL_PLAN),
    },
    Model {
        provider_id: "account:bigmodel-individual-coding-plan",
        provider_label: "BigModel",
        model_id: "GLM-5.3-Flash",
        label: "GLM-5.3-Flash",
        context_window: 200_000,
        max_output_tokens: 32_768,
        levels: GLM_LEVELS,
        default_level: Some("high"),
        account: Some(BIGMODEL_PLAN),
    },
    Model {
        provider_id: "account:zai-individual-coding-plan",
        provider_label: "Z.AI",
        model_id: "GLM-5.3",
        label: "GLM-5.3",
        context_window: 200_000,
        max_output_tokens: 32_768,
        levels: GLM_LEVELS,
        default_level: Some("max"),
        account: Some(ZAI_PLAN),
    },
    Model {
        provider_id: "account:zai-start-plan",
        provider_label: "Z.AI",
        model_id: "GLM-5.3",
        label: "GLM-5.3",
        context_window: 200_000,
        max_output_tokens: 32_768,
        levels: GLM_LEVELS,
        default_level: Some("max"),
        account: Some(ZAI_START),
    },
    Model {
        provider_id: LOCAL_PROVIDER,
        provider_label: "Simulator (local)",
        model_id: "sim-echo",
        label: "sim-echo",
        context_window: 128_000,
        max_output_tokens: 8_192,
        levels: &[],
        default_level: None,
        account: None,
    },
];

pub fn find(provider_id: &str, model_id: &str) -> Option<&'static Model> {
    MODELS.iter().find(|model| model.provider_id == provider_id && model.model_id == model_id)
}

/// The model a `ModelSelection` value names.
pub fn find_selection(selection: &Value) -> Option<&'static Model> {
    find(selection["providerId"].as_str()?, selection["modelId"].as_str()?)
}

/// Account entitlements pushed by the host, keyed by account provider id.
///
/// As 3.15.1 reads a push (`docs/coding-plan.md` F3, F4, F7): a provider's entitlement is its
/// overlay entry's `access.entitled` (an overlay silent about a provider leaves it as it was);
/// it is usable unless its state says `current: false`; and an entitled built-in provider
/// whose state has no boolean `current` is refused (Z3151
/// `parseProcessAccountProviderConfigSnapshot`).
#[derive(Debug, Default)]
pub struct Entitlements {
    entitled: HashMap<String, bool>,
    current: HashMap<String, bool>,
    last_revision: Option<String>,
}

impl Entitlements {
    pub fn usable(&self, model: &Model) -> bool {
        model.account.is_none()
            || (self.entitled.get(model.provider_id).copied().unwrap_or(false)
                && self.current.get(model.provider_id).copied().unwrap_or(true))
    }

    /// Applies a `provider/updateAccountConfig` push; returns `(providerCount, status)`, or
    /// the Agent's refusal.
    pub fn update(&mut self, params: &Value) -> Result<(usize, &'static str), String> {
        let revision = params["revision"].as_str().unwrap_or_default().trim().to_owned();
        let providers = params["providers"].as_object().cloned().unwrap_or_default();
        for (provider, entry) in &providers {
            let entitled = entry["access"]["entitled"] == true;
            if provider.starts_with("account:")
                && entitled
                && !params["states"][provider]["current"].is_boolean()
            {
                return Err(format!(
                    "Account provider {provider} is entitled but its state has no boolean current"
                ));
            }
        }
        let unchanged = self.last_revision.as_deref() == Some(revision.as_str());
        for (provider, entry) in &providers {
            if let Some(entitled) = entry["access"]["entitled"].as_bool() {
                self.entitled.insert(provider.clone(), entitled);
            }
        }
        if let Some(states) = params["states"].as_object() {
            for (provider, state) in states {
                if let Some(current) = state["current"].as_bool() {
                    self.current.insert(provider.clone(), current);
                }
            }
        }
        self.last_revision = Some(revision);
        Ok((providers.len(), if unchanged { "unchanged" } else { "received" }))
    }

    pub fn available(&self) -> impl Iterator<Item = &'static Model> + '_ {
        MODELS.iter().filter(move |model| self.usable(model))
    }
}

/// The first usable model at its default level: what a new session starts with.
pub fn default_selection(entitlements: &Entitlements) -> Option<Value> {
    entitlements.available().next().map(|model| selection(model, model.default_level))
}

/// A `ModelSelection` value.
pub fn selection(model: &Model, level: Option<&str>) -> Value {
    let mut value = json!({"providerId": model.provider_id, "modelId": model.model_id});
    if let Some(level) = level {
        value["options"] = json!({"reasoningLevel": level});
    }
    value
}

/// Checks a `ModelSelection` a host asked for: the model must exist and be usable, and its
/// reasoning level (when given) must be one the model offers. A missing level is an error
/// where `require_level` says so (`session/setModel`, as a live 3.14.5 Agent answered),
/// else the model's default. Returns the model and the normalised selection.
pub fn resolve_selection(
    entitlements: &Entitlements,
    selection: &Value,
    require_level: bool,
) -> Result<(&'static Model, Value), String> {
    let provider = selection["providerId"].as_str().unwrap_or_default();
    let model_id = selection["modelId"].as_str().unwrap_or_default();
    let model = find(provider, model_id)
        .filter(|model| entitlements.usable(model))
        .ok_or_else(|| format!("Model {provider}/{model_id} is not available"))?;
    let level = selection["options"]["reasoningLevel"].as_str();
    match level {
        Some(level) if !model.levels.contains(&level) => Err(unsupported_level(model, level)),
        Some(level) => Ok((model, self::selection(model, Some(level)))),
        None if require_level && !model.levels.is_empty() => {
            Err(format!("Reasoning level is required for {provider}/{model_id}"))
        }
        None => Ok((model, self::selection(model, model.default_level))),
    }
}

/// The error for a level a model does not offer.
pub fn unsupported_level(model: &Model, level: &str) -> String {
    format!(
        "Reasoning effort \"{level}\" is not supported by {}/{}",
        model.provider_id, model.model_id
    )
}

/// A `ZCodeModelOption` (`settings.model.available[]`).
pub fn model_option(model: &Model) -> Value {
    let mut option = json!({
        "ref": {"providerId": model.provider_id, "modelId": model.model_id},
        "label": model.label,
        "providerLabel": model.provider_label,
        "contextWindow": model.context_window,
        "maxOutputTokens": model.max_output_tokens,
        "properties": {"inputFormat": ["text"], "outputFormat": ["text"]},
    });
    if !model.levels.is_empty() {
        option["reasoning"] = json!({
            "levels": levels(model),
            "defaultLevel": model.default_level,
        });
    }
    option
}

fn levels(model: &Model) -> Vec<Value> {
    model.levels.iter().map(|level| json!({"value": level, "label": level})).collect()
}

/// `ZCodeSessionSettingsState`. `all_models` lists the whole registry (create), otherwise only
/// the current model (read, subscribe, setters: `modelAvailability: "current"`).
pub fn settings(
    entitlements: &Entitlements,
    model: Option<&Value>,
    thought_level: Option<&str>,
    mode: &str,
    all_models: bool,
) -> Value {
    let current = model.and_then(find_selection);
    let available: Vec<Value> = if all_models {
        entitlements.available().map(model_option).collect()
    } else {
        current.filter(|model| entitlements.usable(model)).map(model_option).into_iter().collect()
    };
    let levels = current.map(levels).unwrap_or_default();
    let offered = |level: &str| current.is_some_and(|model| model.levels.contains(&level));
    let mut thought = json!({"enabled": !levels.is_empty(), "available": levels});
    if let Some(level) = thought_level.filter(|level| offered(level)) {
        thought["current"] = json!(level);
    }
    if let Some(default) = current.and_then(|model| model.default_level) {
        thought["defaultLevel"] = json!(default);
    }
    let mut model_state = json!({"available": available});
    if let Some(selection) = model {
        model_state["current"] = selection.clone();
        model_state["lastUsed"] = json!({
            "providerId": selection["providerId"], "modelId": selection["modelId"],
        });
    }
    json!({
        "mode": {"current": mode},
        "model": model_state,
        "permission": {"mode": mode},
        "thoughtLevel": thought,
    })
}

/// The `zhipu-account` access a runtime headers request names.
pub fn account_access(model: &Model) -> Option<Value> {
    model.account.map(|access| {
        json!({"type": "zhipu-account", "accountType": access.account_type,
               "mode": access.mode, "entitled": true})
    })
}

/// What the simulated Agent knows about an account provider's key in the fake home's
/// `~/.zcode/v2/credentials.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredKey {
    /// A plain value: the host's `requestAuth.apiKey` must equal it.
    Plain(String),
    /// An `enc:v1`/`enc:v2` value the simulator cannot decrypt: any non-empty key passes.
    Encrypted,
    Missing,
}

/// Looks up `account-provider:coding-plan:<provider>:account:<uid>:api-key`.
pub fn stored_account_key(provider_id: &str) -> StoredKey {
    let prefix = format!("account-provider:coding-plan:{provider_id}:account:");
    stored(|key| key.starts_with(&prefix) && key.ends_with(":api-key"))
}

/// The signed-in account's business JWT (`zcodejwttoken`), which Start Plan requests carry.
pub fn stored_business_token() -> StoredKey {
    stored(|key| key == "zcodejwttoken")
}

fn stored(wanted: impl Fn(&str) -> bool) -> StoredKey {
    let Ok(path) = crate::common::auth::credentials_path() else { return StoredKey::Missing };
    let Some(entries) = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    else {
        return StoredKey::Missing;
    };
    let found = entries.as_object().and_then(|entries| entries.iter().find(|(key, _)| wanted(key)));
    match found.and_then(|(_, value)| value.as_str()) {
        Some(value) if value.starts_with("enc:") => StoredKey::Encrypted,
        Some(value) if !value.is_empty() => StoredKey::Plain(value.to_owned()),
        _ => StoredKey::Missing,
    }
}

/// Built-in slash commands every workspace offers (reference APP §7.4 measured these four).
pub fn slash_commands() -> Value {
    json!([
        {"name": "compact", "description": "Compact the conversation context", "source": "builtin"},
        {"name": "goal", "description": "Set or manage the session goal", "inputHint": "<objective>",
         "source": "builtin"},
        {"name": "init", "description": "Create an AGENTS.md for this workspace", "source": "builtin"},
        {"name": "plan", "description": "Plan before making changes", "inputHint": "<task>",
         "source": "builtin"},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_models_need_an_entitled_push() {
        let mut entitlements = Entitlements::default();
        let first = default_selection(&entitlements).unwrap();
        assert_eq!(first["providerId"], LOCAL_PROVIDER, "only the local model before the push");
        let push = json!({"revision": "account:x:1", "basedOnZCodeBuiltinRevision": "b",
            "providers": {"account:bigmodel-individual-coding-plan":
                          {"access": {"type": "zhipu-account", "entitled": true}}},
            "states": {"account:bigmodel-individual-coding-plan":
                       {"availability": "available", "entitled": true, "current": true}}});
        assert_eq!(entitlements.update(&push), Ok((1, "received")));
        assert_eq!(entitlements.update(&push), Ok((1, "unchanged")));
        let now = default_selection(&entitlements).unwrap();
        assert_eq!(
            now,
            json!({"providerId": "account:bigmodel-individual-coding-plan",
                                "modelId": "GLM-5.3", "options": {"reasoningLevel": "max"}})
        );
    }

    #[test]
    fn settings_list_the_current_model_or_the_registry() {
        let entitlements = Entitlements::default();
        let local = selection(find(LOCAL_PROVIDER, "sim-echo").unwrap(), None);
        let current = settings(&entitlements, Some(&local), None, "build", false);
        assert_eq!(current["model"]["available"].as_array().unwrap().len(), 1);
        assert_eq!(current["thoughtLevel"]["enabled"], false);
        let none = settings(&entitlements, None, None, "yolo", true);
        assert!(none["model"].get("current").is_none());
        assert_eq!(none["mode"]["current"], "yolo");
    }
}

#[cfg(test)]
mod entitlement_tests {
    use super::*;

    const ZAI: &str = "account:zai-individual-coding-plan";

    fn push(revision: &str, entitled: bool, current: Option<bool>) -> Value {
        let mut state = json!({"availability": "available", "entitled": entitled});
        if let Some(current) = current {
            state["current"] = json!(current);
        }
        json!({
            "revision": revision,
            "providers": {ZAI: {"access": {"type": "zhipu-account", "entitled": entitled}}},
            "states": {ZAI: state},
        })
    }

    fn listed(entitlements: &Entitlements) -> bool {
        entitlements.available().any(|model| model.provider_id == ZAI)
    }

    #[test]
    fn an_entitled_provider_without_a_boolean_current_is_refused() {
        let mut entitlements = Entitlements::default();
        assert!(entitlements.update(&push("r1", true, None)).is_err());
        assert!(!listed(&entitlements), "a refused push changes nothing");
    }

    #[test]
    fn current_false_is_not_listed() {
        let mut entitlements = Entitlements::default();
        entitlements.update(&push("r1", true, Some(false))).unwrap();
        assert!(!listed(&entitlements));
        entitlements.update(&push("r2", true, Some(true))).unwrap();
        assert!(listed(&entitlements));
    }

    #[test]
    fn the_overlay_decides_and_entitled_false_withdraws() {
        let mut entitlements = Entitlements::default();
        // The state alone does not entitle: the overlay's access does.
        let mut state_only = push("r1", false, Some(true));
        state_only["states"][ZAI]["entitled"] = json!(true);
        entitlements.update(&state_only).unwrap();
        assert!(!listed(&entitlements));
        entitlements.update(&push("r2", true, Some(true))).unwrap();
        assert!(listed(&entitlements));
        // Silent about the provider: it stays.
        let silent = json!({"revision": "r3", "providers": {}, "states": {}});
        entitlements.update(&silent).unwrap();
        assert!(listed(&entitlements));
        entitlements.update(&push("r4", false, Some(false))).unwrap();
        assert!(!listed(&entitlements));
    }

    #[test]
    fn the_same_revision_is_unchanged() {
        let mut entitlements = Entitlements::default();
        assert_eq!(entitlements.update(&push("r1", true, Some(true))), Ok((1, "received")));
        assert_eq!(entitlements.update(&push("r1", true, Some(true))), Ok((1, "unchanged")));
    }
}
