//! Native dynamic events → actions. The event union is strict: an unknown type, a missing
//! field or an extra field is a protocol error, never silence.

use serde_json::Value;
use zcode_mapper_sdk::acp::update::{self, Chunk};
use zcode_mapper_sdk::contract::{
    Action, ErrorKind, MapperError, NativeData, StopReason, Terminal,
};

use crate::event_text;
use crate::interactions;
use crate::settings::{Publisher, Snapshot, SnapshotRules, session_info_update};
use crate::state::{State, TurnPhase};
use zcode_mapper_sdk::joined;
use zcode_mapper_sdk::json::{Fields, error, parse, protocol};

/// Session event types that mean nothing for ACP.
const IGNORED_SESSION_EVENTS: [&str; 6] = [
    "session.updated",
    "streamRecovery.updated",
    "turn.started",
    "permission.requested",
    "permission.resolved",
    "checkpoint.created",
];

/// Session event types that belong to a turn; outside one they are stale (backlog replayed
/// after a resume, or stragglers after the terminal event) and are dropped.
const TURN_EVENTS: [&str; 4] = ["model.streaming", "tool.updated", "turn.completed", "turn.failed"];
/// The events that end a native turn.
const TURN_ENDS: [&str; 2] = ["turn.completed", "turn.failed"];

/// How a generation reads snapshots and publishes what they say.
pub struct Reader<'a> {
    pub rules: &'a SnapshotRules,
    pub publisher: &'a mut dyn Publisher,
}

/// Maps the events of one routed input, one a line (the connection joins consecutive events
/// for one session, `joined::add`), in order, each as [`map_event`] maps it alone: what one
/// of them breaks is a broken terminal among the actions, as the SDK's mapping makes of an
/// input's error, and the lines after it are mapped as they would have been. A streamed
/// delta's event is read where it starts (`event_text::read_leading`), so the text is not
/// scanned once for its line ends and again for its events; any other line is split off first.
pub fn map_events(
    state: &mut State,
    reader: Reader<'_>,
    payload: &NativeData,
) -> Result<Vec<Action>, MapperError> {
    let Some(text) = payload.as_text() else { return map_event(state, reader, payload) };
    let Reader { rules, publisher } = reader;
    let mut actions = Vec::new();
    let mut rest = text;
    loop {
        let (mapped, len) = match event_text::read_leading(rest) {
            Some((event, len)) => (typed_session_event(state, event), len),
            None => {
                let line = joined::lines(rest).next().unwrap_or_default();
                let reader = Reader { rules, publisher: &mut *publisher };
                (dynamic_event(state, reader, line), line.len())
            }
        };
        if len == text.len() {
            // One event alone, as `map_event` maps it.
            return settle(state, mapped);
        }
        match settle(state, mapped) {
            Ok(mapped) => actions.extend(mapped),
            Err(problem) => actions.push(Action::Terminal(Terminal::Broken(problem))),
        }
        // Past the line and its newline; the last line ends the input.
        let Some(next) = rest.get(len + 1..) else { return Ok(actions) };
        rest = next;
    }
}

/// Maps one event. A protocol break inside a running turn ends the turn broken; outside a turn
/// it is returned as an error.
pub fn map_event(
    state: &mut State,
    reader: Reader<'_>,
    payload: &NativeData,
) -> Result<Vec<Action>, MapperError> {
    let mapped = match payload.as_text() {
        Some(text) => dynamic_event(state, reader, text),
        None => Err(protocol("Native event is binary, not JSON")),
    };
    settle(state, mapped)
}

/// What an event's mapping comes to: a protocol break inside a running turn ends the turn
/// broken; outside a turn it is returned as an error.
fn settle(
    state: &mut State,
    mapped: Result<Vec<Action>, MapperError>,
) -> Result<Vec<Action>, MapperError> {
    match mapped {
        Err(problem) if state.running() => Ok(state.break_turn(problem)),
        other => other,
    }
}

fn dynamic_event(
    state: &mut State,
    reader: Reader<'_>,
    payload: &str,
) -> Result<Vec<Action>, MapperError> {
    if let Some(event) = event_text::read(payload) {
        return typed_session_event(state, event);
    }
    // The general reader, which has the errors.
    let event = parse(payload, ErrorKind::Protocol, "Native event")?;
    let fields = Fields::native(&event, "Native event")?;
    let event_type = fields.str("type")?;
    let body = |key: &str| -> Result<&Value, MapperError> {
        fields.only(&["type", key])?;
        fields.value(key)
    };
    match event_type {
        "snapshot" => snapshot(state, reader, body("snapshot")?),
        "state.updated" => {
            body("notification")?;
            Ok(vec![Action::Ignore("state.updated".to_string())])
        }
        "userInput.response" => {
            fields.only(&["type", "requestId", "response"])?;
            fields.non_empty_str("requestId")?;
            fields.value("response")?;
            Ok(vec![Action::Ignore("userInput.response".to_string())])
        }
        "permission.request" => interactions::permission_request(state, body("request")?),
        "userInput.request" => interactions::user_input_request(state, body("request")?),
        "providerRuntimeHeaders.request" => {
            interactions::provider_headers_request(state, body("request")?)
        }
        "session.event" => session_event(state, body("event")?),
        other => Err(protocol(format!("Unsupported ZCode dynamic event: {other}"))),
    }
}

