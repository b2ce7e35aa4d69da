//! Host-service semantics: workspace state, the session lifecycle, settings, usage and
//! persistence across host processes.

mod common;

use common::{Install, label, open_session, prompt, subscribe};
use serde_json::{Value, json};

#[test]
fn initialize_and_workspace_state_offer_models() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let init = sim.agent("initialize", json!({"workspacePath": ws}));
    assert_eq!(init["available"], true);
    let state = sim.agent("readWorkspaceState", json!({"workspacePath": ws}));
    assert_eq!(state["workspace"]["workspacePath"], ws.as_str());
    let settings = &state["settings"];
    assert_eq!(
        settings["model"]["current"],
        json!({"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"})
    );
    let models = settings["model"]["available"].as_array().unwrap();
    assert!(models.len() >= 2);
    assert!(
        models
            .iter()
            .all(|model| model["ref"]["providerId"].is_string() && model["label"].is_string())
    );
    assert_eq!(settings["mode"]["current"], "build");
    assert_eq!(settings["thoughtLevel"]["enabled"], true);
    assert!(!state["modelCatalog"]["providers"].as_array().unwrap().is_empty());
    assert_eq!(
        sim.call("agent", "initialize", json!({"workspacePath": "relative/path"})),
        Err("initialize: workspacePath must be absolute: relative/path".into())
    );
}

#[test]
fn signed_out_hosts_report_provider_not_ready() {
    let install = Install::new();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_SIGNED_OUT", "1")]);
    let ws = install.ws();
    let init = sim.agent("initialize", json!({"workspacePath": ws}));
    assert_eq!(init["available"], false);
    assert_eq!(init["reasonCode"], "provider_not_ready");
    assert!(init["reason"].is_string());
    let state = sim.agent("readWorkspaceState", json!({"workspacePath": ws}));
    assert_eq!(state["modelCatalog"]["providers"], json!([]));
    let (session, _) = open_session(&mut sim, &ws);
    let refused = prompt(&mut sim, &ws, &session, "hello").unwrap_err();
    assert!(refused.contains("No usable ZCode model provider"), "{refused}");
}

#[test]
fn snapshots_carry_every_published_field() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    prompt(&mut sim, &ws, &session, "sim:todos").unwrap();
    sim.events_until_terminal();
    let snapshot = sim.agent(
        "readSession",
        json!({"workspacePath": ws, "sessionId": session,
        "deliveryKind": "desktop-continuous", "messageLimit": 100, "afterSeq": 0}),
    );
    let head = &snapshot["session"];
    assert_eq!(head["sessionId"], session.as_str());
    assert_eq!(head["status"], "idle");
    assert_eq!(head["workspace"]["workspacePath"], ws.as_str());
    assert_eq!(head["title"], "sim:todos");
    assert!(head["updatedAt"].as_u64().unwrap() > 0);
    let usage = &snapshot["runtime"]["contextUsage"];
    assert!(usage["used"].as_u64().unwrap() > 0);
    assert_eq!(usage["size"], 200_000);
    assert_eq!(usage["cost"]["currency"], "USD");
    assert!(snapshot["todos"].as_array().unwrap().iter().all(|todo| {
        let mut keys: Vec<_> = todo.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys == ["content", "priority", "status"]
    }));
    assert!(
        snapshot["slashCommands"]
            .as_array()
            .unwrap()
            .iter()
            .all(|command| command["name"].is_string())
    );
    // The bridge answers `readSession` with each message part cut to its type; the parts come
    // whole from `readSessionMessages`.
    let projected = snapshot["messages"].as_array().unwrap();
    assert_eq!(projected[0]["parts"], json!([{"type": "text"}]));
    let whole =
        sim.agent("readSessionMessages", json!({"workspacePath": ws, "sessionId": session}));
    let messages = whole["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["info"]["role"], "user");
    assert_eq!(messages[0]["parts"], json!([{"type": "text", "text": "sim:todos"}]));
    assert_eq!(messages[1]["info"]["role"], "assistant");
    let types: Vec<&str> = messages[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["tool", "text"]);
    assert_eq!(messages[1]["parts"][0]["state"]["status"], "completed");
    assert_eq!(messages[1]["parts"][0]["tool"], "TodoWrite");
    assert_eq!(messages[1]["parts"][1]["text"], "Working through the list. Almost done.");

    let last_only = sim.agent(
        "readSession",
        json!({"workspacePath": ws, "sessionId": session, "messageLimit": 1}),
    );
    assert_eq!(last_only["messages"].as_array().unwrap().len(), 1);
    assert_eq!(last_only["messages"][0]["info"]["role"], "assistant");
}

