//! Typed readers of the ACP request parameters a session or connection operation carries as
//! JSON text: `session/new|load|resume` ([`SessionParams`], with the client's MCP servers),
//! `session/set_mode` ([`mode_id`]), `session/set_config_option` ([`ConfigChange`]) and
//! `session/list` ([`ListParams`]). Prompts have their own reader ([`super::prompt`]).
//!
//! A violation is an `invalid-params` error naming the request and the field; what a host
//! cannot do with valid parameters (an MCP transport, extra directories) is the mapper's to
//! refuse, with the reader's typed values in hand.

use serde_json::Value;
use zcode_contract::{ErrorKind, MapperError};

use crate::json::{Fields, error, invalid_params, parse};

/// Which ACP request opens a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenKind {
    /// `session/new`.
    Create,
    /// `session/load`: history replayed, then subscribed.
    Load,
    /// `session/resume`: subscribed without replay.
    Resume,
    /// `session/fork`: a new native session holding the parent's (`session_id`'s) history;
    /// done with `{"sessionId"}`, then the core loads it.
    Fork,
}

impl OpenKind {
    /// The request's parameters, as error messages name them.
    pub fn what(self) -> &'static str {
        match self {
            OpenKind::Create => "session/new params",
            OpenKind::Load => "session/load params",
            OpenKind::Resume => "session/resume params",
            OpenKind::Fork => "session/fork params",
        }
    }
}

/// An MCP server the client wants the agent to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpServer {
    /// A local process. `env` holds (name, value) pairs as given.
    Stdio { name: String, command: String, args: Vec<String>, env: Vec<(String, String)> },
    /// Streamable HTTP. `headers` holds (name, value) pairs as given.
    Http { name: String, url: String, headers: Vec<(String, String)> },
    /// Server-sent events.
    Sse { name: String, url: String, headers: Vec<(String, String)> },
}

impl McpServer {
    pub fn name(&self) -> &str {
        match self {
            McpServer::Stdio { name, .. }
            | McpServer::Http { name, .. }
            | McpServer::Sse { name, .. } => name,
        }
    }

    /// `stdio`, `http` or `sse`.
    pub fn transport(&self) -> &'static str {
        match self {
            McpServer::Stdio { .. } => "stdio",
            McpServer::Http { .. } => "http",
            McpServer::Sse { .. } => "sse",
        }
    }

    /// Reads the ACP `mcpServers` entries (`type` absent means stdio).
    pub fn read_all(servers: &[Value]) -> Result<Vec<McpServer>, MapperError> {
        servers.iter().map(McpServer::read).collect()
    }

    fn read(server: &Value) -> Result<McpServer, MapperError> {
        let fields = Fields::acp(server, "MCP server")?;
        let name = fields.non_empty_str("name")?.to_string();
        match fields.opt_str("type")? {
            None | Some("stdio") => {
                let args = fields.opt_array("args")?.map(Vec::as_slice).unwrap_or_default();
                let args = args
                    .iter()
                    .map(|arg| arg.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| invalid_params("MCP server: args must be strings"))?;
                let command = fields.non_empty_str("command")?.to_string();
                Ok(McpServer::Stdio { name, command, args, env: pairs(&fields, "env")? })
            }
            Some(kind @ ("http" | "sse")) => {
                let url = fields.non_empty_str("url")?.to_string();
                let headers = pairs(&fields, "headers")?;
                Ok(match kind {
                    "http" => McpServer::Http { name, url, headers },
                    _ => McpServer::Sse { name, url, headers },
                })
            }
            Some(other) => {
                Err(error(ErrorKind::Unsupported, format!("Unsupported MCP server type: {other}")))
            }
        }
    }
}

/// `[{name, value}]` as pairs.
fn pairs(fields: &Fields<'_>, key: &str) -> Result<Vec<(String, String)>, MapperError> {
    let items = fields.opt_array(key)?.map(Vec::as_slice).unwrap_or_default();
    items
        .iter()
        .map(|item| {
            let pair = Fields::acp(item, "MCP server name/value pair")?;
            Ok((pair.str("name")?.to_string(), pair.str("value")?.to_string()))
        })
        .collect()
}

/// `session/new`, `session/load` or `session/resume` parameters. The core has checked and
/// canonicalised `cwd` already (the session's `SessionInit::workspace`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionParams {
    pub kind: OpenKind,
    pub cwd: Option<String>,
    /// The session to load or resume, or the parent of a fork (`None` for `session/new`).
    pub session_id: Option<String>,
    pub mcp_servers: Vec<McpServer>,
    /// `additionalDirectories`, when the client sent any.
    pub additional_directories: Vec<Value>,
    /// The client sent a `systemPrompt`.
    pub system_prompt: bool,
}

