//! What the Services Server generation (zcode-runtime archives, `zcode-services-v4`) adds to
//! the end-to-end suite: its binary transport, the V4 state's repair and fail-closed rules, its
//! command admission, stop and interaction rules, and paged history. Every test runs against
//! the simulated runtime release under test (`ZCODE_ACP_E2E_SIMULATE_VERSION=runtime-<v>`) and
//! says so visibly for other generations; the `guarded` test also plays 3.14.3 and 4.0.0.
//!
//! Where a test asserts what ZCode was sent, it reads the session recording
//! (`ZCODE_ACP_RECORD`, docs/recording.md) and decodes the binary requests with the
//! simulator's own IPC codec.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::reliability::{Bystander, Invariants, Reach, native_permissions, send_prompt};
use support::*;
use zcode_sim::services::ipc::message::{Request, decode_request};
use zcode_sim::services::ipc::transport::FrameDecoder;

fn services() -> bool {
    applies(
        &[Generation::ServicesServer],
        "Services Server behaviour; run with ZCODE_ACP_E2E_SIMULATE_VERSION=runtime-<version>",
    )
}

/// Environment for an agent whose native traffic is recorded (unredacted: a test folder).
fn recording(env: &TestEnv) -> (PathBuf, Vec<(&'static str, String)>) {
    let path = env.path().join("native.jsonl");
    let vars = vec![
        ("ZCODE_ACP_RECORD", path.display().to_string()),
        ("ZCODE_ACP_RECORD_UNREDACTED", "1".to_string()),
    ];
    (path, vars)
}

fn start(env: &TestEnv, policy: Policy, vars: &[(&str, String)]) -> Agent {
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut agent = Agent::start_with_env(env, policy, &vars);
    agent.initialize(plain_client());
    agent
}

/// The bytes of a recorded request (`"bytes"`: text, or `{"base64": …}`).
fn recorded_bytes(value: &Value) -> Option<Vec<u8>> {
    use base64::Engine as _;
    match value {
        Value::String(text) => Some(text.as_bytes().to_vec()),
        Value::Object(map) => {
            let encoded = map.get("base64")?.as_str()?;
            base64::engine::general_purpose::STANDARD.decode(encoded).ok()
        }
        _ => None,
    }
}

/// Every request and write the mapper sent, in recording order: `(method, first argument)` of
/// each call (the first positional argument is the only one this mapper passes).
fn native_calls(recording: &Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(recording).expect("the recording");
    let mut calls = Vec::new();
    for line in text.lines().filter(|line| line.starts_with('{')) {
        let line: Value = serde_json::from_str(line).expect("a recording line is JSON");
        let mut outgoing = Vec::new();
        collect_outgoing(&line["expect"], &mut outgoing);
        for bytes in outgoing {
            let mut frames = FrameDecoder::default();
            frames.push(&bytes);
            while let Some(body) = frames.next_body() {
                if let Ok(Some(Request::Call { method, args, .. })) = decode_request(&body) {
                    let first = args.into_iter().next().flatten().unwrap_or(Value::Null);
                    calls.push((method, first));
                }
            }
        }
    }
    calls
}

fn collect_outgoing(value: &Value, out: &mut Vec<Vec<u8>>) {
    match value {
        Value::Object(map) => {
            for key in ["requests", "writes"] {
                for item in map.get(key).and_then(Value::as_array).into_iter().flatten() {
                    out.extend(item.get("bytes").and_then(recorded_bytes));
                }
            }
            for (key, inner) in map {
                if key != "requests" && key != "writes" {
                    collect_outgoing(inner, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_outgoing(item, out)),
        _ => {}
    }
}

/// The V4 command envelopes sent, in order.
fn commands(recording: &Path) -> Vec<Value> {
    native_calls(recording)
        .into_iter()
        .filter(|(method, _)| method == "sendConversationCommandV4")
        .map(|(_, arg)| arg["envelope"].clone())
        .collect()
}

fn types(envelopes: &[Value]) -> Vec<&str> {
    envelopes.iter().map(|e| e["type"].as_str().unwrap_or("?")).collect()
}

// ----- the binary transport ------------------------------------------------------------------

#[test]
fn output_split_at_every_byte_still_carries_whole_sessions() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let vars = [("ZCODE_SIM_FAULT", "split-writes".to_string())];
    let mut agent = start(&env, policy::permission_kind("allow_once"), &vars);
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "one byte at a time", "end_turn");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert_eq!(text, "Hello from the ZCode simulator. You said: one byte at a time");
    agent.prompt_ok(&session, "sim:edit split.txt every byte", "end_turn");
    assert_eq!(std::fs::read_to_string(workspace.join("split.txt")).unwrap(), "every byte\n");
    Invariants::new(&env).finish(agent);
}

#[test]
fn a_corrupt_transport_header_fails_the_host_closed() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    // Armed per Server process: every Server this agent starts corrupts its first stream.
    let vars = [("ZCODE_SIM_FAULT", "corrupt-header@stream".to_string())];
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let session = agent.new_session(&workspace);
    let other = agent.new_session(&env.workspace("other"));
    let response = agent.prompt(&session, "a header announcing 4 GiB");
    let (code, message) = agent.error_of(&response, "the corrupt header");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("exceeds"), "says what was wrong: {message}");
    // The transport is gone for every session of that Server, never silently reconnected.
    for session in [&session, &other] {
        let response = agent.prompt(session, "after the corruption");
        let (_, message) = agent.error_of(&response, "a session of the failed Server");
        assert!(message.contains("can no longer be used"), "{message}");
    }
    Invariants::new(&env).finish(agent);
}