#[test]
fn settings_changes_return_and_publish_snapshots() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    for mode in ["edit", "plan", "yolo", "build"] {
        let snapshot =
            sim.agent("setMode", json!({"workspacePath": ws, "sessionId": session, "mode": mode}));
        assert_eq!(snapshot["settings"]["mode"]["current"], mode);
        let event = sim.next_event();
        assert_eq!(event["type"], "snapshot");
        assert_eq!(event["snapshot"]["settings"]["mode"]["current"], mode);
    }
    assert_eq!(
        sim.call(
            "agent",
            "setMode",
            json!({"workspacePath": ws, "sessionId": session, "mode": "auto"})
        ),
        Err("Unsupported mode: auto".into())
    );
    let model = json!({"providerId": "builtin:bigmodel-coding-plan", "modelId": "GLM-5.2"});
    let snapshot = sim.agent("setModel", json!({"workspacePath": ws, "sessionId": session, "model": model, "persistAsWorkspaceLastUsed": true}));
    assert_eq!(snapshot["settings"]["model"]["current"], model);
    assert_eq!(sim.next_event()["snapshot"]["settings"]["model"]["current"], model);
    let unknown = sim.call("agent", "setModel", json!({"workspacePath": ws, "sessionId": session, "model": {"providerId": "x", "modelId": "y"}}));
    assert!(unknown.unwrap_err().starts_with("Unknown model"));
    let snapshot = sim.agent("setThoughtLevel", json!({"workspacePath": ws, "sessionId": session, "thoughtLevel": "high", "persistAsWorkspaceLastUsed": true}));
    assert_eq!(snapshot["settings"]["thoughtLevel"]["current"], "high");
    assert_eq!(sim.next_event()["snapshot"]["settings"]["thoughtLevel"]["current"], "high");
    assert_eq!(
        sim.call(
            "agent",
            "setThoughtLevel",
            json!({"workspacePath": ws, "sessionId": session, "thoughtLevel": "max"})
        ),
        Err("Unknown thought level: max".into())
    );
    // Persisted as the workspace's last used choice: new sessions start with it.
    let state = sim.agent("readWorkspaceState", json!({"workspacePath": ws}));
    assert_eq!(state["settings"]["model"]["current"], model);
    let fresh = sim.agent(
        "createSession",
        json!({"workspacePath": ws, "persistence": "immediate", "mcpServers": []}),
    );
    assert_eq!(fresh["settings"]["model"]["current"], model);
    assert_eq!(fresh["settings"]["thoughtLevel"]["current"], "high");
    // An unchanged setting publishes nothing: the next event is the marker turn's.
    sim.agent("setMode", json!({"workspacePath": ws, "sessionId": session, "mode": "build"}));
    prompt(&mut sim, &ws, &session, "marker").unwrap();
    assert_eq!(label(&sim.next_event()), "state.updated");
}