/// A new snapshot replaces the cached one; during a turn the client hears about it.
fn snapshot(
    state: &mut State,
    reader: Reader<'_>,
    snapshot: &Value,
) -> Result<Vec<Action>, MapperError> {
    state.settings.replace(Snapshot::parse(snapshot, "snapshot event", reader.rules)?);
    if !state.running() {
        return Ok(vec![Action::Ignore("snapshot (cached outside a turn)".to_string())]);
    }
    let plan_operations = state.plan_operations();
    let updates = state.settings.metadata_updates(plan_operations, reader.publisher);
    Ok(updates.into_iter().map(Action::Update).collect())
}

fn session_event(state: &mut State, event: &Value) -> Result<Vec<Action>, MapperError> {
    let fields = Fields::native(event, "session.event")?;
    fields.only(&[
        "eventId",
        "sessionId",
        "turnId",
        "seq",
        "traceId",
        "timestamp",
        "deliveryKind",
        "type",
        "payload",
    ])?;
    fields.non_empty_str("eventId")?;
    fields.str("sessionId")?;
    fields.opt_str("turnId")?;
    fields.opt_str("traceId")?;
    let seq = fields.u64("seq")?;
    let timestamp = fields
        .opt_f64("timestamp")?
        .ok_or_else(|| protocol("session.event: missing field `timestamp`"))?;
    fields.str("deliveryKind")?;
    let event_type = fields.non_empty_str("type")?;
    let payload = fields.object("payload", "session.event payload")?;
    if let Some(actions) = sequenced(state, seq, event_type)? {
        return Ok(actions);
    }
    match event_type {
        "model.streaming" => streaming(state, payload),
        _ => other_event(state, event_type, timestamp, payload),
    }
}

/// A session event read typed ([`event_text`]): the same steps as [`session_event`].
fn typed_session_event(
    state: &mut State,
    event: event_text::SessionEvent<'_>,
) -> Result<Vec<Action>, MapperError> {
    let event_type = event.event_type.as_str();
    if let Some(actions) = sequenced(state, event.seq, event_type)? {
        return Ok(actions);
    }
    match &event.payload {
        event_text::Payload::Streaming(payload) => typed_streaming(state, payload),
        event_text::Payload::Tree(payload) => {
            let payload = Fields::native(payload, "session.event payload")?;
            other_event(state, event_type, event.timestamp, payload)
        }
    }
}

/// What the sequence and the turn phase decide before an event is mapped: `Some` when that
/// is all (a replayed, ignored or stale event, or a gap before a turn's end).
fn sequenced(
    state: &mut State,
    seq: u64,
    event_type: &str,
) -> Result<Option<Vec<Action>>, MapperError> {
    match state.last_seq {
        // Delivered twice (a backlog replayed after a resubscribe): already handled.
        Some(last) if seq <= last => {
            return Ok(Some(vec![Action::Ignore(format!(
                "{event_type} (seq {seq} already seen)"
            ))]));
        }
        // A lost event mid-turn would silently drop text or a tool step: fail closed.
        Some(last) if seq > last + 1 && state.running() => {
            state.last_seq = Some(seq);
            let gap = protocol(format!(
                "ZCode session events out of sequence: expected seq {}, got {seq}",
                last + 1
            ));
            if TURN_ENDS.contains(&event_type) {
                return Ok(Some(state.break_ended_turn(gap)));
            }
            return Err(gap);
        }
        _ => state.last_seq = Some(seq),
    }
    if IGNORED_SESSION_EVENTS.contains(&event_type) {
        return Ok(Some(vec![Action::Ignore(event_type.to_string())]));
    }
    if TURN_EVENTS.contains(&event_type) && !state.running() {
        if state.phase == TurnPhase::Broken && TURN_ENDS.contains(&event_type) {
            return Ok(Some(state.end_broken_turn()));
        }
        return Ok(Some(vec![Action::Ignore(format!("{event_type} outside a turn"))]));
    }
    Ok(None)
}

/// Every session event but `model.streaming`, from its payload tree.
fn other_event(
    state: &mut State,
    event_type: &str,
    timestamp: f64,
    payload: Fields<'_>,
) -> Result<Vec<Action>, MapperError> {
    match event_type {
        "tool.updated" => tool_updated(state, payload),
        "turn.completed" => Ok(turn_completed(state, payload)),
        "turn.failed" => Ok(turn_failed(state, payload)),
        "session.titleUpdated" => match payload.get("title") {
            Some(Value::String(title)) => {
                let update = session_info_update(Some(title), Some(timestamp));
                Ok(update.into_iter().map(Action::Update).collect())
            }
            _ => Ok(vec![Action::Ignore("session.titleUpdated without a title".to_string())]),
        },
        other => Err(protocol(format!("Unsupported ZCode event: {other}"))),
    }
}

