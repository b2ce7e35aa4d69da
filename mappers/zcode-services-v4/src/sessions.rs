//! ACP `session/list` through `listSessions{workspacePath}` →
//! `[{sessionId, workspace:{workspacePath}, title?, updatedAt?}]` (V4S §3.1).
//!
//! `includeArchived` is not sent: its default is `false` (ZCode 3.15.1
//! `packages/shared/src/zcode-protocol/index.ts`), and Agent 0.17.0 (ZCode 3.16.2) refuses any
//! request that carries the key (`-32602`, zcode-releases.md §3.1); whether the Services
//! Server forwards it there is not public, so leaving it out is the safe spelling for every
//! release.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};

use crate::rpc::{self, Call};
use zcode_mapper_sdk::json::{invalid_params, parse, protocol};
use zcode_mapper_sdk::time::iso8601_from_epoch_ms;
use zcode_v4::schema::Fields;

/// Sessions per ACP page (as in the desktop-host generations).
pub const PAGE_SIZE: usize = 50;
const CURSOR_PREFIX: &str = "zcode-sessions-from-";

pub fn list_call(workspace: &str) -> Call {
    Call::agent("listSessions", json!({"workspacePath": workspace}))
}

/// The (canonical) workspace and the page offset the cursor names.
pub fn list_params(params: &str) -> Result<(String, usize), MapperError> {
    let params = parse(params, ErrorKind::InvalidParams, "session/list params")?;
    let fields = Fields::acp(&params, "session/list params")?;
    let workspace = match fields.opt_str("cwd")? {
        Some(cwd) if !cwd.is_empty() => cwd.to_string(),
        _ => return Err(invalid_params("ZCode requires cwd when listing sessions")),
    };
    let offset = match fields.opt_str("cursor")? {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|offset| offset.parse::<usize>().ok())
            .filter(|offset| *offset > 0 && offset.is_multiple_of(PAGE_SIZE))
            .ok_or_else(|| invalid_params(format!("Unknown session list cursor: {cursor}")))?,
    };
    Ok((workspace, offset))
}

/// One ACP page of the listed sessions, in ZCode's order, with a cursor when more follow.
pub fn page(result: &Value, offset: usize) -> Result<Value, MapperError> {
    let label = "zcode-agent.listSessions";
    let Value::Array(items) = result else {
        return Err(protocol(format!("Native result validation failed: {label}: not an array")));
    };
    let mut sessions = Vec::with_capacity(items.len().min(PAGE_SIZE));
    for item in items.iter().skip(offset).take(PAGE_SIZE) {
        sessions.push(session_info(item).map_err(|e| rpc::invalid_result(label, &e))?);
    }
    // The rest is still checked: a malformed entry anywhere is a protocol break.
    for item in items.iter().take(offset).chain(items.iter().skip(offset + PAGE_SIZE)) {
        session_info(item).map_err(|e| rpc::invalid_result(label, &e))?;
    }
    let mut response = json!({"sessions": sessions});
    if offset + PAGE_SIZE < items.len() {
        response["nextCursor"] = json!(format!("{CURSOR_PREFIX}{}", offset + PAGE_SIZE));
    }
    Ok(response)
}

fn session_info(item: &Value) -> Result<Value, MapperError> {
    let fields = Fields::native(item, "listed session")?;
    let mut info = json!({
        "sessionId": fields.non_empty_str("sessionId")?,
        "cwd": fields.object("workspace", "listed session workspace")?.non_empty_str("workspacePath")?,
    });
    if let Some(title) = fields.opt_str("title")?.filter(|title| !title.is_empty()) {
        info["title"] = json!(title);
    }
    if let Some(updated) = fields.opt_f64("updatedAt")?.and_then(iso8601_from_epoch_ms) {
        info["updatedAt"] = json!(updated);
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_sessions_with_cursors() {
        let listed: Vec<Value> = (0..120)
            .map(|i| json!({"sessionId": format!("s{i}"), "workspace": {"workspacePath": "/w"}, "title": "t", "updatedAt": 0}))
            .collect();
        let first = page(&Value::Array(listed.clone()), 0).unwrap();
        assert_eq!(first["sessions"].as_array().unwrap().len(), 50);
        assert_eq!(
            first["sessions"][0],
            json!({"sessionId": "s0", "cwd": "/w", "title": "t", "updatedAt": "1970-01-01T00:00:00.000Z"})
        );
        assert_eq!(first["nextCursor"], "zcode-sessions-from-50");
        let (_, offset) =
            list_params(r#"{"cwd":"/w","cursor":"zcode-sessions-from-100"}"#).unwrap();
        let last = page(&Value::Array(listed), offset).unwrap();
        assert_eq!(last["sessions"].as_array().unwrap().len(), 20);
        assert!(last.get("nextCursor").is_none());
    }

    #[test]
    fn refuses_bad_params_and_results() {
        assert_eq!(
            list_params("{}").unwrap_err().message,
            "ZCode requires cwd when listing sessions"
        );
        assert_eq!(
            list_params(r#"{"cwd":"/w","cursor":"zcode-sessions-from-7"}"#).unwrap_err().message,
            "Unknown session list cursor: zcode-sessions-from-7"
        );
        assert_eq!(
            page(&json!([{"sessionId": "", "workspace": {"workspacePath": "/w"}}]), 0)
                .unwrap_err()
                .message,
            "Native result validation failed: zcode-agent.listSessions: listed session: field `sessionId` must not be empty"
        );
        assert!(page(&json!({}), 0).is_err());
        assert_eq!(list_call("/w").args, vec![json!({"workspacePath": "/w"})]);
    }
}
