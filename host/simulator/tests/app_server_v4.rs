//! The V4 family beside the legacy one, run once per CLI family of the app-server:
//! subscriptions and frames, the command inbox (CAS, replays, queue and guide lane), rows,
//! usage and flow.

mod app_server_support;

use app_server_support::{Agent, CLI_FAMILIES, Desktop, has_315};
use serde_json::{Value, json};

fn subscribe(agent: &mut Agent, session: &str, connection: &str) -> Value {
    let params = json!({"topic": format!("conversation/{session}"), "connectionId": connection,
                        "clientMode": "desktop-continuous"});
    agent.ok("v4/conversation/subscribe", params)["ack"].clone()
}

/// V4 frames of `subscription`, in wire order, from the log and up to `until`.
fn frames(agent: &Agent, subscription: &str) -> Vec<Value> {
    agent
        .log
        .iter()
        .filter(|frame| {
            frame["method"] == "v4/conversation/frame"
                && frame["params"]["subscriptionId"] == subscription
        })
        .map(|frame| frame["params"].clone())
        .collect()
}

fn revision(agent: &mut Agent, session: &str) -> u64 {
    agent.ok("session/read", json!({"sessionId": session, "messageLimit": 1}))["runtime"]["stateRevision"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_subscription_acks_then_sends_its_snapshot_and_contiguous_deltas() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        let ack = subscribe(&mut agent, &session, "conn-1");
        assert_eq!(ack["mode"], "snapshot", "{app}");
        let subscription = ack["subscriptionId"].as_str().unwrap().to_owned();
        let snapshot = agent.notification("v4/conversation/frame");
        let ack_at = agent.log.iter().position(|frame| frame["result"]["ack"].is_object()).unwrap();
        let frame_at =
            agent.log.iter().position(|frame| frame["method"] == "v4/conversation/frame").unwrap();
        assert!(
            ack_at < frame_at,
            "{app}: the 3.15.1 source writes the initial frame after the ACK"
        );
        let params = &snapshot["params"];
        assert_eq!(
            (params["wireVersion"].as_u64(), params["kind"].as_str()),
            (Some(3), Some("complete"))
        );
        assert_eq!(params["deliveryKind"], "initial");
        assert_eq!(params["frame"]["fromSeq"], 0);
        let body = &params["frame"]["payload"]["snapshot"];
        assert_eq!(body["sessionId"], session.as_str());
        assert_eq!(body["logEpoch"], ack["logEpoch"]);
        assert_eq!(body["queue"], json!({"items": [], "autoDrain": true}));

        let accepted =
            agent.command(&session, "sendText", json!({"text": "sim:reply from v4"}), json!({}));
        assert_eq!(accepted["status"], "accepted", "{app}: {accepted}");
        assert_eq!(accepted["result"]["type"], "inputAccepted");
        assert_eq!(accepted["result"]["delivery"], "startNow");
        // ZCode's input id is the command id, in the ACK and in the turn it starts.
        assert_eq!(accepted["result"]["inputId"], accepted["commandId"], "{app}");
        let events = agent.turn_events(&session);
        let started = events.iter().find(|event| event["type"] == "turn.started").unwrap();
        assert_eq!(started["payload"]["inputId"], accepted["commandId"], "{app}");
        assert_eq!(events.last().unwrap()["payload"]["response"], "from v4", "{app}");
        agent.take(|frame| frame["params"]["reason"] == "prompt_completed");
        let frames = frames(&agent, &subscription);
        for pair in frames.windows(2) {
            assert_eq!(pair[1]["frame"]["fromSeq"], pair[0]["frame"]["toSeq"], "{app}: no gap");
            assert_eq!(
                pair[1]["logicalFrameOrdinal"].as_u64(),
                pair[0]["logicalFrameOrdinal"].as_u64().map(|n| n + 1)
            );
        }
        let appended: Vec<&str> = frames
            .iter()
            .flat_map(|frame| {
                frame["frame"]["payload"]["deltas"].as_array().cloned().unwrap_or_default()
            })
            .filter(|delta| delta["op"] == "row.appended")
            .map(|delta| delta["row"]["kind"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
            .iter()
            .map(|kind| match kind.as_str() {
                "turnHeader" => "turnHeader",
                "userInput" => "userInput",
                "assistantText" => "assistantText",
                _ => "other",
            })
            .collect();
        assert_eq!(appended, ["turnHeader", "userInput", "assistantText"], "{app}");
        // The success sends the header closed, then the turn's answer again marked as a fork
        // target (ZCode `markStableForkAssistant`), before the control patch.
        let upserted: Vec<Value> = frames
            .iter()
            .flat_map(|frame| {
                frame["frame"]["payload"]["deltas"].as_array().cloned().unwrap_or_default()
            })
            .filter(|delta| delta["op"] == "row.upserted")
            .map(|delta| delta["row"].clone())
            .collect();
        let header = upserted.iter().position(|row| row["state"] == "completedSuccess");
        let marked = upserted.iter().position(|row| row["actions"]["canFork"] == true);
        assert!(header.is_some() && marked > header, "{app}: {upserted:#?}");
        let marked = &upserted[marked.unwrap()];
        assert_eq!(
            (&marked["kind"], &marked["state"]),
            (&json!("assistantText"), &json!("complete"))
        );
        assert_eq!(marked["text"], "from v4", "{app}");
        // The title the first input gave is `generated` on V4 (the legacy event says
        // `first_input`): V4's title sources are default, generated and custom.
        let meta = frames
            .iter()
            .flat_map(|frame| {
                frame["frame"]["payload"]["deltas"].as_array().cloned().unwrap_or_default()
            })
            .find_map(|delta| delta["patch"].get("meta").cloned());
        assert_eq!(
            meta,
            Some(json!({"title": "sim:reply from v4", "titleSource": "generated"})),
            "{app}"
        );
        // Rows page backwards; the same usage answers on both families.
        let page = agent.ok("v4/conversation/rowsRange", json!({"sessionId": session, "limit": 2}));
        let ids: Vec<u64> = page["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["rowId"].as_u64().unwrap())
            .collect();
        assert_eq!(ids, [2, 3], "{app}");
        assert_eq!(page["hasMore"], true);
        let bad = agent.err("v4/conversation/rowsRange", json!({"sessionId": session, "limit": 0}));
        assert_eq!(bad["code"], -32603, "{app}: V4 params fail with the ZodError");
        let usage = agent.ok("v4/conversation/usage", json!({"sessionId": session}));
        assert_eq!(usage, agent.ok("session/usage", json!({"sessionId": session})));
        // A resync from the last frame resumes; a foreign epoch gets a snapshot.
        let last = frames.last().unwrap()["frame"]["toSeq"].as_u64().unwrap();
        let resync = json!({"subscriptionId": subscription, "topic": format!("conversation/{session}"),
                            "connectionId": "conn-1", "base": {"logEpoch": ack["logEpoch"], "seq": last}});
        assert_eq!(
            agent.ok("v4/conversation/resync", resync.clone())["ack"]["mode"],
            "resume",
            "{app}"
        );
        let mut foreign = resync;
        foreign["base"]["logEpoch"] = json!("epoch_other");
        assert_eq!(agent.ok("v4/conversation/resync", foreign)["ack"]["mode"], "snapshot");
    }
}

#[test]
fn commands_check_their_payload_base_revision_and_identity() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        let missing =
            agent.command(&session, "switchCollaborationMode", json!({"mode": "edit"}), json!({}));
        // ZCode's envelope parser refuses a CAS command without its base before `decide`.
        assert_eq!(
            (missing["status"].as_str(), missing["reasonCode"].as_str()),
            (Some("rejected"), Some("proto.invalidPayload")),
            "{app}"
        );
        let current = revision(&mut agent, &session);
        // A stale base has no message, and is not remembered: the same command id with the
        // current base is decided afresh.
        let mut params = json!({"commandId": "s".repeat(32), "clientId": "client",
            "sessionId": session, "type": "switchCollaborationMode", "payload": {"mode": "edit"},
            "baseRevision": current + 1, "issuedAt": 1});
        let stale = agent.ok("v4/command", params.clone());
        assert_eq!(
            stale,
            json!({"commandId": "s".repeat(32), "status": "stale",
                   "reasonCode": "proto.staleRevision", "revisionAtDecision": current}),
            "{app}"
        );
        params["baseRevision"] = json!(current);
        let switched = agent.ok("v4/command", params);
        assert_eq!(switched["status"], "accepted", "{app}: {switched}");
        let changed = agent.take(|frame| frame["params"]["reason"] == "mode_changed");
        assert_eq!(changed["params"]["patch"]["mode"]["current"], "edit");
        let base = revision(&mut agent, &session);
        let guarded = agent.command(
            &session,
            "switchCollaborationMode",
            json!({"mode": "guarded"}),
            json!({"baseRevision": base}),
        );
        let expected = if has_315(app) { "accepted" } else { "rejected" };
        assert_eq!(guarded["status"], expected, "{app}: guarded came with 3.15");
        let base = revision(&mut agent, &session);
        let auto = agent.command(
            &session,
            "switchCollaborationMode",
            json!({"mode": "auto"}),
            json!({"baseRevision": base}),
        );
        assert_eq!(auto["reasonCode"], "proto.invalidPayload", "{app}: V4 has no auto mode");
        // The shared schema's wording, as the Services Server's.
        let guarded = if has_315(app) { r#"|"guarded""# } else { "" };
        let modes = format!(r#""build"|"edit"|"plan"|"yolo"{guarded}"#);
        assert_eq!(
            auto["message"],
            format!("Invalid params — mode: Invalid option: expected one of {modes}"),
            "{app}"
        );
        // The payload is part of the envelope: refused before any session is looked at.
        assert_eq!(auto["revisionAtDecision"], 0, "{app}");
        // The same command id again: the first decision, marked duplicate.
        let params = json!({"commandId": "c".repeat(32), "clientId": "client", "sessionId": session,
                            "type": "renameSession", "payload": {"title": "Renamed"}, "issuedAt": 1});
        assert_eq!(agent.ok("v4/command", params.clone())["status"], "accepted");
        assert_eq!(agent.ok("v4/command", params)["status"], "duplicate", "{app}");
        let renamed = agent.take(|frame| frame["params"]["type"] == "session.titleUpdated");
        assert_eq!(renamed["params"]["payload"]["source"], "custom");
        let envelope = agent.ok("v4/command", json!({"commandId": "x", "sessionId": session}));
        assert_eq!(
            (envelope["status"].as_str(), envelope["reasonCode"].as_str()),
            (Some("rejected"), Some("proto.invalidPayload"))
        );
        assert_eq!(envelope["revisionAtDecision"], 0);
        let nobody = agent.command("sess_nobody", "stop", json!({}), json!({}));
        assert_eq!(nobody["reasonCode"], "proto.sessionNotFound", "{app}");
        let idle_stop = agent.command(&session, "stop", json!({}), json!({}));
        assert_eq!(idle_stop["status"], "accepted", "{app}: stopping an idle session is a no-op");
        // A stop naming an execution that is over stops nothing.
        let late_stop = agent.command(
            &session,
            "stop",
            json!({"expectedForegroundExecutionId": "fx_over"}),
            json!({}),
        );
        assert_eq!(
            (late_stop["status"].as_str(), late_stop["reasonCode"].as_str()),
            (Some("noop"), Some("guard.stopTargetChanged")),
            "{app}"
        );
        let compact = agent.command(&session, "compact", json!({}), json!({}));
        assert_eq!(
            (compact["status"].as_str(), compact["reasonCode"].as_str()),
            (Some("failed"), Some("fault.command.notImplemented")),
            "{app}"
        );
        let base = revision(&mut agent, &session);
        let missing = json!({"queueItemId": "queue_gone"});
        let deleted =
            agent.command(&session, "deleteQueueItem", missing, json!({"baseRevision": base}));
        assert_eq!(deleted["reasonCode"], "queue.itemMissing", "{app}: {deleted}");
    }
}

#[test]
fn handler_refusals_and_unchanged_switches_are_settled_and_remembered() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        // 3.15.1 refuses an empty input in `sendText`'s handler: `failed`, and remembered, so
        // the same command id with text is that failure again.
        let empty = agent.command(&session, "sendText", json!({"text": " \n"}), json!({}));
        assert_eq!(
            (empty["status"].as_str(), empty["reasonCode"].as_str(), empty["message"].as_str()),
            (Some("failed"), Some("proto.invalidPayload"), Some("input must not be empty")),
            "{app}"
        );
        let mut retry = json!({"commandId": empty["commandId"], "clientId": "client",
            "sessionId": session, "type": "sendText", "payload": {"text": "sim:reply hi"}, "issuedAt": 1});
        assert_eq!(agent.ok("v4/command", retry.clone()), empty, "{app}");
        // A switch to what the session has already: `noop config.unchanged`, no revision, no
        // announcement, and replayed as a duplicate.
        // A new session's model is the local `sim-echo`.
        let model = json!({"provider": "sim-local", "model": "sim-echo", "thought": ""});
        let switch = |agent: &mut Agent, kind: &str, payload: &Value| {
            let base = revision(agent, &session);
            agent.command(&session, kind, payload.clone(), json!({"baseRevision": base}))
        };
        let edit = json!({"mode": "edit"});
        assert_eq!(switch(&mut agent, "switchCollaborationMode", &edit)["status"], "accepted");
        let before = revision(&mut agent, &session);
        for (kind, payload) in [("switchCollaborationMode", &edit), ("switchModelConfig", &model)] {
            let unchanged = switch(&mut agent, kind, payload);
            assert_eq!(
                unchanged,
                json!({"commandId": unchanged["commandId"], "status": "noop",
                       "reasonCode": "config.unchanged", "revisionAtDecision": before}),
                "{app}: {kind}"
            );
            retry["commandId"] = unchanged["commandId"].clone();
            retry["type"] = json!(kind);
            retry["payload"] = payload.clone();
            retry["baseRevision"] = json!(before);
            assert_eq!(agent.ok("v4/command", retry.clone())["status"], "duplicate", "{app}");
        }
        assert_eq!(revision(&mut agent, &session), before, "{app}");
    }
}

#[test]
fn a_session_remembers_its_512_most_recently_used_decisions() {
    let desktop = Desktop::new(CLI_FAMILIES[CLI_FAMILIES.len() - 1]);
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({}));
    let mut stop = |id: &str| {
        let params = json!({"commandId": id, "clientId": "client", "sessionId": session,
                            "type": "stop", "payload": {}, "issuedAt": 1});
        agent.ok("v4/command", params)["status"].clone()
    };
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
fn inputs_queue_behind_a_run_and_guides_fall_back_when_it_stops() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        let ack = subscribe(&mut agent, &session, "conn-1");
        let subscription = ack["subscriptionId"].as_str().unwrap().to_owned();
        agent.command(&session, "sendText", json!({"text": "sim:slow 600000"}), json!({}));
        agent.take(|frame| frame["params"]["type"] == "model.streaming");
        // A legacy stop does not reach a run V4 started.
        assert_eq!(agent.ok("session/stop", json!({"sessionId": session})), json!({}));
        let guide = agent.command(
            &session,
            "sendText",
            json!({"text": "sim:reply guided", "requestedDelivery": "guide"}),
            json!({}),
        );
        assert_eq!(
            guide["result"]["delivery"], "queue",
            "{app}: the ACK says queue even for a guide"
        );
        assert_eq!(guide["result"]["inputId"], guide["commandId"], "{app}");
        let queued = agent.take(|frame| frame["params"]["type"] == "turn.steerQueued");
        assert_eq!(queued["params"]["payload"]["delivery"], "guide", "{app}");
        assert_eq!(queued["params"]["payload"]["pendingInputId"], guide["commandId"], "{app}");
        let stop = agent.command(&session, "stop", json!({}), json!({}));
        assert_eq!(stop["status"], "accepted");
        let completed = agent.turn_events(&session).pop().unwrap();
        assert_eq!(completed["payload"]["resultType"], "cancelled", "{app}");
        agent.take(|frame| frame["params"]["reason"] == "prompt_completed");
        let queue = frames(&agent, &subscription)
            .iter()
            .flat_map(|frame| {
                frame["frame"]["payload"]["deltas"].as_array().cloned().unwrap_or_default()
            })
            .filter_map(|delta| delta["patch"].get("queue").cloned())
            .next_back()
            .unwrap();
        assert_eq!(queue["autoDrain"], false, "{app}: a stop holds the queue");
        assert_eq!(queue["items"][0]["steer"]["state"], "fellBack");
        assert_eq!(queue["items"][0]["steer"]["reasonCode"], "guide.turnInterrupted");
        // Releasing the queue starts the held input as the next run.
        let base = revision(&mut agent, &session);
        let drain = agent.command(
            &session,
            "setAutoDrain",
            json!({"autoDrain": true}),
            json!({"baseRevision": base}),
        );
        assert_eq!(drain["status"], "accepted", "{app}: {drain}");
        let events = agent.turn_events(&session);
        let started = events.iter().find(|event| event["type"] == "turn.started").unwrap();
        assert_eq!(started["payload"]["input"], "sim:reply guided", "{app}");
        assert_eq!(events.last().unwrap()["payload"]["resultType"], "success");
    }
}