fn tool_call_id<'a>(
    payload: &Fields<'a>,
    missing: impl FnOnce() -> String,
) -> Result<&'a str, MapperError> {
    match payload.opt_str("toolCallId")? {
        Some(id) if !id.is_empty() => Ok(id),
        _ => Err(protocol(missing())),
    }
}

fn streaming(state: &mut State, payload: Fields<'_>) -> Result<Vec<Action>, MapperError> {
    let kind = payload.str("kind")?;
    if let Some(chunk_kind) = chunk_kind(kind)? {
        let delta = payload.opt_str("delta")?.unwrap_or_default();
        if delta.is_empty() {
            return Ok(Vec::new());
        }
        let message_id = payload.opt_str("assistantMessageId")?;
        return Ok(vec![text_chunk(chunk_kind, delta, message_id)]);
    }
    let id = tool_call_id(&payload, || format!("Missing toolCallId for stream kind: {kind}"))?;
    let name = payload.opt_str("toolName")?;
    let delta = || Ok(payload.opt_str("delta")?.unwrap_or_default());
    tool_stream(state, kind, id, name, delta, payload.get("input"))
}

/// [`streaming`] of a payload read typed: every field is known to be of its type.
fn typed_streaming(
    state: &mut State,
    payload: &event_text::Streaming<'_>,
) -> Result<Vec<Action>, MapperError> {
    let text = event_text::opt_str;
    let kind = payload.kind.as_str();
    if let Some(chunk_kind) = chunk_kind(kind)? {
        let delta = text(&payload.delta).unwrap_or_default();
        if delta.is_empty() {
            return Ok(Vec::new());
        }
        return Ok(vec![text_chunk(chunk_kind, delta, text(&payload.assistant_message_id))]);
    }
    let id = match text(&payload.tool_call_id) {
        Some(id) if !id.is_empty() => id,
        _ => return Err(protocol(format!("Missing toolCallId for stream kind: {kind}"))),
    };
    let delta = || Ok(text(&payload.delta).unwrap_or_default());
    tool_stream(state, kind, id, text(&payload.tool_name), delta, payload.input.as_ref())
}

/// The ACP chunk a stream kind becomes (`None`: a tool input kind); an unknown kind is an error.
fn chunk_kind(kind: &str) -> Result<Option<Chunk>, MapperError> {
    match kind {
        "text_delta" => Ok(Some(Chunk::Agent)),
        "reasoning_delta" => Ok(Some(Chunk::Thought)),
        "tool_input_start" | "tool_input_delta" | "tool_input_end" | "tool_call" => Ok(None),
        other => Err(protocol(format!("Unsupported model stream kind: {other}"))),
    }
}

/// A text chunk update, written out without a tree (the SDK's builder).
fn text_chunk(chunk: Chunk, delta: &str, message_id: Option<&str>) -> Action {
    Action::Update(update::text_chunk(chunk, delta, message_id))
}

/// The tool input kinds of a stream, for tool `id`; `delta` is read only by the kind that has
/// one.
fn tool_stream<'a>(
    state: &mut State,
    kind: &str,
    id: &str,
    name: Option<&str>,
    delta: impl FnOnce() -> Result<&'a str, MapperError>,
    input: Option<&Value>,
) -> Result<Vec<Action>, MapperError> {
    let tools = &mut state.tools;
    match kind {
        "tool_input_start" => tools.input_started(id, name),
        "tool_input_delta" => tools.input_delta(id, delta()?),
        "tool_call" => {
            tools.set_input(id, name, input);
            let announced = tools.announce(id, name, &state.workspace);
            return Ok(announced.into_iter().map(Action::Update).collect());
        }
        _ => {}
    }
    Ok(Vec::new())
}

fn tool_updated(state: &mut State, payload: Fields<'_>) -> Result<Vec<Action>, MapperError> {
    let kind = payload.str("kind")?;
    if kind == "batch" {
        return Ok(vec![Action::Ignore("tool.updated batch".to_string())]);
    }
    if !matches!(kind, "scheduled" | "started" | "progress" | "result" | "error") {
        return Err(protocol(format!("Unsupported tool update kind: {kind}")));
    }
    let id = tool_call_id(&payload, || "Tool update has no ID".to_string())?;
    let name = payload.opt_str("toolName")?;
    let workspace = state.workspace.clone();
    let tools = &mut state.tools;
    if kind == "scheduled" {
        tools.set_input(id, name, payload.get("input"));
    }
    let mut updates: Vec<String> = tools.announce(id, name, &workspace).into_iter().collect();
    match kind {
        "started" | "progress" => updates.extend(tools.progressed(id, kind)?),
        "result" => updates.push(tools.completed(
            id,
            payload.get("result").unwrap_or(&Value::Null),
            &workspace,
        )),
        "error" => updates.push(tools.failed(id, payload.get("error"))),
        _ => {}
    }
    Ok(updates.into_iter().map(Action::Update).collect())
}