// ----- the hello and the setup ---------------------------------------------------------------

#[test]
fn a_hello_that_names_another_version_is_refused() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let vars = [("ZCODE_SIM_FAULT", "wrong-hello-version".to_string())];
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let response = agent.request("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let (code, message) = agent.error_of(&response, "a hello of another version");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    let release = simulated_release().trim_start_matches("runtime-");
    assert!(
        message.contains("0.0.0-simulated-mismatch") && message.contains(release),
        "names what was expected and reported: {message}"
    );
    assert!(agent.live_descendants().is_empty(), "the refused Server was stopped");
    Invariants::new(&env).finish(agent);
}

#[test]
fn a_server_that_stalls_after_its_hello_fails_the_setup_clearly() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    // The hello and `[200]` come; the V4 hello is never answered (the mapper's 10 s limit).
    let vars = [("ZCODE_SIM_FAULT", "stall@helloConversationV4".to_string())];
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let response = agent.request("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let (code, message) = agent.error_of(&response, "a stalled V4 hello");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("timed out"), "{message}");
    Invariants::new(&env).finish(agent);
}

// ----- the server dies -----------------------------------------------------------------------

#[test]
fn the_server_exiting_mid_turn_fails_the_turn_never_end_turn() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = start(&env, policy::refuse_all(), &[]);
    let session = agent.new_session(&workspace);
    // The scenario's fault step: the Server exits 1, silently, after the first text.
    let response = agent.prompt(&session, "sim:fault exit");
    let (code, message) = agent.error_of(&response, "a Server that exited mid-turn");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert_eq!(text, "Before the fault.", "the turn had begun streaming: {text:?}");
    let fresh = agent.new_session(&workspace);
    agent.prompt_ok(&fresh, "on a new Server", "end_turn");
    Invariants::new(&env).finish(agent);
}

// ----- the V4 stream: repair and fail closed -------------------------------------------------

