//! `ZCODE_SIM_FAULT` switches of the app-server profiles.

mod app_server_support;

use app_server_support::{Agent, Desktop, Frame, labels};
use serde_json::{Value, json};

fn agent_with(desktop: &Desktop, fault: &str) -> Agent {
    desktop.spawn_with(&[("ZCODE_SIM_FAULT", fault)])
}

#[test]
fn v4_sequence_gaps_skip_sequence_numbers_once() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = agent_with(&desktop, "v4-seq-gap@stream");
    let session = agent.session(&desktop.ws(), json!({}));
    let ack = agent.ok(
        "v4/conversation/subscribe",
        json!({"topic": format!("conversation/{session}"),
        "connectionId": "c", "clientMode": "desktop-continuous"}),
    )["ack"]
        .clone();
    agent.prompt(&session, "sim:reply one two three four five six");
    agent.turn_events(&session);
    agent.take(|frame| frame["params"]["reason"] == "prompt_completed");
    let frames: Vec<&Value> = agent
        .log
        .iter()
        .filter(|frame| frame["params"]["subscriptionId"] == ack["subscriptionId"])
        .collect();
    let gaps: Vec<(u64, u64)> = frames
        .windows(2)
        .map(|pair| {
            (
                pair[0]["params"]["frame"]["toSeq"].as_u64().unwrap(),
                pair[1]["params"]["frame"]["fromSeq"].as_u64().unwrap(),
            )
        })
        .filter(|(to, from)| from != to)
        .collect();
    assert_eq!(gaps.len(), 1, "exactly one gap: {gaps:?}");
    assert!(gaps[0].1 > gaps[0].0, "the next frame starts ahead");
}

#[test]
fn legacy_sequence_gaps_jump_the_event_seq() {
    let desktop = Desktop::new("3.14.4");
    let mut agent = agent_with(&desktop, "seq-gap@stream");
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:reply a b c d");
    let seqs: Vec<u64> =
        agent.turn_events(&session).iter().map(|event| event["seq"].as_u64().unwrap()).collect();
    let jumps = seqs.windows(2).filter(|pair| pair[1] != pair[0] + 1).count();
    assert_eq!(jumps, 1, "{seqs:?}");
}