#[test]
fn sessions_persist_across_host_processes() {
    let install = Install::new();
    let ws = install.ws();
    let other_workspace = install.state.join("other");
    std::fs::create_dir_all(&other_workspace).unwrap();
    let (session, first_seq_end) = {
        let mut sim = install.spawn();
        let (session, _) = open_session(&mut sim, &ws);
        sim.agent("setMode", json!({"workspacePath": ws, "sessionId": session, "mode": "plan"}));
        sim.next_event();
        prompt(&mut sim, &ws, &session, "sim:read missing.txt").unwrap();
        let events = sim.events_until_terminal();
        let last_seq = common::terminal(&events)["seq"].as_u64().unwrap();
        sim.agent(
            "createSession",
            json!({"workspacePath": other_workspace, "persistence": "immediate", "mcpServers": []}),
        );
        sim.close_stdin();
        assert!(sim.wait().success());
        (session, last_seq)
    };
    let mut sim = install.spawn();
    let listed = sim.agent("listSessions", json!({"workspacePath": ws, "includeArchived": false}));
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "only this workspace's sessions: {listed:?}");
    assert_eq!(listed[0]["sessionId"], session.as_str());
    assert_eq!(listed[0]["title"], "sim:read missing.txt");
    assert_eq!(listed[0]["workspace"]["workspacePath"], ws.as_str());
    assert!(listed[0]["updatedAt"].is_u64());

    let snapshot = sim.agent(
        "resumeSession",
        json!({"workspacePath": ws, "sessionId": session, "mcpServers": []}),
    );
    assert_eq!(snapshot["settings"]["mode"]["current"], "plan");
    let messages = snapshot["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    let tool = messages[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|part| part["type"] == "tool")
        .unwrap();
    assert_eq!(tool["tool"], "Read");
    assert_eq!(tool["state"]["status"], "error");
    assert_eq!(tool["state"]["error"], "File not found: missing.txt");
    assert!(tool["callId"].is_string());

    // Sequence numbers keep growing in the new process.
    subscribe(&mut sim, &ws, &session);
    prompt(&mut sim, &ws, &session, "again").unwrap();
    let events = sim.events_until_terminal();
    let first = common::session_events(&events)[0]["seq"].as_u64().unwrap();
    assert!(first > first_seq_end, "{first} > {first_seq_end}");
    let usage = sim.agent("getTaskTokenUsage", json!({"workspacePath": ws, "sessionId": session}));
    assert!(usage["inputTokens"].as_u64().unwrap() > 0);
}

#[test]
fn resume_reports_the_sessions_own_workspace() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    let elsewhere = install.state.to_str().unwrap().to_owned();
    let snapshot =
        sim.agent("resumeSession", json!({"workspacePath": elsewhere, "sessionId": session}));
    assert_eq!(snapshot["session"]["workspace"]["workspacePath"], ws.as_str());
    let refused =
        sim.call("agent", "readSession", json!({"workspacePath": elsewhere, "sessionId": session}));
    assert!(refused.unwrap_err().contains("does not belong to workspace"));
    assert_eq!(
        sim.call(
            "agent",
            "resumeSession",
            json!({"workspacePath": ws, "sessionId": "no-such-session"})
        ),
        Err("Session not found: no-such-session".into())
    );
}

#[test]
fn deferred_sessions_are_listed_after_their_first_prompt() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let snapshot =
        sim.agent("createSession", json!({"workspacePath": ws, "persistence": "deferred"}));
    let session = snapshot["session"]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(sim.agent("listSessions", json!({"workspacePath": ws})), json!([]));
    subscribe(&mut sim, &ws, &session);
    prompt(&mut sim, &ws, &session, "hi").unwrap();
    sim.events_until_terminal();
    assert_eq!(
        sim.agent("listSessions", json!({"workspacePath": ws}))[0]["sessionId"],
        session.as_str()
    );
    assert!(
        sim.call("agent", "createSession", json!({"workspacePath": "/definitely/not/here"}))
            .is_err()
    );
}

#[test]
fn token_usage_accumulates_over_turns() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    let usage = |sim: &mut common::Sim| {
        sim.agent("getTaskTokenUsage", json!({"workspacePath": ws, "sessionId": session}))
    };
    let zero = usage(&mut sim);
    assert_eq!(
        zero,
        json!({"sessionId": session, "totalTokens": 0, "inputTokens": 0, "outputTokens": 0,
        "reasoningTokens": 0, "cacheCreationTokens": 0, "cacheReadTokens": 0})
    );
    prompt(&mut sim, &ws, &session, "sim:reason").unwrap();
    let events = sim.events_until_terminal();
    let reply = common::streamed(&events, "text_delta");
    let thought = common::streamed(&events, "reasoning_delta");
    let first = usage(&mut sim);
    assert_eq!(first["inputTokens"], "sim:reason".len().div_ceil(4));
    assert_eq!(first["outputTokens"], reply.chars().count().div_ceil(4));
    assert_eq!(first["reasoningTokens"], thought.chars().count().div_ceil(4));
    let sum = ["inputTokens", "outputTokens", "reasoningTokens"]
        .iter()
        .map(|key| first[key].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(first["totalTokens"], sum);
    let reported = &common::terminal(&events)["payload"]["usage"];
    assert_eq!(reported["totalTokens"], sum);
    prompt(&mut sim, &ws, &session, "sim:reply four").unwrap();
    sim.events_until_terminal();
    let second = usage(&mut sim);
    assert_eq!(second["inputTokens"].as_u64().unwrap(), first["inputTokens"].as_u64().unwrap() + 4);
    assert_eq!(
        second["cacheReadTokens"].as_u64().unwrap(),
        sum,
        "the second turn re-reads the first turn's context"
    );
}

