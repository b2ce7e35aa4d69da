//! The session: opening, frames, turns, interactions, recovery and settings.

use serde_json::{Value, json};
use zcode_contract::{
    Action, ClientFeatures, Effects, InteractionAnswer, InteractionOutcome, InteractionRequest,
    SessionInit, SessionInput, SessionOp, Step, StopReason, Terminal,
};
use zcode_mapper_sdk::{Connection as _, SessionMachine as _};

use super::support::*;
use crate::ServicesSession;

pub(super) const SID: &str = "sess-1";
pub(super) const SUB: &str = "sub-1";

pub(super) fn init() -> SessionInit {
    SessionInit {
        facts: Default::default(),
        workspace: "/w".into(),
        client: ClientFeatures { plan_operations: true, form_elicitation: true },
    }
}

/// A created, subscribed session; returns it and the next free request id.
pub(super) fn created() -> (ServicesSession, u64) {
    let mut session = ServicesSession::new(&init());
    let first =
        wait(session.start(1, &SessionOp::Create(r#"{"cwd":"/w","mcpServers":[]}"#.into()), 1));
    assert_eq!(call(&first.requests[0]), ("initialize".into(), json!({"workspacePath": "/w"})));
    let create = wait(session.resume(1, Some(&reply(1, json!({"available": true}))), 2));
    assert_eq!(
        call(&create.requests[0]),
        (
            "createSession".into(),
            json!({"workspacePath": "/w", "persistence": "immediate", "mcpServers": []})
        )
    );
    let subscribe = wait(session.resume(1, Some(&reply(2, session_snapshot(SID))), 3));
    assert_eq!(subscribe.routes_added, ["3"]);
    let (header, body) = request(&subscribe.requests[0]);
    assert_eq!(header, json!([102, 3, "zcode-agent", "onDynamicConversationFrame"]));
    assert_eq!(body, json!({"workspacePath": "/w", "sessionId": SID}));
    assert_eq!(subscribe.requests[0].timeout_ms, 0);
    assert_eq!(
        call(&subscribe.requests[1]),
        ("subscribeConversationV4".into(), json!({"workspacePath": "/w", "sessionId": SID}))
    );
    let ack = json!({"ack": {"subscriptionId": SUB, "mode": "snapshot", "logEpoch": "epoch"}});
    let (response, updates) = done(session.resume(1, Some(&reply(4, ack)), 5));
    assert_eq!(response["sessionId"], SID);
    assert_eq!(response["modes"]["currentModeId"], "build");
    assert_eq!(response["configOptions"][0]["currentValue"], "[\"zai\",\"glm-5\"]");
    assert_eq!(updates[0]["sessionUpdate"], "available_commands_update");
    assert_eq!(updates[0]["availableCommands"][0]["name"], "compact");
    (session, 5)
}

pub(super) fn map(session: &mut ServicesSession, inputs: Vec<SessionInput>) -> Effects {
    session.map(&inputs)
}

pub(super) fn frame(session: &mut ServicesSession, ordinal: u64, logical: Value) -> Effects {
    map(session, vec![frame_input(&complete(ordinal, "online", SUB, SID, logical))])
}

/// Deltas `from..to` of the session's conversation, in the frame `ordinal`.
pub(super) fn deltas(
    session: &mut ServicesSession,
    ordinal: u64,
    from: u64,
    to: u64,
    ops: Value,
) -> Effects {
    frame(session, ordinal, deltas_frame(SID, SUB, from, to, ops))
}

pub(super) fn updates(effects: &Effects) -> Vec<Value> {
    effects
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Update(u) => Some(serde_json::from_str(u).unwrap()),
            _ => None,
        })
        .collect()
}

pub(super) fn terminals(effects: &Effects) -> Vec<Terminal> {
    effects
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Terminal(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

/// Subscribes with the initial snapshot at seq 1.
pub(super) fn live() -> (ServicesSession, u64) {
    let (mut session, next) = created();
    let initial =
        complete(1, "initial", SUB, SID, snapshot_frame(SID, SUB, &snapshot(SID, 1, json!([]))));
    let effects = map(&mut session, vec![frame_input(&initial)]);
    assert!(terminals(&effects).is_empty(), "{effects:?}");
    assert_eq!(effects.requests, 0);
    (session, next)
}

/// Sends a prompt and has it accepted; returns the command id.
pub(super) fn prompted(session: &mut ServicesSession, next: u64) -> String {
    let send = wait(session.start(
        2,
        &SessionOp::Prompt(
            r#"{"sessionId":"sess-1","prompt":[{"type":"text","text":"Fix it"}]}"#.into(),
        ),
        next,
    ));
    let (method, arg) = call(&send.requests[0]);
    assert_eq!(method, "sendConversationCommandV4");
    let envelope = &arg["envelope"];
    assert_eq!(envelope["type"], "sendText");
    assert_eq!(envelope["payload"], json!({"text": "Fix it", "requestedDelivery": "startNow"}));
    assert!(envelope.get("baseRevision").is_none());
    let command_id = envelope["commandId"].as_str().unwrap().to_string();
    let ack = json!({"commandId": command_id, "status": "accepted", "revisionAtDecision": 1,
                     "result": {"type": "inputAccepted", "delivery": "startNow", "inputId": command_id}});
    let (response, _) = done(session.resume(2, Some(&reply(next, ack)), next + 1));
    assert_eq!(response, json!({}));
    command_id
}

#[test]
fn creates_subscribes_and_takes_the_initial_snapshot() {
    let (mut session, _) = created();
    let mut other = complete(1, "initial", "sub-other", SID, json!({}));
    assert!(matches!(&map(&mut session, vec![frame_input(&other)]).actions[0], Action::Ignore(_)));
    other["topic"] = json!("conversation/elsewhere");
    assert!(matches!(&map(&mut session, vec![frame_input(&other)]).actions[0], Action::Ignore(_)));
    let initial =
        complete(1, "initial", SUB, SID, snapshot_frame(SID, SUB, &snapshot(SID, 1, json!([]))));
    let effects = map(&mut session, vec![frame_input(&initial)]);
    // The V4 config names two thought levels and is already what was advertised but for them.
    assert!(
        updates(&effects).iter().all(|u| u["sessionUpdate"] == "config_option_update"),
        "{effects:?}"
    );
}

#[test]
fn a_prompt_streams_text_and_ends_by_the_completion_rule() {
    let (mut session, next) = live();
    let command_id = prompted(&mut session, next);
    let running = deltas(
        &mut session,
        2,
        1,
        4,
        json!([
            {"op": "state.updated", "patch": {"revision": 2, "control": running_control()}},
            {"op": "row.appended", "row": row(10, "turnHeader", json!({"origin": "userInput", "state": "running", "startedAt": 1, "sourceCommandId": command_id}))},
            {"op": "row.appended", "row": row(11, "userInput", json!({"origin": "realUser", "text": "Fix it", "sourceCommandId": command_id}))},
            {"op": "row.appended", "row": row(12, "assistantText", json!({"text": "Done", "state": "streaming", "assistantResponseId": "resp-1"}))},
        ]),
    );
    assert_eq!(
        updates(&running),
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done"}, "messageId": "resp-1"})
        ]
    );
    assert!(terminals(&running).is_empty());
    let more = deltas(
        &mut session,
        3,
        4,
        5,
        json!([{"op": "row.delta", "rowId": 12, "path": "text", "append": "."}]),
    );
    assert_eq!(updates(&more)[0]["content"]["text"], ".");
    let end = deltas(
        &mut session,
        4,
        5,
        7,
        json!([
            {"op": "row.upserted", "row": row(12, "assistantText", json!({"text": "Done.", "state": "complete", "assistantResponseId": "resp-1"}))},
            {"op": "row.upserted", "row": row(10, "turnHeader", json!({"origin": "userInput", "state": "completedSuccess", "startedAt": 1, "sourceCommandId": command_id}))},
            {"op": "state.updated", "patch": {"revision": 3, "control": idle_control(),
                "usage": {"contextWindow": {"usedTokens": 1200, "maxTokens": 200000, "autoCompactThresholdTokens": null}, "cumulative": {"inputTokens": 1000, "outputTokens": 200, "cacheReadTokens": 0, "cacheWriteTokens": 0}}}},
        ]),
    );
    assert_eq!(terminals(&end), [Terminal::Stop(StopReason::EndTurn)]);
    assert!(
        updates(&end)
            .iter()
            .any(|u| u == &json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000}))
    );
    let (usage, _) = done(session.start(3, &SessionOp::FinishTurn, 20));
    assert_eq!(
        usage,
        json!({"totalTokens": 1200, "inputTokens": 1000, "outputTokens": 200, "cachedReadTokens": 0, "cachedWriteTokens": 0})
    );
}

