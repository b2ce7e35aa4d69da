//! Triggers only the app-server profiles know, for requests the host-bridge protocol does not
//! have: `sim:elicit` (MCP elicitation, from 3.15 on), `sim:browser` (browser backends),
//! `sim:mcp-auth` (official MCP auth headers) and `sim:cron` (scheduled tasks). The last
//! three are in a method table measured before 3.15, so every profile has them.
//! Any other prompt goes to the shared scenario engine.

use serde_json::json;

use super::super::profile::AppServerProfile;
use crate::common::scenario::{Scenario, parse_lines};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    Elicit,
    Browser,
    McpAuth,
    Cron,
}

/// The extra step a prompt asks for, with the text steps that follow it.
pub fn select(prompt: &str, profile: &AppServerProfile) -> Option<(Extra, Scenario)> {
    let first = prompt.lines().next().unwrap_or_default().trim();
    let name = first.strip_prefix("sim:")?.split_whitespace().next()?;
    let (extra, allowed, denied) = match name {
        "elicit" if profile.has_315_deltas() => (
            Extra::Elicit,
            "The MCP server received your answer.",
            "The MCP server request was declined.",
        ),
        "browser" => (Extra::Browser, "The browser is ready.", "No browser is available."),
        "mcp-auth" => (
            Extra::McpAuth,
            "The official MCP server accepted the request.",
            "The official MCP server is unavailable.",
        ),
        "cron" => (
            Extra::Cron,
            "The scheduled task was created.",
            "The scheduled task could not be created.",
        ),
        _ => return None,
    };
    let follow_up = parse_lines(&[
        json!({"step": "text", "if": "allowed", "text": allowed}),
        json!({"step": "text", "if": "denied", "text": denied}),
    ])
    .expect("the follow-up steps are valid");
    Some((extra, follow_up))
}

#[cfg(test)]
mod tests {
    use super::super::super::profile::by_name;
    use super::*;

    #[test]
    fn the_315_requests_need_a_315_profile() {
        let old = by_name("desktop-3.14.5").unwrap();
        let new = by_name("desktop-3.15.1").unwrap();
        assert!(select("sim:elicit", old).is_none());
        assert_eq!(select("sim:elicit now", new).unwrap().0, Extra::Elicit);
        assert_eq!(select("sim:cron", old).unwrap().0, Extra::Cron);
        assert!(select("sim:reply hi", new).is_none());
        assert!(select("hello", new).is_none());
    }
}
