//! Opening a native session: the checked ACP request, the session snapshot that
//! `createSession` / `resumeSession` return (`{session:{sessionId, workspace:{workspacePath},
//! title?, updatedAt?}, settings:{model:{current?}, thoughtLevel:{enabled, current?,
//! available:[{value,label}]}, mode:{current}}, slashCommands:[{name, description,
//! inputHint?}]}`, V4S §3.1), and the MCP servers in ZCode's shapes.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};

pub use zcode_mapper_sdk::acp::params::OpenKind;
use zcode_mapper_sdk::acp::params::SessionParams;
use zcode_mapper_sdk::json::{error, invalid_params};
use zcode_v4::acp::mcp_servers;
use zcode_v4::acp::settings::ModelChoice;
use zcode_v4::schema::Fields;
use zcode_v4::state::Config;

#[derive(Clone, Debug)]
pub struct Open {
    pub kind: OpenKind,
    /// The session to load or resume (`None` for create).
    pub session_id: Option<String>,
    pub mcp_servers: Value,
}

pub fn request(kind: OpenKind, params: &str) -> Result<Open, MapperError> {
    let params = SessionParams::read(kind, params)?;
    if !params.additional_directories.is_empty() {
        return Err(invalid_params(
            "Installed ZCode host does not support ACP additionalDirectories",
        ));
    }
    if params.system_prompt {
        return Err(error(
            ErrorKind::Unsupported,
            "Installed ZCode host does not support ACP systemPrompt",
        ));
    }
    Ok(Open { kind, session_id: params.session_id, mcp_servers: mcp_servers(&params.mcp_servers) })
}

/// What the session snapshot says: its id and workspace, its settings as a [`Config`] with
/// thought-level labels, and its slash commands as ACP `availableCommands`.
pub struct Opened {
    pub session_id: String,
    pub workspace: String,
    pub config: Config,
    pub thought_labels: Vec<(String, String)>,
    pub models: Vec<ModelChoice>,
    pub commands: Vec<Value>,
}

/// `settings.model.available[]` entries (`ZCodeModelOption`: `{ref:{providerId, modelId},
/// label?, providerLabel?, reasoning?:{levels:[{value, label?}], defaultLevel?},
/// disabledReason?}`); a model with a `disabledReason` cannot be chosen and is not offered.
fn model_choices(model: &Fields<'_>) -> Result<Vec<ModelChoice>, MapperError> {
    let mut choices = Vec::new();
    for entry in model.opt_array("available")?.map(Vec::as_slice).unwrap_or_default() {
        let entry = Fields::native(entry, "available model")?;
        if entry.get("disabledReason").is_some_and(|reason| !reason.is_null()) {
            continue;
        }
        let reference = entry.object("ref", "available model ref")?;
        let provider = reference.non_empty_str("providerId")?.to_string();
        let model = reference.non_empty_str("modelId")?.to_string();
        let label = entry.opt_str("label")?.filter(|l| !l.is_empty()).unwrap_or(&model).to_string();
        let provider_label = entry.opt_str("providerLabel")?.map(str::to_string);
        let mut levels = Vec::new();
        let mut default_level = None;
        if let Some(reasoning) = entry.opt_object("reasoning", "model reasoning")? {
            for level in reasoning.array("levels")? {
                let level = Fields::native(level, "reasoning level")?;
                let value = level.non_empty_str("value")?.to_string();
                let label = level.opt_str("label")?.unwrap_or(&value).to_string();
                levels.push((value, label));
            }
            default_level = reasoning.opt_str("defaultLevel")?.map(str::to_string);
        }
        choices.push(ModelChoice { provider, model, label, provider_label, levels, default_level });
    }
    Ok(choices)
}

