//! The V4 conversation over the Services Server: sessions, snapshots and deltas, turns from
//! the scenario engine, interactions answered exactly once, admission ACKs and CAS, the queue,
//! stop and preemption, modes and models, paged history and persistence across processes.

mod services_support;

use serde_json::{Value, json};
use services_support::{Runtime, Session};

#[test]
fn a_draft_becomes_a_listed_session_with_its_first_prompt() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    client.prelude();
    let ws = runtime.ws();
    let mut session = Session::create(&mut client, &ws);
    let draft = &session.mirror.state;
    assert_eq!(draft["protocolVersion"], 1);
    assert_eq!(draft["control"]["phase"], "draft");
    assert_eq!(draft["inputRouting"]["mode"], "startNow");
    assert_eq!(draft["queue"], json!({"items": [], "autoDrain": true}));
    assert_eq!(draft["config"]["planEnabled"], false);
    assert_eq!(draft["rows"]["totalCount"], 0);
    assert_eq!(session.mirror.deliveries, ["initial"]);
    // Deferred: not listed before the first prompt.
    assert_eq!(
        client
            .agent("listSessions", &[json!({"workspacePath": ws, "includeArchived": false})])
            .ok(),
        json!([])
    );
    let ack = session.prompt(&mut client, "Please say hello");
    assert_eq!(
        ack["result"],
        json!({"type": "inputAccepted", "delivery": "startNow", "inputId": ack["commandId"]})
    );
    assert!(ack["revisionAtDecision"].is_u64());
    let state = &session.mirror.state;
    assert_eq!(state["control"]["phase"], "completedSuccess");
    assert_eq!(state["meta"], json!({"title": "Please say hello", "titleSource": "generated"}));
    let user = &session.mirror.rows("userInput")[0];
    assert_eq!(user["sourceCommandId"], ack["commandId"]);
    assert_eq!(user["origin"], "realUser");
    assert_eq!(session.reply_text(), "Hello from the ZCode simulator. You said: Please say hello");
    assert_eq!(session.mirror.rows("assistantText")[0]["state"], "complete");
    assert_eq!(session.mirror.rows("turnHeader")[0]["state"], "completedSuccess");
    assert!(state["usage"]["cumulative"]["outputTokens"].as_u64().unwrap() > 0);
    let listed = client
        .agent("listSessions", &[json!({"workspacePath": ws, "includeArchived": false})])
        .ok();
    assert_eq!(listed[0]["sessionId"], session.id.as_str());
    assert_eq!(listed[0]["title"], "Please say hello");
    // The turn's success sent its answer again, marked as a fork target (ZCode
    // `markStableForkAssistant`), after the header's close: the mirror built from deltas has
    // the mark, and equals a fresh read and a fresh snapshot (rows included).
    let answer = &session.mirror.rows("assistantText")[0];
    assert_eq!(answer["actions"], json!({"canFork": true}), "{answer}");
    assert_eq!(state["availability"]["fork"], json!({"allowed": true}));
    let (rows, _) = session.all_rows(&mut client, 200);
    let window = session.mirror.state["rows"]["window"].as_array().unwrap();
    assert_eq!(&rows, window);
    let before = session.mirror.state.clone();
    session.resync(&mut client);
    assert_eq!(session.mirror.state, before);
}

#[test]
fn reasoning_streams_into_its_own_row() {
    let runtime = Runtime::new("3.14.3");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    session.prompt(&mut client, "sim:reason");
    let reasoning = &session.mirror.rows("reasoning")[0];
    assert!(reasoning["text"].as_str().unwrap().starts_with("The user wants an answer"));
    assert_eq!(reasoning["state"], "complete");
    assert!(reasoning["durationMs"].is_u64());
    assert_eq!(
        reasoning["assistantResponseId"],
        session.mirror.rows("assistantText")[0]["assistantResponseId"]
    );
}

