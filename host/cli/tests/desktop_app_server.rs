//! What the Desktop 3.14–4.0 generation (the bundled Agent over `app-server --stdio`) adds,
//! through the binary against the simulator (`ZCODE_ACP_E2E_SIMULATE_VERSION=desktop-<v>`):
//! permissions raced over V4 and re-announced, questions / plans / MCP elicitations as forms,
//! `guarded`, V4 gap recovery, eviction, stale CAS and busy refusals, the 0.17 session list,
//! close without deletion, provider runtime headers filled from ZCode's credentials file, and
//! what is refused. On another generation every test says it does not apply and returns.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::reliability::{Invariants, native_permissions, send_prompt};
use support::*;

/// Runs the rest of the test only on the Desktop generation (and from `major.minor` on).
fn desktop(test: &str, since: Option<(u64, u64)>) -> bool {
    let applies = generation() == Generation::AppServer
        && since.is_none_or(|(major, minor)| generation::at_least(major, minor));
    let why = match since {
        Some((major, minor)) => format!("needs the Desktop Agent of {major}.{minor} or later"),
        None => "about the Desktop Agent (ZCODE_ACP_E2E_SIMULATE_VERSION=desktop-<v>)".into(),
    };
    skip_unless(test, applies, &why)
}

/// The record of the calls the core made on the mapper (`ZCODE_ACP_RECORD`), as text.
fn record_path(env: &TestEnv) -> PathBuf {
    env.path().join("record.jsonl")
}

fn record(env: &TestEnv) -> String {
    std::fs::read_to_string(record_path(env)).unwrap_or_default()
}