#[test]
fn a_legacy_stop_leaves_a_v4_run_alone_and_answers_finish_it() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({}));
    agent.command(&session, "sendText", json!({"text": "sim:question"}), json!({}));
    let asked = agent.reverse("interaction/requestUserInput");
    assert_eq!(agent.ok("session/stop", json!({"sessionId": session})), json!({}));
    agent.answer(&asked["id"], json!({"action": "accept", "content": {"answer": "Fast"}}));
    let completed = agent.turn_events(&session).pop().unwrap();
    assert_eq!(completed["payload"]["resultType"], "success");
}

#[test]
fn a_saturated_connection_holds_its_frames_until_drained() {
    let desktop = Desktop::new("3.18.2");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({}));
    let subscription =
        subscribe(&mut agent, &session, "conn-9")["subscriptionId"].as_str().unwrap().to_owned();
    agent.notification("v4/conversation/frame");
    assert_eq!(
        agent.ok("v4/connection/flow", json!({"connectionId": "conn-9", "state": "saturated"})),
        json!({})
    );
    let held_from = agent.log.len();
    agent.prompt(&session, "sim:reply held");
    agent.turn_events(&session);
    agent.take(|frame| frame["params"]["reason"] == "prompt_completed");
    assert!(
        agent.log[held_from..].iter().all(|frame| frame["method"] != "v4/conversation/frame"),
        "nothing reaches a saturated connection"
    );
    let drained =
        agent.request("v4/connection/flow", json!({"connectionId": "conn-9", "state": "drained"}));
    agent.response(drained);
    let frames = frames(&agent, &subscription);
    assert!(frames.len() > 3, "the held frames are flushed");
    for pair in frames.windows(2) {
        assert_eq!(pair[1]["frame"]["fromSeq"], pair[0]["frame"]["toSeq"]);
    }
}

