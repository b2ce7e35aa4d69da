//! The model catalogue of ZCode 3.12.3: service `model-selection`, method `getView`.
//!
//! The raw view carries provider credentials, so the bridge projects it before it leaves
//! ZCode's runtime; the mapper only ever sees the projection, and reads it strictly:
//! `{revision, models: [{ref, label, providerLabel?, reasoningLevels}], preferredSelection?,
//! effectiveSelection?, selectionIssue?}`. A selection is `{providerId, modelId, options?:
//! {reasoningLevel?}}` — no `variant` any more; the reasoning level travels with the model.

use serde_json::{Map, Value, json};
use zcode_mapper_sdk::contract::{ErrorKind, MapperError};
use zcode_mapper_sdk::json::{Fields, error, invalid_params, protocol};
use zcode_task::envelope::Service;
use zcode_task::ops::{Outbound, validation_failed};

/// The bridge service of channel `model-selection`.
pub const MODEL_SELECTION: Service = Service::named("modelSelection");

/// A model and, when it has reasoning levels, the level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub provider_id: String,
    pub model_id: String,
    pub level: Option<String>,
}

impl Selection {
    pub fn new(provider_id: &str, model_id: &str, level: Option<&str>) -> Self {
        Self {
            provider_id: provider_id.to_string(),
            model_id: model_id.to_string(),
            level: level.map(str::to_string),
        }
    }

    /// The native `ModelSelection` object.
    pub fn to_json(&self) -> Value {
        let mut selection = json!({"providerId": self.provider_id, "modelId": self.model_id});
        if let Some(level) = &self.level {
            selection["options"] = json!({"reasoningLevel": level});
        }
        selection
    }

    /// Same provider and model (levels aside).
    pub fn same_model(&self, other: &Selection) -> bool {
        self.provider_id == other.provider_id && self.model_id == other.model_id
    }

    /// Reads a native `ModelSelection` strictly; `what` names it in errors.
    pub fn parse(value: &Value, what: &str) -> Result<Selection, MapperError> {
        let fields = Fields::native(value, what)?;
        fields.only(&["providerId", "modelId", "options"])?;
        let level = match fields.opt_object("options", "model options")? {
            Some(options) => {
                options.only(&["reasoningLevel"])?;
                options.opt_str("reasoningLevel")?
            }
            None => None,
        };
        Ok(Selection::new(
            fields.non_empty_str("providerId")?,
            fields.non_empty_str("modelId")?,
            level,
        ))
    }

    /// Reads a model ref of a session snapshot.
    pub fn from_ref(model_ref: &Map<String, Value>) -> Result<Selection, String> {
        Selection::parse(&Value::Object(model_ref.clone()), "model ref").map_err(|e| e.message)
    }
}

/// One model of the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub provider_id: String,
    pub model_id: String,
    pub label: String,
    pub provider_label: Option<String>,
    /// The reasoning levels it offers; the last is its default (as ZCode's own
    /// `projectAppModelOption` picks it).
    pub levels: Vec<String>,
}

impl Model {
    pub fn default_level(&self) -> Option<&str> {
        self.levels.last().map(String::as_str)
    }

    /// `level` if this model offers it, else its default.
    pub fn level_or_default(&self, level: Option<&str>) -> Option<String> {
        match level {
            Some(level) if self.levels.iter().any(|offered| offered == level) => {
                Some(level.to_string())
            }
            _ => self.default_level().map(str::to_string),
        }
    }
}

/// The projected `getView` result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    pub revision: u64,
    pub models: Vec<Model>,
    pub preferred: Option<Selection>,
    pub effective: Option<Selection>,
    pub issue: Option<String>,
}

impl View {
    pub fn parse(result: &Value) -> Result<View, MapperError> {
        read(result).map_err(|e| validation_failed("modelSelection.getView", &e))
    }

    pub fn model(&self, provider_id: &str, model_id: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.provider_id == provider_id && m.model_id == model_id)
    }

    /// No model to choose means no usable provider: the user has to sign in.
    pub fn require_models(&self) -> Result<(), MapperError> {
        if self.models.is_empty() {
            return Err(error(
                ErrorKind::AuthRequired,
                "No usable ZCode model provider is configured. Run zcode-acp login, then retry.",
            ));
        }
        Ok(())
    }

    /// The model a new session starts with: the preferred one, at its level or the model's
    /// default level. `None` when ZCode prefers nothing.
    pub fn default_selection(&self) -> Option<Selection> {
        let preferred = self.preferred.as_ref()?;
        let level = match self.model(&preferred.provider_id, &preferred.model_id) {
            Some(model) => model.level_or_default(preferred.level.as_deref()),
            None => preferred.level.clone(),
        };
        Some(Selection { level, ..preferred.clone() })
    }

    /// The answer to `getView({selection: requested})`: ZCode must resolve it to exactly the
    /// requested model and level, never substitute another.
    pub fn resolved(&self, requested: &Selection) -> Result<Selection, MapperError> {
        if let Some(issue) = &self.issue {
            return Err(invalid_params(format!("ZCode cannot use this model selection: {issue}")));
        }
        let effective = self
            .effective
            .as_ref()
            .ok_or_else(|| protocol("ZCode did not resolve the model selection"))?;
        if !effective.same_model(requested) {
            return Err(protocol(format!(
                "ZCode resolved the selection to another model: {}",
                effective.model_id
            )));
        }
        if requested.level.is_some() && effective.level != requested.level {
            return Err(protocol("ZCode resolved the selection to another reasoning level"));
        }
        Ok(effective.clone())
    }
}