#[test]
fn permissions_are_answered_exactly_once() {
    let runtime = Runtime::new("3.17.2");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let ack = session.send_text(&mut client, "sim:shell cargo test");
    let prompt_id = ack["commandId"].as_str().unwrap().to_owned();
    let interaction = session.pending(&mut client, "permission");
    let payload = &interaction["payload"];
    assert_eq!(payload["toolName"], "Bash");
    let ids: Vec<&str> = payload["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["allowOnce", "allowAlways", "deny"]);
    let tool = &session.mirror.rows("toolCall")[0];
    assert_eq!(tool["status"], "pendingApproval");
    assert_eq!(tool["approvalInteractionId"], interaction["interactionId"]);
    assert_eq!(interaction["anchorRowId"], tool["rowId"]);
    let id = interaction["interactionId"].as_str().unwrap().to_owned();
    let answer = json!({"interactionId": id, "answer": {"optionId": "allowOnce"}});
    let first =
        session.command_with_id(&mut client, "answer-1", "resolveInteraction", answer.clone());
    assert_eq!(first["status"], "accepted");
    assert_eq!(
        first["result"],
        json!({"type": "resolveInteraction", "resolvedBy": {"clientId": "sim-tests", "optionId": "allowOnce"}})
    );
    // The same command again replays; another command for the same interaction is a no-op.
    let replay =
        session.command_with_id(&mut client, "answer-1", "resolveInteraction", answer.clone());
    assert_eq!(replay["status"], "duplicate");
    assert_eq!(replay["result"], first["result"]);
    let late = session.command(&mut client, "resolveInteraction", answer);
    assert_eq!(
        (late["status"].as_str(), late["reasonCode"].as_str()),
        (Some("noop"), Some("proto.alreadyResolved"))
    );
    session.until_idle_with(&mut client, &prompt_id);
    assert_eq!(session.mirror.state["pendingInteractions"], json!([]));
    let tool = &session.mirror.rows("toolCall")[0];
    assert_eq!(tool["status"], "success");
    assert!(tool["output"]["text"].as_str().unwrap().contains("$ cargo test"));
    assert_eq!(session.reply_text(), "The command finished.");
    let unknown = session.command(
        &mut client,
        "resolveInteraction",
        json!({"interactionId": "perm_never", "answer": {"optionId": "deny"}}),
    );
    // Unknown like late: nothing changes (the schema comment in `command.ts`).
    assert_eq!(
        (unknown["status"].as_str(), unknown["reasonCode"].as_str()),
        (Some("noop"), Some("proto.alreadyResolved"))
    );
}

#[test]
fn a_denied_or_unknown_option_never_runs_the_tool() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    for option in ["deny", "not-offered"] {
        let ack = session.send_text(&mut client, "sim:edit notes.txt secret");
        let id = ack["commandId"].as_str().unwrap().to_owned();
        let interaction = session.pending(&mut client, "permission");
        session.command(
            &mut client,
            "resolveInteraction",
            json!({"interactionId": interaction["interactionId"], "answer": {"optionId": option}}),
        );
        session.until_idle_with(&mut client, &id);
        let tool = session.mirror.rows("toolCall").pop().unwrap();
        assert_eq!(tool["status"], "error", "{option}");
        assert_eq!(tool["error"]["code"], "permissionDenied");
        assert!(!runtime.workspace.join("notes.txt").exists(), "{option}");
    }
    // "Always allow" is remembered for the session.
    let ack = session.send_text(&mut client, "sim:edit notes.txt first");
    let interaction = session.pending(&mut client, "permission");
    session.command(&mut client, "resolveInteraction", json!({"interactionId": interaction["interactionId"], "answer": {"optionId": "allowAlways"}}));
    session.until_idle_with(&mut client, ack["commandId"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(runtime.workspace.join("notes.txt")).unwrap(), "first\n");
    session.prompt(&mut client, "sim:edit notes.txt second");
    assert_eq!(std::fs::read_to_string(runtime.workspace.join("notes.txt")).unwrap(), "second\n");
}

#[test]
fn questions_and_plan_approvals_are_user_input_interactions() {
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[]);
    client.prelude();
    let mut session = Session::create(&mut client, &runtime.ws());
    let ack = session.send_text(&mut client, "sim:question");
    let question = session.pending(&mut client, "userInput");
    assert_eq!(question["payload"]["toolName"], "AskUserQuestion");
    assert_eq!(question["payload"]["questions"].as_array().unwrap().len(), 2);
    assert!(question.get("autoResolution").is_none(), "auto-resolution was switched off");
    let content = json!({"answers": {"Which approach should I take?": ["fast"], "Which checks should run?": ["tests", "lint"]}});
    session.command(&mut client, "resolveInteraction", json!({"interactionId": question["interactionId"], "answer": {"action": "accept", "content": content}}));
    session.until_idle_with(&mut client, ack["commandId"].as_str().unwrap());
    assert!(
        session.mirror.rows("toolCall")[0]["output"]["text"]
            .as_str()
            .unwrap()
            .contains("tests, lint")
    );
    assert_eq!(session.reply_text(), "Thanks, I will proceed with your answers.");

    // Plan on keeps the editing mode; approving the plan turns it off again.
    session.control(&mut client, "switchCollaborationMode", json!({"mode": "edit"}));
    let on = session.control(&mut client, "switchCollaborationMode", json!({"mode": "plan"}));
    assert_eq!(on["status"], "accepted", "{on}");
    session.pump_until(&mut client, |m| m.state["config"]["planEnabled"] == true).unwrap();
    assert_eq!(session.mirror.state["config"]["mode"], "edit");
    let ack = session.send_text(&mut client, "sim:plan-input");
    let approval = session.pending(&mut client, "userInput");
    assert_eq!(approval["payload"]["schema"], json!({"interaction": "plan_approval"}));
    session.command(
        &mut client,
        "resolveInteraction",
        json!({"interactionId": approval["interactionId"],
        "answer": {"action": "accept", "content": {"answer": "approve"}}}),
    );
    session.until_idle_with(&mut client, ack["commandId"].as_str().unwrap());
    assert_eq!(session.mirror.state["config"]["planEnabled"], false);
    assert_eq!(session.mirror.state["config"]["mode"], "edit");
    assert_eq!(session.reply_text(), "Plan approved; starting the implementation.");

    let ack = session.send_text(&mut client, "sim:plan");
    let approval = session.pending(&mut client, "permission");
    assert_eq!(approval["payload"]["toolName"], "ExitPlanMode");
    assert!(approval["payload"]["detail"].as_str().unwrap().contains("# Proposed plan"));
    session.command(
        &mut client,
        "resolveInteraction",
        json!({"interactionId": approval["interactionId"], "answer": {"optionId": "deny-plan"}}),
    );
    session.until_idle_with(&mut client, ack["commandId"].as_str().unwrap());
    assert_eq!(session.reply_text(), "Plan rejected; I will keep planning.");
}