/// A prompt whose stream the fault damages; the turn must end normally with every chunk exactly
/// once, after a forced resync.
fn repaired(fault: &str) {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (path, mut vars) = recording(&env);
    vars.push(("ZCODE_SIM_FAULT", fault.to_string()));
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "sim:stream 40", "end_turn");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert_eq!(text, "lorem ipsum ".repeat(40), "{fault}: text lost or repeated");
    agent.prompt_ok(&session, "after the repair", "end_turn");
    Invariants::new(&env).finish(agent);
    let resyncs: Vec<Value> = native_calls(&path)
        .into_iter()
        .filter(|(method, _)| method == "resyncConversationV4")
        .map(|(_, arg)| arg)
        .collect();
    assert_eq!(resyncs.len(), 1, "{fault}: one forced resync: {resyncs:?}");
    assert_eq!(resyncs[0]["base"], Value::Null);
    assert_eq!(resyncs[0]["forceSnapshot"], true);
}

#[test]
fn a_gap_in_the_sequence_is_resynced_without_loss() {
    if services() {
        repaired("seq-gap@stream");
    }
}

#[test]
fn a_crc_mismatch_is_resynced_without_loss() {
    if services() {
        repaired("crc-mismatch@stream");
    }
}

#[test]
fn a_row_no_release_has_breaks_the_turn_and_the_session_recovers() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    std::fs::write(
        workspace.join("hologram.jsonl"),
        concat!(
            r#"{"step":"text","text":"Before the fault."}"#,
            "\n",
            r#"{"step":"event","event":{"op":"row.appended","row":{"rowId":9999,"kind":"hologram"}}}"#,
            "\n",
            r#"{"step":"text","text":"After the fault."}"#,
            "\n",
        ),
    )
    .unwrap();
    let mut agent = start(&env, policy::refuse_all(), &[]);
    let bystander = Bystander::open(&mut agent, &env);
    let session = agent.new_session(&workspace);
    let response = agent.prompt(&session, "sim:file hologram.jsonl");
    let (code, message) = agent.error_of(&response, "an unknown row kind");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("hologram"), "names what it did not understand: {message}");
    // The session resynchronised and takes the next prompt once ZCode ended the turn.
    agent.prompt_when_idle(&session, "after the unknown row");
    bystander.check(&mut agent, Reach::SessionOnly);
    Invariants::new(&env).finish(agent);
}

// ----- commands: admission, CAS, stop ---------------------------------------------------------

#[test]
fn a_rejected_admission_refuses_the_prompt_and_the_session_lives_on() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (path, vars) = recording(&env);
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let session = agent.new_session(&workspace);
    // The simulator's admission refuses a trigger it does not know (`proto.invalidPayload`).
    let response = agent.prompt(&session, "sim:no-such-trigger");
    let (code, message) = agent.error_of(&response, "a refused input");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("rejected") && message.contains("proto.invalidPayload"), "{message}");
    agent.prompt_ok(&session, "admitted", "end_turn");
    Invariants::new(&env).finish(agent);
    // Input admission is never retried.
    let sent = commands(&path);
    assert_eq!(types(&sent), ["sendText", "sendText"], "{sent:#?}");
    assert_ne!(sent[0]["commandId"], sent[1]["commandId"]);
}

#[test]
fn a_stale_revision_is_retried_with_the_revision_zcode_decided_at() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (path, mut vars) = recording(&env);
    vars.push(("ZCODE_SIM_FAULT", "stale-cas@switchCollaborationMode".to_string()));
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "move the revision on", "end_turn");
    agent.call("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));
    agent.wait_update(&session, "plan mode", |u| {
        kind(u) == "current_mode_update" && u["currentModeId"] == "plan"
    });
    Invariants::new(&env).finish(agent);
    let switches: Vec<Value> =
        commands(&path).into_iter().filter(|e| e["type"] == "switchCollaborationMode").collect();
    assert_eq!(switches.len(), 2, "refused stale once, then accepted: {switches:#?}");
    assert_eq!(switches[0]["commandId"], switches[1]["commandId"], "a retry keeps its id");
    assert!(switches.iter().all(|e| e["baseRevision"].is_u64()), "{switches:#?}");
}