#[test]
fn a_stored_session_materialises_cold_for_a_v4_subscriber() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let session = {
            let mut agent = desktop.spawn();
            let session = agent.session(&desktop.ws(), json!({}));
            agent.prompt(&session, "sim:reply stored");
            agent.turn_events(&session);
            session
        };
        let mut agent = desktop.spawn();
        let ack = subscribe(&mut agent, &session, "conn-1");
        assert!(
            agent.log.iter().any(|frame| frame["params"]["scope"] == "runtime-materialization"),
            "{app}"
        );
        assert_eq!(ack["openTiming"]["sessionRuntimeState"], "cold", "{app}");
        let snapshot = agent.notification("v4/conversation/frame");
        let rows = snapshot["params"]["frame"]["payload"]["snapshot"]["rows"]["window"]
            .as_array()
            .unwrap()
            .clone();
        let texts: Vec<&str> = rows.iter().filter_map(|row| row["text"].as_str()).collect();
        assert_eq!(texts, ["sim:reply stored", "stored"], "{app}");
        let config = agent.ok("v4/conversation/subscribe", json!({"topic": format!("workspace-config/{}", desktop.ws()["workspaceKey"].as_str().unwrap()), "connectionId": "conn-1", "clientMode": "desktop-continuous"}));
        assert_eq!(config["ack"]["mode"], "snapshot");
        let frame = agent.take(|frame| {
            frame["params"]["topic"]
                .as_str()
                .is_some_and(|topic| topic.starts_with("workspace-config/"))
        });
        let commands: Vec<&str> =
            frame["params"]["frame"]["payload"]["snapshot"]["config"]["slashCommands"]
                .as_array()
                .unwrap()
                .iter()
                .map(|command| command["name"].as_str().unwrap())
                .collect();
        assert_eq!(commands, ["compact", "goal", "init", "plan"], "{app}");
        let unknown = agent.err("v4/conversation/subscribe", json!({"topic": "conversation/sess_nobody", "connectionId": "c", "clientMode": "desktop-continuous"}));
        assert_eq!(unknown["code"], -32004, "{app}");
    }
}