#[test]
fn admission_rejects_bad_envelopes_and_cas_retries_on_stale() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let bad = session.envelope(&mut client, json!({"commandId": "x", "clientId": "c", "sessionId": session.id, "type": "sendText", "payload": {"text": "hi"}}));
    assert_eq!(
        (bad["status"].as_str(), bad["reasonCode"].as_str(), bad["revisionAtDecision"].as_u64()),
        (Some("rejected"), Some("proto.invalidPayload"), Some(0))
    );
    let no_base = session.envelope(
        &mut client,
        json!({"commandId": "y", "clientId": "c", "sessionId": session.id, "type": "setAutoDrain",
        "payload": {"autoDrain": false}, "issuedAt": 1}),
    );
    assert_eq!(no_base["reasonCode"], "proto.invalidPayload");
    let nowhere = session.envelope(&mut client, json!({"commandId": "z", "clientId": "c", "sessionId": "sess_nope", "type": "stop", "payload": {}, "issuedAt": 1}));
    assert_eq!(nowhere["reasonCode"], "proto.sessionNotFound");
    // 3.15.1 refuses an empty input in the handler: `failed`, and remembered.
    let empty = session.command(&mut client, "sendText", json!({"text": "  "}));
    assert_eq!(
        (empty["status"].as_str(), empty["reasonCode"].as_str(), empty["message"].as_str()),
        (Some("failed"), Some("proto.invalidPayload"), Some("input must not be empty"))
    );
    let id = empty["commandId"].as_str().unwrap();
    let text = json!({"text": "sim:reply hi"});
    assert_eq!(session.command_with_id(&mut client, id, "sendText", text), empty);
    // `command.ts`: an optional member may be absent, not null.
    let null = session.command(&mut client, "sendText", json!({"text": "hi", "attachments": null}));
    assert_eq!(
        null["message"],
        "Invalid params — attachments: Invalid input: expected array, received null"
    );
    let unknown = session.command(&mut client, "sendText", json!({"text": "sim:dance"}));
    assert!(unknown["message"].as_str().unwrap().contains("Unknown simulator scenario"));

    let current = session.mirror.state["revision"].as_u64().unwrap();
    let stale = session.envelope(&mut client, json!({"commandId": "cas-1", "clientId": "c", "sessionId": session.id, "type": "setAutoDrain",
        "payload": {"autoDrain": false}, "issuedAt": 1, "baseRevision": current + 7}));
    assert_eq!(
        (stale["status"].as_str(), stale["reasonCode"].as_str()),
        (Some("stale"), Some("proto.staleRevision"))
    );
    assert_eq!(stale["revisionAtDecision"], current);
    // The retry keeps its commandId and takes revisionAtDecision: a stale ACK was not remembered.
    let retry = session.envelope(&mut client, json!({"commandId": "cas-1", "clientId": "c", "sessionId": session.id, "type": "setAutoDrain",
        "payload": {"autoDrain": false}, "issuedAt": 1, "baseRevision": stale["revisionAtDecision"]}));
    assert_eq!(retry["status"], "accepted");
    session.pump_until(&mut client, |m| m.state["queue"]["autoDrain"] == false).unwrap();
    assert!(session.mirror.state["revision"].as_u64().unwrap() > current);
    let unsimulated = session.command(&mut client, "compact", json!({}));
    assert_eq!(
        (unsimulated["status"].as_str(), unsimulated["reasonCode"].as_str()),
        (Some("failed"), Some("fault.command.notImplemented"))
    );
}

