//! Legacy `session/event` → ACP. Every release has this stream (its payloads are strict schemas in
//! `zcode-protocol/index.ts`). Where the V4 conversation is subscribed it carries the turn's
//! content instead (`conversation.rs`), and this stream keeps only what V4 does not carry: the
//! turn's result type and per-turn usage.

use serde_json::{Value, json};
use zcode_contract::{Action, MapperError, StopReason, Terminal};

use zcode_mapper_sdk::acp::update;
use zcode_mapper_sdk::json::protocol;
use zcode_v4::schema::native;

use crate::tools::{Outcome, Tools, result_text};

/// What the event stream needs from the session it maps into.
pub struct Turn<'a> {
    pub tools: &'a mut Tools,
    pub workspace: &'a str,
    /// A prompt of this client is running.
    pub running: bool,
    /// Usage of the turn, kept for `finish-turn`.
    pub usage: &'a mut Option<Value>,
    /// This stream carries the turn's content (no V4 conversation): text, thinking, tools,
    /// title and context usage are mapped from it. Otherwise they come from V4 and are skipped
    /// here, so nothing reaches the client twice.
    pub content: bool,
}

fn update(text: String) -> Action {
    Action::Update(text)
}

/// Whether the V4 conversation, where it is subscribed, carries what an event of type `kind`
/// shows: the same facts, projected by ZCode itself. The connection routes these apart
/// (`connection::carried_route`), since with V4 every text delta also comes as one of them.
pub fn carried_by_v4(kind: &str) -> bool {
    matches!(
        kind,
        "model.streaming"
            | "tool.updated"
            | "session.titleUpdated"
            | "session.updated"
            | "model.response"
    )
}

/// Why an event of type `kind` is only ignored, whatever its payload says: `None` when it is
/// mapped. `content`: this stream carries the turn's content (see [`Turn::content`]). The
/// session asks before it reads the event's payload: with V4, every text delta also comes
/// here, and is dropped without being read.
pub fn ignored(kind: &str, content: bool) -> Option<String> {
    match kind {
        _ if !content && carried_by_v4(kind) => {
            Some(format!("{kind} (carried by the V4 conversation)"))
        }
        // The reverse request carries the question; these only mirror it.
        "permission.requested" | "permission.resolved" | "userInput.requested" | "userInput.resolved"
        // Covered by model.streaming and tool.updated.
        | "message.upserted" | "message.removed" | "part.started" | "part.delta" | "part.upserted" | "part.removed"
        | "turn.started" | "turn.steerQueued" | "turn.steerDrained"
        | "session.created" | "session.resumed" | "session.closed"
        | "checkpoint.created" | "rewind.triggered" | "streamRecovery.updated" => Some(kind.to_string()),
        _ => None,
    }
}

/// One `session/event` params object.
pub fn map(turn: &mut Turn<'_>, event: &Value) -> Result<Vec<Action>, MapperError> {
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| protocol("session/event without type"))?;
    if let Some(why) = ignored(kind, turn.content) {
        return Ok(vec![Action::Ignore(why)]);
    }
    let empty = Value::Null;
    let payload = event.get("payload").unwrap_or(&empty);
    Ok(match kind {
        "model.streaming" => streaming(turn, payload)?,
        "tool.updated" => tool(turn, payload)?,
        "turn.completed" => completed(
            turn,
            payload.get("usage").cloned(),
            payload.get("resultType").and_then(Value::as_str),
        ),
        "turn.failed" => failed(turn, payload),
        "session.titleUpdated" => {
            match payload.get("title").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                Some(title) => update::session_info(Some(title), None)
                    .into_iter()
                    .map(Action::Update)
                    .collect(),
                None => vec![Action::Ignore(kind.to_string())],
            }
        }
        // Not in any public schema's enum, but recorded live (docs/mapper-zcode-app-server.md
        // §3.3): the reply's commit, `{content, usage, contextWindow, stopReason, …}`, the same
        // payload an earlier CLI sent as `session.updated` ("ZCode app-server Session Protocol"
        // probe log, §11.4 seq 10). Its text came as deltas and comes again in `turn.completed`;
        // only its context usage is read.
        "session.updated" | "model.response" => session_updated(kind, payload),
        other => vec![Action::Terminal(Terminal::Broken(protocol(format!(
            "ZCode sent a session event zcode-acp does not know: {other}"
        ))))],
    })
}

fn streaming(turn: &mut Turn<'_>, payload: &Value) -> Result<Vec<Action>, MapperError> {
    let kind = payload
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| protocol("model.streaming without kind"))?;
    let delta = payload.get("delta").and_then(Value::as_str).unwrap_or("");
    let tool = payload.get("toolCallId").and_then(Value::as_str);
    let name = payload.get("toolName").and_then(Value::as_str);
    Ok(match (kind, tool) {
        ("text_delta", _) if !delta.is_empty() => vec![update(update::agent_text(delta))],
        ("reasoning_delta", _) if !delta.is_empty() => vec![update(update::agent_thought(delta))],
        ("tool_input_start", Some(id)) => {
            turn.tools.input_started(id, name);
            vec![Action::Ignore("tool input started".to_string())]
        }
        ("tool_input_delta", Some(id)) => {
            turn.tools.input_delta(id, delta);
            vec![Action::Ignore("tool input delta".to_string())]
        }
        ("tool_input_end", Some(id)) => {
            turn.tools.input_ended(id);
            vec![Action::Ignore("tool input ended".to_string())]
        }
        ("tool_call", Some(id)) => {
            turn.tools.set(id, name, payload.get("input"));
            turn.tools.announce(id, turn.workspace).map(update).into_iter().collect()
        }
        (
            "start" | "finish" | "error" | "text_start" | "text_end" | "text_delta"
            | "reasoning_start" | "reasoning_end" | "reasoning_delta",
            _,
        ) => vec![Action::Ignore(format!("model.streaming {kind}"))],
        (other, _) => {
            return Err(protocol(format!("model.streaming {other} without what it needs")));
        }
    })
}