pub fn opened(result: &Value) -> Result<Opened, MapperError> {
    let fields = Fields::native(result, "session snapshot")?;
    let session = fields.object("session", "session snapshot session")?;
    let session_id = session.non_empty_str("sessionId")?.to_string();
    let workspace = session
        .object("workspace", "session workspace")?
        .non_empty_str("workspacePath")?
        .to_string();
    let mut config =
        Config { mode: "build".into(), plan_enabled: Some(false), ..Config::default() };
    let mut thought_labels = Vec::new();
    let mut models = Vec::new();
    if let Some(settings) = fields.opt_object("settings", "session settings")? {
        if let Some(mode) = settings.opt_object("mode", "session mode")? {
            config.mode = mode.str("current")?.to_string();
        }
        if let Some(model) = settings.opt_object("model", "session model")? {
            models = model_choices(&model)?;
            if let Some(current) = model.opt_object("current", "current model")? {
                config.provider = current.str("providerId")?.to_string();
                config.model = current.str("modelId")?.to_string();
                if let Some(options) = current.opt_object("options", "model options")? {
                    config.thought =
                        options.opt_str("reasoningLevel")?.unwrap_or_default().to_string();
                }
            }
        }
        if let Some(thought) = settings.opt_object("thoughtLevel", "session thought level")? {
            if thought.bool("enabled")? {
                for level in thought.array("available")? {
                    let level = Fields::native(level, "thought level")?;
                    let value = level.non_empty_str("value")?.to_string();
                    thought_labels.push((value.clone(), level.str("label")?.to_string()));
                    config.thought_levels.push(value);
                }
            }
            if let Some(current) = thought.opt_str("current")?.filter(|_| config.thought.is_empty())
            {
                config.thought = current.to_string();
            }
        }
    }
    let mut commands = Vec::new();
    for command in fields.opt_array("slashCommands")?.map(Vec::as_slice).unwrap_or_default() {
        let command = Fields::native(command, "slash command")?;
        let mut entry = json!({"name": command.non_empty_str("name")?, "description": command.str("description")?});
        if let Some(hint) = command.opt_str("inputHint")? {
            entry["input"] = json!({"hint": hint});
        }
        commands.push(entry);
    }
    Ok(Opened { session_id, workspace, config, thought_labels, models, commands })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_open_requests() {
        let open = request(OpenKind::Load, r#"{"sessionId":"s","cwd":"/w","mcpServers":[{"name":"fs","command":"mcp-fs","args":["-v"],"env":[{"name":"A","value":"1"}]}]}"#).unwrap();
        assert_eq!(open.session_id.as_deref(), Some("s"));
        assert_eq!(
            open.mcp_servers,
            json!([{"name": "fs", "command": "mcp-fs", "args": ["-v"], "env": [{"name": "A", "value": "1"}]}])
        );
        assert_eq!(
            request(OpenKind::Create, r#"{"cwd":"/w","systemPrompt":"x"}"#).unwrap_err().kind,
            ErrorKind::Unsupported
        );
        assert!(request(OpenKind::Resume, r#"{"cwd":"/w"}"#).is_err());
        assert!(
            request(OpenKind::Create, r#"{"cwd":"/w","mcpServers":[{"type":"ws","name":"x"}]}"#)
                .is_err()
        );
    }

    #[test]
    fn reads_the_session_snapshot() {
        let opened = opened(&json!({
            "session": {"sessionId": "s1", "status": "idle", "workspace": {"workspacePath": "/w"}},
            "settings": {
                "model": {"current": {"providerId": "p", "modelId": "m", "options": {"reasoningLevel": "high"}}, "available": []},
                "thoughtLevel": {"enabled": true, "current": "low", "available": [{"value": "low", "label": "Low"}, {"value": "high", "label": "High"}]},
                "mode": {"current": "edit"}
            },
            "slashCommands": [{"name": "compact", "description": "Compact", "inputHint": "notes"}]
        }))
        .unwrap();
        assert_eq!((opened.session_id.as_str(), opened.workspace.as_str()), ("s1", "/w"));
        assert_eq!(
            (
                opened.config.model.as_str(),
                opened.config.thought.as_str(),
                opened.config.mode.as_str()
            ),
            ("m", "high", "edit")
        );
        assert_eq!(opened.config.thought_levels, ["low", "high"]);
        assert_eq!(
            opened.commands,
            [json!({"name": "compact", "description": "Compact", "input": {"hint": "notes"}})]
        );
        assert!(super::opened(&json!({"session": {"sessionId": ""}})).is_err());
    }

    #[test]
    fn offers_the_models_of_the_snapshot_without_disabled_ones() {
        let snapshot = |available: Value| {
            json!({
                "session": {"sessionId": "s1", "workspace": {"workspacePath": "/w"}},
                "settings": {"model": {"current": {"providerId": "p", "modelId": "a"}, "available": available}},
            })
        };
        let opened = opened(&snapshot(json!([
            {"ref": {"providerId": "p", "modelId": "a"}, "label": "A", "providerLabel": "P",
             "reasoning": {"levels": [{"value": "low", "label": "Low"}, {"value": "max"}], "defaultLevel": "low"}},
            {"ref": {"providerId": "q", "modelId": "b"}},
            {"ref": {"providerId": "q", "modelId": "c"}, "disabledReason": "not entitled"},
        ])))
        .unwrap();
        let ids: Vec<_> =
            opened.models.iter().map(|m| (&*m.provider, &*m.model, &*m.label)).collect();
        assert_eq!(ids, [("p", "a", "A"), ("q", "b", "b")]);
        let a = &opened.models[0];
        assert_eq!(a.levels, [("low".into(), "Low".into()), ("max".into(), "max".into())]);
        assert_eq!((a.thought_for("max"), a.thought_for("high")), ("max".into(), "low".into()));
        assert_eq!(opened.models[1].thought_for("high"), "");
        // A model without its ref is not one ZCode can switch to: the snapshot is refused.
        assert!(super::opened(&snapshot(json!([{"label": "no ref"}]))).is_err());
    }
}