#[test]
fn one_prompt_at_a_time_and_none_after_close() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    prompt(&mut sim, &ws, &session, "sim:slow 600000").unwrap();
    let busy = prompt(&mut sim, &ws, &session, "second").unwrap_err();
    assert!(busy.contains("already running"), "{busy}");
    sim.task("stopGeneration", json!({"workspacePath": ws, "taskId": session})).unwrap();
    let events = sim.events_until_terminal();
    assert_eq!(common::terminal(&events)["payload"]["resultType"], "cancelled");
    sim.agent("closeSession", json!({"workspacePath": ws, "sessionId": session}));
    let closed = prompt(&mut sim, &ws, &session, "after close").unwrap_err();
    assert!(closed.contains("closed"), "{closed}");
    sim.agent("resumeSession", json!({"workspacePath": ws, "sessionId": session}));
    prompt(&mut sim, &ws, &session, "after resume").unwrap();
    assert_eq!(common::terminal(&sim.events_until_terminal())["payload"]["resultType"], "success");
}

#[test]
fn read_messages_and_events() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    prompt(&mut sim, &ws, &session, "hello").unwrap();
    let events = sim.events_until_terminal();
    let messages = sim.agent(
        "readSessionMessages",
        json!({"workspacePath": ws, "sessionId": session, "limit": 100}),
    );
    assert_eq!(messages["messages"].as_array().unwrap().len(), 2);
    let read = sim.agent(
        "readSessionEvents",
        json!({"workspacePath": ws, "sessionId": session, "afterSeq": 2}),
    );
    let seqs: Vec<u64> = read["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["seq"].as_u64().unwrap())
        .collect();
    let live: Vec<u64> = common::session_events(&events)
        .iter()
        .map(|event| event["seq"].as_u64().unwrap())
        .filter(|seq| *seq > 2)
        .collect();
    assert_eq!(seqs, live);
}

#[test]
fn events_are_numbered_and_delivered_to_every_subscriber() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, first) = open_session(&mut sim, &ws);
    let second = subscribe(&mut sim, &ws, &session);
    prompt(&mut sim, &ws, &session, "hello there").unwrap();
    let mut by_subscriber: std::collections::HashMap<String, Vec<Value>> = Default::default();
    let mut terminals = 0;
    while terminals < 2 {
        let frame = sim.next_frame().json().clone();
        let event = frame["params"]["event"].clone();
        if common::is_terminal(&event) {
            terminals += 1;
        }
        by_subscriber
            .entry(frame["params"]["subscriptionId"].as_str().unwrap().to_owned())
            .or_default()
            .push(event);
    }
    assert_eq!(
        by_subscriber[&first], by_subscriber[&second],
        "both subscribers see the same events"
    );
    let events = &by_subscriber[&first];
    let inner = common::session_events(events);
    let mut ids = std::collections::HashSet::new();
    for pair in inner.windows(2) {
        assert!(pair[1]["seq"].as_u64() > pair[0]["seq"].as_u64(), "seq increases");
    }
    for event in &inner {
        assert!(ids.insert(event["eventId"].as_str().unwrap().to_owned()), "eventIds are unique");
        assert_eq!(event["deliveryKind"], "desktop-continuous");
        assert_eq!(event["sessionId"], session.as_str());
        assert!(event["turnId"].is_string());
        assert!(event["timestamp"].is_u64());
    }
    assert!(events.iter().any(|event| label(event) == "session.titleUpdated"));
}