#[test]
fn a_session_remembers_its_512_most_recently_used_decisions() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let mut stop =
        |id: &str| session.command_with_id(&mut client, id, "stop", json!({}))["status"].clone();
    for n in 0..512 {
        assert_eq!(stop(&format!("c{n}")), "accepted");
    }
    // A replay makes `c0` the most recent: `c1` goes first (`command-inbox.ts`, LRU).
    assert_eq!(stop("c0"), "duplicate");
    assert_eq!(stop("new"), "accepted");
    assert_eq!(stop("c0"), "duplicate");
    assert_eq!(stop("c1"), "accepted");
}

#[test]
fn inputs_while_running_queue_guide_and_drain() {
    let runtime = Runtime::new("3.17.2");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    // The turn waits on a permission while the follow-ups arrive.
    let first = session.send_text(&mut client, "sim:shell make");
    let permission = session.pending(&mut client, "permission");
    assert_eq!(session.mirror.state["inputRouting"]["mode"], "enqueue");
    let queued = session.command(&mut client, "sendText", json!({"text": "queued follow-up"}));
    assert_eq!(queued["result"]["delivery"], "queue");
    let guided = session.command(
        &mut client,
        "sendText",
        json!({"text": "also consider tests", "requestedDelivery": "guide"}),
    );
    assert_eq!(guided["result"]["type"], "inputAccepted");
    session
        .pump_until(&mut client, |m| {
            m.state["queue"]["items"].as_array().is_some_and(|items| items.len() == 2)
        })
        .unwrap();
    let items = session.mirror.state["queue"]["items"].as_array().unwrap().clone();
    assert_eq!(items[0]["queueItemId"], format!("queue_{}", queued["commandId"].as_str().unwrap()));
    assert_eq!(items[0]["delivery"], json!({"requested": "queue", "admitted": "queue"}));
    assert_eq!(items[1]["delivery"]["admitted"], "guide");
    session.command(
        &mut client,
        "resolveInteraction",
        json!({"interactionId": permission["interactionId"], "answer": {"optionId": "allowOnce"}}),
    );
    // The guide joins the running turn; the queued input runs as its own turn afterwards.
    let queued_id = queued["commandId"].as_str().unwrap().to_owned();
    session.until_idle_with(&mut client, &queued_id);
    let users = session.mirror.rows("userInput");
    let guide_row = users.iter().find(|row| row["sourceCommandId"] == guided["commandId"]).unwrap();
    assert_eq!(guide_row["guided"], true);
    let headers = session.mirror.rows("turnHeader");
    assert_eq!(headers.len(), 2);
    assert_eq!(headers[0]["sourceCommandId"], first["commandId"]);
    assert_eq!(headers[0]["workSegments"].as_array().unwrap().len(), 2);
    assert_eq!(headers[1]["sourceCommandId"], queued_id.as_str());
    assert_eq!(session.mirror.state["queue"]["items"], json!([]));
}

