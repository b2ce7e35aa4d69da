//! `usage-stats`: the account's plan and quota windows (`getEntitlementSnapshot`). The numbers
//! are made up; the windows are the ones the reference names (5-hour and weekly token limits,
//! the monthly tool-call limit, the ZCode MCP quota).

use serde_json::{Value, json};

use super::CallResult;
use crate::common::clock::now_ms;
use crate::services::server::Server;

pub const METHODS: &[&str] = &["getEntitlementSnapshot", "getCodingPlanResetStatus"];

const HOUR_MS: u64 = 3_600_000;

pub fn call(server: &Server, method: &str, _args: &[Option<Value>]) -> Option<CallResult> {
    match method {
        "getEntitlementSnapshot" => Some(Ok(Some(entitlement(server.is_signed_out())))),
        _ => None,
    }
}

fn entitlement(signed_out: bool) -> Value {
    if signed_out {
        return json!({"unavailableReason": "not_authenticated"});
    }
    let now = now_ms();
    let window = |kind: &str, unit: u64, number: u64, percentage: u64, reset_in: u64| json!({"type": kind, "unit": unit, "number": number, "percentage": percentage, "nextResetTime": now + reset_in});
    json!({
        "subscription": {"details": [{"productName": "GLM Coding Plan (simulated)"}]},
        "quota": {"level": "lite", "limits": [
            window("TOKENS_LIMIT", 3, 5, 12, 5 * HOUR_MS),
            window("TOKENS_LIMIT", 6, 1, 4, 7 * 24 * HOUR_MS),
            window("TIME_LIMIT", 5, 1, 0, 30 * 24 * HOUR_MS),
        ]},
        "mcpQuota": {"aggregate": window("TIME_LIMIT", 5, 1, 0, 30 * 24 * HOUR_MS)},
    })
}