#[test]
fn a_guide_joins_the_run_at_its_next_model_request() {
    let desktop = Desktop::new("3.17.1");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:shell ls");
    let asked = agent.reverse("interaction/requestPermission");
    let guide = agent.command(
        &session,
        "sendText",
        json!({"text": "also check the logs", "requestedDelivery": "guide"}),
        json!({}),
    );
    assert_eq!(guide["status"], "accepted");
    agent.answer(&asked["id"], json!({"decision": "allow"}));
    let events = agent.turn_events(&session);
    let drained =
        events.iter().find(|event| event["type"] == "turn.steerDrained").expect("drained");
    assert_eq!(drained["payload"]["drainedInputs"][0]["text"], "also check the logs");
    let result_at = events.iter().position(|event| event["payload"]["kind"] == "result").unwrap();
    let drained_at = events.iter().position(|event| event["type"] == "turn.steerDrained").unwrap();
    assert!(result_at < drained_at, "drained after the tool, before the next model request");
    let read = agent.ok("session/read", json!({"sessionId": session}));
    let roles: Vec<&str> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["info"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "user", "assistant"], "the guide became part of the turn");
}

#[test]
fn events_are_pushed_only_to_a_subscribed_session() {
    let desktop = Desktop::new("3.16.2");
    let mut agent = desktop.spawn();
    let created = agent.ok("session/create", json!({"workspace": desktop.ws()}));
    let session = created["session"]["sessionId"].as_str().unwrap().to_owned();
    agent.prompt(&session, "sim:reply quiet");
    agent.take(|frame| frame["params"]["reason"] == "prompt_completed");
    assert!(agent.log.iter().all(|frame| frame["method"] != "session/event"), "nobody subscribed");
    let events = agent.ok("session/events", json!({"sessionId": session}));
    let kinds: Vec<&str> =
        events["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    // A new session's log is empty until its first turn (probe log [A] §5.2, §11.4).
    assert_eq!(kinds.first(), Some(&"session.titleUpdated"));
    assert_eq!(kinds.last(), Some(&"turn.completed"));
    // Subscribing from a seq answers what came after it, in the answer (probe log [A] §5.2).
    let subscribed = agent.call(
        "session/subscribe",
        json!({"sessionId": session, "deliveryKind": "desktop-continuous", "afterSeq": 1}),
    );
    assert_eq!(subscribed["result"]["eventSeq"].as_u64(), Some(kinds.len() as u64));
    assert_eq!(subscribed["result"]["sessionId"], session.as_str());
    let replayed = subscribed["result"]["events"].as_array().unwrap();
    assert_eq!(replayed.len(), kinds.len() - 1);
    assert_eq!(replayed[0]["seq"], 2);
}

#[test]
fn a_tools_output_text_is_its_own_result_without_the_legacy_success_mark() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({}));
    let ack = subscribe(&mut agent, &session, "conn-1");
    let subscription = ack["subscriptionId"].as_str().unwrap().to_owned();
    std::fs::write(
        desktop.workspace.join("tool.jsonl"),
        "{\"step\":\"tool\",\"name\":\"Read\",\"input\":{\"file_path\":\"a.txt\"},\"result\":{\"n\":1}}\n",
    )
    .unwrap();
    agent.command(&session, "sendText", json!({"text": "sim:file tool.jsonl"}), json!({}));
    let events = agent.turn_events(&session);
    let result = events
        .iter()
        .find(|event| event["type"] == "tool.updated" && event["payload"]["kind"] == "result")
        .unwrap();
    // The legacy event marks the result a success; the text shows the tool's own output.
    assert_eq!(result["payload"]["result"], json!({"n": 1, "success": true}));
    let output = frames(&agent, &subscription)
        .iter()
        .flat_map(|frame| {
            frame["frame"]["payload"]["deltas"].as_array().cloned().unwrap_or_default()
        })
        .find_map(|delta| {
            (delta["row"]["status"] == "success").then(|| delta["row"]["output"]["text"].clone())
        });
    assert_eq!(output, Some(json!("{\"n\":1}")));
}