#[test]
fn stop_interrupts_the_turn_and_holds_the_queue() {
    let runtime = Runtime::new("4.0.0");
    // A long pause between chunks keeps the reply streaming until the stop.
    let mut client = runtime.start(&[("ZCODE_SIM_CHUNK_DELAY_MS", "60000")]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let slow =
        session.send_text(&mut client, "sim:reply this reply is long enough for several chunks");
    session
        .pump_until(&mut client, |m| {
            m.rows("assistantText").first().is_some_and(|row| row["text"] != "")
        })
        .unwrap();
    let queued = session.command(&mut client, "sendText", json!({"text": "after the stop"}));
    session
        .pump_until(&mut client, |m| !m.state["queue"]["items"].as_array().unwrap().is_empty())
        .unwrap();
    let work = session.mirror.state["control"]["activeWorks"][0].clone();
    assert_eq!(work["kind"], "primaryTurn");
    assert_eq!(work["sourceCommandId"], slow["commandId"]);
    let wrong =
        session.command(&mut client, "stop", json!({"expectedForegroundExecutionId": "fx_other"}));
    assert_eq!(
        (wrong["status"].as_str(), wrong["reasonCode"].as_str()),
        (Some("noop"), Some("guard.stopTargetChanged"))
    );
    // A running turn does not hold a model switch back (3.15.1 `handlers/model-config.ts`).
    let view = client.call("model-selection", "getView", &[json!({})]).ok();
    let model = json!({"provider": view["providers"][0]["providerId"], "model": "GLM-4.7", "thought": "low"});
    assert_eq!(session.control(&mut client, "switchModelConfig", model)["status"], "accepted");
    let stop = session.command(
        &mut client,
        "stop",
        json!({"expectedForegroundExecutionId": work["foregroundExecutionId"]}),
    );
    assert_eq!(stop["status"], "accepted");
    session.until_idle_with(&mut client, slow["commandId"].as_str().unwrap());
    let state = session.mirror.state.clone();
    assert_eq!(state["control"]["phase"], "completedInterrupted");
    assert_eq!(session.mirror.rows("turnHeader")[0]["state"], "completedInterrupted");
    assert_eq!(session.mirror.rows("assistantText")[0]["state"], "interrupted");
    assert_eq!(state["queue"]["autoDrain"], false);
    assert_eq!(state["queue"]["pauseReason"], "stopped");
    assert_eq!(state["inputRouting"]["mode"], "choice");
    // Held: a send needs a disposition; deleting the item empties the queue.
    let refused = session.command(&mut client, "sendText", json!({"text": "now"}));
    assert_eq!(
        (refused["status"].as_str(), refused["reasonCode"].as_str()),
        (Some("failed"), Some("heldQueueDispositionRequired"))
    );
    let item = format!("queue_{}", queued["commandId"].as_str().unwrap());
    assert_eq!(
        session.control(&mut client, "deleteQueueItem", json!({"queueItemId": item}))["status"],
        "accepted"
    );
    assert_eq!(
        session.control(&mut client, "deleteQueueItem", json!({"queueItemId": item}))["reasonCode"],
        "queue.itemMissing"
    );
    session.pump_until(&mut client, |m| m.state["inputRouting"]["mode"] == "startNow").unwrap();
    let idle_stop = session.command(
        &mut client,
        "stop",
        json!({"expectedForegroundExecutionId": work["foregroundExecutionId"]}),
    );
    assert_eq!(idle_stop["reasonCode"], "guard.stopTargetChanged");
    assert_eq!(
        session.control(&mut client, "setAutoDrain", json!({"autoDrain": true}))["status"],
        "accepted"
    );
}

#[test]
fn stopping_withdraws_a_pending_permission() {
    let runtime = Runtime::new("3.14.3");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let ack = session.send_text(&mut client, "sim:shell rm -rf /");
    let interaction = session.pending(&mut client, "permission");
    session.command(&mut client, "stop", json!({}));
    session.until_idle_with(&mut client, ack["commandId"].as_str().unwrap());
    assert_eq!(session.mirror.rows("toolCall")[0]["status"], "cancelled");
    assert_eq!(session.mirror.state["pendingInteractions"], json!([]));
    let late = session.command(
        &mut client,
        "resolveInteraction",
        json!({"interactionId": interaction["interactionId"], "answer": {"optionId": "allowOnce"}}),
    );
    assert_eq!(late["reasonCode"], "proto.alreadyResolved");
}

#[test]
fn start_now_preempts_the_running_turn() {
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let slow = session.send_text(&mut client, "sim:slow 60000");
    session.pump_until(&mut client, |m| m.state["control"]["phase"] == "running").unwrap();
    let now = session.send_text(&mut client, "right now");
    assert_eq!(now["result"]["delivery"], "startNow");
    session.until_idle_with(&mut client, now["commandId"].as_str().unwrap());
    let headers = session.mirror.rows("turnHeader");
    assert_eq!(headers[0]["sourceCommandId"], slow["commandId"]);
    assert_eq!(headers[0]["state"], "completedInterrupted");
    assert_eq!(headers[1]["state"], "completedSuccess");
    assert_eq!(session.reply_text(), "Hello from the ZCode simulator. You said: right now");
}

/// An input admitted to start now is the foreground from its acknowledgement on: a stop or a
/// preempting input right behind it reaches it even if its turn has yet to start.
#[test]
fn a_stop_or_a_start_now_right_behind_an_admission_reaches_that_input() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &runtime.ws());
    // Several rounds: whether the turn has started by the time the stop arrives varies.
    for round in 0..8 {
        let slow = session.send_text(&mut client, "sim:slow 600000");
        assert_eq!(session.command(&mut client, "stop", json!({}))["status"], "accepted");
        session.until_idle_with(&mut client, slow["commandId"].as_str().unwrap());
        let header = session.mirror.rows("turnHeader").last().cloned().unwrap();
        assert_eq!(header["sourceCommandId"], slow["commandId"], "round {round}");
        assert_eq!(header["state"], "completedInterrupted", "round {round}");
    }
    let slow = session.send_text(&mut client, "sim:slow 600000");
    let now = session.send_text(&mut client, "right now");
    assert_eq!(now["result"]["delivery"], "startNow");
    session.until_idle_with(&mut client, now["commandId"].as_str().unwrap());
    let headers = session.mirror.rows("turnHeader");
    let state_of = |id: &Value| {
        headers.iter().find(|h| h["sourceCommandId"] == *id).map(|h| h["state"].clone())
    };
    assert_eq!(state_of(&slow["commandId"]), Some(json!("completedInterrupted")));
    assert_eq!(state_of(&now["commandId"]), Some(json!("completedSuccess")));
}