impl SessionParams {
    pub fn read(kind: OpenKind, params: &str) -> Result<Self, MapperError> {
        let value = parse(params, ErrorKind::InvalidParams, kind.what())?;
        let fields = Fields::acp(&value, kind.what())?;
        let additional_directories = fields.opt_array("additionalDirectories")?.cloned();
        let system_prompt = fields.get("systemPrompt").is_some();
        let servers = fields.opt_array("mcpServers")?.map(Vec::as_slice).unwrap_or_default();
        let mcp_servers = McpServer::read_all(servers)?;
        let session_id = match kind {
            OpenKind::Create => None,
            OpenKind::Load | OpenKind::Resume | OpenKind::Fork => {
                Some(fields.non_empty_str("sessionId")?.into())
            }
        };
        Ok(Self {
            kind,
            cwd: fields.opt_str("cwd")?.map(str::to_string),
            session_id,
            mcp_servers,
            additional_directories: additional_directories.unwrap_or_default(),
            system_prompt,
        })
    }
}

impl SessionParams {
    /// For a host without MCP support: refuses any MCP server the client sent, as
    /// `unsupported`, `"<host> takes no MCP servers"`.
    pub fn refuse_mcp_servers(&self, host: &str) -> Result<(), MapperError> {
        match self.mcp_servers.is_empty() {
            true => Ok(()),
            false => Err(error(ErrorKind::Unsupported, format!("{host} takes no MCP servers"))),
        }
    }
}

/// The `modeId` of `session/set_mode` parameters.
pub fn mode_id(params: &str) -> Result<String, MapperError> {
    const WHAT: &str = "session/set_mode params";
    let value = parse(params, ErrorKind::InvalidParams, WHAT)?;
    Ok(Fields::acp(&value, WHAT)?.str("modeId")?.to_string())
}

/// `session/set_config_option` parameters: which option, the value's `type` if given
/// (`value_id` for a select, `boolean`), and the value as sent.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigChange {
    pub config_id: String,
    pub kind: Option<String>,
    pub value: Option<Value>,
}

impl ConfigChange {
    const WHAT: &str = "session/set_config_option params";

    pub fn read(params: &str) -> Result<Self, MapperError> {
        let value = parse(params, ErrorKind::InvalidParams, Self::WHAT)?;
        let fields = Fields::acp(&value, Self::WHAT)?;
        Ok(Self {
            config_id: fields.str("configId")?.to_string(),
            kind: fields.opt_str("type")?.map(str::to_string),
            value: fields.get("value").cloned(),
        })
    }

    /// The value of a select option (`type` absent or `value_id`); `None` when the change is
    /// of another type or its value is not a string.
    pub fn value_id(&self) -> Option<&str> {
        match (self.kind.as_deref(), &self.value) {
            (None | Some("value_id"), Some(Value::String(value))) => Some(value),
            _ => None,
        }
    }

    /// The value of a boolean option (`type` `boolean`).
    pub fn boolean(&self) -> Option<bool> {
        match (self.kind.as_deref(), &self.value) {
            (Some("boolean"), Some(Value::Bool(on))) => Some(*on),
            _ => None,
        }
    }

    /// The value as sent, for a message (`<missing>` without one).
    pub fn shown_value(&self) -> String {
        self.value.as_ref().map_or_else(|| "<missing>".to_string(), Value::to_string)
    }
}

/// `session/list` parameters (the core has made `cwd` canonical).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListParams {
    pub cwd: Option<String>,
    pub cursor: Option<String>,
}

impl ListParams {
    const WHAT: &str = "session/list params";

    pub fn read(params: &str) -> Result<Self, MapperError> {
        let value = parse(params, ErrorKind::InvalidParams, Self::WHAT)?;
        let fields = Fields::acp(&value, Self::WHAT)?;
        Ok(Self {
            cwd: fields.opt_str("cwd")?.map(str::to_string),
            cursor: fields.opt_str("cursor")?.map(str::to_string),
        })
    }

