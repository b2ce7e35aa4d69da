//! Every fault switch, from `ZCODE_SIM_FAULT` and from scenario steps.

mod common;

use std::time::{Duration, Instant};

use common::{Frame, Install, Sim, label, open_session, prompt, session_events};
use serde_json::{Value, json};

fn faulty(spec: &str) -> (Install, Sim, String, String) {
    let install = Install::new();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", spec)]);
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    (install, sim, ws, session)
}

/// Frames up to and including the turn's terminal event, raw lines included.
fn frames_until_terminal(sim: &mut Sim) -> Vec<Frame> {
    let mut frames = Vec::new();
    loop {
        let frame = sim.next_frame();
        let done =
            matches!(&frame, Frame::Json(value) if common::is_terminal(&value["params"]["event"]));
        frames.push(frame);
        if done {
            return frames;
        }
    }
}

fn events_of(frames: &[Frame]) -> Vec<Value> {
    frames
        .iter()
        .filter_map(|frame| match frame {
            Frame::Json(value) if value["method"] == "event" => {
                Some(value["params"]["event"].clone())
            }
            _ => None,
        })
        .collect()
}

fn deltas(events: &[Value]) -> usize {
    events.iter().filter(|event| label(event) == "model.streaming:text_delta").count()
}

#[test]
fn crash_at_a_method_exits_without_answering() {
    let install = Install::new();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", "crash@createSession")]);
    let ws = install.ws();
    sim.agent("initialize", json!({"workspacePath": ws}));
    sim.request_call("agent", "createSession", json!({"workspacePath": ws}));
    assert!(sim.drain().is_empty(), "createSession is never answered");
    assert_eq!(sim.wait().code(), Some(1));
    assert!(
        sim.stderr_text().contains("ZCode host worker failed: simulated crash at createSession")
    );
}

#[test]
fn crash_mid_stream_flushes_what_came_before() {
    let (_install, mut sim, ws, session) = faulty("crash");
    prompt(&mut sim, &ws, &session, "sim:stream 10").unwrap();
    let events = events_of(&sim.drain());
    assert_eq!(deltas(&events), 5, "half the stream, then the crash");
    assert!(!events.iter().any(common::is_terminal));
    assert_eq!(sim.wait().code(), Some(1));
}

#[test]
fn crash_at_start_writes_nothing() {
    let install = Install::new();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", "crash@start")]);
    assert!(sim.drain().is_empty());
    assert_eq!(sim.wait().code(), Some(1));
}

#[test]
fn exit_during_a_permission_request() {
    let (install, mut sim, ws, session) = faulty("exit@permission");
    prompt(&mut sim, &ws, &session, "sim:edit x.txt").unwrap();
    let events = events_of(&sim.drain());
    assert_eq!(
        label(events.last().unwrap()),
        "permission.request",
        "the request went out, then the host quit"
    );
    assert_eq!(sim.wait().code(), Some(1), "an unexpected worker exit is a failure of the bridge");
    assert!(sim.stderr_text().is_empty(), "a quiet exit, unlike a crash");
    assert!(!install.workspace.join("x.txt").exists());
}

#[test]
fn malformed_frame_mid_stream() {
    let (_install, mut sim, ws, session) = faulty("malformed@stream");
    prompt(&mut sim, &ws, &session, "sim:stream 4").unwrap();
    let frames = frames_until_terminal(&mut sim);
    let raw: Vec<&Vec<u8>> = frames
        .iter()
        .filter_map(|frame| if let Frame::Raw(bytes) = frame { Some(bytes) } else { None })
        .collect();
    assert_eq!(raw.len(), 1);
    let text = std::str::from_utf8(raw[0]).unwrap();
    assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
    // The raw line sits after the second of four deltas; the turn carries on.
    let position = frames.iter().position(|frame| matches!(frame, Frame::Raw(_))).unwrap();
    assert_eq!(deltas(&events_of(&frames[..position])), 2);
    assert_eq!(deltas(&events_of(&frames)), 4);
}

#[test]
fn oversize_frame_before_a_response() {
    let install = Install::new();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", "oversize@initialize")]);
    let id = sim.request_call("agent", "initialize", json!({"workspacePath": install.ws()}));
    let frame = sim.next_frame();
    let value = frame.json();
    assert!(value.to_string().len() > 16 * 1024 * 1024);
    assert_eq!(
        value["params"]["subscriptionId"], "zcode-sim-fault",
        "no subscriber yet: placeholder id"
    );
    assert_eq!(sim.next_frame().json()["id"], id);
}

#[test]
fn invalid_utf8_frame_mid_stream() {
    let (_install, mut sim, ws, session) = faulty("invalid_utf8");
    prompt(&mut sim, &ws, &session, "hello").unwrap();
    let frames = frames_until_terminal(&mut sim);
    let raw: Vec<&Vec<u8>> = frames
        .iter()
        .filter_map(|frame| if let Frame::Raw(bytes) = frame { Some(bytes) } else { None })
        .collect();
    assert_eq!(raw.len(), 1);
    assert!(std::str::from_utf8(raw[0]).is_err());
}

#[test]
fn unknown_event_types() {
    let (_install, mut sim, ws, session) =
        faulty("unknown-event@turn-start,unknown-session-event@turn-end");
    prompt(&mut sim, &ws, &session, "hello").unwrap();
    let events = sim.events_until_terminal();
    let all: Vec<String> = events.iter().map(label).collect();
    let unknown = all.iter().position(|label| label == "sim.unknownEvent").expect("unknown event");
    assert_eq!(all[unknown - 1], "snapshot", "right after the turn opened");
    let unknown_session = events
        .iter()
        .find(|event| {
            event["type"] == "session.event" && event["event"]["type"] == "sim.unknownSessionEvent"
        })
        .expect("unknown session event");
    assert_eq!(unknown_session["event"]["deliveryKind"], "desktop-continuous");
    let inner = session_events(&events);
    assert!(
        inner.windows(2).all(|pair| pair[1]["seq"].as_u64() > pair[0]["seq"].as_u64()),
        "still numbered in order"
    );
}