#[test]
fn modes_and_models_follow_the_profile() {
    let old = Runtime::new("3.14.3");
    let mut client = old.start(&[]);
    let mut session = Session::create(&mut client, &old.ws());
    let guarded =
        session.command(&mut client, "switchCollaborationMode", json!({"mode": "guarded"}));
    assert_eq!(
        (guarded["status"].as_str(), guarded["reasonCode"].as_str()),
        (Some("rejected"), Some("proto.invalidPayload"))
    );
    // The shared schema's wording, as the app-server's; a payload is refused with its
    // envelope, before any session is looked at.
    let modes = r#""build"|"edit"|"plan"|"yolo""#;
    let expected = format!("Invalid params — mode: Invalid option: expected one of {modes}");
    assert_eq!(
        (guarded["message"].as_str(), guarded["revisionAtDecision"].as_u64()),
        (Some(expected.as_str()), Some(0))
    );

    let new = Runtime::new("4.0.0");
    let mut client = new.start(&[]);
    std::fs::write(new.workspace.join("README.md"), "readme\n").unwrap();
    let mut session = Session::create(&mut client, &new.ws());
    assert_eq!(
        session.control(&mut client, "switchCollaborationMode", json!({"mode": "guarded"}))["status"],
        "accepted"
    );
    // In guarded mode even a read asks first.
    let ack = session.send_text(&mut client, "sim:read README.md");
    let interaction = session.pending(&mut client, "permission");
    assert_eq!(interaction["payload"]["toolName"], "Read");
    session.command(
        &mut client,
        "resolveInteraction",
        json!({"interactionId": interaction["interactionId"], "answer": {"optionId": "allowOnce"}}),
    );
    session.until_idle_with(&mut client, ack["commandId"].as_str().unwrap());
    assert_eq!(session.mirror.rows("toolCall")[0]["output"]["text"], "readme\n");

    let view = client.call("model-selection", "getView", &[json!({})]).ok();
    let provider = view["providers"][0]["providerId"].as_str().unwrap().to_owned();
    let unknown = session.control(
        &mut client,
        "switchModelConfig",
        json!({"provider": provider, "model": "nope", "thought": "low"}),
    );
    // A handler's error settles as `failed`, and a retry replays it.
    assert_eq!(
        (unknown["status"].as_str(), unknown["reasonCode"].as_str()),
        (Some("failed"), Some("fault.command.executionFailed"))
    );
    let id = unknown["commandId"].as_str().unwrap();
    let nope = json!({"provider": provider, "model": "nope", "thought": "low"});
    assert_eq!(session.command_with_id(&mut client, id, "switchModelConfig", nope), unknown);
    let switched = session.control(
        &mut client,
        "switchModelConfig",
        json!({"provider": provider, "model": "GLM-4.7", "thought": "low"}),
    );
    assert_eq!(switched["status"], "accepted");
    session.pump_until(&mut client, |m| m.state["config"]["model"] == "GLM-4.7").unwrap();
    // The same model and level again, or no level, or the same mode: a `noop` that changes
    // nothing, not even the revision (`model-config.ts`).
    let same = |thought| json!({"provider": provider, "model": "GLM-4.7", "thought": thought});
    let unchanged = [
        session.control(&mut client, "switchModelConfig", same("low")),
        session.control(&mut client, "switchModelConfig", same("")),
        session.control(&mut client, "switchCollaborationMode", json!({"mode": "guarded"})),
    ];
    for ack in &unchanged {
        assert_eq!(
            (ack["status"].as_str(), ack["reasonCode"].as_str()),
            (Some("noop"), Some("config.unchanged"))
        );
        assert_eq!(ack["revisionAtDecision"], unchanged[0]["revisionAtDecision"]);
        assert!(ack.get("result").is_none());
    }
    assert_eq!(session.mirror.state["config"]["thought"], "low");
    assert_eq!(session.mirror.state["config"]["thoughtLevels"], json!(["low", "high"]));
    assert_eq!(
        session.mirror.state["config"]["modelSelection"]["options"]["reasoningLevel"],
        "low"
    );
}