fn turn_completed(state: &mut State, payload: Fields<'_>) -> Vec<Action> {
    if state.cancelled {
        return state.end_turn(Terminal::Stop(StopReason::Cancelled));
    }
    let result_type = payload.get("resultType").and_then(Value::as_str);
    let reason = match result_type {
        Some("success") => StopReason::EndTurn,
        Some("max_tokens" | "token_limit") => StopReason::MaxTokens,
        Some("max_turn_requests" | "request_limit") => StopReason::MaxTurnRequests,
        Some("refusal") => StopReason::Refusal,
        Some("cancelled" | "interrupted" | "stopped") => StopReason::Cancelled,
        other => {
            let shown = other.map_or_else(|| "<missing>".to_string(), str::to_string);
            return state
                .break_ended_turn(protocol(format!("Unsupported ZCode terminal result: {shown}")));
        }
    };
    state.end_turn(Terminal::Stop(reason))
}

fn turn_failed(state: &mut State, payload: Fields<'_>) -> Vec<Action> {
    if state.cancelled {
        return state.end_turn(Terminal::Stop(StopReason::Cancelled));
    }
    let message = payload
        .get("error")
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or("ZCode turn failed");
    state.end_turn(Terminal::Failed(error(ErrorKind::Native, message)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use zcode_mapper_sdk::contract::{
        Action, ClientFeatures, ErrorKind, MapperError, StopReason, Terminal,
    };

    use super::*;
    use crate::test_support::*;
    use zcode_mapper_sdk::json::canonical;

    /// Every session event the typed reader accepts maps as the general reader maps it, step
    /// by step through a turn (sequence checks, tools, an error, the end).
    #[test]
    fn the_typed_reader_maps_as_the_general_one() {
        let steps = [
            (
                1,
                "model.streaming",
                json!({"kind": "text_delta", "delta": "Hi \"there\"\n", "assistantMessageId": "m1"}),
            ),
            (2, "model.streaming", json!({"kind": "reasoning_delta", "delta": "hmm"})),
            (3, "model.streaming", json!({"kind": "text_delta", "delta": ""})),
            (
                4,
                "model.streaming",
                json!({"kind": "tool_input_start", "toolCallId": "t1", "toolName": "Bash"}),
            ),
            (
                5,
                "model.streaming",
                json!({"kind": "tool_input_delta", "toolCallId": "t1", "delta": "{\"command\":"}),
            ),
            (
                6,
                "model.streaming",
                json!({"kind": "tool_input_delta", "toolCallId": "t1", "delta": "\"ls\"}"}),
            ),
            (7, "model.streaming", json!({"kind": "tool_input_end", "toolCallId": "t1"})),
            (
                8,
                "model.streaming",
                json!({"kind": "tool_call", "toolCallId": "t1", "toolName": "Bash"}),
            ),
            (
                9,
                "model.streaming",
                json!({"kind": "tool_call", "toolCallId": "t2", "input": {"pattern": "x"}, "toolName": "Grep"}),
            ),
            (10, "tool.updated", json!({"kind": "started", "toolCallId": "t1"})),
            (11, "session.titleUpdated", json!({"title": "A title"})),
            (12, "turn.started", json!({})),
            (12, "model.streaming", json!({"kind": "text_delta", "delta": "again"})),
            (13, "model.streaming", json!({"kind": "tool_call", "toolCallId": ""})),
            (15, "model.streaming", json!({"kind": "text_delta", "delta": "after a gap"})),
            (16, "model.streaming", json!({"kind": "text_start"})),
            (17, "message.upserted", json!({})),
            (18, "turn.completed", json!({"resultType": "success"})),
            (19, "model.streaming", json!({"kind": "text_delta", "delta": "late"})),
        ];
        let state = || {
            let mut state = State::new("/w".into(), ClientFeatures::default());
            state.start_turn();
            state
        };
        let (mut typed, mut general) = (state(), state());
        for (seq, event_type, payload) in steps {
            let event = json!({"type": "session.event", "event": {
                "eventId": format!("e-{seq}"), "sessionId": "s", "turnId": "t", "seq": seq,
                "timestamp": 1_757_000_000_000_u64, "deliveryKind": "desktop-continuous",
                "type": event_type, "payload": payload,
            }});
            let text = event.to_string();
            let read = event_text::read(&text).expect("read typed");
            let typed_actions = typed_session_event(&mut typed, read);
            let general_actions = session_event(&mut general, &event["event"]);
            assert_eq!(typed_actions, general_actions, "seq {seq} {event_type}");
            assert_eq!((typed.last_seq, typed.phase), (general.last_seq, general.phase));
        }
        assert_eq!(typed.phase, TurnPhase::Ended, "the script reached the end of the turn");
    }

    /// What the typed reader leaves to the general one gets the general one's answer.
    #[test]
    fn unusual_deltas_are_mapped_or_refused_as_before() {
        let mut driver = running(true, true);
        let extra =
            json!({"kind": "text_delta", "delta": "x", "partId": "p", "assistantMessageId": "m"});
        assert_eq!(
            updates_of(&driver.session_event("model.streaming", extra)),
            [
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}, "messageId": "m"})
            ],
            "a payload's unknown fields are not read"
        );
        let wrong = json!({"kind": "text_delta", "delta": 5});
        assert_eq!(
            broken_message(&driver.session_event("model.streaming", wrong)),
            "session.event payload: field `delta` must be a string"
        );
        let mut driver = running(true, true);
        let missing = json!({"delta": "x"});
        assert_eq!(
            broken_message(&driver.session_event("model.streaming", missing)),
            "session.event payload: missing field `kind`"
        );
        let mut driver = running(true, true);
        let event = json!({"type": "session.event", "event": {"eventId": "e", "sessionId": "session-1", "seq": 1, "deliveryKind": "desktop-continuous", "type": "model.streaming", "payload": {"kind": "text_delta", "delta": "x"}}});
        assert_eq!(
            broken_message(&driver.event(event)),
            "session.event: missing field `timestamp`"
        );
        let mut driver = running(true, true);
        let event = json!({"type": "session.event", "event": {"eventId": "e", "sessionId": "session-1", "seq": "1", "timestamp": 1, "deliveryKind": "desktop-continuous", "type": "model.streaming", "payload": {"kind": "text_delta", "delta": "x"}}});
        assert_eq!(
            broken_message(&driver.event(event)),
            "session.event: field `seq` must be a non-negative integer"
        );
    }

    /// A number beyond f64's range is JSON (V8 reads `1e400` as Infinity), so the framer routes
    /// it; no reader here can hold it, and a turn that gets one ends broken, never silently.
    #[test]
    fn a_number_out_of_range_breaks_the_turn() {
        let event = |timestamp: &str, payload: &str| {
            format!(
                r#"{{"type":"session.event","event":{{"eventId":"e-1","sessionId":"session-1","turnId":"turn-1","seq":1,"timestamp":{timestamp},"deliveryKind":"desktop-continuous","type":"model.streaming","payload":{payload}}}}}"#
            )
        };
        let delta = r#"{"kind":"text_delta","delta":"x"}"#;
        let tool_call =
            r#"{"kind":"tool_call","toolCallId":"t1","toolName":"Bash","input":{"n":-2e308}}"#;
        for text in [event("17570e9000000", delta), event("1", tool_call)] {
            let mut driver = running(true, true);
            let actions = driver.try_event_text(&text).expect("a turn's break is its terminal");
            let message = broken_message(&actions);
            assert_eq!(message, "Native event holds a number out of range", "{text}");
            assert_eq!(updates_of(&actions), Vec::<serde_json::Value>::new(), "{text}");
        }
    }

    /// Events the connection joined for one session map as they map one by one, in a turn and
    /// outside one, a broken event included: a broken terminal where the SDK's mapping puts
    /// one for an input that fails, and the events after it mapped as before.
    #[test]
    fn joined_events_map_as_they_map_alone() {
        use zcode_mapper_sdk::Session as _;

        let delta = |seq: u64| {
            json!({"type": "session.event", "event": {
                "eventId": format!("e-{seq}"), "sessionId": "session-1", "turnId": "turn-1",
                "seq": seq, "timestamp": 1_757_000_000_000_u64, "deliveryKind": "desktop-continuous",
                "type": "model.streaming", "payload": {"kind": "text_delta", "delta": format!("d{seq}")},
            }})
            .to_string()
        };
        let broken = r#"{"type":"session.event","event":{"seq":"x"}}"#.to_string();
        let completed = json!({"type": "session.event", "event": {
            "eventId": "e-9", "sessionId": "session-1", "turnId": "turn-1", "seq": 9,
            "timestamp": 1_757_000_000_000_u64, "deliveryKind": "desktop-continuous",
            "type": "turn.completed", "payload": {"resultType": "success"}}})
        .to_string();
        let scripts = [
            vec![delta(1), delta(2), delta(3), completed.clone()],
            vec![delta(1), broken.clone(), delta(2), delta(3)],
        ];
        let map = |driver: &mut Driver, text: &str| match driver
            .session
            .session_mut()
            .map_event(&NativeData::Text(text.to_string()))
        {
            Ok(mapped) => mapped.actions,
            Err(problem) => vec![Action::Terminal(Terminal::Broken(problem))],
        };
        for in_turn in [true, false] {
            for lines in &scripts {
                let fresh = || match in_turn {
                    true => running(true, true),
                    false => {
                        let mut driver = Driver::new(true, true);
                        driver.create();
                        driver
                    }
                };
                let (mut alone, mut joined) = (fresh(), fresh());
                let expected: Vec<Action> = lines.iter().flat_map(|l| map(&mut alone, l)).collect();
                assert!(expected.len() >= lines.len(), "{expected:?}");
                assert_eq!(map(&mut joined, &lines.join("\n")), expected, "in a turn: {in_turn}");
            }
        }
    }

    /// The chunk's text is the text the tree of the update was written as in the component
    /// (keys sorted, see `text_chunk`), escapes and all.
    #[test]
    fn text_chunks_keep_the_delta_byte_for_byte() {
        let mut driver = running(true, true);
        let delta = "a \"quoted\" \\ line\nnext \u{e9}\u{1F600} </x> \u{7}\t";
        for (message_id, kind, chunk_kind) in [
            (Some("msg-1"), "text_delta", "agent_message_chunk"),
            (None, "reasoning_delta", "agent_thought_chunk"),
        ] {
            let mut payload = json!({"kind": kind, "delta": delta});
            let mut expected =
                json!({"sessionUpdate": chunk_kind, "content": {"type": "text", "text": delta}});
            if let Some(id) = message_id {
                payload["assistantMessageId"] = json!(id);
                expected["messageId"] = json!(id);
            }
            let actions = driver.session_event("model.streaming", payload);
            assert_eq!(actions, [Action::Update(canonical(&expected))], "{kind}");
        }
    }

    #[test]
    fn streams_text_and_reasoning() {
        let mut driver = running(true, true);
        let actions = driver.session_event(
            "model.streaming",
            json!({"kind": "text_delta", "delta": "Hi", "assistantMessageId": "a1"}),
        );
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}, "messageId": "a1"})
            ]
        );
        let actions = driver
            .session_event("model.streaming", json!({"kind": "reasoning_delta", "delta": "hmm"}));
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
            ]
        );
        assert!(
            driver
                .session_event("model.streaming", json!({"kind": "text_delta", "delta": ""}))
                .is_empty()
        );
        let actions = driver.session_event("model.streaming", json!({"kind": "text_start"}));
        assert_eq!(broken_message(&actions), "Unsupported model stream kind: text_start");
    }

    #[test]
    fn follows_the_tool_lifecycle() {
        let mut driver = running(true, true);
        assert!(
            driver
                .session_event(
                    "model.streaming",
                    json!({"kind": "tool_input_start", "toolCallId": "t1", "toolName": "Bash"})
                )
                .is_empty()
        );
        assert!(
            driver
                .session_event(
                    "model.streaming",
                    json!({"kind": "tool_input_delta", "toolCallId": "t1", "delta": "{\"command\":"})
                )
                .is_empty()
        );
        assert!(
            driver
                .session_event(
                    "model.streaming",
                    json!({"kind": "tool_input_delta", "toolCallId": "t1", "delta": "\"ls\"}"})
                )
                .is_empty()
        );
        assert!(
            driver
                .session_event(
                    "model.streaming",
                    json!({"kind": "tool_input_end", "toolCallId": "t1"})
                )
                .is_empty()
        );
        let actions = driver.session_event(
            "model.streaming",
            json!({"kind": "tool_call", "toolCallId": "t1", "toolName": "Bash"}),
        );
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Bash: ls", "kind": "execute", "status": "pending", "rawInput": {"command": "ls"}})
            ]
        );
        assert!(
            driver
                .session_event(
                    "tool.updated",
                    json!({"kind": "scheduled", "toolCallId": "t1", "toolName": "Bash"})
                )
                .is_empty()
        );
        let actions =
            driver.session_event("tool.updated", json!({"kind": "started", "toolCallId": "t1"}));
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})
            ]
        );
        assert!(
            driver
                .session_event(
                    "tool.updated",
                    json!({"kind": "progress", "toolCallId": "t1", "elapsedMs": 5, "stdoutTail": "a"})
                )
                .is_empty()
        );
        let actions = driver.session_event(
            "tool.updated",
            json!({"kind": "result", "toolCallId": "t1", "result": {"content": "a.rs"}}),
        );
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": {"content": "a.rs"}, "content": [{"type": "content", "content": {"type": "text", "text": "a.rs"}}]})
            ]
        );
        let actions =
            driver.session_event("tool.updated", json!({"kind": "progress", "toolCallId": "t1"}));
        assert_eq!(broken_message(&actions), "Invalid tool transition: progress after completed");
    }

    #[test]
    fn announces_progress_first_tools_and_keeps_later_errors() {
        let mut driver = running(true, true);
        let actions = driver.session_event(
            "tool.updated",
            json!({"kind": "progress", "toolCallId": "t9", "toolName": "Grep"}),
        );
        assert_eq!(update_kinds(&updates_of(&actions)), ["tool_call", "tool_call_update"]);
        assert_eq!(updates_of(&actions)[0]["kind"], "search");
        let actions = driver.session_event(
            "tool.updated",
            json!({"kind": "error", "toolCallId": "t9", "error": {"message": "bad pattern"}}),
        );
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "failed", "rawOutput": {"message": "bad pattern"}, "content": [{"type": "content", "content": {"type": "text", "text": "bad pattern"}}]})
            ]
        );
        assert_eq!(
            driver.session_event("tool.updated", json!({"kind": "batch"})),
            [Action::Ignore("tool.updated batch".into())]
        );
        assert_eq!(
            broken_message(&driver.session_event("tool.updated", json!({"kind": "result"}))),
            "Tool update has no ID"
        );
    }

    #[test]
    fn rejects_tool_updates_of_unknown_kinds_and_stream_kinds_without_ids() {
        let mut driver = running(true, true);
        assert_eq!(
            broken_message(
                &driver.session_event("tool.updated", json!({"kind": "paused", "toolCallId": "t"}))
            ),
            "Unsupported tool update kind: paused"
        );
        let mut driver = running(true, true);
        assert_eq!(
            broken_message(&driver.session_event("model.streaming", json!({"kind": "tool_call"}))),
            "Missing toolCallId for stream kind: tool_call"
        );
    }

    #[test]
    fn maps_terminal_results_to_stop_reasons() {
        let cases = [
            ("success", StopReason::EndTurn),
            ("max_tokens", StopReason::MaxTokens),
            ("token_limit", StopReason::MaxTokens),
            ("max_turn_requests", StopReason::MaxTurnRequests),
            ("request_limit", StopReason::MaxTurnRequests),
            ("refusal", StopReason::Refusal),
            ("cancelled", StopReason::Cancelled),
            ("interrupted", StopReason::Cancelled),
            ("stopped", StopReason::Cancelled),
        ];
        for (result_type, reason) in cases {
            let mut driver = running(true, true);
            let actions =
                driver.session_event("turn.completed", json!({"resultType": result_type}));
            assert_eq!(actions, [Action::Terminal(Terminal::Stop(reason))], "{result_type}");
        }
        // The unmappable end breaks the turn, and is also the native end the core waits for.
        let mut driver = running(true, true);
        let actions = driver.session_event("turn.completed", json!({"resultType": "overloaded"}));
        assert_eq!(broken_message(&actions), "Unsupported ZCode terminal result: overloaded");
        assert_eq!(actions.last(), Some(&Action::Terminal(Terminal::Stop(StopReason::Cancelled))));
        let mut driver = running(true, true);
        assert_eq!(
            broken_message(&driver.session_event("turn.completed", json!({}))),
            "Unsupported ZCode terminal result: <missing>"
        );
    }

    #[test]
    fn reports_failed_turns_with_the_native_message() {
        let mut driver = running(true, true);
        let actions =
            driver.session_event("turn.failed", json!({"error": {"message": "Rate limited"}}));
        assert_eq!(
            actions,
            [Action::Terminal(Terminal::Failed(MapperError::new(
                ErrorKind::Native,
                "Rate limited"
            )))]
        );
        let mut driver = running(true, true);
        let actions = driver.session_event("turn.failed", json!({}));
        assert_eq!(
            actions,
            [Action::Terminal(Terminal::Failed(MapperError::new(
                ErrorKind::Native,
                "ZCode turn failed"
            )))]
        );
    }

    #[test]
    fn zcodes_own_end_of_a_broken_turn_frees_the_session() {
        for end in
            [("turn.completed", json!({"resultType": "success"})), ("turn.failed", json!({}))]
        {
            let mut driver = running(true, true);
            let actions = driver.session_event("model.streaming", json!({"kind": "text_start"}));
            assert_eq!(broken_message(&actions), "Unsupported model stream kind: text_start");
            // Stragglers of the broken turn are dropped; its end reaches the core exactly once.
            assert_eq!(
                driver
                    .session_event("model.streaming", json!({"kind": "text_delta", "delta": "x"})),
                [Action::Ignore("model.streaming outside a turn".into())]
            );
            let actions = driver.session_event(end.0, end.1.clone());
            assert_eq!(
                actions,
                [Action::Terminal(Terminal::Stop(StopReason::Cancelled))],
                "{}",
                end.0
            );
            assert_eq!(
                driver.session_event(end.0, end.1),
                [Action::Ignore(format!("{} outside a turn", end.0))]
            );
        }
    }

    #[test]
    fn drops_turn_events_outside_a_turn() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        assert_eq!(
            driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "old"})),
            [Action::Ignore("model.streaming outside a turn".into())]
        );
        assert_eq!(
            driver.session_event("turn.completed", json!({"resultType": "success"})),
            [Action::Ignore("turn.completed outside a turn".into())]
        );
        assert_eq!(
            driver.session_event("turn.started", json!({})),
            [Action::Ignore("turn.started".into())]
        );
        let mut driver = running(true, true);
        driver.session_event("turn.completed", json!({"resultType": "success"}));
        assert_eq!(
            driver.session_event("tool.updated", json!({"kind": "result", "toolCallId": "late"})),
            [Action::Ignore("tool.updated outside a turn".into())]
        );
    }

    #[test]
    fn updates_titles_with_the_event_time() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let actions = driver.session_event("session.titleUpdated", json!({"title": "New title"}));
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "session_info_update", "title": "New title", "updatedAt": "2025-09-04T15:33:20.001Z"})
            ]
        );
    }

    #[test]
    fn fails_closed_on_unknown_or_malformed_events() {
        // Outside a turn the error is returned; inside, the turn breaks.
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let problem = driver.try_event(json!({"type": "session.deleted"})).unwrap_err();
        assert_eq!(
            (problem.kind, problem.message.as_str()),
            (ErrorKind::Protocol, "Unsupported ZCode dynamic event: session.deleted")
        );
        let problem = driver
            .try_event(json!({"type": "state.updated", "notification": {}, "extra": 1}))
            .unwrap_err();
        assert_eq!(problem.message, "Native event: unexpected field `extra`");
        let problem = driver.try_event(json!({"type": "state.updated"})).unwrap_err();
        assert_eq!(problem.message, "Native event: missing field `notification`");
        assert!(driver.try_event(json!("x")).is_err());

        let mut driver = running(true, true);
        let actions = driver.session_event("message.upserted", json!({}));
        assert_eq!(broken_message(&actions), "Unsupported ZCode event: message.upserted");
        // The broken turn is over: its stragglers are ignored, and ZCode's own end of it only
        // tells the core that the stopped turn has ended.
        assert_eq!(
            driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "x"})),
            [Action::Ignore("model.streaming outside a turn".into())]
        );
        assert_eq!(
            driver.session_event("turn.failed", json!({})),
            [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]
        );

        let mut driver = running(true, true);
        let event = json!({"type": "session.event", "event": {"eventId": "e", "sessionId": "session-1", "seq": -1, "timestamp": 1, "deliveryKind": "desktop-continuous", "type": "turn.started", "payload": {}}});
        assert_eq!(
            broken_message(&driver.event(event)),
            "session.event: field `seq` must be a non-negative integer"
        );
        let mut driver = running(true, true);
        let event = json!({"type": "session.event", "event": {"eventId": "e", "sessionId": "session-1", "seq": 1, "timestamp": 1, "deliveryKind": "desktop-continuous", "type": "turn.started", "payload": {}, "x": 1}});
        assert_eq!(broken_message(&driver.event(event)), "session.event: unexpected field `x`");
    }

    #[test]
    fn ignores_allowlisted_events() {
        let mut driver = running(true, true);
        for kind in [
            "session.updated",
            "streamRecovery.updated",
            "turn.started",
            "permission.requested",
            "permission.resolved",
            "checkpoint.created",
        ] {
            assert_eq!(driver.session_event(kind, json!({})), [Action::Ignore(kind.into())]);
        }
        assert_eq!(
            driver.event(json!({"type": "state.updated", "notification": null})),
            [Action::Ignore("state.updated".into())]
        );
        assert_eq!(
            driver.event(json!({"type": "userInput.response", "requestId": "r", "response": {}})),
            [Action::Ignore("userInput.response".into())]
        );
    }

    #[test]
    fn republishes_metadata_for_snapshots_during_a_turn() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let mut changed = snapshot_json();
        changed["settings"]["mode"]["current"] = json!("plan");
        assert_eq!(
            driver.event(json!({"type": "snapshot", "snapshot": changed.clone()})),
            [Action::Ignore("snapshot (cached outside a turn)".into())]
        );
        let prompt = driver.prompt("go");
        // The prompt publishes what the cached snapshot changed, and only that.
        assert_eq!(
            prompt.updates(),
            [json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})]
        );
        changed["todos"] = json!([]);
        let actions = driver.event(json!({"type": "snapshot", "snapshot": changed}));
        assert_eq!(
            updates_of(&actions),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-todos"})]
        );
        let mut bad = snapshot_json();
        bad["settings"]["mode"]["current"] = json!("future-mode");
        assert_eq!(
            broken_message(&driver.event(json!({"type": "snapshot", "snapshot": bad}))),
            "ZCode returned a mode outside the published catalog: future-mode"
        );
    }

    #[test]
    fn session_events_must_come_in_sequence_during_a_turn() {
        let mut driver = running(true, true);
        let first =
            driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "a"}));
        assert_eq!(update_kinds(&updates_of(&first)), ["agent_message_chunk"]);
        // The same event delivered again (a replayed backlog) is ignored, not shown twice.
        let seq = driver.seq;
        driver.seq -= 1;
        let again =
            driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "a"}));
        assert!(matches!(again.as_slice(), [Action::Ignore(why)] if why.contains("already seen")));
        // A lost event mid-turn breaks the turn instead of silently dropping content.
        driver.seq = seq + 1;
        let gap =
            driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "c"}));
        assert_eq!(
            broken_message(&gap),
            format!(
                "ZCode session events out of sequence: expected seq {}, got {}",
                seq + 1,
                seq + 2
            )
        );
        // A gap before the native end: the turn breaks, and that end is reported with it.
        let mut driver = running(true, true);
        driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "a"}));
        driver.seq += 1;
        let actions = driver.session_event("turn.completed", json!({"resultType": "success"}));
        assert!(broken_message(&actions).contains("out of sequence"));
        assert_eq!(actions.last(), Some(&Action::Terminal(Terminal::Stop(StopReason::Cancelled))));
    }
}