#[test]
fn sequence_gap() {
    let (_install, mut sim, ws, session) = faulty("seq-gap@stream");
    prompt(&mut sim, &ws, &session, "sim:stream 6").unwrap();
    let events = sim.events_until_terminal();
    let seqs: Vec<u64> =
        session_events(&events).iter().map(|event| event["seq"].as_u64().unwrap()).collect();
    let steps: Vec<u64> = seqs.windows(2).map(|pair| pair[1] - pair[0]).collect();
    assert_eq!(
        steps.iter().filter(|step| **step != 1).collect::<Vec<_>>(),
        [&6],
        "one gap of five: {seqs:?}"
    );
}

#[test]
fn stall_at_a_method_never_answers_it() {
    let install = Install::new();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", "stall@readWorkspaceState")]);
    let ws = install.ws();
    let stalled = sim.request_call("agent", "readWorkspaceState", json!({"workspacePath": ws}));
    let answered = sim.request_call("agent", "initialize", json!({"workspacePath": ws}));
    assert_eq!(sim.next_frame().json()["id"], answered);
    // Fired once: the next call of the same method is answered.
    assert!(sim.call("agent", "readWorkspaceState", json!({"workspacePath": ws})).is_ok());
    sim.close_stdin();
    assert!(sim.drain().iter().all(|frame| frame.json()["id"] != stalled));
}

#[test]
fn stall_mid_turn_freezes_the_turn() {
    let (_install, mut sim, ws, session) = faulty("stall@stream");
    prompt(&mut sim, &ws, &session, "sim:stream 10").unwrap();
    let events = sim.events_until(|event| label(event) == "model.streaming:text_delta");
    assert_eq!(deltas(&events), 1);
    sim.task("stopGeneration", json!({"workspacePath": ws, "taskId": session})).unwrap();
    let busy = prompt(&mut sim, &ws, &session, "more").unwrap_err();
    assert!(busy.contains("already running"), "the frozen turn never ends: {busy}");
    let snapshot = sim.agent("readSession", json!({"workspacePath": ws, "sessionId": session}));
    assert_eq!(snapshot["session"]["status"], "running");
    sim.close_stdin();
    let rest = events_of(&sim.drain());
    assert_eq!(deltas(&events) + deltas(&rest), 5, "nothing after the stall point");
    assert!(!rest.iter().any(common::is_terminal));
}

#[test]
fn late_responses_still_arrive() {
    let install = Install::new();
    let mut sim = install
        .spawn_with(&[("ZCODE_SIM_FAULT", "late@initialize"), ("ZCODE_SIM_FAULT_DELAY_MS", "50")]);
    let started = Instant::now();
    let id = sim.request_call("agent", "initialize", json!({"workspacePath": install.ws()}));
    let response = sim.response(id);
    assert_eq!(response["result"]["available"], true);
    assert!(started.elapsed() >= Duration::from_millis(50), "not before its delay");
}

#[test]
fn late_prompt_acknowledgement_follows_the_turn_events() {
    let (_install, mut sim, ws, session) = faulty("late@sendPrompt=60000");
    let id = sim.request_call(
        "agent",
        "sendPrompt",
        json!({"workspacePath": ws, "sessionId": session, "inputId": "i1", "content": "hi", "attachments": []}),
    );
    let events = sim.events_until_terminal();
    assert_eq!(common::terminal(&events)["payload"]["resultType"], "success");
    let _ = id; // Its answer comes a minute later; the caller has long given up.
}

#[test]
fn duplicate_responses() {
    let install = Install::new();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", "duplicate@createSession")]);
    let id = sim.request_call("agent", "createSession", json!({"workspacePath": install.ws()}));
    let first = sim.next_frame().json().clone();
    let second = sim.next_frame().json().clone();
    assert_eq!(first["id"], id);
    assert_eq!(first, second);
}

#[test]
fn slow_start_delays_reading_but_loses_nothing() {
    let install = Install::new();
    let started = Instant::now();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", "slow-start=300")]);
    let answer = sim.agent("initialize", json!({"workspacePath": install.ws()}));
    assert_eq!(answer["available"], true);
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn scenario_fault_steps_fire_in_place() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    prompt(&mut sim, &ws, &session, "sim:fault unknown-event").unwrap();
    let events = sim.events_until_terminal();
    let position = events.iter().position(|event| event["type"] == "sim.unknownEvent").unwrap();
    assert_eq!(common::streamed(&events[..position], "text_delta"), "Before the fault.");
    assert_eq!(common::streamed(&events[position..], "text_delta"), "After the fault.");
    prompt(&mut sim, &ws, &session, "sim:fault crash").unwrap();
    let events = events_of(&sim.drain());
    assert_eq!(common::streamed(&events, "text_delta"), "Before the fault.");
    assert_eq!(sim.wait().code(), Some(1));
    assert!(sim.stderr_text().contains("simulated crash at scenario"));
}

#[test]
fn invalid_fault_specs_refuse_to_start() {
    let install = Install::new();
    for spec in ["explode", "crash@nowhere", "late@stream", "late@x=abc"] {
        let output = install.run(&["-e", "script"], &[("ZCODE_SIM_FAULT", spec)]);
        assert_eq!(output.status.code(), Some(2), "{spec}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("invalid ZCODE_SIM_FAULT"));
    }
}