#[test]
fn cancel_turns_drain_off_stops_the_turn_and_the_next_prompt_drains_again() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (path, vars) = recording(&env);
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let session = agent.new_session(&workspace);
    let id = send_prompt(&mut agent, &session, "sim:slow 600000");
    agent.wait_update(&session, "the slow turn", |u| u["content"]["text"] == "Working on it");
    agent.notify("session/cancel", json!({"sessionId": session}));
    let response = agent.wait_response(id);
    assert_eq!(agent.result_of(&response, "the cancelled turn")["stopReason"], "cancelled");
    agent.prompt_when_idle(&session, "after the stop");
    Invariants::new(&env).finish(agent);
    let sent = commands(&path);
    // The plugin's stop sequence (V4S §4): drain off, then stop the foreground execution; the
    // queue was empty, so nothing was deleted; the next prompt turns the drain back on first.
    assert_eq!(
        types(&sent),
        ["sendText", "setAutoDrain", "stop", "setAutoDrain", "sendText"],
        "{sent:#?}"
    );
    assert_eq!(sent[1]["payload"], json!({"autoDrain": false}));
    let target = sent[2]["payload"]["expectedForegroundExecutionId"].as_str().unwrap_or_default();
    assert!(target.starts_with("fx_"), "stops the turn it saw running: {sent:#?}");
    assert_eq!(sent[3]["payload"], json!({"autoDrain": true}));
}

#[test]
fn guarded_mode_asks_before_every_tool_where_zcode_has_it_and_is_refused_where_not() {
    if !services() {
        return;
    }
    let mode = |release: &str| {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        let args = ["--simulate", "--simulate-version", release];
        let mut agent =
            Agent::start_with_args(&env, policy::permission_kind("allow_once"), &args, &[]);
        agent.initialize(plain_client());
        let session = agent.new_session(&workspace);
        let response =
            agent.request("session/set_mode", json!({"sessionId": session, "modeId": "guarded"}));
        (env, agent, session, response)
    };
    // 3.15 introduced the mode: 4.0.0 takes it, and then asks even before a read.
    let (env, mut agent, session, response) = mode("runtime-4.0.0");
    agent.result_of(&response, "guarded on 4.0.0");
    agent.prompt_ok(&session, "sim:read", "end_turn");
    let asked = agent.agent_requests();
    assert_eq!(asked.len(), 1, "one question before the read: {asked:#?}");
    assert_eq!(asked[0].method, "session/request_permission");
    Invariants::new(&env).finish(agent);
    // 3.14.3 refuses it: the client hears ZCode's refusal and the mode stays.
    let (env, agent, session, response) = mode("runtime-3.14.3");
    let (_, message) = agent.error_of(&response, "guarded on 3.14.3");
    assert!(message.contains("switchCollaborationMode"), "{message}");
    let modes: Vec<Value> =
        agent.updates(&session).into_iter().filter(|u| kind(u) == "current_mode_update").collect();
    assert!(modes.iter().all(|u| u["currentModeId"] != "guarded"), "{modes:?}");
    Invariants::new(&env).finish(agent);
}

// ----- interactions --------------------------------------------------------------------------