fn read(result: &Value) -> Result<View, MapperError> {
    let fields = Fields::native(result, "model selection view")?;
    fields.only(&[
        "revision",
        "models",
        "preferredSelection",
        "effectiveSelection",
        "selectionIssue",
    ])?;
    let models = fields
        .array("models")?
        .iter()
        .map(|item| {
            let model = Fields::native(item, "model")?;
            model.only(&["ref", "label", "providerLabel", "reasoningLevels"])?;
            let reference = Selection::parse(model.value("ref")?, "model ref")?;
            let levels = model
                .array("reasoningLevels")?
                .iter()
                .map(|level| match level.as_str() {
                    Some(level) if !level.is_empty() => Ok(level.to_string()),
                    _ => Err(protocol("model: reasoning levels must be non-empty strings")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Model {
                provider_id: reference.provider_id,
                model_id: reference.model_id,
                label: model.non_empty_str("label")?.to_string(),
                provider_label: model.opt_str("providerLabel")?.map(str::to_string),
                levels,
            })
        })
        .collect::<Result<Vec<_>, MapperError>>()?;
    let selection = |key: &str| -> Result<Option<Selection>, MapperError> {
        fields.get(key).map(|value| Selection::parse(value, key)).transpose()
    };
    Ok(View {
        revision: fields.u64("revision")?,
        models,
        preferred: selection("preferredSelection")?,
        effective: selection("effectiveSelection")?,
        issue: fields.opt_str("selectionIssue")?.map(str::to_string),
    })
}

/// `modelSelection.getView`: the catalogue, and with `selection` its resolution.
pub fn get_view(selection: Option<&Selection>) -> Outbound {
    let params = match selection {
        Some(selection) => json!({"selection": selection.to_json()}),
        None => json!({}),
    };
    Outbound::long_call(MODEL_SELECTION, "getView", params)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> Value {
        json!({
            "revision": 3,
            "models": [
                {"ref": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"}, "label": "GLM-5.2", "providerLabel": "Z.ai - Coding Plan", "reasoningLevels": ["low", "medium", "high"]},
                {"ref": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.7"}, "label": "GLM-4.7", "reasoningLevels": []}
            ],
            "preferredSelection": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"}
        })
    }

    #[test]
    fn reads_the_projected_view() {
        let view = View::parse(&view()).unwrap();
        assert_eq!(view.revision, 3);
        assert_eq!(view.models[0].levels, ["low", "medium", "high"]);
        assert_eq!(view.models[1].default_level(), None);
        assert_eq!(
            view.default_selection(),
            Some(Selection::new("builtin:zai-coding-plan", "GLM-5.2", Some("high"))),
            "the last level is the default"
        );
        assert!(view.require_models().is_ok());
        let empty = View::parse(&json!({"revision": 0, "models": []})).unwrap();
        assert_eq!(empty.require_models().unwrap_err().kind, ErrorKind::AuthRequired);
        assert_eq!(empty.default_selection(), None);
    }

    #[test]
    fn refuses_raw_or_legacy_shapes() {
        let mut secret = view();
        secret["providers"] = json!([{"apiKey": "x"}]);
        assert_eq!(
            View::parse(&secret).unwrap_err().message,
            "Native result validation failed: modelSelection.getView: model selection view: unexpected field `providers`"
        );
        let mut variant = view();
        variant["models"][0]["ref"]["variant"] = json!("fast");
        assert!(
            View::parse(&variant)
                .unwrap_err()
                .message
                .ends_with("model ref: unexpected field `variant`")
        );
        let mut level = view();
        level["models"][0]["reasoningLevels"] = json!([""]);
        assert!(View::parse(&level).is_err());
    }

    #[test]
    fn accepts_only_the_exact_resolution() {
        let requested = Selection::new("p", "m", Some("high"));
        let mut view = View { effective: Some(requested.clone()), ..View::default() };
        assert_eq!(view.resolved(&requested).unwrap(), requested);
        view.effective = Some(Selection::new("p", "other", Some("high")));
        assert_eq!(
            view.resolved(&requested).unwrap_err().message,
            "ZCode resolved the selection to another model: other"
        );
        view.effective = Some(Selection::new("p", "m", Some("low")));
        assert_eq!(view.resolved(&requested).unwrap_err().kind, ErrorKind::Protocol);
        view.effective = None;
        assert_eq!(
            view.resolved(&requested).unwrap_err().message,
            "ZCode did not resolve the model selection"
        );
        view.issue = Some("model_unavailable".into());
        let issue = view.resolved(&requested).unwrap_err();
        assert_eq!(
            (issue.kind, issue.message.as_str()),
            (ErrorKind::InvalidParams, "ZCode cannot use this model selection: model_unavailable")
        );
    }

    #[test]
    fn asks_for_the_view_on_the_model_selection_service() {
        let request = get_view(Some(&Selection::new("p", "m", Some("low")))).into_request(4);
        assert_eq!(
            (request.label.as_str(), request.timeout_ms),
            ("modelSelection.getView", 60_000)
        );
        let bytes: Value = serde_json::from_slice(&request.bytes).unwrap();
        assert_eq!(
            bytes["params"],
            json!({"service": "modelSelection", "method": "getView", "params": {"selection": {"providerId": "p", "modelId": "m", "options": {"reasoningLevel": "low"}}}})
        );
    }
}