    /// The `cwd` filter, for a host that lists sessions of one workspace at a time.
    pub fn required_cwd(&self) -> Result<String, MapperError> {
        let missing = || invalid_params(format!("{}: missing field `cwd`", Self::WHAT));
        self.cwd.clone().ok_or_else(missing)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_host_without_mcp_refuses_servers() {
        let none = SessionParams::read(OpenKind::Create, r#"{"cwd":"/w","mcpServers":[]}"#);
        assert!(none.unwrap().refuse_mcp_servers("The host").is_ok());
        let params = json!({"cwd": "/w", "mcpServers": [{"name": "fs", "command": "mcp-fs"}]});
        let some = SessionParams::read(OpenKind::Create, &params.to_string()).unwrap();
        let refused = some.refuse_mcp_servers("The host").unwrap_err();
        assert_eq!(
            (refused.kind, refused.message.as_str()),
            (ErrorKind::Unsupported, "The host takes no MCP servers")
        );
    }

    #[test]
    fn reads_session_params_with_mcp_servers() {
        let params = json!({
            "cwd": "/w", "sessionId": "s1",
            "mcpServers": [
                {"name": "fs", "command": "mcp-fs", "args": ["--root", "/w"], "env": [{"name": "A", "value": "1"}]},
                {"type": "http", "name": "web", "url": "https://x", "headers": [{"name": "H", "value": "v"}]},
                {"type": "sse", "name": "ev", "url": "https://y"},
            ],
        });
        let read = SessionParams::read(OpenKind::Load, &params.to_string()).unwrap();
        assert_eq!(read.session_id.as_deref(), Some("s1"));
        assert_eq!(read.cwd.as_deref(), Some("/w"));
        assert_eq!(
            read.mcp_servers,
            [
                McpServer::Stdio {
                    name: "fs".into(),
                    command: "mcp-fs".into(),
                    args: vec!["--root".into(), "/w".into()],
                    env: vec![("A".into(), "1".into())],
                },
                McpServer::Http {
                    name: "web".into(),
                    url: "https://x".into(),
                    headers: vec![("H".into(), "v".into())],
                },
                McpServer::Sse { name: "ev".into(), url: "https://y".into(), headers: vec![] },
            ]
        );
        assert_eq!(read.mcp_servers[1].transport(), "http");
        assert_eq!(read.mcp_servers[2].name(), "ev");
        let new = SessionParams::read(OpenKind::Create, r#"{"cwd":"/w"}"#).unwrap();
        assert!(new.session_id.is_none() && new.mcp_servers.is_empty() && !new.system_prompt);
    }

    #[test]
    fn names_what_is_wrong() {
        let message = |kind, params: Value| {
            SessionParams::read(kind, &params.to_string()).unwrap_err().message
        };
        assert_eq!(
            message(OpenKind::Resume, json!({"cwd": "/w"})),
            "session/resume params: missing field `sessionId`"
        );
        assert_eq!(
            message(
                OpenKind::Create,
                json!({"mcpServers": [{"name": "x", "command": "c", "args": [1]}]})
            ),
            "MCP server: args must be strings"
        );
        let unsupported = SessionParams::read(
            OpenKind::Create,
            &json!({"mcpServers": [{"type": "ws", "name": "x"}]}).to_string(),
        )
        .unwrap_err();
        assert_eq!(
            (unsupported.kind, unsupported.message.as_str()),
            (ErrorKind::Unsupported, "Unsupported MCP server type: ws")
        );
        assert_eq!(
            message(
                OpenKind::Create,
                json!({"mcpServers": [{"name": "x", "command": "c", "env": [{"name": "A"}]}]})
            ),
            "MCP server name/value pair: missing field `value`"
        );
        let extra = SessionParams::read(
            OpenKind::Create,
            r#"{"additionalDirectories":["/x"],"systemPrompt":"be brief"}"#,
        )
        .unwrap();
        assert_eq!((extra.additional_directories.len(), extra.system_prompt), (1, true));
    }

    #[test]
    fn reads_mode_config_and_list_params() {
        assert_eq!(mode_id(r#"{"sessionId":"s","modeId":"plan"}"#).unwrap(), "plan");
        assert_eq!(
            mode_id("{}").unwrap_err().message,
            "session/set_mode params: missing field `modeId`"
        );
        let select = ConfigChange::read(r#"{"configId":"m","value":"a"}"#).unwrap();
        assert_eq!((select.value_id(), select.boolean()), (Some("a"), None));
        let flag = ConfigChange::read(r#"{"configId":"p","type":"boolean","value":true}"#).unwrap();
        assert_eq!((flag.value_id(), flag.boolean()), (None, Some(true)));
        let odd = ConfigChange::read(r#"{"configId":"m","value":3}"#).unwrap();
        assert_eq!((odd.value_id(), odd.shown_value()), (None, "3".to_string()));
        assert_eq!(ConfigChange::read(r#"{"configId":"m"}"#).unwrap().shown_value(), "<missing>");
        let list = ListParams::read(r#"{"cwd":"/w","cursor":"2"}"#).unwrap();
        assert_eq!((list.cwd.as_deref(), list.cursor.as_deref()), (Some("/w"), Some("2")));
    }
}
