//! Every session event type of ZCode's own schema is known: mapped, or ignored on purpose.

use serde_json::{Value, json};
use zcode_contract::{Action, Terminal};

use super::{Turn, ignored, map};
use crate::tools::Tools;

/// The enum, quoted from ZCode 3.15.1's source with its path (see the fixture's header).
const SCHEMA: &str = include_str!("../tests/fixtures/zcode-3.15.1-session-event-types.ts");

/// The types between the enum's brackets, as listed.
fn schema_types() -> Vec<String> {
    let start = SCHEMA.find("z.enum([").expect("the fixture quotes the enum");
    let body = &SCHEMA[start..SCHEMA[start..].find("])").expect("the enum ends") + start];
    body.lines()
        .filter_map(|line| line.trim().strip_prefix('"')?.strip_suffix("\",").map(str::to_string))
        .collect()
}

/// A payload each type may carry, per its schema in the same file (only the types the mapper
/// reads need one; the rest are ignored without their payload being read).
fn payload(kind: &str) -> Value {
    match kind {
        "model.streaming" => json!({"kind": "text_delta", "delta": "ok", "done": true}),
        "tool.updated" => {
            json!({"kind": "batch", "toolCallIds": [], "successCount": 0, "errorCount": 0})
        }
        "turn.completed" => {
            json!({"response": "ok", "tokenCount": 1, "toolCallCount": 0, "duration": 1, "resultType": "success"})
        }
        "turn.failed" => {
            json!({"error": {"type": "ModelError", "message": "boom"}, "turnPhase": "model_request"})
        }
        "session.titleUpdated" => {
            json!({"previousTitle": "", "source": "first_input", "title": "t"})
        }
        "session.updated" => json!({"messageCount": 6, "iteration": 0}),
        _ => json!({}),
    }
}

/// What the mapper does with one event of `kind`: `Err` when the turn breaks on it.
fn handle(kind: &str, content: bool, running: bool) -> Result<Vec<Action>, String> {
    let mut tools = Tools::default();
    let mut usage = None;
    let mut turn = Turn { tools: &mut tools, workspace: "/w", running, usage: &mut usage, content };
    let event = json!({"eventId": "e", "sessionId": "s", "seq": 1, "timestamp": 1, "type": kind, "payload": payload(kind)});
    let actions = map(&mut turn, &event).map_err(|e| e.message)?;
    match actions.iter().find(|a| matches!(a, Action::Terminal(Terminal::Broken(_)))) {
        Some(Action::Terminal(Terminal::Broken(e))) => Err(e.message.clone()),
        _ => Ok(actions),
    }
}

#[test]
fn every_event_type_of_the_3_15_1_schema_is_mapped_or_ignored_on_purpose() {
    let types = schema_types();
    assert_eq!(types.len(), 25, "the fixture's enum: {types:?}");
    for kind in &types {
        for content in [true, false] {
            for running in [true, false] {
                let handled = handle(kind, content, running);
                assert!(
                    handled.is_ok(),
                    "{kind} (content {content}, running {running}) breaks the turn: {handled:?}"
                );
            }
        }
    }
    // Those ignored are ignored whatever the stream carries, and say which type they are.
    for kind in types.iter().filter(|k| ignored(k, true).is_some()) {
        assert_eq!(ignored(kind, true).as_deref(), Some(kind.as_str()));
    }
}

#[test]
fn an_event_type_outside_the_schema_still_breaks_the_turn() {
    for kind in ["sim.unknownEvent", "turn.paused", "model.responses"] {
        let handled = handle(kind, true, true);
        assert!(handled.is_err(), "{kind}: {handled:?}");
        assert!(handled.unwrap_err().contains(kind));
    }
}

/// `model.response` is not in the enum, but the Desktop 3.12.3 live record (issue 25 [B], Q1)
/// saw one in a plain text turn: it must not break the turn (docs/mapper-zcode-app-server.md
/// §3.3 says why it is taken as real).
#[test]
fn a_model_response_event_is_read_for_its_context_usage_and_never_breaks_a_turn() {
    let mut tools = Tools::default();
    let mut usage = None;
    let mut turn = Turn {
        tools: &mut tools,
        workspace: "/w",
        running: true,
        usage: &mut usage,
        content: true,
    };
    // The payload [B] describes (content, usage, contextWindow 1000000, stopReason, cache
    // statistics), with the figures of the same commit in [A] §11.4 seq 10.
    let event = json!({"eventId": "e", "sessionId": "s", "seq": 8, "timestamp": 1, "type": "model.response",
        "payload": {"content": "ok", "contextWindow": 1_000_000, "querySource": "main_turn", "stopReason": "stop",
            "usage": {"inputTokens": 16743, "outputTokens": 19, "totalTokens": 16762, "cacheReadTokens": 9728, "cacheWriteTokens": 0},
            "cacheHit": {}, "toolCallCount": 0}});
    let actions = map(&mut turn, &event).expect("mapped");
    let [Action::Update(update)] = actions.as_slice() else { panic!("{actions:?}") };
    let update: Value = serde_json::from_str(update).expect("json");
    assert_eq!(update["sessionUpdate"], "usage_update", "{update}");
    assert_eq!(update["used"], 16743);
    assert_eq!(update["size"], 1_000_000);
    // Its text is never shown: the deltas showed it, turn.completed carries it again.
    assert!(!update.to_string().contains("\"ok\""));
    // Without usage it is only ignored; with V4 it is left to the conversation.
    let bare = json!({"type": "model.response", "payload": {"content": "ok"}});
    assert!(matches!(map(&mut turn, &bare).expect("mapped").as_slice(), [Action::Ignore(_)]));
    assert!(ignored("model.response", false).is_some());
}