#[test]
fn interactions_are_answered_natively_exactly_once() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (path, vars) = recording(&env);
    let mut agent = start(&env, policy::hold(), &vars);
    let session = agent.new_session(&workspace);
    // Answered twice by the client: ZCode hears the first answer only.
    let id = send_prompt(&mut agent, &session, "sim:edit once.txt first answer");
    let permission = agent.wait_agent_request("session/request_permission", 0);
    let options = permission.params["options"].as_array().unwrap().clone();
    let allow = options.iter().find(|o| o["kind"] == "allow_once").unwrap()["optionId"].clone();
    agent.respond(&permission.id, policy::selected(&allow));
    agent.respond(&permission.id, policy::selected(&json!("reject")));
    assert_eq!(agent.result_of(&agent.wait_response(id), "allowed")["stopReason"], "end_turn");
    // A question open when the client cancels is withdrawn: ZCode hears no allow.
    let id = send_prompt(&mut agent, &session, "sim:edit never.txt no");
    agent.wait_agent_request("session/request_permission", 1);
    agent.notify("session/cancel", json!({"sessionId": session}));
    assert_eq!(agent.result_of(&agent.wait_response(id), "cancelled")["stopReason"], "cancelled");
    agent.prompt_when_idle(&session, "after both");
    // Two questions: one allowed once; the withdrawn one never allowed (ZCode may or may not
    // have heard the mapper's deny after its stop); none answered twice (`Invariants` too).
    let permissions = native_permissions(&env);
    assert_eq!(permissions.len(), 2, "{permissions:?}");
    let allowed: Vec<_> = permissions.iter().filter(|p| p.resolutions == ["allow"]).collect();
    assert_eq!(allowed.len(), 1, "{permissions:?}");
    let other = permissions.iter().find(|p| p.resolutions != ["allow"]).unwrap();
    assert!(!other.resolutions.iter().any(|r| r == "allow"), "{permissions:?}");
    Invariants::new(&env)
        .never_written(workspace.join("never.txt"))
        .tolerate_rejected_native_answers()
        .finish(agent);
    assert_eq!(std::fs::read_to_string(workspace.join("once.txt")).unwrap(), "first answer\n");
    let answers = commands(&path).into_iter().filter(|e| e["type"] == "resolveInteraction").count();
    assert!(answers <= 2, "at most one native answer per interaction: {answers}");
}

