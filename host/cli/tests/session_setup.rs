//! `session/new` validation and result, `session/list`, `session/close`, `session/set_mode`
//! and `session/set_config_option`.

mod support;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use support::*;

#[test]
fn session_new_refuses_bad_cwds_with_clear_invalid_params() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let file = workspace.join("a-file.txt");
    std::fs::write(&file, "not a directory").unwrap();
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());

    let cases = [
        (json!({"cwd": "relative/dir", "mcpServers": []}), "absolute"),
        (json!({"cwd": workspace.join("missing"), "mcpServers": []}), "does not exist"),
        (json!({"cwd": file, "mcpServers": []}), "not a directory"),
    ];
    for (params, expected) in cases {
        let response = agent.request("session/new", params.clone());
        let (code, message) = agent.error_of(&response, &format!("session/new {params}"));
        assert_eq!(code, INVALID_PARAMS, "{params}: {message}");
        assert!(message.contains(expected), "{params}: {message:?} should say {expected:?}");
    }
    // No cwd at all: the request does not match the schema.
    let response = agent.request("session/new", json!({"mcpServers": []}));
    let (code, _) = agent.error_of(&response, "session/new without cwd");
    assert_eq!(code, INVALID_PARAMS, "{response}");

    assert!(agent.seen_processes().is_empty(), "an invalid cwd started the host");
    assert!(agent.finish().success());
}

#[test]
fn session_new_refuses_additional_directories() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let extra = env.workspace("extra");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());

    let response = agent.request(
        "session/new",
        json!({"cwd": workspace, "mcpServers": [], "additionalDirectories": [extra]}),
    );
    let (code, message) = agent.error_of(&response, "session/new with additionalDirectories");
    assert!(message.contains("additionalDirectories"), "{message}");
    // The client sent something the agent never advertised: that is the client's input
    // being refused, not an internal failure.
    assert_eq!(code, INVALID_PARAMS, "{response}");

    // An empty list means "none" and is accepted.
    let ok = agent.call(
        "session/new",
        json!({"cwd": workspace, "mcpServers": [], "additionalDirectories": []}),
    );
    assert!(ok["sessionId"].is_string(), "{ok}");
    assert!(agent.finish().success());
}