#[test]
fn pending_interactions_are_zcodes_v4_entries_anchored_to_a_row() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({"mode": "build"}));
    let ack = subscribe(&mut agent, &session, "conn-1");
    let subscription = ack["subscriptionId"].as_str().unwrap().to_owned();
    let decline = json!({"action": "decline"});
    for (text, method, answer) in [
        ("sim:shell ls", "interaction/requestPermission", json!({"decision": "deny"})),
        ("sim:question", "interaction/requestUserInput", decline.clone()),
        ("sim:plan-input", "interaction/requestUserInput", decline),
    ] {
        agent.command(&session, "sendText", json!({"text": text}), json!({}));
        let asked = agent.reverse(method);
        agent.answer(&asked["id"], answer);
        agent.turn_events(&session);
    }
    let entries: Vec<Value> = frames(&agent, &subscription)
        .iter()
        .flat_map(|frame| {
            frame["frame"]["payload"]["deltas"].as_array().cloned().unwrap_or_default()
        })
        .filter_map(|delta| delta["patch"]["pendingInteractions"].as_array().cloned())
        .flatten()
        .collect();
    // ZCode's `pendingInteractionSchema`: the payload says the entry's kind, and the entry
    // is anchored to a row, with the time it was made.
    let kinds: Vec<&str> = entries.iter().map(|entry| entry["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["permission", "userInput", "userInput"], "{entries:#?}");
    for entry in &entries {
        assert_eq!(entry["payload"]["kind"], entry["kind"], "{entry}");
        assert!(entry["interactionId"].as_str().is_some_and(|id| !id.is_empty()), "{entry}");
        assert!(entry["anchorRowId"].is_u64() && entry["createdAt"].is_u64(), "{entry}");
    }
    assert_eq!(entries[0]["payload"]["toolName"], "Bash");
    assert_eq!(entries[2]["payload"]["schema"]["interaction"], "plan_approval");
}
