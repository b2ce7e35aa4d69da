//! The `zcode-task` channel: stopping a generation and answering the turn's interactions.
//! Sessions are named `taskId` here (the same opaque id).

use serde_json::{Value, json};

use super::Host;
use super::params::Params;
use super::session::{LiveSession, PendingKind};

pub fn call(host: &Host, method: &str, params: &Params) -> Result<Value, String> {
    params.workspace()?;
    let task_id = params.string("taskId")?;
    let shared = host.live(task_id)?;
    let mut live = shared.lock().expect("session lock");
    match method {
        "stopGeneration" => {
            // Stopping an idle task is a no-op, as is stopping twice.
            if let Some(turn) = &live.turn {
                turn.stop.send_replace(true);
            }
        }
        "respondPermission" => {
            let request_id = params.string("requestId")?;
            let option_id = params.string("optionId")?;
            let known_option = match live.pending.get(request_id).map(|pending| &pending.kind) {
                Some(PendingKind::Permission { option_ids }) => {
                    option_ids.iter().any(|id| id == option_id)
                }
                _ => return Err(format!("Unknown permission request: {request_id}")),
            };
            if !known_option {
                return Err(format!("Unknown permission option: {option_id}"));
            }
            let kind = live.pending[request_id].kind.clone();
            let _ = resolve(&mut live, request_id, &kind, json!({"optionId": option_id}));
        }
        "respondElicitation" => {
            let request_id = params.string("requestId")?;
            let action = params.string("action")?;
            if !matches!(action, "accept" | "decline" | "cancel") {
                return Err(format!("Unsupported elicitation action: {action}"));
            }
            let mut response = json!({"action": action});
            if let Some(content) = params.get("content") {
                if !content.is_object() {
                    return Err("respondElicitation: `content` must be an object".into());
                }
                response["content"] = content.clone();
            }
            if let Some(reason) = params.optional_string("reason")? {
                response["reason"] = json!(reason);
            }
            resolve(&mut live, request_id, &PendingKind::Elicitation, response)
                .map_err(|()| format!("Unknown elicitation request: {request_id}"))?;
        }
        other => return Err(format!("Method not found: {other}")),
    }
    Ok(Value::Null)
}

/// Hands `response` to the turn waiting on `request_id`, if it waits for this kind of answer.
pub fn resolve(
    live: &mut LiveSession,
    request_id: &str,
    expected: &PendingKind,
    response: Value,
) -> Result<(), ()> {
    let matches = live.pending.get(request_id).is_some_and(|pending| {
        std::mem::discriminant(&pending.kind) == std::mem::discriminant(expected)
    });
    if !matches {
        return Err(());
    }
    let pending = live.pending.remove(request_id).expect("checked above");
    // The turn may have ended meanwhile; the answer then has nobody to reach.
    let _ = pending.reply.send(response);
    Ok(())
}