#[test]
fn session_new_returns_modes_and_config_options_and_sends_metadata_after_the_response() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());

    let id = agent.send_request("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let response = agent.wait_response(id);
    let result = agent.result_of(&response, "session/new");
    let session = result["sessionId"].as_str().expect("sessionId").to_string();
    assert!(!session.is_empty());

    let modes = &result["modes"];
    assert_eq!(modes["currentModeId"], "build", "{modes}");
    let mode_ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(mode_ids, generation::mode_ids());

    let options = result["configOptions"].as_array().expect("configOptions");
    let model = options.iter().find(|o| o["category"] == "model").expect("a model option");
    assert_eq!(model["type"], "select", "{model}");
    let values: Vec<&Value> =
        model["options"].as_array().unwrap().iter().map(|o| &o["value"]).collect();
    assert!(values.contains(&&model["currentValue"]), "current model is selectable: {model}");
    let thought = options.iter().find(|o| o["category"] == "thought_level");
    if generation::one_local_model() {
        // The Agent's local model has no thinking levels, and nothing to switch to.
        assert_eq!(values.len(), 1, "{model}");
        assert!(thought.is_none(), "{options:?}");
    } else {
        let thought = thought.expect("thought level");
        let levels: Vec<&Value> =
            thought["options"].as_array().unwrap().iter().map(|o| &o["value"]).collect();
        assert!(levels.contains(&&thought["currentValue"]), "current level is offered: {thought}");
    }
    if generation() == Generation::HostBridge {
        assert!(values.len() >= 2, "several models to choose from: {model}");
        let thought = thought.expect("thought level");
        if let Some(level) = generation::default_thought_level() {
            assert_eq!(thought["currentValue"], level, "the release's default level: {thought}");
        }
    }

    // Metadata follows the response, never precedes it.
    agent.wait_update(&session, "available_commands_update", |u| {
        kind(u) == "available_commands_update"
    });
    let response_seq = agent.response_seq(id);
    let updates = agent.transcript().updates(&session);
    assert!(!updates.is_empty());
    for (seq, update) in &updates {
        assert!(*seq > response_seq, "update before the session/new response: {update}");
    }
    let commands = updates.iter().find(|(_, u)| kind(u) == "available_commands_update").unwrap();
    let names: Vec<&str> = commands.1["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&generation::a_slash_command()), "{names:?}");
    assert!(agent.finish().success());
}

#[test]
fn session_list_is_per_workspace_with_titles_and_update_times() {
    let env = TestEnv::new();
    let alpha = env.workspace("alpha");
    let bravo = env.workspace("bravo");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let first = agent.new_session(&alpha);
    let second = agent.new_session(&alpha);
    let other = agent.new_session(&bravo);
    agent.prompt_ok(&first, "title me please", "end_turn");
    // The Desktop Agent keeps a session only once it has a first prompt (ZCode: a draft is
    // not stored); prompting every session makes the list the same on every generation.
    agent.prompt_ok(&second, "keep me", "end_turn");
    agent.prompt_ok(&other, "keep me too", "end_turn");

    let listed = agent.call("session/list", json!({"cwd": alpha}));
    let sessions = listed["sessions"].as_array().expect("sessions");
    let ids: BTreeSet<&str> = sessions.iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
    assert_eq!(ids, BTreeSet::from([first.as_str(), second.as_str()]), "{listed}");
    for session in sessions {
        assert_eq!(session["cwd"], json!(alpha), "{session}");
        let updated = session["updatedAt"].as_str().expect("updatedAt");
        assert!(updated.contains('T') && updated.len() >= 20, "ISO 8601: {updated}");
    }
    let titled = sessions.iter().find(|s| s["sessionId"] == first.as_str()).unwrap();
    assert_eq!(titled["title"], "title me please", "{titled}");
    assert!(listed.get("nextCursor").is_none_or(Value::is_null), "{listed}");

    let listed = agent.call("session/list", json!({"cwd": bravo}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [other.as_str()]);

    // ZCode keeps sessions per workspace; a list without a cwd is refused clearly.
    let response = agent.request("session/list", json!({}));
    let (code, message) = agent.error_of(&response, "session/list without cwd");
    assert_eq!(code, INVALID_PARAMS, "{message}");
    assert!(message.contains("cwd"), "{message}");
    assert!(agent.finish().success());
}

#[test]
fn session_list_pages_with_a_cursor() {
    let env = TestEnv::new();
    let workspace = env.workspace("many");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let created: BTreeSet<String> = (0..53).map(|_| agent.new_session(&workspace)).collect();
    assert_eq!(created.len(), 53, "session ids are unique");
    if generation() == Generation::AppServer {
        // Drafts are not stored by the Desktop Agent: only prompted sessions are listed.
        for session in &created {
            agent.prompt_ok(session, "keep me", "end_turn");
        }
    }

    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut params = json!({"cwd": workspace});
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        let page = agent.call("session/list", params);
        pages += 1;
        let sessions = page["sessions"].as_array().expect("sessions");
        assert!(!sessions.is_empty(), "empty page {pages}: {page}");
        listed.extend(sessions.iter().map(|s| s["sessionId"].as_str().unwrap().to_string()));
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
        assert!(pages < 10, "the cursor never ends");
    }
    assert!(pages >= 2, "53 sessions fit on one page: no paging happened");
    let unique: BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(unique.len(), listed.len(), "a session was listed twice");
    assert_eq!(unique, created);

    let response = agent.request("session/list", json!({"cwd": workspace, "cursor": "bogus"}));
    let (code, _) = agent.error_of(&response, "session/list with a bogus cursor");
    assert_eq!(code, INVALID_PARAMS);
    assert!(agent.finish().success());
}

#[test]
fn a_closed_session_is_not_found_afterwards() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    agent.prompt_ok(&session, "before closing", "end_turn");

    let closed = agent.call("session/close", json!({"sessionId": session}));
    assert!(closed.is_object(), "{closed}");

    let response = agent.prompt(&session, "after closing");
    let (code, message) = agent.error_of(&response, "prompt after close");
    assert_eq!(code, RESOURCE_NOT_FOUND, "{message}");
    let again = agent.request("session/close", json!({"sessionId": session}));
    let (code, _) = agent.error_of(&again, "second close");
    assert_eq!(code, RESOURCE_NOT_FOUND);
    let mode = agent.request("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));
    assert_eq!(agent.error_of(&mode, "set_mode after close").0, RESOURCE_NOT_FOUND);

    // The closed session is still a saved session of the workspace.
    let listed = agent.call("session/list", json!({"cwd": workspace}));
    assert!(
        listed["sessions"].as_array().unwrap().iter().any(|s| s["sessionId"] == session.as_str())
    );
    assert!(agent.finish().success());
}

#[test]
fn set_mode_switches_the_mode_and_tells_the_client() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);

    let id =
        agent.send_request("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));
    let response = agent.wait_response(id);
    agent.result_of(&response, "set_mode plan");
    agent.wait_update(&session, "current_mode_update to plan", |u| {
        kind(u) == "current_mode_update" && u["currentModeId"] == "plan"
    });

    let response =
        agent.request("session/set_mode", json!({"sessionId": session, "modeId": "dance"}));
    let (code, message) = agent.error_of(&response, "set_mode dance");
    assert_eq!(code, INVALID_PARAMS, "{message}");
    assert!(message.contains("dance"), "{message}");

    // The mode stuck: a new prompt's metadata says plan (3.11.2's host repeats the mode with
    // each turn; the later generations send only what changed, so there a turn may say nothing
    // about the mode — but never another), and a later process that loads the session finds it
    // in plan.
    let before = agent.updates(&session).len();
    agent.prompt_ok(&session, "which mode?", "end_turn");
    let during: Vec<Value> = agent.updates(&session)[before..].to_vec();
    let modes: Vec<&Value> = during.iter().filter(|u| kind(u) == "current_mode_update").collect();
    if generation::repeats_mode_each_turn() {
        assert!(!modes.is_empty(), "no mode in the turn's metadata");
    }
    assert!(modes.iter().all(|u| u["currentModeId"] == "plan"), "{modes:?}");
    assert!(agent.finish().success());

    let mut later = Agent::start(&env);
    later.initialize(plain_client());
    let loaded = later
        .call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let expected = if generation::plan_survives_a_load() { "plan" } else { "build" };
    assert_eq!(loaded["modes"]["currentModeId"], expected, "{loaded}");
    assert!(later.finish().success());
}

