//! Opening a native session: the checked ACP request, the session snapshot that
//! `createSession` / `resumeSession` return (`{session:{sessionId, workspace:{workspacePath},
//! title?, updatedAt?}, settings:{model:{current?}, thoughtLevel:{enabled, current?,
//! available:[{value,label}]}, mode:{current}}, slashCommands:[{name, description,
//! inputHint?}]}`, V4S §3.1), and the MCP servers in ZCode's shapes.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};

use crate::json::{Fields, error, invalid_params, parse};
use crate::v4::state::Config;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenKind {
    Create,
    Load,
    Resume,
}

impl OpenKind {
    fn what(self) -> &'static str {
        match self {
            OpenKind::Create => "session/new params",
            OpenKind::Load => "session/load params",
            OpenKind::Resume => "session/resume params",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Open {
    pub kind: OpenKind,
    /// The session to load or resume (`None` for create).
    pub session_id: Option<String>,
    pub mcp_servers: Value,
}

pub fn request(kind: OpenKind, params: &str) -> Result<Open, MapperError> {
    let params = parse(params, ErrorKind::InvalidParams, kind.what())?;
    let fields = Fields::acp(&params, kind.what())?;
    if fields.opt_array("additionalDirectories")?.is_some_and(|dirs| !dirs.is_empty()) {
        return Err(invalid_params(
            "Installed ZCode host does not support ACP additionalDirectories",
        ));
    }
    if fields.get("systemPrompt").is_some() {
        return Err(error(
            ErrorKind::Unsupported,
            "Installed ZCode host does not support ACP systemPrompt",
        ));
    }
    let mcp_servers =
        mcp_servers(fields.opt_array("mcpServers")?.map(Vec::as_slice).unwrap_or_default())?;
    let session_id = match kind {
        OpenKind::Create => None,
        OpenKind::Load | OpenKind::Resume => Some(fields.non_empty_str("sessionId")?.to_string()),
    };
    Ok(Open { kind, session_id, mcp_servers })
}

/// What the session snapshot says: its id and workspace, its settings as a [`Config`] with
/// thought-level labels, and its slash commands as ACP `availableCommands`.
pub struct Opened {
    pub session_id: String,
    pub workspace: String,
    pub config: Config,
    pub thought_labels: Vec<(String, String)>,
    pub commands: Vec<Value>,
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
    if let Some(settings) = fields.opt_object("settings", "session settings")? {
        if let Some(mode) = settings.opt_object("mode", "session mode")? {
            config.mode = mode.str("current")?.to_string();
        }
        if let Some(model) = settings.opt_object("model", "session model")?
            && let Some(current) = model.opt_object("current", "current model")?
        {
            config.provider = current.str("providerId")?.to_string();
            config.model = current.str("modelId")?.to_string();
            if let Some(options) = current.opt_object("options", "model options")? {
                config.thought = options.opt_str("reasoningLevel")?.unwrap_or_default().to_string();
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
    Ok(Opened { session_id, workspace, config, thought_labels, commands })
}

/// ACP MCP server configurations in ZCode's shapes: stdio `{name, command, args, env}`, http
/// and sse `{type, name, url, headers}` (name/value pairs kept as given) — as the desktop-host
/// generations send them.
pub fn mcp_servers(servers: &[Value]) -> Result<Value, MapperError> {
    let pairs = |fields: &Fields<'_>, key: &str| -> Result<Value, MapperError> {
        let items = fields.opt_array(key)?.map(Vec::as_slice).unwrap_or_default();
        let pairs = items
            .iter()
            .map(|item| {
                let pair = Fields::acp(item, "MCP server name/value pair")?;
                Ok(json!({"name": pair.str("name")?, "value": pair.str("value")?}))
            })
            .collect::<Result<Vec<_>, MapperError>>()?;
        Ok(Value::Array(pairs))
    };
    let converted = servers
        .iter()
        .map(|server| {
            let fields = Fields::acp(server, "MCP server")?;
            let name = fields.non_empty_str("name")?;
            match fields.opt_str("type")? {
                None | Some("stdio") => {
                    let args = fields.opt_array("args")?.cloned().unwrap_or_default();
                    if !args.iter().all(Value::is_string) {
                        return Err(invalid_params("MCP server: args must be strings"));
                    }
                    Ok(json!({"name": name, "command": fields.non_empty_str("command")?, "args": args, "env": pairs(&fields, "env")?}))
                }
                Some(kind @ ("http" | "sse")) => Ok(json!({
                    "type": kind, "name": name, "url": fields.non_empty_str("url")?, "headers": pairs(&fields, "headers")?,
                })),
                Some(other) => Err(error(ErrorKind::Unsupported, format!("Unsupported MCP server type: {other}"))),
            }
        })
        .collect::<Result<Vec<_>, MapperError>>()?;
    Ok(Value::Array(converted))
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
}