#[test]
fn seeded_history_pages_back_to_the_first_row_in_every_process() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    let ws = runtime.ws();
    let mut session = Session::create(&mut client, &ws);
    session.prompt(&mut client, "sim:history 10000");
    // 5000 exchanges of three rows, then the prompt's own turn (header, input, reply).
    let expected = 15_000 + 3;
    assert_eq!(session.mirror.state["rows"]["totalCount"], expected);
    let (rows, pages) = session.all_rows(&mut client, 200);
    assert_eq!(rows.len(), expected);
    assert_eq!(pages, expected.div_ceil(200));
    let ids: Vec<u64> = rows.iter().map(|row| row["rowId"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "rowId ascending");
    assert_eq!(rows.iter().filter(|row| row["kind"] == "userInput").count(), 5001);
    let page = client
        .agent(
            "conversationRowsRangeV4",
            &[json!({"workspacePath": ws, "sessionId": session.id, "limit": 200})],
        )
        .ok();
    assert_eq!(page["atLogEpoch"], session.mirror.state["logEpoch"]);
    assert_eq!(page["atSeq"], session.mirror.seq);
    let too_big = client
        .agent(
            "conversationRowsRangeV4",
            &[json!({"workspacePath": ws, "sessionId": session.id, "limit": 201})],
        )
        .err();
    assert_eq!(too_big["name"], "ZodError");
    let tail: Vec<Value> = rows[rows.len() - 60..].to_vec();
    drop(client);

    // A new server process resumes it from disk and pages the same history.
    let mut client = runtime.start(&[]);
    let resumed = client
        .agent(
            "resumeSession",
            &[json!({"workspacePath": ws, "sessionId": session.id, "mcpServers": []})],
        )
        .ok();
    assert_eq!(resumed["session"]["sessionId"], session.id.as_str());
    let reopened = Session::open(&mut client, &ws, &session.id);
    assert_eq!(reopened.mirror.state["rows"]["totalCount"], expected);
    assert_eq!(reopened.mirror.state["rows"]["window"].as_array().unwrap().len(), 60);
    assert_eq!(reopened.mirror.state["rows"]["window"].as_array().unwrap(), &tail);
    assert_eq!(reopened.mirror.state["seq"], session.mirror.seq);
    let (again, _) = reopened.all_rows(&mut client, 137);
    assert_eq!(again, rows);
}