#[test]
fn setting_the_current_mode_model_or_thought_level_again_succeeds() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let result = agent.call("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let session = result["sessionId"].as_str().unwrap().to_string();
    // ZCode 3.15.1 answers a switch to the value a session has with `noop config.unchanged`;
    // for the client that is the switch done, not an error.
    let mode = result["modes"]["currentModeId"].clone();
    for _ in 0..2 {
        agent.call("session/set_mode", json!({"sessionId": session, "modeId": mode}));
    }
    // Every choice option (a boolean one, such as the Services Server's plan switch, has no
    // current value to choose again).
    let choices = result["configOptions"].as_array().unwrap().iter();
    for option in choices.filter(|o| o["currentValue"].is_string()) {
        let params = json!({"sessionId": session, "configId": option["id"],
                            "value": option["currentValue"]});
        let changed = agent.call("session/set_config_option", params);
        let same = changed["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["id"] == option["id"])
            .map(|o| o["currentValue"].clone());
        assert_eq!(same, Some(option["currentValue"].clone()), "{changed}");
    }
    // The session still works, in the mode it had.
    agent.prompt_ok(&session, "still there?", "end_turn");
    let modes: Vec<Value> =
        agent.updates(&session).into_iter().filter(|u| kind(u) == "current_mode_update").collect();
    assert!(modes.iter().all(|u| u["currentModeId"] == mode), "{modes:?}");
    assert!(agent.finish().success());
}

#[test]
fn set_config_option_changes_model_and_thought_level() {
    if !skip_unless(
        "set_config_option_changes_model_and_thought_level",
        !generation::one_local_model(),
        "the Desktop Agent offers only its local model (no thinking levels) until an account \
         push; desktop_app_server.rs switches models and levels among entitled accounts",
    ) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let result = agent.call("session/new", json!({"cwd": workspace, "mcpServers": []}));
    let session = result["sessionId"].as_str().unwrap().to_string();
    let options = result["configOptions"].as_array().unwrap().clone();
    let model = options.iter().find(|o| o["category"] == "model").unwrap();
    let model_id = model["id"].as_str().unwrap();
    let other_model = model["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].clone())
        .find(|v| *v != model["currentValue"])
        .expect("a second model");

    let changed = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": model_id, "value": other_model}),
    );
    let current = |options: &Value, category: &str| -> Value {
        options.as_array().unwrap().iter().find(|o| o["category"] == category).unwrap()
            ["currentValue"]
            .clone()
    };
    assert_eq!(current(&changed["configOptions"], "model"), other_model, "{changed}");
    agent.wait_update(&session, "config_option_update with the new model", |u| {
        kind(u) == "config_option_update" && current(&u["configOptions"], "model") == other_model
    });

    let thought = options.iter().find(|o| o["category"] == "thought_level").unwrap();
    let thought_id = thought["id"].as_str().unwrap();
    let changed = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": thought_id, "value": "high"}),
    );
    assert_eq!(current(&changed["configOptions"], "thought_level"), "high", "{changed}");
    assert_eq!(current(&changed["configOptions"], "model"), other_model, "model kept");

    let bad = [
        json!({"sessionId": session, "configId": "no.such.option", "value": "x"}),
        json!({"sessionId": session, "configId": model_id, "value": "[\"nobody\",\"nothing\",null]"}),
        json!({"sessionId": session, "configId": thought_id, "value": "extreme"}),
    ];
    for params in bad {
        let response = agent.request("session/set_config_option", params.clone());
        let (code, message) = agent.error_of(&response, &format!("set_config_option {params}"));
        assert_eq!(code, INVALID_PARAMS, "{params}: {message}");
    }
    assert!(agent.finish().success());
}
