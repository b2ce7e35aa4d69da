//! The Services Server calls behind the requests the conversation's mapping announces
//! (`zcode_v4::follow::MapRequest`): a resync with a fresh snapshot, and a page of rows.

use serde_json::json;
use zcode_v4::follow::{MapRequest, State};

use crate::rpc::Call;

/// Rows per page (ZCode's `rowsRangeMaxLimit`).
pub const PAGE_ROWS: u64 = 200;

pub const RESYNC_LABEL: &str = "zcode-agent.resyncConversationV4";
pub const ROWS_LABEL: &str = "zcode-agent.conversationRowsRangeV4";

/// The native call of a request `map` announced.
pub fn call(state: &State, workspace: &str, request: &MapRequest) -> Call {
    let bound = state.bound.as_ref();
    match request {
        MapRequest::Resync => Call::agent(
            "resyncConversationV4",
            json!({
                "workspacePath": workspace,
                "subscriptionId": bound.and_then(|b| b.subscription_id.clone()),
                "base": null,
                "forceSnapshot": true,
            }),
        ),
        MapRequest::RowsPage { before } => rows_range(
            workspace,
            bound.map(|b| b.session_id.as_str()).unwrap_or_default(),
            Some(*before),
        ),
    }
}

/// `conversationRowsRangeV4{workspacePath, sessionId, limit, beforeRowId?}`.
pub fn rows_range(workspace: &str, session_id: &str, before: Option<u64>) -> Call {
    let mut params =
        json!({"workspacePath": workspace, "sessionId": session_id, "limit": PAGE_ROWS});
    if let Some(before) = before {
        params["beforeRowId"] = json!(before);
    }
    Call::agent("conversationRowsRangeV4", params)
}
