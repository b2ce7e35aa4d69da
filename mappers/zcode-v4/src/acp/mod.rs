//! The conversation as ACP shows it: rows as session updates ([`track`]), when a turn ends
//! ([`turn`]), pending interactions as permission requests and forms ([`interactions`]), the
//! session's settings as modes and config options ([`settings`]), the todo plan and plan
//! proposals ([`plan`]), and how a tool call looks ([`tools`]). The Services mapper maps a
//! session with all of it, and so can the next generation that speaks V4 only; the app-server
//! mapper, where V4 rides next to the legacy events, keeps its own watch of one turn.

pub mod interactions;
pub mod plan;
pub mod settings;
pub mod tools;
pub mod track;
pub mod turn;

use serde_json::{Value, json};
use zcode_mapper_sdk::acp::params::McpServer;

/// ACP MCP servers as ZCode's strict schemas take them (the Agent's `session/create` and the
/// Services Server's `createSession` alike; one unknown key refuses the whole call): stdio
/// `{name, command, args, env}`, http and sse `{type, name, url, headers}`, name/value pairs as
/// given — as the desktop-host generations send them.
pub fn mcp_servers(servers: &[McpServer]) -> Value {
    let pairs = |pairs: &[(String, String)]| -> Vec<Value> {
        pairs.iter().map(|(name, value)| json!({"name": name, "value": value})).collect()
    };
    let servers = servers.iter().map(|server| match server {
        McpServer::Stdio { name, command, args, env } => {
            json!({"name": name, "command": command, "args": args, "env": pairs(env)})
        }
        McpServer::Http { name, url, headers } | McpServer::Sse { name, url, headers } => {
            json!({"type": server.transport(), "name": name, "url": url, "headers": pairs(headers)})
        }
    });
    Value::Array(servers.collect())
}

/// `update` (an object's JSON text, from an SDK builder) with `fields` added, written into a
/// buffer of exactly the final size: for the updates that carry a tool's output (megabytes), so
/// that mapping one holds its tree and its text once each (F-20), not a growing buffer's old
/// and new blocks besides. Fields that are `None` are left out.
pub fn with_fields(update: String, fields: &[(&str, Option<&Value>)]) -> String {
    let fields: Vec<(&str, &Value)> =
        fields.iter().filter_map(|(key, value)| value.map(|value| (*key, value))).collect();
    let extra: usize =
        fields.iter().map(|(key, value)| measure(&Value::from(*key)) + measure(value) + 2).sum();
    let mut out = Vec::with_capacity(update.len() + extra);
    out.extend_from_slice(update.trim_end().strip_suffix('}').unwrap_or(&update).as_bytes());
    drop(update);
    for (key, value) in fields {
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, key).expect("a str always serializes");
        out.push(b':');
        serde_json::to_writer(&mut out, value).expect("a Value always serializes");
    }
    out.push(b'}');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// The length of `value`'s JSON text, without writing it.
fn measure(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).expect("a Value always serializes");
    count.0
}

/// JSON text of `value` (serde_json never fails on a `Value`). Large texts are measured first
/// and written into a buffer of exactly their size: a growing buffer doubles, and while it is
/// copied holds its old and new blocks, which for a multi-MiB update was most of the memory a
/// call may use (F-20).
pub fn text(value: &Value) -> String {
    let mut out = Vec::with_capacity(measure(value));
    serde_json::to_writer(&mut out, value).expect("a Value always serializes");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn adds_fields_to_an_update() {
        let update = r#"{"sessionUpdate":"tool_call_update","toolCallId":"c"}"#.to_string();
        let raw = json!({"text": "a\"b"});
        let written = with_fields(update, &[("rawOutput", Some(&raw)), ("content", None)]);
        assert_eq!(written.len(), written.capacity());
        assert_eq!(
            serde_json::from_str::<Value>(&written).unwrap(),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "rawOutput": raw})
        );
        assert_eq!(with_fields("{}".into(), &[("a", Some(&json!(1)))]), r#"{"a":1}"#);
        assert_eq!(text(&raw).len(), text(&raw).capacity());
    }
}