fn tool(turn: &mut Turn<'_>, payload: &Value) -> Result<Vec<Action>, MapperError> {
    let kind = payload
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| protocol("tool.updated without kind"))?;
    if matches!(kind, "batch" | "raw") {
        return Ok(vec![Action::Ignore(format!("tool.updated {kind}"))]);
    }
    let id = payload
        .get("toolCallId")
        .and_then(Value::as_str)
        .ok_or_else(|| protocol("tool.updated without toolCallId"))?;
    let name = payload.get("toolName").and_then(Value::as_str);
    turn.tools.set(id, name, payload.get("input"));
    let mut actions: Vec<Action> =
        turn.tools.announce(id, turn.workspace).map(update).into_iter().collect();
    match kind {
        "scheduled" => {}
        "started" => actions.push(update(turn.tools.started(id))),
        "progress" => {
            let tail = [payload.get("stdoutTail"), payload.get("stderrTail")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            actions.push(update(if tail.is_empty() {
                turn.tools.started(id)
            } else {
                turn.tools.progress(id, &tail)
            }));
        }
        "result" => {
            let result = payload.get("result").unwrap_or(&Value::Null);
            let failed = result.get("success").and_then(Value::as_bool) == Some(false);
            let message = result
                .pointer("/error/message")
                .or_else(|| result.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let outcome = if failed {
                Outcome::Failed(message)
            } else {
                Outcome::Done { text: result_text(result), raw: result }
            };
            actions.extend(turn.tools.finished(id, outcome, turn.workspace).map(update));
        }
        "error" => {
            let message = payload.pointer("/error/message").and_then(Value::as_str).unwrap_or("");
            actions.extend(
                turn.tools.finished(id, Outcome::Failed(message), turn.workspace).map(update),
            );
        }
        other => return Err(protocol(format!("tool.updated of unknown kind {other}"))),
    }
    if actions.is_empty() {
        actions.push(Action::Ignore(format!("tool.updated {kind} repeated")));
    }
    Ok(actions)
}

fn session_updated(kind: &str, payload: &Value) -> Vec<Action> {
    let used = payload.pointer("/usage/inputTokens").and_then(Value::as_u64);
    let size = payload.get("contextWindow").and_then(Value::as_u64);
    match (used, size) {
        (Some(used), Some(size)) => {
            vec![Action::Update(update::usage(used, size, None))]
        }
        _ => vec![Action::Ignore(kind.to_string())],
    }
}

/// `turn.completed`, from the two members it needs: its `usage` (as it came, `null` kept) and
/// its `resultType`. (The session reads them alone: the event also carries the turn's whole
/// text, `response`, which nothing here needs.)
pub fn completed(
    turn: &mut Turn<'_>,
    usage: Option<Value>,
    result_type: Option<&str>,
) -> Vec<Action> {
    if !turn.running {
        return vec![Action::Ignore(
            "turn.completed of a turn zcode-acp did not start".to_string(),
        )];
    }
    *turn.usage = usage;
    let reason = match result_type {
        Some("success") => Terminal::Stop(StopReason::EndTurn),
        Some("cancelled") => Terminal::Stop(StopReason::Cancelled),
        Some("error_max_turns" | "error_max_tool_calls") => {
            Terminal::Stop(StopReason::MaxTurnRequests)
        }
        Some("error_max_budget") => Terminal::Stop(StopReason::MaxTokens),
        Some("error_during_execution") => {
            Terminal::Failed(native("ZCode stopped the turn after an error during execution"))
        }
        // 0.16 turns may lack a result type; a completion without one is no success.
        other => Terminal::Failed(native(format!(
            "ZCode ended the turn with result {}",
            other.unwrap_or("(none)")
        ))),
    };
    vec![Action::Terminal(reason)]
}

fn failed(turn: &mut Turn<'_>, payload: &Value) -> Vec<Action> {
    if !turn.running {
        return vec![Action::Ignore("turn.failed of a turn zcode-acp did not start".to_string())];
    }
    let message = payload
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("ZCode failed the turn");
    let mut error = native(message.to_string());
    let code = payload.pointer("/error/code").and_then(Value::as_str);
    error.data =
        Some(json!({"nativeReason": code, "turnPhase": payload.get("turnPhase")}).to_string());
    vec![Action::Terminal(Terminal::Failed(error))]
}

/// ACP `Usage` from ZCode's per-turn usage (`turn.completed.usage`), or `null`.
pub fn acp_usage(usage: Option<&Value>) -> Value {
    let Some(usage) = usage else { return Value::Null };
    let n = |key: &str| usage.get(key).and_then(Value::as_u64);
    match (n("inputTokens"), n("outputTokens")) {
        (Some(input), Some(output)) => {
            let mut out = json!({"inputTokens": input, "outputTokens": output, "totalTokens": n("totalTokens").unwrap_or(input + output)});
            for (from, to) in [
                ("reasoningTokens", "thoughtTokens"),
                ("cacheReadTokens", "cachedReadTokens"),
                ("cacheWriteTokens", "cachedWriteTokens"),
            ] {
                if let Some(value) = n(from) {
                    out[to] = json!(value);
                }
            }
            out
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