// ----- prompt content and paged history ------------------------------------------------------

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= group.len() {
                ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// Images, audio and binary resources are uploaded (`attachmentBeginV4` with the SHA-256,
/// chunks of at most 512 KiB, `attachmentCommitV4`) and named by their refs in `sendText`; the
/// simulated Server refuses an upload that did not arrive whole, and a load shows the
/// attachments as ZCode records them. Text kinds still go as text.
#[test]
fn attachments_are_uploaded_whole_then_sent_and_text_kinds_are_sent_as_text() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (path, vars) = recording(&env);
    let mut agent = start(&env, policy::refuse_all(), &vars);
    let session = agent.new_session(&workspace);
    // 1.2 MB behind a PNG signature: three chunks.
    let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
    big.resize(1_200_000, 7);
    let notes = workspace.join("notes.md");
    let prompt = json!([
        {"type": "text", "text": "look at these"},
        {"type": "image", "data": PNG, "mimeType": "image/png", "uri": "file:///virtual/dot.png"},
        {"type": "audio", "data": "UklGRgAAAABXQVZF", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///virtual/spec.pdf", "blob": "JVBERi0xLjQK",
            "mimeType": "application/pdf"}},
        {"type": "image", "data": base64(&big), "mimeType": "image/png", "uri": "file:///virtual/big.png"},
        {"type": "resource", "resource": {"uri": "file:///virtual/context.txt",
            "text": "embedded context", "mimeType": "text/plain"}},
        {"type": "resource_link", "uri": format!("file://{}", notes.display()), "name": "notes.md"},
    ]);
    let result = agent.call("session/prompt", json!({"sessionId": session, "prompt": prompt}));
    assert_eq!(result["stopReason"], "end_turn", "{result}");

    // A PNG declared as JPEG does not arrive as sent: the commit is refused, nothing is sent.
    let lying = json!([{"type": "image", "data": PNG, "mimeType": "image/jpeg"}]);
    let response = agent.request("session/prompt", json!({"sessionId": session, "prompt": lying}));
    let (_, message) = agent.error_of(&response, "a PNG declared as JPEG");
    assert!(message.contains("declared image/jpeg but the bytes are image/png"), "{message}");
    agent.prompt_ok(&session, "still here", "end_turn");
    Invariants::new(&env).finish(agent);

    let calls = native_calls(&path);
    let begins: Vec<&Value> =
        calls.iter().filter(|(m, _)| m == "attachmentBeginV4").map(|(_, a)| a).collect();
    let named: Vec<(&str, &str, u64, u64)> = begins
        .iter()
        .map(|b| {
            let (name, mime) = (b["fileName"].as_str().unwrap(), b["mime"].as_str().unwrap());
            (name, mime, b["totalBytes"].as_u64().unwrap(), b["totalChunks"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        named,
        [
            ("dot.png", "image/png", 70, 1),
            ("audio.wav", "audio/wav", 12, 1),
            ("spec.pdf", "application/pdf", 9, 1),
            ("big.png", "image/png", 1_200_000, 3),
            ("image.jpeg", "image/jpeg", 70, 1),
        ]
    );
    assert!(begins.iter().all(|b| b["checksum"].as_str().unwrap().starts_with("sha256:")));
    let chunks = calls.iter().filter(|(m, _)| m == "attachmentChunkV4").count();
    assert_eq!(chunks, 7, "one chunk each, three for the big one");
    let sent = commands(&path);
    assert_eq!(types(&sent), ["sendText", "sendText"], "nothing was sent for the refused prompt");
    let text = sent[0]["payload"]["text"].as_str().unwrap_or_default();
    for part in ["look at these", "embedded context", "notes.md"] {
        assert!(text.contains(part), "{part:?} is in the text ZCode got: {text:?}");
    }
    let attached: Vec<&str> = sent[0]["payload"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["fileName"].as_str().unwrap())
        .collect();
    assert_eq!(attached, ["dot.png", "audio.wav", "spec.pdf", "big.png"]);

    // The replay shows the attachments as the user message ZCode recorded.
    let mut agent = start(&env, policy::refuse_all(), &[]);
    agent.call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let user = chunk_text(&agent.updates(&session), "user_message_chunk");
    for name in ["dot.png", "audio.wav", "spec.pdf", "big.png"] {
        assert!(user.contains(&format!("[Attachment: {name}")), "{name}: {user:?}");
    }
    Invariants::new(&env).finish(agent);
}

#[test]
fn a_long_history_loads_page_by_page_oldest_first_exactly_once() {
    if !services() {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let session = {
        let mut agent = start(&env, policy::refuse_all(), &[]);
        let session = agent.new_session(&workspace);
        // 1 200 messages: 600 exchanges of three rows, nine pages of 200 (and the prompt's own).
        agent.prompt_ok(&session, "sim:history 1200", "end_turn");
        Invariants::new(&env).finish(agent);
        session
    };
    let (path, vars) = recording(&env);
    let mut agent = start(&env, policy::refuse_all(), &vars);
    agent.call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let updates = agent.updates(&session);
    let users: Vec<String> = updates
        .iter()
        .filter(|u| kind(u) == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_string())
        .collect();
    // The seeded messages alternate: user k (odd), then the reply to it.
    let expected: Vec<String> = (1..=1200)
        .step_by(2)
        .map(|k| format!("History message {k}"))
        .chain(["sim:history 1200".to_string()])
        .collect();
    assert_eq!(users, expected, "every message once, oldest first");
    let replies: Vec<&str> = updates
        .iter()
        .filter(|u| kind(u) == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .filter(|t| t.starts_with("Reply to history"))
        .collect();
    let expected: Vec<String> =
        (1..=1200).step_by(2).map(|k| format!("Reply to history message {k}.")).collect();
    assert_eq!(replies, expected, "every reply once, in order");
    agent.prompt_ok(&session, "after the load", "end_turn");
    Invariants::new(&env).finish(agent);
    let pages = native_calls(&path)
        .into_iter()
        .filter(|(method, arg)| method == "conversationRowsRangeV4" && arg["limit"] == 200)
        .count();
    // Walked back once (boundaries only), then fetched again oldest first.
    assert!(pages >= 2 * 9, "{pages} pages for nine of history");
}