/// `drop-events`: events a real stream was seen without (probe log [A] §6.3) stay in the log,
/// and `session/events` with `afterSeq` gives them back (§8.3).
#[test]
fn dropped_events_are_logged_and_replayed_after_their_seq() {
    let desktop = Desktop::new("3.16.2");
    let mut agent = agent_with(&desktop, "drop-events@stream=2");
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:stream 10");
    let seqs: Vec<u64> =
        agent.turn_events(&session).iter().map(|event| event["seq"].as_u64().unwrap()).collect();
    let jumps: Vec<&[u64]> = seqs.windows(2).filter(|pair| pair[1] != pair[0] + 1).collect();
    assert_eq!(jumps.len(), 1, "{seqs:?}");
    let (last, next) = (jumps[0][0], jumps[0][1]);
    assert_eq!(next, last + 3, "two events never written: {seqs:?}");
    let replayed = agent.ok("session/events", json!({"sessionId": session, "afterSeq": last}));
    let replayed: Vec<u64> = replayed["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(replayed[..3], [last + 1, last + 2, last + 3], "{replayed:?}");
}

#[test]
fn stale_cas_and_busy_refuse_the_next_command_only() {
    let desktop = Desktop::new("3.16.2");
    let mut agent = agent_with(&desktop, "stale-cas,busy");
    let session = agent.session(&desktop.ws(), json!({}));
    let base =
        agent.ok("session/read", json!({"sessionId": session}))["runtime"]["stateRevision"].clone();
    let params = |id: &str| {
        json!({"commandId": id, "clientId": "c", "sessionId": session,
        "type": "setFollowupMode", "payload": {"mode": "guide"}, "baseRevision": base, "issuedAt": 1})
    };
    let stale = agent.ok("v4/command", params("a"));
    assert_eq!(
        (stale["status"].as_str(), stale["reasonCode"].as_str()),
        (Some("stale"), Some("proto.staleRevision"))
    );
    assert_eq!(agent.ok("v4/command", params("b"))["status"], "accepted");
    let busy = agent.err("session/send", json!({"sessionId": session, "content": "hi"}));
    assert_eq!(
        busy,
        json!({"code": -32010, "message": "A prompt is already running for this session"})
    );
    assert_eq!(agent.prompt(&session, "sim:reply ok")["accepted"], true);
}

#[test]
fn an_evicted_session_answers_32004_until_resumed() {
    let desktop = Desktop::new("3.17.2");
    let mut agent = agent_with(&desktop, "evict");
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:reply before eviction");
    agent.turn_events(&session);
    agent.take(|frame| frame["params"]["reason"] == "prompt_completed");
    let error = agent.err("session/read", json!({"sessionId": session}));
    assert_eq!(
        error,
        json!({"code": -32004, "message": format!("Session is not active: {session}")})
    );
    let send = agent.err("session/send", json!({"sessionId": session, "content": "x"}));
    assert_eq!(send["code"], -32004);
    let command = agent.command(&session, "stop", json!({}), json!({}));
    assert_eq!(command["reasonCode"], "proto.sessionNotFound");
    let resumed =
        agent.ok("session/resume", json!({"sessionId": session, "workspace": desktop.ws()}));
    assert_eq!(resumed["messages"].as_array().unwrap().len(), 2, "the history survived");
}

#[test]
fn the_interaction_race_puts_two_ids_out_at_once() {
    let desktop = Desktop::new("3.15.3");
    let mut agent = desktop.spawn_with(&[
        ("ZCODE_SIM_FAULT", "interaction-race"),
        ("ZCODE_SIM_REANNOUNCE_MS", "600000"),
    ]);
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:shell ls");
    let first = agent.reverse("interaction/requestPermission");
    let second = agent.reverse("interaction/requestPermission");
    assert_ne!(first["id"], second["id"]);
    agent.answer(&second["id"], json!({"decision": "allow"}));
    agent.answer(&first["id"], json!({"decision": "deny"}));
    let events = agent.turn_events(&session);
    let resolved = events.iter().find(|event| event["type"] == "permission.resolved").unwrap();
    assert_eq!(resolved["payload"]["decision"], "allow", "the first answer to arrive wins");
}

#[test]
fn a_headers_storm_asks_again_and_again_before_one_request() {
    let desktop = Desktop::new("3.18.2");
    desktop.store_key("account:zai-individual-coding-plan", "sk-z");
    let mut agent = agent_with(&desktop, "headers-storm=3");
    agent.ok(
        "provider/updateAccountConfig",
        desktop.account_push("account:z:1", &["account:zai-individual-coding-plan"]),
    );
    let model = json!({"providerId": "account:zai-individual-coding-plan", "modelId": "GLM-5.3"});
    let session = agent.session(&desktop.ws(), json!({"model": model}));
    agent.prompt(&session, "sim:reply stormy");
    for _ in 0..3 {
        let asked = agent.reverse("interaction/requestProviderRuntimeHeaders");
        agent.answer(
            &asked["id"],
            json!({"headersApplied": true, "requestAuth": {"apiKey": "sk-z"}}),
        );
    }
    let events = agent.turn_events(&session);
    assert_eq!(events.last().unwrap()["payload"]["response"], "stormy");
    let asked = agent
        .log
        .iter()
        .filter(|frame| frame["method"] == "interaction/requestProviderRuntimeHeaders")
        .count();
    assert_eq!(asked, 3);
}

#[test]
fn malformed_lines_and_unknown_events_appear_mid_turn() {
    let desktop = Desktop::new("3.14.3");
    let mut agent = agent_with(&desktop, "malformed@stream,unknown-event@turn-end");
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:reply a b c");
    let mut raw = 0;
    loop {
        match agent.next_frame() {
            Frame::Raw(_) => raw += 1,
            Frame::Json(frame) if frame["params"]["type"] == "turn.completed" => break,
            Frame::Json(_) => {}
        }
    }
    assert_eq!(raw, 1);
    let unknown =
        agent.log.iter().filter(|frame| frame["params"]["type"] == "sim.unknownEvent").count();
    assert_eq!(unknown, 1);
}

#[test]
fn snapshot_first_writes_the_frame_before_the_ack() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = agent_with(&desktop, "snapshot-first");
    let session = agent.session(&desktop.ws(), json!({}));
    let id = agent.request(
        "v4/conversation/subscribe",
        json!({"topic": format!("conversation/{session}"),
        "connectionId": "c", "clientMode": "desktop-continuous"}),
    );
    agent.response(id);
    let ack_at = agent.log.iter().position(|frame| frame["id"] == id).unwrap();
    let frame_at =
        agent.log.iter().position(|frame| frame["method"] == "v4/conversation/frame").unwrap();
    assert!(frame_at < ack_at);
}

#[test]
fn close_deletes_makes_a_314_close_erase_history() {
    let desktop = Desktop::new("3.14.5");
    let mut agent = agent_with(&desktop, "close-deletes");
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:reply gone");
    agent.turn_events(&session);
    agent.ok("session/close", json!({"sessionId": session}));
    let error =
        agent.err("session/resume", json!({"sessionId": session, "workspace": desktop.ws()}));
    assert_eq!(error["message"], format!("Session not found: {session}"));
}

#[test]
fn crashes_stalls_and_bad_specs() {
    let desktop = Desktop::new("4.0.0");
    let mut agent = agent_with(&desktop, "crash@session/send");
    let session = agent.session(&desktop.ws(), json!({}));
    agent.request("session/send", json!({"sessionId": session, "content": "x"}));
    assert_eq!(agent.wait().code(), Some(1));
    assert!(agent.stderr_text().contains("simulated crash at session/send"));

    let mut agent = agent_with(&desktop, "stall@permission");
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:shell ls");
    let events = agent.take(|frame| frame["params"]["type"] == "tool.updated");
    assert_eq!(events["params"]["payload"]["kind"], "scheduled");
    // The turn is frozen, yet the Agent still answers.
    assert!(
        agent.ok("session/read", json!({"sessionId": session}))["runtime"]["activeTurnId"]
            .is_string()
    );

    let bad = desktop.spawn_with(&[("ZCODE_SIM_FAULT", "explode")]).wait();
    assert_eq!(bad.code(), Some(2));
    let _ = labels(&[]);
}
