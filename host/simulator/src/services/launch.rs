//! The launch environment the Services Server needs (ZCode `packages/server/src/stdioServices.ts`
//! and `zcodeAgentProcessManager.ts`): the authority mode, and how to start the Agent.
//!
//! The real server falls back to its default authority mode when the variable is missing and
//! only fails once it tries to start the Agent; the simulator refuses to start instead, so a
//! launch plan that forgets them is caught at once.

use std::path::Path;

pub const AUTHORITY_MODE: &str = "ZCODE_SERVICE_AUTHORITY_MODE";
pub const AGENT_COMMAND: &str = "ZCODE_AGENT_SERVER_COMMAND";
pub const AGENT_ARGS: &str = "ZCODE_AGENT_SERVER_ARGS_JSON";
/// The only authority mode a headless client may use.
pub const STANDALONE: &str = "standalone-server";

/// What the environment says about the Agent, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentLaunch {
    pub command: String,
    pub args: Vec<String>,
}

/// Checks the launch environment; `lookup` reads one variable.
pub fn check(lookup: impl Fn(&str) -> Option<String>) -> Result<AgentLaunch, String> {
    match lookup(AUTHORITY_MODE) {
        Some(mode) if mode == STANDALONE => {}
        Some(mode) => {
            return Err(format!(
                "{AUTHORITY_MODE}={mode} is not simulated; a headless client runs the server with \
                 {AUTHORITY_MODE}={STANDALONE}"
            ));
        }
        None => return Err(format!("{AUTHORITY_MODE} is not set (expected {STANDALONE})")),
    }
    let command = lookup(AGENT_COMMAND)
        .filter(|command| !command.trim().is_empty())
        .ok_or_else(|| format!("{AGENT_COMMAND} is not set (the Node that runs the Agent)"))?;
    if !Path::new(&command).is_file() {
        return Err(format!("{AGENT_COMMAND} is not a file: {command}"));
    }
    let raw = lookup(AGENT_ARGS).ok_or_else(|| {
        format!("{AGENT_ARGS} is not set (expected [\"<runtime>/agent/zcode.cjs\",\"app-server\",\"--stdio\"])")
    })?;
    let args: Vec<String> = serde_json::from_str(&raw)
        .map_err(|_| format!("{AGENT_ARGS} must be a JSON array of strings: {raw}"))?;
    let entry = args.first().map(Path::new);
    let entry_ok = entry.is_some_and(|entry| {
        entry.is_file() && entry.file_name().is_some_and(|name| name == "zcode.cjs")
    });
    if !entry_ok {
        return Err(format!("{AGENT_ARGS} must start with the runtime's agent/zcode.cjs: {raw}"));
    }
    if !(args.iter().any(|arg| arg == "app-server") && args.iter().any(|arg| arg == "--stdio")) {
        return Err(format!("{AGENT_ARGS} must run `app-server --stdio`: {raw}"));
    }
    Ok(AgentLaunch { command, args })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> =
            pairs.iter().map(|(key, value)| ((*key).to_owned(), value.clone())).collect();
        move |key| map.get(key).cloned()
    }

    #[test]
    fn accepts_the_documented_launch_and_refuses_anything_less() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("node");
        let agent = dir.path().join("zcode.cjs");
        std::fs::write(&node, "").unwrap();
        std::fs::write(&agent, "").unwrap();
        let args = serde_json::json!([agent, "app-server", "--stdio"]).to_string();
        let good = [
            (AUTHORITY_MODE, STANDALONE.to_owned()),
            (AGENT_COMMAND, node.display().to_string()),
            (AGENT_ARGS, args.clone()),
        ];
        assert_eq!(check(env(&good)).unwrap().args.len(), 3);
        assert!(check(env(&good[1..])).unwrap_err().contains("not set"));
        let desktop =
            [(AUTHORITY_MODE, "desktop-local".to_owned()), good[1].clone(), good[2].clone()];
        assert!(check(env(&desktop)).unwrap_err().contains("not simulated"));
        assert!(check(env(&good[..2])).unwrap_err().contains(AGENT_ARGS));
        let no_stdio = [
            good[0].clone(),
            good[1].clone(),
            (AGENT_ARGS, serde_json::json!([agent]).to_string()),
        ];
        assert!(check(env(&no_stdio)).unwrap_err().contains("app-server"));
        let missing_node =
            [good[0].clone(), (AGENT_COMMAND, "/nowhere/node".into()), good[2].clone()];
        assert!(check(env(&missing_node)).unwrap_err().contains("not a file"));
    }
}