#[test]
fn large_frames_travel_as_crc_checked_fragments() {
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[("ZCODE_SIM_V4_MAX_FRAME_BYTES", "4096")]);
    let ws = runtime.ws();
    let created = client.agent("createSession", &[json!({"workspacePath": ws})]).ok();
    let id = created["session"]["sessionId"].as_str().unwrap().to_owned();
    let mut session = Session::open(&mut client, &ws, &id);
    let long = "word ".repeat(3000);
    session.prompt(&mut client, &format!("sim:reply {long}"));
    assert_eq!(session.reply_text(), long.trim());
    // The snapshot of that conversation no longer fits one physical frame.
    session.mirror.reset();
    let listen = session.listen;
    client.agent("resyncConversationV4", &[json!({"workspacePath": ws, "subscriptionId": session.mirror.subscription, "base": null})]).ok();
    let mut fragments = 0;
    loop {
        let wire = client.event(listen);
        if wire["kind"] == "fragment" {
            fragments += 1;
            assert_eq!(wire["checksum"]["algorithm"], "crc32");
        }
        if services_support::apply(&mut session.mirror, &wire).unwrap()
            == services_support::mirror::Applied::Snapshot
        {
            break;
        }
    }
    assert!(fragments > 1, "the snapshot came in {fragments} fragments");
    assert_eq!(session.reply_text(), long.trim());
}

#[test]
fn a_server_that_exits_mid_turn_leaves_an_interrupted_session() {
    let runtime = Runtime::new("3.17.2");
    let ws = runtime.ws();
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "exit@stream")]);
    let mut session = Session::create(&mut client, &ws);
    session.send_text(
        &mut client,
        "sim:reply one two three four five six seven eight nine ten eleven twelve thirteen",
    );
    assert_eq!(client.drain_to_end(), None, "the output ends cleanly, mid-turn");
    let (status, _) = client.server.wait();
    assert_eq!(status.code(), Some(1));
    let mut client = runtime.start(&[]);
    client
        .agent(
            "resumeSession",
            &[json!({"workspacePath": ws, "sessionId": session.id, "mcpServers": []})],
        )
        .ok();
    let reopened = Session::open(&mut client, &ws, &session.id);
    assert_eq!(reopened.mirror.state["control"]["phase"], "completedInterrupted");
    assert_eq!(reopened.mirror.rows("turnHeader")[0]["state"], "completedInterrupted");
    assert_eq!(reopened.mirror.rows("userInput").len(), 1, "the input that was accepted survives");
}

#[test]
fn cold_resume_turns_plan_off() {
    let runtime = Runtime::new("3.14.3");
    let ws = runtime.ws();
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &ws);
    session.control(&mut client, "switchCollaborationMode", json!({"mode": "yolo"}));
    session.control(&mut client, "switchCollaborationMode", json!({"mode": "plan"}));
    session.prompt(&mut client, "plan something");
    assert_eq!(session.mirror.state["config"]["planEnabled"], true);
    drop(client);
    let mut client = runtime.start(&[]);
    let resumed = client
        .agent(
            "resumeSession",
            &[json!({"workspacePath": ws, "sessionId": session.id, "mcpServers": []})],
        )
        .ok();
    assert_eq!(resumed["settings"]["mode"]["current"], "yolo");
    let reopened = Session::open(&mut client, &ws, &session.id);
    assert_eq!(reopened.mirror.state["config"]["planEnabled"], false);
    assert_eq!(reopened.mirror.state["config"]["mode"], "yolo");
}

#[test]
fn subscribing_with_a_current_base_resumes_with_deltas() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    let ws = runtime.ws();
    let mut session = Session::create(&mut client, &ws);
    let (epoch, seq) = (session.mirror.state["logEpoch"].clone(), session.mirror.seq);
    session.prompt(&mut client, "hello");
    let listen =
        client.listen("zcode-agent", "onDynamicConversationFrame", &json!({"workspacePath": ws}));
    let ack = client.agent("subscribeConversationV4", &[json!({"workspacePath": ws, "sessionId": session.id, "base": {"logEpoch": epoch, "seq": seq}})]).ok();
    assert_eq!(ack["ack"]["mode"], "resume");
    let wire = client.event(listen);
    assert_eq!(wire["frame"]["fromSeq"], seq);
    assert_eq!(wire["frame"]["payload"]["kind"], "deltas");
    let stale = client.agent("subscribeConversationV4", &[json!({"workspacePath": ws, "sessionId": session.id, "base": {"logEpoch": "old", "seq": 1}})]).ok();
    assert_eq!(stale["ack"]["mode"], "snapshot");
    let _: Value = client.event(listen);
}