/// A streamed deltas frame is read with no tree of it (`zcode_v4::stream::read_checked_frame`),
/// and maps exactly as the general reader maps it: the same frames, made unusual for that read
/// only by ordinals written as floats, give the same effects, a fault included.
#[test]
fn a_deltas_frame_read_with_no_tree_maps_as_its_tree_does() {
    let run = |as_trees: bool| {
        let (mut session, next) = live();
        let command_id = prompted(&mut session, next);
        let header = |state: &str| {
            let fields = json!({"origin": "userInput", "state": state, "startedAt": 1, "sourceCommandId": command_id});
            row(10, "turnHeader", fields)
        };
        let text = |text: &str, state: &str| {
            let fields = json!({"text": text, "state": state, "assistantResponseId": "resp-1"});
            row(12, "assistantText", fields)
        };
        let append =
            |text: &str| json!({"op": "row.delta", "rowId": 12, "path": "text", "append": text});
        let frames = [
            json!([
                {"op": "state.updated", "patch": {"revision": 2, "control": running_control()}},
                {"op": "row.appended", "row": header("running")},
                {"op": "row.appended", "row": row(11, "userInput", json!({"origin": "realUser", "text": "Fix it", "sourceCommandId": command_id}))},
                {"op": "row.appended", "row": text("Do", "streaming")},
            ]),
            // Escapes, and a row id written as a float (that delta is read as a tree).
            json!([append("ne \"q\"\n"), append("é"),
                   {"op": "row.delta", "rowId": 12.0, "path": "text", "append": "!"}]),
            json!([
                {"op": "row.upserted", "row": text("Done \"q\"\né!", "complete")},
                {"op": "row.upserted", "row": header("completedSuccess")},
                {"op": "state.updated", "patch": {"revision": 3, "control": idle_control(),
                    "usage": {"contextWindow": {"usedTokens": 1200, "maxTokens": 200000, "autoCompactThresholdTokens": null}, "cumulative": {"inputTokens": 1000, "outputTokens": 200, "cacheReadTokens": 0, "cacheWriteTokens": 0}}}},
            ]),
            // An unknown member, outside a turn: a resync.
            json!([{"op": "row.delta", "rowId": 12, "path": "text", "append": "x", "extra": 1}]),
        ];
        let mut seq = 1;
        let mut effects = Vec::new();
        for (index, ops) in frames.into_iter().enumerate() {
            let count = ops.as_array().unwrap().len() as u64;
            let logical = deltas_frame(SID, SUB, seq, seq + count, ops);
            let mut wire = complete(index as u64 + 2, "online", SUB, SID, logical);
            if as_trees {
                wire["logicalFrameOrdinal"] = json!(index as f64 + 2.0);
            }
            let text = wire.to_string();
            assert_eq!(zcode_v4::stream::read_checked_frame(&text).is_none(), as_trees, "{text}");
            effects.push(format!("{:?}", map(&mut session, vec![frame_input(&wire)])));
            seq += count;
        }
        effects
    };
    let (read, trees) = (run(false), run(true));
    assert_eq!(read, trees);
    assert!(read[1].contains(r#"ne \\\"q\\\"\\n"#), "{}", read[1]);
    assert!(read[2].contains("EndTurn"), "{}", read[2]);
    assert!(read[3].contains("resynchronising the conversation: V4 delta: unknown field"));
}

/// A session opened again (a load after a close) is a fresh mapper session at command 1; if
/// its first prompt goes out before the initial snapshot is mapped, the log position cannot
/// tell its command id from the earlier session's, so the connection's request id does.
#[test]
fn a_session_opened_again_repeats_no_command_id_and_a_duplicate_ack_is_no_admission() {
    let (mut first, next) = created();
    let first_id = prompted(&mut first, next);
    let (mut again, _) = created();
    let send = wait(again.start(
        2,
        &SessionOp::Prompt(
            r#"{"sessionId":"sess-1","prompt":[{"type":"text","text":"Fix it"}]}"#.into(),
        ),
        next + 7,
    ));
    let (_, arg) = call(&send.requests[0]);
    let again_id = arg["envelope"]["commandId"].as_str().unwrap().to_string();
    assert_ne!(again_id, first_id);
    // Had ZCode seen the id before, its `duplicate` replay would not be this prompt's admission.
    let duplicate = json!({"commandId": again_id, "status": "duplicate", "revisionAtDecision": 0,
                           "result": {"type": "inputAccepted", "delivery": "startNow", "inputId": again_id}});
    let step = again.resume(2, Some(&reply(next + 7, duplicate)), next + 8);
    let Step::Done(Err(problem)) = step else { panic!("the prompt must fail: {step:?}") };
    assert!(problem.message.contains("repeated command id"), "{}", problem.message);
}

#[test]
fn a_refused_prompt_ends_nothing_and_frees_the_session() {
    let (mut session, next) = live();
    let send = wait(session.start(
        2,
        &SessionOp::Prompt(r#"{"prompt":[{"type":"text","text":"x"}]}"#.into()),
        next,
    ));
    let (_, arg) = call(&send.requests[0]);
    let id = arg["envelope"]["commandId"].as_str().unwrap().to_string();
    let refused = json!({"commandId": id, "status": "rejected", "revisionAtDecision": 1, "reasonCode": "guard.sessionBusy"});
    let Step::Done(Err(problem)) = session.resume(2, Some(&reply(next, refused)), next + 1) else {
        panic!()
    };
    assert_eq!(problem.message, "ZCode rejected the prompt: guard.sessionBusy");
    // The next prompt may go.
    wait(session.start(
        3,
        &SessionOp::Prompt(r#"{"prompt":[{"type":"text","text":"y"}]}"#.into()),
        next + 1,
    ));
}

#[test]
fn a_permission_is_asked_once_and_answered_with_resolve_interaction() {
    let (mut session, next) = live();
    let command_id = prompted(&mut session, next);
    let tool = row(
        13,
        "toolCall",
        json!({"toolCallId": "call-1", "toolName": "Bash", "status": "pendingApproval", "inputText": "{\"command\":\"ls\"}", "input": {"command": "ls"}, "approvalInteractionId": "int-1"}),
    );
    let interaction = json!({"interactionId": "int-1", "kind": "permission", "anchorRowId": 13, "createdAt": 1,
        "payload": {"kind": "permission", "toolCallId": "call-1", "toolName": "Bash", "summary": "", "detail": null,
                    "options": [{"optionId": "allow", "label": "Allow once", "kind": "allowOnce"}, {"optionId": "deny", "label": "Deny", "kind": "deny"}]}});
    let asked = deltas(
        &mut session,
        2,
        1,
        3,
        json!([
            prompt_appended(&command_id),
            {"op": "row.appended", "row": tool},
            {"op": "state.updated", "patch": {"control": running_control(), "pendingInteractions": [interaction.clone()]}},
        ]),
    );
    let tool_call = &updates(&asked)[0];
    assert_eq!(
        (
            tool_call["sessionUpdate"].as_str(),
            tool_call["title"].as_str(),
            tool_call["kind"].as_str()
        ),
        (Some("tool_call"), Some("Bash: ls"), Some("execute"))
    );
    let Some(Action::Interaction(asked_interaction)) =
        asked.actions.iter().find(|a| matches!(a, Action::Interaction(_)))
    else {
        panic!("{asked:?}")
    };
    assert_eq!(asked_interaction.key, "interaction:int-1");
    let InteractionRequest::Permission(permission) = &asked_interaction.request else { panic!() };
    assert_eq!(permission.deny_option, "deny");
    let request: Value = serde_json::from_str(&permission.request).unwrap();
    assert_eq!(request["toolCall"]["title"], "Bash: ls");
    // Repeated in the next state update: not asked again.
    let again = deltas(
        &mut session,
        3,
        3,
        4,
        json!([{"op": "state.updated", "patch": {"pendingInteractions": [interaction]}}]),
    );
    assert!(!again.actions.iter().any(|a| matches!(a, Action::Interaction(_))));
    let answer = InteractionAnswer {
        key: "interaction:int-1".into(),
        outcome: InteractionOutcome::Selected("allow".into()),
    };
    let resolve = wait(session.start(4, &SessionOp::Answer(answer.clone()), 30));
    let (_, arg) = call(&resolve.requests[0]);
    assert_eq!(arg["envelope"]["type"], "resolveInteraction");
    assert_eq!(
        arg["envelope"]["payload"],
        json!({"interactionId": "int-1", "answer": {"optionId": "allow"}})
    );
    let id = arg["envelope"]["commandId"].as_str().unwrap();
    let ack = json!({"commandId": id, "status": "accepted", "revisionAtDecision": 4, "result": {"type": "resolveInteraction", "resolvedBy": {"clientId": "zcode-acp", "optionId": "allow"}}});
    done(session.resume(4, Some(&reply(30, ack)), 31));
    let Step::Done(Err(twice)) = session.start(5, &SessionOp::Answer(answer), 31) else { panic!() };
    assert!(twice.message.contains("already answered"));
}

#[test]
fn cancel_pauses_the_queue_stops_and_clears_it_and_the_turn_ends_cancelled() {
    let (mut session, next) = live();
    let command_id = prompted(&mut session, next);
    deltas(
        &mut session,
        2,
        1,
        2,
        json!([
            {"op": "state.updated", "patch": {"revision": 5, "control": running_control(), "queue": {"items": [{"queueItemId": "q-1"}], "autoDrain": true}}},
            prompt_appended(&command_id),
        ]),
    );
    let drain = wait(session.start(3, &SessionOp::Cancel, 40));
    let (_, arg) = call(&drain.requests[0]);
    assert_eq!(
        (arg["envelope"]["type"].as_str(), arg["envelope"]["baseRevision"].as_u64()),
        (Some("setAutoDrain"), Some(5))
    );
    let ack = |id: &Value, status: &str, revision: u64| json!({"commandId": id, "status": status, "revisionAtDecision": revision});
    // Stale: retried with ZCode's revision and the same command id.
    let retry = wait(session.resume(
        3,
        Some(&reply(40, ack(&arg["envelope"]["commandId"], "stale", 6))),
        41,
    ));
    let (_, retried) = call(&retry.requests[0]);
    assert_eq!(retried["envelope"]["commandId"], arg["envelope"]["commandId"]);
    assert_eq!(retried["envelope"]["baseRevision"], 6);
    let stop = wait(session.resume(
        3,
        Some(&reply(41, ack(&arg["envelope"]["commandId"], "accepted", 6))),
        42,
    ));
    let (_, stop_arg) = call(&stop.requests[0]);
    assert_eq!(stop_arg["envelope"]["type"], "stop");
    assert_eq!(stop_arg["envelope"]["payload"], json!({"expectedForegroundExecutionId": "exec-1"}));
    let delete = wait(session.resume(
        3,
        Some(&reply(42, ack(&stop_arg["envelope"]["commandId"], "accepted", 7))),
        43,
    ));
    let (_, delete_arg) = call(&delete.requests[0]);
    assert_eq!(delete_arg["envelope"]["payload"], json!({"queueItemId": "q-1"}));
    done(session.resume(
        3,
        Some(&reply(43, ack(&delete_arg["envelope"]["commandId"], "accepted", 8))),
        44,
    ));
    let stopped = deltas(
        &mut session,
        3,
        2,
        3,
        json!([{"op": "state.updated", "patch": {"control": idle_control(), "queue": {"items": [], "autoDrain": false}}}]),
    );
    assert_eq!(terminals(&stopped), [Terminal::Stop(StopReason::Cancelled)]);
}

#[test]
fn a_gap_resyncs_through_a_request_from_map_and_loses_nothing() {
    let (mut session, next) = live();
    let command_id = prompted(&mut session, next);
    deltas(
        &mut session,
        2,
        1,
        3,
        json!([
            {"op": "state.updated", "patch": {"control": running_control()}},
            prompt_appended(&command_id),
            {"op": "row.appended", "row": row(12, "assistantText", json!({"text": "Hel", "state": "streaming"}))},
        ]),
    );
    // Seq 3 → 4 is lost; a frame from 4 arrives.
    let gap = deltas(
        &mut session,
        4,
        4,
        5,
        json!([{"op": "row.delta", "rowId": 12, "path": "text", "append": "!"}]),
    );
    assert_eq!(gap.requests, 1);
    let resync = session.issue(50);
    let (method, arg) = call(&resync.requests[0]);
    assert_eq!(
        (method.as_str(), arg),
        (
            "resyncConversationV4",
            json!({"workspacePath": "/w", "subscriptionId": SUB, "base": null, "forceSnapshot": true})
        )
    );
    // Online frames before the recovery snapshot are dropped.
    let dropped = deltas(&mut session, 5, 5, 6, json!([]));
    assert!(updates(&dropped).is_empty());
    let acked = map(
        &mut session,
        vec![SessionInput::Reply(reply(
            50,
            json!({"ack": {"subscriptionId": SUB, "mode": "snapshot", "logEpoch": "epoch"}}),
        ))],
    );
    assert!(terminals(&acked).is_empty());
    let mut recovered = snapshot(
        SID,
        6,
        json!([
            row(
                11,
                "userInput",
                json!({"origin": "realUser", "text": "x", "sourceCommandId": command_id})
            ),
            row(12, "assistantText", json!({"text": "Hello!", "state": "complete"})),
            row(13, "assistantText", json!({"text": "Bye", "state": "complete"})),
        ]),
    );
    recovered["control"] = idle_control();
    recovered["rows"]["firstRowId"] = json!(1);
    let recovery = map(
        &mut session,
        vec![frame_input(&complete(6, "recovery", SUB, SID, snapshot_frame(SID, SUB, &recovered)))],
    );
    let texts: Vec<_> = updates(&recovery)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].clone())
        .collect();
    assert_eq!(texts, ["lo!", "Bye"]);
    assert_eq!(
        terminals(&recovery),
        [Terminal::Stop(StopReason::EndTurn)],
        "the turn's end came with the recovery"
    );
}

#[test]
fn fragments_reassemble_and_a_bad_checksum_resyncs() {
    let (mut session, _) = live();
    let logical = deltas_frame(
        SID,
        SUB,
        1,
        2,
        json!([{"op": "row.appended", "row": row(20, "assistantText", json!({"text": "über long text", "state": "complete"}))}]),
    );
    let parts = fragments(2, SUB, SID, &logical, 4);
    let effects = map(&mut session, parts.iter().map(frame_input).collect());
    assert_eq!(updates(&effects)[0]["content"]["text"], "über long text");
    let later = deltas_frame(SID, SUB, 2, 3, json!([]));
    let mut bad = fragments(3, SUB, SID, &later, 2);
    for part in &mut bad {
        part["checksum"]["value"] = json!("00000000");
    }
    let effects = map(&mut session, bad.iter().map(frame_input).collect());
    assert_eq!(effects.requests, 1, "{effects:?}");
}

/// A turn's last frame, as the Services Server sends it: fragments of about 0.8 MB, each an
/// event the connection hands on in pieces as the core reads it (issue 27). The session maps
/// the joined events exactly as it maps the same events whole.
#[test]
fn a_turns_last_frame_in_pieces_maps_as_it_does_whole() {
    let text = "lorem ipsum ".repeat(200_000);
    let stream = |session: &mut ServicesSession, next: u64| {
        let command_id = prompted(session, next);
        let mut effects = deltas(
            session,
            2,
            1,
            4,
            json!([
                prompt_appended(&command_id),
                {"op": "row.appended", "row": row(12, "assistantText", json!({"text": "", "state": "streaming"}))},
                {"op": "row.delta", "rowId": 12, "path": "text", "append": text},
            ]),
        )
        .actions;
        effects.extend(
            deltas(
                session,
                3,
                4,
                5,
                json!([{"op": "state.updated", "patch": {"control": idle_control()}}]),
            )
            .actions,
        );
        effects
    };
    let done = row(12, "assistantText", json!({"text": text, "state": "complete"}));
    let logical = deltas_frame(SID, SUB, 5, 6, json!([{"op": "row.upserted", "row": done}]));
    let wires = fragments(4, SUB, SID, &logical, 4);
    assert!(wires.iter().all(|wire| wire.to_string().len() > crate::ipc::frame::PIECES_FROM));

    let (mut whole, next) = live();
    let mut by_text = stream(&mut whole, next);
    let input: Vec<SessionInput> = wires.iter().map(frame_input).collect();
    by_text.extend(map(&mut whole, input).actions);

    let (mut joined, next) = live();
    let mut by_pieces = stream(&mut joined, next);
    let mut connection = crate::ServicesConnection::new();
    connection.push(&[hello_line(), initialize()].concat()).unwrap();
    let bytes: Vec<u8> = wires.iter().flat_map(|wire| event(3, wire)).collect();
    let mut pieces = 0;
    for read in bytes.chunks(READ) {
        let input = session_input(connection.push(read).unwrap());
        pieces += input.len();
        by_pieces.extend(map(&mut joined, input).actions);
    }
    assert!(pieces > 2 * wires.len(), "{pieces} pieces");
    assert_eq!(by_pieces, by_text);
    assert!(by_text.iter().any(|a| matches!(a, Action::Terminal(_))), "the turn ended");

    // A piece that does not end its event makes nothing: the runtime then budgets the next
    // call for what the session holds (`mapper-runtime` `WasmSession::map`).
    let (mut session, _) = live();
    let first = zcode_mapper_sdk::pieces::first(10, b"{\"a\"");
    let piece = SessionInput::Event(zcode_contract::NativeData::Binary(first));
    assert_eq!(map(&mut session, vec![piece]), Effects::default());
    // Anything between the pieces of one event breaks the stream, and the session resyncs.
    let effects = map(&mut session, vec![frame_input(&json!({"wireVersion": 3}))]);
    assert_eq!(effects.requests, 1, "{effects:?}");
}

#[test]
fn unknown_ops_and_rows_break_the_turn_then_a_recovery_snapshot_resumes_the_session() {
    let (mut session, next) = live();
    let command_id = prompted(&mut session, next);
    let broken = deltas(&mut session, 2, 1, 2, json!([{"op": "row.teleported", "rowId": 1}]));
    let found = terminals(&broken);
    let [Terminal::Broken(problem)] = found.as_slice() else { panic!("{broken:?}") };
    assert_eq!(problem.message, "V4 delta: unknown `op` value `row.teleported`");
    assert_eq!(broken.requests, 1, "a fresh snapshot is asked for: {broken:?}");
    let resync = session.issue(50);
    assert_eq!(call(&resync.requests[0]).0, "resyncConversationV4");
    // What follows on the live stream is not trusted any more.
    let after = deltas(&mut session, 3, 2, 3, json!([]));
    assert!(matches!(&after.actions[0], Action::Ignore(_)), "{after:?}");
    assert!(terminals(&after).is_empty());
    // ZCode ended the turn (the core stopped it): the recovery shows it idle, and the broken
    // turn ends for the core, cancelled, with the rows it missed.
    let mut recovered = snapshot(
        SID,
        3,
        json!([
            row(
                11,
                "userInput",
                json!({"origin": "realUser", "text": "Fix it", "sourceCommandId": command_id})
            ),
            row(12, "assistantText", json!({"text": "Partly", "state": "interrupted"})),
        ]),
    );
    recovered["control"] = idle_control();
    recovered["rows"]["firstRowId"] = json!(11);
    let recovery = map(
        &mut session,
        vec![frame_input(&complete(4, "recovery", SUB, SID, snapshot_frame(SID, SUB, &recovered)))],
    );
    assert_eq!(terminals(&recovery), [Terminal::Stop(StopReason::Cancelled)], "{recovery:?}");
    // The session follows ZCode again: the next prompt goes out.
    let again = wait(session.start(
        9,
        &SessionOp::Prompt(r#"{"prompt":[{"type":"text","text":"again"}]}"#.into()),
        60,
    ));
    assert_eq!(call(&again.requests[0]).0, "sendConversationCommandV4");

    // A snapshot that is not understood during the recovery is final.
    let (mut other, _) = live();
    let row_kind = frame(
        &mut other,
        2,
        deltas_frame(
            SID,
            SUB,
            1,
            2,
            json!([{"op": "row.appended", "row": row(5, "hologram", json!({}))}]),
        ),
    );
    assert!(terminals(&row_kind).is_empty(), "no turn runs: {row_kind:?}");
    assert_eq!(row_kind.requests, 1);
    other.issue(70);
    let still = snapshot(SID, 2, json!([row(5, "hologram", json!({}))]));
    let failed = map(
        &mut other,
        vec![frame_input(&complete(3, "recovery", SUB, SID, snapshot_frame(SID, SUB, &still)))],
    );
    assert!(matches!(terminals(&failed).as_slice(), [Terminal::Broken(_)]), "{failed:?}");
    let Step::Done(Err(refused)) =
        other.start(9, &SessionOp::Prompt(r#"{"prompt":[{"type":"text","text":"x"}]}"#.into()), 80)
    else {
        panic!()
    };
    assert!(refused.message.contains("load it again"), "{refused:?}");
}

/// F-21: a second break right after a recovery snapshot, before the first resync's reply
/// (ZCode writes the snapshot, then the reply): the session must ask for a snapshot again. It
/// did not (the first resync was still "in flight"), so it waited for good, its broken turn
/// never ended and every later prompt hung.
#[test]
fn a_break_before_the_last_resyncs_reply_asks_for_a_new_snapshot() {
    let (mut session, next) = live();
    let command_id = prompted(&mut session, next);
    let broken = deltas(&mut session, 2, 1, 2, json!([{"op": "sim.unknownOp"}]));
    assert!(matches!(terminals(&broken).as_slice(), [Terminal::Broken(_)]), "{broken:?}");
    assert_eq!(broken.requests, 1);
    let first = session.issue(50);
    assert_eq!(call(&first.requests[0]).0, "resyncConversationV4");
    let mut running = snapshot(
        SID,
        3,
        json!([row(
            10,
            "turnHeader",
            json!({"origin": "userInput", "state": "running", "startedAt": 1, "sourceCommandId": command_id})
        )]),
    );
    running["control"] = running_control();
    let recovery = complete(3, "recovery", SUB, SID, snapshot_frame(SID, SUB, &running));
    // The recovery (ZCode still running the turn), then another delta not understood (the
    // core's stop, say), then the first resync's reply: all in one batch.
    let again = deltas_frame(SID, SUB, 3, 4, json!([{"op": "sim.unknownOp"}]));
    let ack = json!({"ack": {"subscriptionId": SUB, "mode": "snapshot", "logEpoch": "epoch"}});
    let effects = map(
        &mut session,
        vec![
            frame_input(&recovery),
            frame_input(&complete(4, "online", SUB, SID, again)),
            SessionInput::Reply(reply(50, ack.clone())),
        ],
    );
    assert!(terminals(&effects).is_empty(), "the turn was already broken: {effects:?}");
    assert_eq!(effects.requests, 1, "a snapshot is asked for again: {effects:?}");
    let second = session.issue(51);
    assert_eq!(call(&second.requests[0]).0, "resyncConversationV4");
    // Its snapshot shows ZCode's end of the turn: the broken turn ends for the core.
    let mut ended = snapshot(
        SID,
        5,
        json!([row(
            10,
            "turnHeader",
            json!({"origin": "userInput", "state": "completedInterrupted", "startedAt": 1, "sourceCommandId": command_id})
        )]),
    );
    ended["control"] = idle_control();
    let recovered = map(
        &mut session,
        vec![
            frame_input(&complete(5, "recovery", SUB, SID, snapshot_frame(SID, SUB, &ended))),
            SessionInput::Reply(reply(51, ack)),
        ],
    );
    assert_eq!(terminals(&recovered), [Terminal::Stop(StopReason::Cancelled)], "{recovered:?}");
}

#[test]
fn modes_and_thought_levels_switch_through_cas_commands() {
    let (mut session, _) = live();
    let plan = wait(session.start(
        5,
        &SessionOp::SetMode(r#"{"sessionId":"sess-1","modeId":"plan"}"#.into()),
        70,
    ));
    let (_, arg) = call(&plan.requests[0]);
    assert_eq!(arg["envelope"]["type"], "switchCollaborationMode");
    assert_eq!(arg["envelope"]["payload"], json!({"mode": "plan"}));
    assert_eq!(arg["envelope"]["baseRevision"], 0);
    let id = arg["envelope"]["commandId"].clone();
    let (response, updates) = done(session.resume(
        5,
        Some(&reply(70, json!({"commandId": id, "status": "accepted", "revisionAtDecision": 0}))),
        71,
    ));
    assert_eq!(response, json!({}));
    assert_eq!(
        updates[0],
        json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})
    );
    assert_eq!(updates[1]["configOptions"][2]["currentValue"], true);
    let Step::Done(Err(unknown)) =
        session.start(6, &SessionOp::SetMode(r#"{"modeId":"auto"}"#.into()), 71)
    else {
        panic!()
    };
    assert_eq!(unknown.message, "Unknown ZCode mode: auto");
    let level = wait(session.start(
        7,
        &SessionOp::SetConfigOption(r#"{"configId":"zcode.thought_level","value":"low"}"#.into()),
        71,
    ));
    let (_, arg) = call(&level.requests[0]);
    assert_eq!(
        arg["envelope"]["payload"],
        json!({"provider": "zai", "model": "glm-5", "thought": "low"})
    );
    let id = arg["envelope"]["commandId"].clone();
    let (response, _) = done(session.resume(
        7,
        Some(&reply(71, json!({"commandId": id, "status": "accepted", "revisionAtDecision": 1}))),
        72,
    ));
    assert_eq!(response["configOptions"][1]["currentValue"], "low");
    let Step::Done(Err(model)) = session.start(
        8,
        &SessionOp::SetConfigOption(r#"{"configId":"zcode.model","value":"[\"x\",\"y\"]"}"#.into()),
        72,
    ) else {
        panic!()
    };
    assert_eq!(model.message, "Unknown ZCode model: [\"x\",\"y\"]");
}

/// F-38: ZCode's state frames and its command answers travel apart. A frame published before
/// a mode switch (revision 1) that arrives after the switch's answer (decided at revision 1)
/// must not turn the mode back, and the frame that carries the switch (revision 2) changes
/// nothing the client was not told.
#[test]
fn a_state_frame_older_than_an_accepted_switch_does_not_undo_it() {
    let (mut session, _) = live();
    let plan = wait(session.start(
        5,
        &SessionOp::SetMode(r#"{"sessionId":"sess-1","modeId":"plan"}"#.into()),
        70,
    ));
    let id = call(&plan.requests[0]).1["envelope"]["commandId"].clone();
    let (_, answered) = done(session.resume(
        5,
        Some(&reply(70, json!({"commandId": id, "status": "accepted", "revisionAtDecision": 1}))),
        71,
    ));
    assert_eq!(answered[0]["currentModeId"], "plan");
    let mut config = snapshot(SID, 1, json!([]))["config"].clone();
    let older = json!([{"op": "state.updated", "patch": {"revision": 1, "config": config}}]);
    let effects = deltas(&mut session, 2, 1, 2, older);
    assert_eq!(updates(&effects), Vec::<Value>::new(), "{effects:?}");
    config["planEnabled"] = json!(true);
    let switched = json!([{"op": "state.updated", "patch": {"revision": 2, "config": config}}]);
    let effects = deltas(&mut session, 3, 2, 3, switched);
    assert_eq!(updates(&effects), Vec::<Value>::new(), "{effects:?}");
    // Once a newer state is in, ZCode's word stands again, whatever the mapper set.
    config["planEnabled"] = json!(false);
    let back = json!([{"op": "state.updated", "patch": {"revision": 3, "config": config}}]);
    let effects = deltas(&mut session, 4, 3, 4, back);
    assert!(updates(&effects).iter().any(|u| u["currentModeId"] == "build"), "{effects:?}");
}

#[test]
fn load_streams_history_oldest_first_in_pages() {
    let mut session = ServicesSession::new(&init());
    wait(session.start(
        1,
        &SessionOp::Load(r#"{"sessionId":"sess-1","cwd":"/w","mcpServers":[]}"#.into()),
        1,
    ));
    let resume = wait(session.resume(1, Some(&reply(1, json!({"available": true}))), 2));
    assert_eq!(call(&resume.requests[0]).0, "resumeSession");
    let tail_walk = wait(session.resume(1, Some(&reply(2, session_snapshot(SID))), 3));
    assert_eq!(
        call(&tail_walk.requests[0]),
        (
            "conversationRowsRangeV4".into(),
            json!({"workspacePath": "/w", "sessionId": SID, "limit": 200})
        )
    );
    let page = |rows: Value, more: bool| json!({"rows": rows, "atSeq": 9, "atRevision": 3, "atLogEpoch": "epoch", "hasMore": more});
    let text =
        |id: u64, text: &str| row(id, "assistantText", json!({"text": text, "state": "complete"}));
    let tail = page(json!([text(30, "third"), text(31, "fourth")]), true);
    let middle = wait(session.resume(1, Some(&reply(3, tail)), 4));
    assert_eq!(call(&middle.requests[0]).1["beforeRowId"], 30);
    assert!(middle.updates.is_empty(), "nothing streams before the oldest page");
    let middle_page = page(json!([text(20, "second")]), true);
    let oldest = wait(session.resume(1, Some(&reply(4, middle_page.clone())), 5));
    assert_eq!(call(&oldest.requests[0]).1["beforeRowId"], 20);
    let oldest_page =
        page(json!([row(10, "userInput", json!({"origin": "realUser", "text": "first"}))]), false);
    // The oldest page streams; the middle page is fetched again.
    let again = wait(session.resume(1, Some(&reply(5, oldest_page)), 6));
    assert_eq!(again.updates.len(), 1);
    assert!(again.updates[0].contains("user_message_chunk"));
    assert_eq!(call(&again.requests[0]).1["beforeRowId"], 30);
    let subscribe = wait(session.resume(1, Some(&reply(6, middle_page)), 7));
    let streamed: Vec<Value> =
        subscribe.updates.iter().map(|u| serde_json::from_str(u).unwrap()).collect();
    let texts: Vec<_> = streamed.iter().map(|u| u["content"]["text"].clone()).collect();
    assert_eq!(texts, ["second", "third", "fourth"]);
    assert_eq!(subscribe.routes_added, ["7"]);
    let ack = json!({"ack": {"subscriptionId": SUB, "mode": "snapshot", "logEpoch": "epoch"}});
    let (response, _) = done(session.resume(1, Some(&reply(8, ack)), 9));
    assert!(response.get("sessionId").is_none());
    // A row appended after the history was read reaches the client from the snapshot.
    let initial =
        snapshot(SID, 10, json!([text(30, "third"), text(31, "fourth"), text(32, "fifth")]));
    let effects = map(
        &mut session,
        vec![frame_input(&complete(1, "initial", SUB, SID, snapshot_frame(SID, SUB, &initial)))],
    );
    let texts: Vec<_> = updates(&effects)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].clone())
        .collect();
    assert_eq!(texts, ["fifth"]);
}

#[test]
fn a_snapshot_that_skips_rows_pages_them_before_going_on() {
    let (mut session, _) = live();
    let text =
        |id: u64, text: &str| row(id, "assistantText", json!({"text": text, "state": "complete"}));
    deltas(&mut session, 2, 1, 2, json!([{"op": "row.appended", "row": text(5, "seen")}]));
    // A fresh snapshot whose window starts after rows the client never saw.
    let fresh = snapshot(SID, 9, json!([text(8, "eight")]));
    let mut fresh_frame = snapshot_frame(SID, SUB, &fresh);
    fresh_frame["payload"]["snapshot"]["rows"]["firstRowId"] = json!(1);
    let paging =
        map(&mut session, vec![frame_input(&complete(3, "online", SUB, SID, fresh_frame))]);
    assert_eq!(paging.requests, 1);
    let page_request = session.issue(80);
    assert_eq!(call(&page_request.requests[0]).1["beforeRowId"], 8);
    // A frame arriving meanwhile waits.
    let held =
        deltas(&mut session, 4, 9, 10, json!([{"op": "row.appended", "row": text(9, "nine")}]));
    assert!(held.actions.is_empty());
    let page = json!({"rows": [text(5, "seen"), text(6, "six"), text(7, "seven")], "atSeq": 9, "atRevision": 1, "atLogEpoch": "epoch", "hasMore": true});
    let caught_up = map(&mut session, vec![SessionInput::Reply(reply(80, page))]);
    let texts: Vec<_> = updates(&caught_up)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].clone())
        .collect();
    assert_eq!(texts, ["six", "seven", "eight", "nine"]);
}

#[test]
fn close_disposes_the_listen_and_unsubscribes_without_deleting() {
    let (mut session, _) = live();
    let close = wait(session.start(9, &SessionOp::Close, 90));
    assert_eq!(close.routes_removed, ["3"]);
    assert_eq!(close.writes.len(), 1);
    assert_eq!(
        call(&close.requests[0]),
        ("unsubscribeConversationV4".into(), json!({"workspacePath": "/w", "subscriptionId": SUB}))
    );
    done(session.resume(9, Some(&reply(90, Value::Null)), 91));
}

#[test]
fn an_unknown_session_is_not_found_and_another_failure_stays_native() {
    for (listed, kind) in [
        (json!([]), zcode_contract::ErrorKind::NotFound),
        (json!([{"sessionId": SID}]), zcode_contract::ErrorKind::Native),
    ] {
        let mut session = ServicesSession::new(&init());
        wait(session.start(
            1,
            &SessionOp::Resume(r#"{"sessionId":"sess-1","cwd":"/w"}"#.into()),
            1,
        ));
        wait(session.resume(1, Some(&reply(1, json!({"available": true}))), 2));
        let failure = zcode_contract::NativeReply {
            id: 2,
            body: zcode_contract::ReplyBody::Error(zcode_v4::schema::native(
                "Session restore failed",
            )),
        };
        let confirm = wait(session.resume(1, Some(&failure), 3));
        assert_eq!(call(&confirm.requests[0]).0, "listSessions");
        let Step::Done(Err(problem)) = session.resume(1, Some(&reply(3, listed)), 4) else {
            panic!()
        };
        assert_eq!(problem.kind, kind);
    }
}

#[test]
fn interactions_outside_a_turn_are_refused_natively() {
    let (mut session, _) = live();
    let interaction = json!({"interactionId": "old", "kind": "userInput", "anchorRowId": null, "createdAt": 1,
        "payload": {"kind": "userInput", "prompt": "Which?", "freeText": true}});
    let effects = deltas(
        &mut session,
        2,
        1,
        2,
        json!([{"op": "state.updated", "patch": {"pendingInteractions": [interaction]}}]),
    );
    let Some(Action::Interaction(asked)) =
        effects.actions.iter().find(|a| matches!(a, Action::Interaction(_)))
    else {
        panic!("{effects:?}")
    };
    assert!(matches!(asked.request, InteractionRequest::Headless(_)));
    assert!(terminals(&effects).is_empty(), "no turn to break");
    let answer = InteractionAnswer {
        key: asked.key.clone(),
        outcome: InteractionOutcome::Unavailable("no prompt".into()),
    };
    let resolve = wait(session.start(3, &SessionOp::Answer(answer), 10));
    assert_eq!(
        call(&resolve.requests[0]).1["envelope"]["payload"],
        json!({"interactionId": "old", "answer": {"action": "decline"}})
    );
}