/// Waits (hang guard only) until the recording holds `needle` at least `times` times.
fn wait_record(env: &TestEnv, needle: &str, times: usize) {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while record(env).matches(needle).count() < times {
        assert!(std::time::Instant::now() < deadline, "hang guard: no {needle} x{times}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn recording(env: &TestEnv) -> (&'static str, String) {
    ("ZCODE_ACP_RECORD", record_path(env).display().to_string())
}

// ----- permissions and interactions ------------------------------------------------------------

#[test]
fn a_permission_raced_over_two_ids_is_asked_and_answered_once() {
    if !desktop("a_permission_raced_over_two_ids_is_asked_and_answered_once", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    // Two live ids for one question at once, and re-announces every 20 ms while it waits.
    let (record_var, record_file) = recording(&env);
    let extra = [
        ("ZCODE_SIM_FAULT", "interaction-race@permission"),
        ("ZCODE_SIM_REANNOUNCE_MS", "20"),
        (record_var, record_file.as_str()),
    ];
    let mut agent = Agent::start_with_env(&env, policy::hold(), &extra);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    let id = send_prompt(&mut agent, &session, "sim:edit raced.txt once");
    let permission = agent.wait_agent_request("session/request_permission", 0);
    // Both ids of the race and a few re-announces reached the mapper ...
    wait_record(&env, "interaction/requestPermission", 4);
    let allow = permission.params["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .unwrap()["optionId"]
        .clone();
    agent.respond(&permission.id, policy::selected(&allow));
    let response = agent.wait_response(id);
    assert_eq!(agent.result_of(&response, "raced permission")["stopReason"], "end_turn");
    // ... yet the client was asked once, and ZCode decided once, by the V4 race's first answer.
    let asked: Vec<_> = agent
        .agent_requests()
        .into_iter()
        .filter(|r| r.method == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert!(record(&env).contains("resolveInteraction"), "answered over V4");
    assert_eq!(std::fs::read_to_string(workspace.join("raced.txt")).unwrap(), "once\n");
    let permissions = native_permissions(&env);
    assert_eq!(permissions.len(), 1, "{permissions:?}");
    assert_eq!(permissions[0].resolutions, ["allow"]);
    Invariants::new(&env).finish(agent);
}

/// Answers every form: the second choice of a choice question, every choice of a multiple
/// one, `approve` for a plan, a text for a free field.
fn fill_form(params: &Value) -> Value {
    let mut content = serde_json::Map::new();
    for (name, field) in generation::form_fields(params) {
        let value = if let Some(choices) = field["oneOf"].as_array() {
            let approve = choices.iter().find(|c| c["const"] == "approve");
            approve.unwrap_or(&choices[choices.len().min(2) - 1])["const"].clone()
        } else if let Some(choices) = field["items"]["anyOf"].as_array() {
            json!(choices.iter().map(|c| c["const"].clone()).collect::<Vec<_>>())
        } else {
            json!("typed by the e2e client")
        };
        content.insert(name, value);
    }
    json!({"action": "accept", "content": content})
}

#[test]
fn questions_plans_and_mcp_elicitations_are_form_elicitations() {
    if !desktop("questions_plans_and_mcp_elicitations_are_form_elicitations", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::elicitation(fill_form), form_client(), &workspace);
    let mut prompts =
        vec![("sim:question", "Thanks, I will proceed"), ("sim:plan-input", "Plan approved")];
    // MCP elicitation came with 3.15 (reference REL §3.5).
    if generation::at_least(3, 15) {
        prompts.push(("sim:elicit", "The MCP server received your answer."));
    }
    for (round, (prompt, reply)) in prompts.iter().enumerate() {
        let before = agent.updates(&session).len();
        agent.prompt_ok(&session, prompt, "end_turn");
        let asked = agent.agent_requests();
        assert_eq!(asked.len(), round + 1, "{prompt}: one form each: {asked:#?}");
        let form = &asked[round];
        assert_eq!(form.method, "elicitation/create", "{prompt}");
        assert_eq!(form.params["mode"], "form", "{prompt}");
        let updates = agent.updates(&session)[before..].to_vec();
        assert!(
            chunk_text(&updates, "agent_message_chunk").contains(reply),
            "{prompt}: {updates:#?}"
        );
    }
    assert!(agent.finish().success());
}

#[test]
fn guarded_is_offered_from_3_15_and_asks_before_every_change() {
    if !desktop("guarded_is_offered_from_3_15_and_asks_before_every_change", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start_with(&env, policy::permission_kind("allow_once"));
    agent.initialize(plain_client());
    let created = agent.call("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let session = created["sessionId"].as_str().unwrap().to_string();
    let modes: Vec<&str> = created["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    // The 3.14 Agent answers runtime/capabilities too, but its mode enum has no `guarded`
    // (3.14.0 zcode-protocol-legacy-types.ts): the mapper asks the Agent, not the version.
    assert_eq!(modes.contains(&"guarded"), generation::at_least(3, 15), "{modes:?}");
    let switch =
        agent.request("session/set_mode", json!({"sessionId": session, "modeId": "guarded"}));
    if !generation::at_least(3, 15) {
        assert_eq!(agent.error_of(&switch, "guarded on 3.14").0, INVALID_PARAMS);
        return assert!(agent.finish().success());
    }
    agent.result_of(&switch, "set_mode guarded");
    agent.wait_update(&session, "current_mode_update to guarded", |u| {
        kind(u) == "current_mode_update" && u["currentModeId"] == "guarded"
    });
    agent.prompt_ok(&session, "sim:edit guarded.txt asked first", "end_turn");
    assert_eq!(agent.agent_requests().len(), 1, "guarded asked");
    assert_eq!(std::fs::read_to_string(workspace.join("guarded.txt")).unwrap(), "asked first\n");
    assert!(agent.finish().success());
}

#[test]
fn an_unknown_reverse_request_fails_the_turn_and_zcode_hears_no() {
    if !desktop("an_unknown_reverse_request_fails_the_turn_and_zcode_hears_no", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    let request = json!({"type": "request", "id": "server-901",
        "method": "interaction/requestTelepathy", "params": {"sessionId": session}});
    std::fs::write(
        workspace.join("telepathy.jsonl"),
        json!({"step": "event", "event": request}).to_string() + "\n",
    )
    .unwrap();
    let response = agent.prompt(&session, "sim:file telepathy.jsonl");
    let (code, message) = agent.error_of(&response, "an unknown request of the Agent");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("interaction/requestTelepathy"), "{message}");
    assert!(agent.agent_requests().is_empty(), "nothing unknown reached the client");
    agent.prompt_when_idle(&session, "still here");
    assert!(agent.finish().success());
}

// ----- the V4 conversation and the session's life ---------------------------------------------

#[test]
fn a_v4_sequence_gap_is_resynced_and_nothing_is_lost() {
    if !desktop("a_v4_sequence_gap_is_resynced_and_nothing_is_lost", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (record_var, record_file) = recording(&env);
    let extra = [("ZCODE_SIM_FAULT", "v4-seq-gap@stream"), (record_var, record_file.as_str())];
    let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &extra);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "sim:stream 200", "end_turn");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert_eq!(text, "lorem ipsum ".repeat(200), "every delta once, in order");
    assert!(record(&env).contains("v4/conversation/resync"), "the gap was resynced");
    agent.prompt_ok(&session, "and the next turn", "end_turn");
    assert!(agent.finish().success());
}

/// A real app-server writes notifications batched as one JSON array a line (release notes of
/// csuftt/zcode-jetbrains-plugin, ZC-GUI 0.3.7: "array-format notification frames from the new
/// CLI"): every frame of a batch is read, in order, over V4 and over the legacy stream.
#[test]
fn notifications_batched_as_array_lines_are_read_in_order() {
    if !desktop("notifications_batched_as_array_lines_are_read_in_order", None) {
        return;
    }
    for fault in [None, Some(("ZCODE_SIM_FAULT", "no-v4"))] {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        let (record_var, record_file) = recording(&env);
        let mut extra = vec![(ARRAY_LINES, "1"), (record_var, record_file.as_str())];
        extra.extend(fault);
        let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &extra);
        agent.initialize(plain_client());
        let session = agent.new_session(&workspace);
        agent.prompt_ok(&session, "sim:stream 200", "end_turn");
        let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
        assert_eq!(text, "lorem ipsum ".repeat(200), "every delta once, in order ({fault:?})");
        // The mapper was pushed the batches as lines of their own (the record holds the bytes
        // pushed, as JSON text): the stream's frames came as arrays.
        let batch = match fault {
            None => r#"[{\"method\":\"v4/conversation/frame\""#,
            Some(_) => r#"[{\"method\":\"session/event\""#,
        };
        assert!(record(&env).contains(batch), "no {batch} ({fault:?})");
        let before = agent.updates(&session).len();
        agent.prompt_ok(&session, "and the next turn", "end_turn");
        let text = chunk_text(&agent.updates(&session)[before..], "agent_message_chunk");
        assert!(text.contains("You said: and the next turn"), "{text:?}");
        assert!(agent.finish().success());
    }
}

/// A real stream was seen without some notifications ("ZCode app-server Session Protocol"
/// probe log, CLI 0.16.x, §6.3). Over the legacy stream alone the skipped events are replayed
/// with `session/events` `afterSeq` (§8.3) and the turn goes on, nothing lost; a gap ZCode
/// cannot replay breaks the turn. With V4 the legacy events V4 carries never reach the session
/// (`connection::carried_route`), so the lost ones are not asked for: V4 has the whole turn.
#[test]
fn skipped_session_events_are_replayed_and_the_turn_goes_on() {
    if !desktop("skipped_session_events_are_replayed_and_the_turn_goes_on", None) {
        return;
    }
    for (faults, replayed) in
        [("drop-events@stream=3", false), ("no-v4,drop-events@stream=3", true)]
    {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        let (record_var, record_file) = recording(&env);
        let extra = [("ZCODE_SIM_FAULT", faults), (record_var, record_file.as_str())];
        let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &extra);
        agent.initialize(plain_client());
        let session = agent.new_session(&workspace);
        agent.prompt_ok(&session, "sim:stream 200", "end_turn");
        let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
        assert_eq!(text, "lorem ipsum ".repeat(200), "every delta once, in order ({faults})");
        let asked = record(&env).contains("session/events");
        assert_eq!(asked, replayed, "the gap was replayed only without V4 ({faults})");
        agent.prompt_ok(&session, "and the next turn", "end_turn");
        assert!(agent.finish().success());
    }
    // Numbers skipped where nothing can be replayed: without V4 the turn breaks.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_faults_in_session(&env, &workspace, "no-v4");
    let response = agent.prompt(&session, "sim:fault seq-gap");
    assert!(response.get("error").is_some(), "a seq gap ended normally: {response}");
    assert!(agent.finish().success());
}

/// Quota back-off keeps a turn open for minutes without a frame (the model request retries,
/// "ZCode app-server Session Protocol" probe log, CLI 0.16.x, §6.3: `maxAttempts: 11`; issue 25
/// [C], ZC-GUI 0.4.1). The turn stays open while the rest of the connection works, and a cancel
/// ends it at once: the silence lasts 10 minutes, far past the hang guard, so an end that waited
/// on any timeout would fail here. Over V4 and over the legacy stream.
#[test]
fn a_silent_turn_stays_open_and_a_cancel_ends_it_at_once() {
    if !desktop("a_silent_turn_stays_open_and_a_cancel_ends_it_at_once", None) {
        return;
    }
    for faults in ["silence@stream=600000", "no-v4,silence@stream=600000"] {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        let (mut agent, session) = Agent::with_faults_in_session(&env, &workspace, faults);
        let id = send_prompt(&mut agent, &session, "sim:reply Before the silence; after it.");
        agent.wait_update(&session, "the chunk before the silence", |u| {
            kind(u) == "agent_message_chunk"
        });
        // Meanwhile another session of the same Agent runs a whole turn ...
        let other = agent.new_session(&workspace);
        agent.prompt_ok(&other, "meanwhile", "end_turn");
        // ... and the silent one is still open: nothing ended it.
        assert!(agent.transcript().response(id).is_none(), "the silent turn ended ({faults})");
        agent.notify("session/cancel", json!({"sessionId": session}));
        let response = agent.wait_response(id);
        assert_eq!(agent.result_of(&response, "cancelled")["stopReason"], "cancelled", "{faults}");
        let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
        assert!(!text.contains("after it"), "the turn went on after the cancel: {text:?}");
        agent.prompt_when_idle(&session, "after the cancel");
        assert!(agent.finish().success());
    }
}

/// Under model errors the app-server writes stack traces to stderr (issue 25 [C]): 8 MiB of
/// them at once, mid-stream, stall nothing. The Agent blocks on its stderr write until it is
/// read, so a host that did not drain it would never see the rest of the turn.
#[test]
fn a_stderr_flood_from_the_agent_stalls_nothing() {
    if !desktop("a_stderr_flood_from_the_agent_stalls_nothing", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let fault = [("ZCODE_SIM_FAULT", "stderr-flood@stream=8192")];
    let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &fault);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "sim:stream 200", "end_turn");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert_eq!(text, "lorem ipsum ".repeat(200), "every delta once, in order");
    agent.prompt_ok(&session, "and the next turn", "end_turn");
    // None of it reached the client or the log as text (stderr is drained, never logged).
    let transcript = format!("{:?}", agent.updates(&session));
    assert!(!transcript.contains("Too Many Requests"), "stderr leaked into the updates");
    assert!(agent.finish().success());
}

#[test]
fn an_evicted_session_is_resumed_for_its_next_prompt() {
    if !desktop("an_evicted_session_is_resumed_for_its_next_prompt", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    // After the first turn ZCode drops the session's runtime: session calls answer -32004
    // and V4 commands proto.sessionNotFound until it is resumed (reference APP §1.5, §8.20).
    let fault = [("ZCODE_SIM_FAULT", "evict@turn-end")];
    let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &fault);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "before the eviction", "end_turn");
    let before = agent.updates(&session).len();
    agent.prompt_ok(&session, "after the eviction", "end_turn");
    let text = chunk_text(&agent.updates(&session)[before..], "agent_message_chunk");
    assert!(text.contains("You said: after the eviction"), "{text:?}");
    assert!(agent.finish().success());
}

#[test]
fn a_stale_mode_switch_falls_back_and_a_busy_agent_is_a_clear_error() {
    if !desktop("a_stale_mode_switch_falls_back_and_a_busy_agent_is_a_clear_error", None) {
        return;
    }
    // Stale CAS: the V4 switch is refused although its base is right; the legacy call (no
    // revision guard) switches, once.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_faults_in_session(&env, &workspace, "stale-cas");
    agent.call("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));
    agent.wait_update(&session, "current_mode_update to plan", |u| {
        kind(u) == "current_mode_update" && u["currentModeId"] == "plan"
    });
    assert!(agent.finish().success());

    // Busy: on an Agent without V4 the prompt goes through session/send, which ZCode refuses
    // with -32010; the prompt fails with ZCode's reason (never end_turn), the next one runs.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let fault = [("ZCODE_SIM_FAULT", "no-v4,busy@session/send")];
    let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &fault);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    let response = agent.prompt(&session, "refused as busy");
    let (code, message) = agent.error_of(&response, "a busy Agent");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("already running"), "{message}");
    agent.prompt_ok(&session, "then accepted", "end_turn");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert!(text.contains("You said: then accepted"), "the legacy stream carried it: {text:?}");
    assert!(agent.finish().success());
}

/// `session/send` answered with a plain string result is a refusal (live record, Desktop
/// 3.12.3 / CLI 0.16.5, 2026-09: the stored model no longer resolves): the prompt fails with
/// ZCode's own text at once instead of waiting for a turn that never starts; the next one runs.
#[test]
fn a_send_answered_with_a_string_fails_the_prompt_with_zcodes_text() {
    if !desktop("a_send_answered_with_a_string_fails_the_prompt_with_zcodes_text", None) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let fault = [("ZCODE_SIM_FAULT", "no-v4,model-gone@session/send")];
    let mut agent = Agent::start_with_env(&env, policy::refuse_all(), &fault);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    let response = agent.prompt(&session, "refused in ZCode's words");
    let (code, message) = agent.error_of(&response, "a send refused with a string");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("历史任务使用的模型已不可用"), "ZCode's text: {message}");
    agent.prompt_ok(&session, "then accepted", "end_turn");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert!(text.contains("You said: then accepted"), "{text:?}");
    assert!(agent.finish().success());
}

#[test]
fn sessions_are_listed_and_close_never_deletes_them() {
    if !desktop("sessions_are_listed_and_close_never_deletes_them", None) {
        return;
    }
    // CLI 0.17 (Desktop 3.16.2 on) refuses `includeArchived`: a list that works proves it was
    // not sent. From 3.15 the Agent's session/close deletes the session; ACP close must not.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    agent.prompt_ok(&session, "keep me", "end_turn");
    agent.call("session/close", json!({"sessionId": session}));
    assert!(agent.finish().success());

    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let listed = agent.call("session/list", json!({"cwd": workspace}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [session.as_str()], "{listed}");
    agent.call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let replayed = chunk_text(&agent.updates(&session), "user_message_chunk");
    assert_eq!(replayed, "keep me");
    assert!(agent.finish().success());
}

// ----- provider runtime headers ----------------------------------------------------------------

const USER_ID: &str = "u-e2e-42";
const PLAN: &str = "account:zai-individual-coding-plan";
const SECRET_KEY: &str = "CODING-PLAN-KEY-7f3e9a";
const MACHINE_SECRET: &str = "e2e machine secret";

/// Writes ZCode's settings as Desktop leaves them: the `zai` family, its plan of `kind`.
fn write_settings(env: &TestEnv, kind: &str) {
    let dir = env.path().join("home/.zcode/v2");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({
        "providerFamilyDomain": "zai",
        "providerFamilyConnectionSelections": {"zai": {"kind": kind}},
    });
    std::fs::write(dir.join("setting.json"), settings.to_string()).unwrap();
}

/// Writes ZCode's credentials file with the signed-in user and the plan's key as `stored`
/// (none: signed in without a stored key, as 3.15.1 and later sign in).
fn write_account(env: &TestEnv, stored: Option<&str>) {
    let dir = env.path().join("home/.zcode/v2");
    std::fs::create_dir_all(&dir).unwrap();
    let mut entries = serde_json::Map::new();
    let user = json!({"id": USER_ID, "name": "e2e"}).to_string();
    entries.insert("oauth:zai:user_info".into(), json!(user));
    if let Some(stored) = stored {
        entries.insert(
            format!("account-provider:coding-plan:{PLAN}:account:{USER_ID}:api-key"),
            json!(stored),
        );
    }
    std::fs::write(dir.join("credentials.json"), Value::Object(entries).to_string()).unwrap();
}

/// Writes ZCode's credentials file with the signed-in user and the plan's key as `stored`,
/// and settings selecting the `zai` individual Coding Plan: the files that entitle it.
fn write_credentials(env: &TestEnv, stored: &str) {
    write_settings(env, "individual-coding-plan");
    let dir = env.path().join("home/.zcode/v2");
    std::fs::create_dir_all(&dir).unwrap();
    let mut entries = serde_json::Map::new();
    let user = json!({"id": USER_ID, "name": "e2e"}).to_string();
    entries.insert("oauth:zai:user_info".into(), json!(user));
    entries.insert(
        format!("account-provider:coding-plan:{PLAN}:account:{USER_ID}:api-key"),
        json!(stored),
    );
    std::fs::write(dir.join("credentials.json"), Value::Object(entries).to_string()).unwrap();
}

/// `enc:v1:<iv>.<tag>.<ciphertext>` as ZCode writes it: AES-256-GCM, key = SHA-256 of the
/// machine secret.
fn enc_v1(clear: &str, secret: &str) -> String {
    use aes_gcm::aead::{Aead, KeyInit};
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use sha2::Digest;
    let key = sha2::Sha256::digest(secret.as_bytes());
    let cipher = aes_gcm::Aes256Gcm::new_from_slice(&key).unwrap();
    let iv = [7u8; 12];
    let mut sealed = cipher.encrypt(aes_gcm::Nonce::from_slice(&iv), clear.as_bytes()).unwrap();
    let tag = sealed.split_off(sealed.len() - 16);
    let part = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
    format!("enc:v1:{}.{}.{}", part(&iv), part(&tag), part(&sealed))
}

/// A session opened with the user's files as they are: the `session/new` response, everything
/// logged and the recording.
fn open_with_account(env: &TestEnv, workspace: &Path) -> (Value, String, String) {
    let (record_var, record_file) = recording(env);
    // Unredacted: the push's order shows, and still no key can be in it.
    let extra = [
        ("ZCODE_ACP_RECORD_UNREDACTED", "1"),
        ("ZCODE_CREDENTIAL_SECRET", MACHINE_SECRET),
        ("ZCODE_ACP_LOG", "trace"),
        (record_var, record_file.as_str()),
    ];
    let mut agent = Agent::start_with_env(env, policy::refuse_all(), &extra);
    agent.initialize(plain_client());
    let created = agent.call("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let (_, stderr) = agent.finish_with_stderr();
    (created, stderr, record(env))
}

/// `zcode-acp --simulate … doctor [--json]` with `env`'s home (its ZCode user files) and the
/// machine secret of `enc:v1`: (stdout, stderr).
fn doctor_output(env: &TestEnv, json: bool) -> (String, String) {
    let mut command = std::process::Command::new(agent_binary());
    command.args(simulate_args()).arg("doctor");
    if json {
        command.arg("--json");
    }
    let output = command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.path().join("home"))
        .env("XDG_DATA_HOME", env.path().join("data"))
        .env("XDG_CONFIG_HOME", env.path().join("home").join(".config"))
        .env("XDG_CACHE_HOME", shared_cache_dir())
        .env("TMPDIR", env.path().join("tmp"))
        .env("ZCODE_SIM_STATE", env.sim_state())
        .env("ZCODE_CREDENTIAL_SECRET", MACHINE_SECRET)
        .env("ZCODE_ACP_LOG", "trace")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run zcode-acp doctor");
    assert!(output.status.success(), "doctor: {output:?}");
    (String::from_utf8(output.stdout).unwrap(), String::from_utf8(output.stderr).unwrap())
}

/// Whether a `session/new` result offers a model whose value starts with `prefix`.
fn offers_model(created: &Value, prefix: &str) -> bool {
    created["configOptions"].to_string().contains(&format!("\"value\":\"{prefix}"))
}

/// The reasons `session/new` gives for the unlisted plan providers.
fn unlisted_reasons(created: &Value) -> String {
    created["_meta"]["zcodeAcp"]["unlistedAccountProviders"].to_string()
}

/// One turn on the account model the user's files entitle (with the simulator `fault` armed,
/// if any); returns the prompt's response, everything logged and the recording.
fn turn_on_account(
    env: &TestEnv,
    workspace: &Path,
    entitled: &str,
    fault: &str,
) -> (Value, String, String) {
    let (record_var, record_file) = recording(env);
    let extra = [
        ("ZCODE_CREDENTIAL_SECRET", MACHINE_SECRET),
        ("ZCODE_ACP_LOG", "trace"),
        ("ZCODE_SIM_FAULT", fault),
        (record_var, record_file.as_str()),
    ];
    let mut agent = Agent::start_with_env(env, policy::refuse_all(), &extra);
    agent.initialize(plain_client());
    let created = agent.call("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let session = created["sessionId"].as_str().unwrap().to_string();
    let model = &created["configOptions"][0]["currentValue"];
    assert!(model.as_str().is_some_and(|m| m.starts_with(entitled)), "{created}");
    let response = agent.prompt(&session, "sim:reply on the plan");
    let (_, stderr) = agent.finish_with_stderr();
    (response, stderr, record(env))
}

#[test]
fn provider_headers_carry_the_plan_key_from_the_credentials_file_and_nowhere_else() {
    if !desktop(
        "provider_headers_carry_the_plan_key_from_the_credentials_file_and_nowhere_else",
        None,
    ) {
        return;
    }
    for (form, stored) in
        [("plain", SECRET_KEY.to_string()), ("enc:v1", enc_v1(SECRET_KEY, MACHINE_SECRET))]
    {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        write_credentials(&env, &stored);
        // A storm: five header requests for the turn's one model request.
        let (response, logged, recorded) =
            turn_on_account(&env, &workspace, PLAN, "headers-storm@model-request");
        // The simulated Agent checks the key it gets against the credentials file (a plain one
        // exactly; an enc:v1 one must be non-empty, and the core only fills what decrypts).
        assert_eq!(response["result"]["stopReason"], "end_turn", "{form}: {response}");
        // Each request is in the recording three times (the bytes pushed, the event the
        // connection routed, the input the session mapped): five requests, at least 15.
        let asked = recorded.matches("interaction/requestProviderRuntimeHeaders").count();
        assert!(asked >= 15, "{form}: every request of the storm was answered: {asked}");
        for (place, text) in [("log", &logged), ("recording", &recorded)] {
            assert!(!text.contains(SECRET_KEY), "{form}: the key is in the {place}");
            assert!(
                !text.contains(&stored[stored.len() - 12..]),
                "{form}: stored form in the {place}"
            );
        }
    }
}

#[test]
fn plan_models_are_listed_only_when_the_users_files_entitle_them_and_say_why_not() {
    if !desktop(
        "plan_models_are_listed_only_when_the_users_files_entitle_them_and_say_why_not",
        None,
    ) {
        return;
    }
    // Entitled: signed in, an enc:v1 key, the plan selected. The push precedes the create.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    write_credentials(&env, &enc_v1(SECRET_KEY, MACHINE_SECRET));
    let (created, logged, recorded) = open_with_account(&env, &workspace);
    let plan_model = format!("{PLAN}/GLM-5.3");
    assert!(offers_model(&created, &plan_model), "{created}");
    assert!(created["_meta"]["zcodeAcp"].is_null(), "{created}");
    let push = recorded.find("provider/updateAccountConfig").expect("pushed");
    assert!(push < recorded.find("session/create").unwrap(), "pushed before the create");
    for (place, text) in [("log", &logged), ("recording", &recorded)] {
        assert!(!text.contains(SECRET_KEY), "the key is in the {place}");
    }

    // Signed in without a stored key (3.15.1 and later): not listed, and said.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    write_settings(&env, "individual-coding-plan");
    write_account(&env, None);
    let (created, _, recorded) = open_with_account(&env, &workspace);
    assert!(!offers_model(&created, PLAN), "{created}");
    assert!(unlisted_reasons(&created).contains("no Coding Plan key"), "{created}");
    assert!(!recorded.contains("provider/updateAccountConfig"), "nothing entitled, no push");

    // 3.18 stores the key as enc:v2 behind the OS credential store: not readable here.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    write_credentials(&env, "enc:v2:opaque-to-zcode-acp");
    let (created, logged, _) = open_with_account(&env, &workspace);
    assert!(!offers_model(&created, PLAN), "{created}");
    assert!(unlisted_reasons(&created).contains("enc:v2"), "{created}");
    assert!(!logged.contains("opaque-to-zcode-acp"));

    // Another plan selected (the Start Plan needs a captcha only Desktop solves): not listed.
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    write_credentials(&env, SECRET_KEY);
    write_settings(&env, "start-plan");
    let (created, _, _) = open_with_account(&env, &workspace);
    assert!(!offers_model(&created, "account:"), "{created}");
    assert!(unlisted_reasons(&created).contains("another plan"), "{created}");
}

#[test]
fn doctor_says_why_plan_models_are_missing_and_nothing_without_the_users_files() {
    if !desktop("doctor_says_why_plan_models_are_missing_and_nothing_without_the_users_files", None)
    {
        return;
    }
    let note = "note: Coding Plan models of account:zai-individual-coding-plan are not listed: \
                no Coding Plan key";

    // Signed in without a stored key (3.15.1 and later): the same reason a session gives.
    let env = TestEnv::new();
    write_settings(&env, "individual-coding-plan");
    write_account(&env, None);
    let (text, _) = doctor_output(&env, false);
    assert!(text.lines().any(|l| l.starts_with(note)), "{text}");
    let (json, _) = doctor_output(&env, true);
    let report: Value = serde_json::from_str(&json).unwrap();
    let notes = report["smoke"]["notes"].as_array().expect("smoke.notes");
    assert_eq!(notes.len(), 1, "{report:#}");
    assert!(notes[0].as_str().unwrap().contains("no Coding Plan key"), "{report:#}");
    let unlisted = &report["smoke"]["probe"]["unlistedAccountProviders"];
    assert_eq!(unlisted[0]["providerId"], PLAN, "{report:#}");

    // Entitled (signed in, an enc:v1 key, the plan selected): nothing to say, and the key is in
    // no output of doctor's.
    let env = TestEnv::new();
    write_credentials(&env, &enc_v1(SECRET_KEY, MACHINE_SECRET));
    let (text, logged) = doctor_output(&env, false);
    assert!(!text.contains("note:"), "{text}");
    for output in [&text, &logged, &doctor_output(&env, true).0] {
        assert!(!output.contains(SECRET_KEY), "the key is in doctor's output");
    }

    // Without the user's files: nothing about plans, in either form.
    let env = TestEnv::new();
    let (text, _) = doctor_output(&env, false);
    assert!(!text.contains("note:") && !text.contains("Coding Plan"), "{text}");
    let report: Value = serde_json::from_str(&doctor_output(&env, true).0).unwrap();
    assert_eq!(report["smoke"]["notes"], json!([]), "{report:#}");
    assert!(!report.to_string().contains("Coding Plan"), "{report:#}");
}
