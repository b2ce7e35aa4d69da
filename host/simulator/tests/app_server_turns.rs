//! Turns over the legacy projection, reverse requests and the interaction race, run once per
//! CLI family (3.14.5, 3.15.1, 3.18.2).

mod app_server_support;

use app_server_support::{CLI_FAMILIES, Desktop, has_315, labels, streamed_text};
use serde_json::{Value, json};

const BIGMODEL: &str = "account:bigmodel-individual-coding-plan";

#[test]
fn create_waits_for_runtime_preferences_and_holds_the_queue() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        agent.auto_preferences = None;
        let create = agent.request("session/create", json!({"workspace": desktop.ws()}));
        let asked = agent.reverse("session/requestRuntimePreferences");
        assert_eq!(asked["params"]["scope"], "runtime-materialization", "{app}");
        assert!(asked["id"].as_str().unwrap().starts_with("server-"), "{app}");
        // Requests are handled one at a time: this one waits behind the create.
        let list = agent.request("session/list", json!({}));
        agent.answer(&asked["id"], app_server_support::preferences());
        let created = agent.response(create);
        let listed = agent.response(list);
        let position = |id: u64| {
            agent.log.iter().position(|frame| frame["id"] == id && frame.get("method").is_none())
        };
        assert!(position(create) < position(list), "{app}: the create answers first");
        let session = created["result"]["session"]["sessionId"].as_str().unwrap();
        assert_eq!(
            asked["params"]["sessionId"], session,
            "{app}: the request names the new session"
        );
        assert_eq!(
            listed["result"]["sessions"],
            json!([]),
            "{app}: not persisted before its first prompt"
        );
        // A host without the method gets the source's fallback preferences.
        let second = agent.request("session/create", json!({"workspace": desktop.ws()}));
        let asked = agent.reverse("session/requestRuntimePreferences");
        agent.answer_error(&asked["id"], -32601, "Method not found");
        assert!(agent.response(second).get("result").is_some(), "{app}");
        // Any other failure fails the create.
        let third = agent.request("session/create", json!({"workspace": desktop.ws()}));
        let asked = agent.reverse("session/requestRuntimePreferences");
        agent.answer_error(&asked["id"], -32000, "host broke");
        assert_eq!(
            agent.response(third)["error"],
            json!({"code": -32000, "message": "host broke"}),
            "{app}"
        );
    }
}

/// ZCode thins streamed deltas on the legacy stream (3.15.1 `server-operations.ts`,
/// `onSessionEvent`): the first goes out at once, the others merged; the V4 conversation alone
/// carries each one.
#[test]
fn the_legacy_stream_merges_streamed_deltas_as_zcode_does() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        agent.prompt(&session, "sim:stream 1000");
        let events = agent.turn_events(&session);
        assert_eq!(streamed_text(&events), "lorem ipsum ".repeat(1000), "{app}");
        let deltas: Vec<&Value> =
            events.iter().filter(|event| event["payload"]["kind"] == "text_delta").collect();
        let text = |event: &Value| event["payload"]["delta"].as_str().unwrap().to_owned();
        assert_eq!(text(deltas[0]), "lorem ipsum ", "{app}: the first delta goes out at once");
        assert!(deltas.len() < 100, "{app}: {} events for 1000 deltas", deltas.len());
        // Each later batch went out for one of ZCode's reasons: 2048 UTF-16 units, 250 ms of
        // event time since the last one, or (the last) the event after the stream.
        for (index, pair) in deltas.windows(2).enumerate() {
            let units = text(pair[1]).encode_utf16().count();
            let waited =
                pair[1]["timestamp"].as_u64().unwrap() - pair[0]["timestamp"].as_u64().unwrap();
            let last = index + 2 == deltas.len();
            assert!(units < 2048 + 12, "{app}: a batch is sent as soon as it is due");
            assert!(
                last || units >= 2048 || waited >= 250,
                "{app}: batch {index} of {units} units after {waited} ms"
            );
        }
        assert_eq!(deltas.last().unwrap()["payload"]["done"], true, "{app}");
        let seqs: Vec<u64> = events.iter().map(|event| event["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|pair| pair[1] == pair[0] + 1), "{app}: {seqs:?}");
    }
}

#[test]
fn a_reply_turn_streams_in_order_and_persists() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        let accepted = agent.prompt(&session, "sim:reply Hello there, host.");
        assert_eq!(accepted["accepted"], true);
        assert_eq!(accepted["sessionId"], session.as_str());
        let events = agent.turn_events(&session);
        assert_eq!(
            labels(&events),
            [
                "session.titleUpdated",
                "turn.started",
                "model.streaming:text_delta",
                "session.updated",
                "turn.completed"
            ],
            "{app}"
        );
        assert_eq!(streamed_text(&events), "Hello there, host.", "{app}");
        let seqs: Vec<u64> = events.iter().map(|event| event["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|pair| pair[1] == pair[0] + 1), "{app}: {seqs:?}");
        assert!(events.iter().all(|event| event["deliveryKind"] == "desktop-continuous"));
        let completed = &events.last().unwrap()["payload"];
        assert_eq!(completed["resultType"], "success");
        assert_eq!(completed["response"], "Hello there, host.");
        assert_eq!(completed["usage"]["modelRequestCount"], 1);
        let started = agent.notification("state.updated");
        assert_eq!(
            (&started["params"]["reason"], &started["params"]["patch"]),
            (&json!("prompt_started"), &json!({"status": "running"}))
        );
        let ended = agent.notification("state.updated");
        assert_eq!(ended["params"]["reason"], "prompt_completed", "{app}");
        assert_eq!(ended["params"]["patch"]["status"], "idle");
        let read = agent.ok("session/read", json!({"sessionId": session}));
        assert_eq!(read["projection"]["status"], "idle");
        assert_eq!(read["session"]["title"], "sim:reply Hello there, host.");
        let messages = read["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2, "{app}");
        assert_eq!(messages[1]["info"]["role"], "assistant");
        assert_eq!(messages[1]["parts"][0]["text"], "Hello there, host.");
        let usage = agent.ok("session/usage", json!({"sessionId": session}));
        assert_eq!(usage["modelRequestCount"], 1);
        assert_eq!(usage["totalTokens"], completed["usage"]["totalTokens"]);
        // A second process finds the persisted session and resumes it with its history.
        agent.close_stdin();
        assert!(agent.wait().success());
        let mut later = desktop.spawn();
        let listed = later.ok("session/list", json!({"workspace": desktop.ws()}));
        assert_eq!(listed["sessions"][0]["title"], "sim:reply Hello there, host.", "{app}");
        let inactive = later.err("session/messages", json!({"sessionId": session}));
        assert_eq!(inactive["code"], -32004, "{app}: only resident sessions answer");
        let resumed =
            later.ok("session/resume", json!({"sessionId": session, "workspace": desktop.ws()}));
        assert_eq!(resumed["messages"].as_array().unwrap().len(), 2, "{app}");
        // The newest `limit`, also after an unknown cursor (the Desktop 3.12.3 live record).
        let messages = later.ok("session/messages", json!({"sessionId": session, "limit": 1}));
        assert_eq!(messages["messages"][0]["info"]["role"], "assistant", "{app}");
        let unknown = later.ok(
            "session/messages",
            json!({"sessionId": session, "afterMessageId": "msg_nowhere", "limit": 1}),
        );
        assert_eq!(unknown["messages"], messages["messages"], "{app}");
        let first = resumed["messages"][0]["info"]["messageId"].clone();
        let after = later.ok(
            "session/messages",
            json!({"sessionId": session, "afterMessageId": first, "limit": 5}),
        );
        assert_eq!(after["messages"], messages["messages"], "{app}: the suffix, newest first");
    }
}

#[test]
fn a_shell_turn_asks_permission_and_honours_each_answer() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({"mode": "build"}));
        agent.prompt(&session, "sim:shell ls -la");
        let execution = agent.take(|frame| frame["params"]["scope"] == "user-execution");
        assert_eq!(
            execution["method"], "session/requestRuntimePreferences",
            "{app}: asked before the first shell"
        );
        let asked = agent.reverse("interaction/requestPermission");
        let params = &asked["params"];
        assert_eq!(params["toolName"], "Bash", "{app}");
        assert_eq!(params["input"]["command"], "ls -la");
        assert_eq!(params["sessionId"], session.as_str());
        let options: Vec<&str> = params["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap())
            .collect();
        assert_eq!(options, ["allow_once", "allow_project", "deny"], "{app}");
        agent.answer(&asked["id"], json!({"decision": "allow"}));
        let events = agent.turn_events(&session);
        let expected = [
            "session.titleUpdated",
            "turn.started",
            "model.streaming:tool_input_start",
            "model.streaming:tool_input_delta",
            "model.streaming:tool_input_end",
            "model.streaming:tool_call",
            "tool.updated:scheduled",
            "permission.requested",
            "permission.resolved",
            "tool.updated:started",
            "tool.updated:progress",
            "tool.updated:result",
            "tool.updated:batch",
            "model.streaming:text_delta",
            "session.updated",
            "turn.completed",
        ];
        assert_eq!(labels(&events), expected, "{app}");
        let scheduled = events.iter().find(|e| e["payload"]["kind"] == "scheduled").unwrap();
        assert_eq!(scheduled["payload"]["inputOmitted"], true, "the input went out in the stream");
        assert_eq!(streamed_text(&events), "The command finished.");
        // Denied: the tool fails and the scenario takes its `denied` branch.
        agent.prompt(&session, "sim:shell rm -rf build");
        let asked = agent.reverse("interaction/requestPermission");
        agent.answer(&asked["id"], json!({"decision": "deny", "reason": "not now"}));
        let events = agent.turn_events(&session);
        let error = events.iter().find(|e| e["payload"]["kind"] == "error").unwrap();
        assert_eq!(error["payload"]["error"]["type"], "PermissionDenied", "{app}");
        assert_eq!(streamed_text(&events), "Permission denied; the command did not run.");
        // Allowed for the project: the next shell runs without asking.
        agent.prompt(&session, "sim:shell make");
        let asked = agent.reverse("interaction/requestPermission");
        let project = asked["params"]["options"][1]["response"].clone();
        agent.answer(&asked["id"], project);
        agent.turn_events(&session);
        agent.prompt(&session, "sim:shell make test");
        let events = agent.turn_events(&session);
        assert!(!labels(&events).contains(&"permission.requested".to_owned()), "{app}");
        assert_eq!(streamed_text(&events), "The command finished.");
        // yolo asks nothing.
        let yolo = agent.session(&desktop.ws(), json!({"mode": "yolo"}));
        agent.prompt(&yolo, "sim:edit notes.txt hello");
        let events = agent.turn_events(&yolo);
        assert!(!labels(&events).contains(&"permission.requested".to_owned()), "{app}");
        assert_eq!(
            std::fs::read_to_string(desktop.workspace.join("notes.txt")).unwrap(),
            "hello\n"
        );
    }
}

#[test]
fn unanswered_interactions_are_reannounced_and_the_first_answer_wins() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        agent.prompt(&session, "sim:shell ls");
        let first = agent.reverse("interaction/requestPermission");
        let second = agent.reverse("interaction/requestPermission");
        assert_ne!(first["id"], second["id"], "{app}: every announcement has a new id");
        assert_eq!(first["params"], second["params"], "{app}: the same request");
        // An answer to the first id settles it; the later id's answer is dropped silently.
        agent.answer(&first["id"], json!({"decision": "allow"}));
        agent.answer(&second["id"], json!({"decision": "deny"}));
        let events = agent.turn_events(&session);
        let resolved = events.iter().find(|e| e["type"] == "permission.resolved").unwrap();
        assert_eq!(resolved["payload"]["decision"], "allow", "{app}");
        let request_id = first["params"]["requestId"].as_str().unwrap().to_owned();
        let late = agent.command(
            &session,
            "resolveInteraction",
            json!({"interactionId": request_id, "answer": {"optionId": "deny"}}),
            json!({}),
        );
        assert_eq!(late["status"], "noop", "{app}: {late}");
        assert_eq!(late["reasonCode"], "proto.alreadyResolved");

        // A V4 answer first: the pending request is abandoned, a later host answer loses.
        agent.prompt(&session, "sim:shell ls");
        let asked = agent.reverse("interaction/requestPermission");
        let request_id = asked["params"]["requestId"].as_str().unwrap().to_owned();
        let won = agent.command(
            &session,
            "resolveInteraction",
            json!({"interactionId": request_id, "answer": {"optionId": "deny"}}),
            json!({}),
        );
        assert_eq!(won["status"], "accepted", "{app}: {won}");
        assert_eq!(
            won["result"],
            json!({"type": "resolveInteraction", "resolvedBy": {"clientId": "client-test", "optionId": "deny"}})
        );
        agent.answer(&asked["id"], json!({"decision": "allow"}));
        let events = agent.turn_events(&session);
        let resolved = events.iter().find(|e| e["type"] == "permission.resolved").unwrap();
        assert_eq!(resolved["payload"]["decision"], "deny", "{app}: the V4 answer won");
        let again = agent.command(
            &session,
            "resolveInteraction",
            json!({"interactionId": request_id, "answer": {"optionId": "allowOnce"}}),
            json!({}),
        );
        assert_eq!(again["status"], "noop");
        let stranger = agent.command(
            &session,
            "resolveInteraction",
            json!({"interactionId": "nope", "answer": {"optionId": "allowOnce"}}),
            json!({}),
        );
        // Late or unknown, an answer is a no-op (the schema comment in `command.ts`).
        assert_eq!(
            (&stranger["status"], &stranger["reasonCode"]),
            (&json!("noop"), &json!("proto.alreadyResolved"))
        );
    }
}

#[test]
fn questions_plans_and_elicitations_go_through_request_user_input() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({"mode": "plan"}));
        agent.prompt(&session, "sim:question");
        let asked = agent.reverse("interaction/requestUserInput");
        let params = &asked["params"];
        assert_eq!(params["toolName"], "AskUserQuestion", "{app}");
        assert_eq!(params["schema"], json!({"toolName": "AskUserQuestion"}));
        let option = &params["questions"][0]["options"][0];
        assert_eq!(option["value"], option["label"], "{app}: the value is the label");
        agent.answer(&asked["id"], json!({"action": "accept", "content": {"answers": {"Which approach should I take?": "Fast"}}}));
        let events = agent.turn_events(&session);
        assert_eq!(streamed_text(&events), "Thanks, I will proceed with your answers.", "{app}");

        agent.prompt(&session, "sim:plan-input");
        let asked = agent.reverse("interaction/requestUserInput");
        assert_eq!(asked["params"]["schema"]["interaction"], "plan_approval", "{app}");
        assert_eq!(asked["params"]["questions"][0]["question"], "Review this implementation plan.");
        agent.answer(&asked["id"], json!({"action": "accept", "content": {"answer_0": "approve"}}));
        let events = agent.turn_events(&session);
        assert!(streamed_text(&events).contains("Plan approved"), "{app}");
        let read = agent.ok("session/read", json!({"sessionId": session, "messageLimit": 1}));
        assert_eq!(
            read["settings"]["mode"]["current"], "build",
            "{app}: an approved plan leaves plan mode"
        );

        agent.prompt(&session, "sim:elicit");
        if has_315(app) {
            let asked = agent.reverse("interaction/requestUserInput");
            assert!(
                asked["params"]["requestId"].as_str().unwrap().starts_with("mcp-elicit-"),
                "{app}"
            );
            assert_eq!(asked["params"]["toolName"], "McpElicitation");
            assert_eq!(asked["params"]["schema"]["interaction"], "mcp_elicitation");
            agent.answer(&asked["id"], json!({"action": "decline"}));
            let events = agent.turn_events(&session);
            assert_eq!(streamed_text(&events), "The MCP server request was declined.", "{app}");
        } else {
            let events = agent.turn_events(&session);
            assert_eq!(
                events.last().unwrap()["type"],
                "turn.failed",
                "{app}: no elicitation before 3.15"
            );
        }
    }
}

#[test]
fn ask_user_question_resolves_itself_when_the_preferences_allow_it() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn_with(&[("ZCODE_SIM_AUTO_RESOLUTION_MS", "20")]);
    agent.auto_preferences = Some(json!({"nativeSearchEnhancementsEnabled": false}));
    let session = agent.session(&desktop.ws(), json!({}));
    agent.prompt(&session, "sim:question");
    agent.reverse("interaction/requestUserInput");
    let events = agent.turn_events(&session);
    let resolved = events.iter().find(|e| e["type"] == "userInput.resolved").unwrap();
    assert_eq!(resolved["payload"]["value"]["autoResolved"], true);
    assert_eq!(streamed_text(&events), "Thanks, I will proceed with your answers.");
}

#[test]
fn account_models_need_runtime_headers_with_the_stored_key() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        desktop.store_key(BIGMODEL, "sk-stored");
        let mut agent = desktop.spawn();
        let model = json!({"providerId": BIGMODEL, "modelId": "GLM-5.3"});
        let refused =
            agent.err("session/create", json!({"workspace": desktop.ws(), "model": model}));
        assert!(
            refused["message"].as_str().unwrap().contains("is not available"),
            "{app}: before the push"
        );
        agent.ok("provider/updateAccountConfig", desktop.account_push("account:t:1", &[BIGMODEL]));
        let session = agent.session(&desktop.ws(), json!({"model": model, "mode": "yolo"}));
        agent.prompt(&session, "sim:reply hi");
        let asked = agent.reverse("interaction/requestProviderRuntimeHeaders");
        let params = &asked["params"];
        assert!(
            params["requestId"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{session}:provider-runtime-headers:"))
        );
        assert_eq!(params["providerId"], BIGMODEL, "{app}");
        assert_eq!(params["reason"], "model-request");
        assert_eq!(params["accountAccess"]["mode"], "individual-coding-plan");
        agent.answer(
            &asked["id"],
            json!({"headersApplied": true, "requestAuth": {"apiKey": "sk-wrong"}}),
        );
        let events = agent.turn_events(&session);
        let failed = events.last().unwrap();
        assert_eq!(failed["type"], "turn.failed", "{app}");
        assert!(failed["payload"]["error"]["message"].as_str().unwrap().contains("401"));
        // The right key, asked again before the model request after each tool.
        agent.prompt(&session, "sim:shell ls");
        for _ in 0..2 {
            let asked = agent.reverse("interaction/requestProviderRuntimeHeaders");
            agent.answer(
                &asked["id"],
                json!({"headersApplied": true, "requestAuth": {"apiKey": "sk-stored"}}),
            );
        }
        let events = agent.turn_events(&session);
        assert_eq!(events.last().unwrap()["type"], "turn.completed", "{app}");
        assert_eq!(events.last().unwrap()["payload"]["usage"]["modelRequestCount"], 2);
        // A refusal fails the turn.
        agent.prompt(&session, "sim:reply again");
        let asked = agent.reverse("interaction/requestProviderRuntimeHeaders");
        agent.answer(&asked["id"], json!({"headersApplied": false, "errorMessage": "no key"}));
        assert_eq!(agent.turn_events(&session).last().unwrap()["type"], "turn.failed");
    }
}

#[test]
fn start_plan_models_need_a_captcha_on_3_14_3_and_the_business_token_after() {
    for app in ["3.14.3", "3.18.2"] {
        let desktop = Desktop::new(app);
        desktop.store_credential("zcodejwttoken", "jwt-stored");
        let mut agent = desktop.spawn();
        agent.ok(
            "provider/updateAccountConfig",
            desktop.account_push("account:t:1", &["account:zai-start-plan"]),
        );
        let model = json!({"providerId": "account:zai-start-plan", "modelId": "GLM-5.3"});
        let session = agent.session(&desktop.ws(), json!({"model": model}));
        agent.prompt(&session, "sim:reply hi");
        let asked = agent.reverse("interaction/requestProviderRuntimeHeaders");
        assert_eq!(asked["params"]["accountAccess"]["mode"], "start-plan", "{app}");
        agent.answer(
            &asked["id"],
            json!({"headersApplied": true, "requestAuth": {"apiKey": "jwt-stored"}}),
        );
        let last = agent.turn_events(&session).pop().unwrap();
        if app == "3.14.3" {
            assert_eq!(last["type"], "turn.failed", "{app}: the token alone is not enough");
            assert!(last["payload"]["error"]["message"].as_str().unwrap().contains("captcha"));
        } else {
            assert_eq!(last["type"], "turn.completed", "{app}: 3.14.4 switched the captcha off");
            agent.prompt(&session, "sim:reply again");
            let asked = agent.reverse("interaction/requestProviderRuntimeHeaders");
            agent.answer(
                &asked["id"],
                json!({"headersApplied": true, "requestAuth": {"apiKey": "jwt-other"}}),
            );
            assert_eq!(agent.turn_events(&session).pop().unwrap()["type"], "turn.failed", "{app}");
        }
    }
}

#[test]
fn account_pushes_take_effect_only_for_this_table_with_the_personal_config() {
    let desktop = Desktop::new("3.17.2");
    let model = json!({"providerId": BIGMODEL, "modelId": "GLM-5.3", "options": {"reasoningLevel": "high"}});
    let mut agent = desktop.spawn();
    let mut foreign = desktop.account_push("account:t:1", &[BIGMODEL]);
    foreign["basedOnZCodeBuiltinRevision"] = json!("zcode-builtin:30:0000");
    assert_eq!(agent.ok("provider/updateAccountConfig", foreign)["status"], "received");
    let ignored = agent.err("session/create", json!({"workspace": desktop.ws(), "model": model}));
    assert_eq!(ignored["data"]["code"], "MODEL_UNAVAILABLE", "a push for another table is ignored");
    let mut alone = desktop.spawn_with(&[("ZCODE_PERSONAL_PROVIDER_CONFIG_FILE", "")]);
    alone.ok("provider/updateAccountConfig", desktop.account_push("account:t:1", &[BIGMODEL]));
    let voided = alone.err("session/create", json!({"workspace": desktop.ws(), "model": model}));
    assert_eq!(voided["data"]["code"], "MODEL_UNAVAILABLE", "without the personal config");
    agent.ok("provider/updateAccountConfig", desktop.account_push("account:t:2", &[BIGMODEL]));
    let created = agent.ok("session/create", json!({"workspace": desktop.ws(), "model": model}));
    assert_eq!(created["settings"]["model"]["current"], model);
    let available = created["settings"]["model"]["available"].as_array().unwrap().len();
    assert!(available > 1, "the account models join the registry");
    // setModel insists on a level for level-bearing models (a live 3.14.5 answer).
    let session = created["session"]["sessionId"].as_str().unwrap();
    let bare = json!({"providerId": BIGMODEL, "modelId": "GLM-5.3-Flash"});
    let error = agent.err("session/setModel", json!({"sessionId": session, "model": bare}));
    assert_eq!(
        error["message"],
        format!("Reasoning level is required for {BIGMODEL}/GLM-5.3-Flash")
    );
    let odd = json!({"providerId": BIGMODEL, "modelId": "GLM-5.3-Flash", "options": {"reasoningLevel": "agent"}});
    let error = agent.err("session/setModel", json!({"sessionId": session, "model": odd}));
    assert_eq!(
        error["message"],
        format!("Reasoning effort \"agent\" is not supported by {BIGMODEL}/GLM-5.3-Flash")
    );
}

#[test]
fn the_agent_dies_at_boot_without_its_builtin_provider_table() {
    let desktop = Desktop::new("4.0.0");
    let mut agent = desktop.spawn_with(&[("ZCODE_BUILTIN_PROVIDER_CONFIG_FILE", "")]);
    assert_eq!(agent.wait().code(), Some(1));
    assert!(agent.stderr_text().contains("无法定位 CLI ZCode Built-in Provider Config"));
}

#[test]
fn legacy_stop_stops_a_legacy_prompt_and_setters_guard_their_revision() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        agent.prompt(&session, "sim:slow 600000");
        agent.take(|frame| frame["params"]["type"] == "model.streaming");
        let busy = agent.err("session/send", json!({"sessionId": session, "content": "again"}));
        assert_eq!(
            busy,
            json!({"code": -32010, "message": "A prompt is already running for this session"}),
            "{app}"
        );
        assert_eq!(agent.ok("session/stop", json!({"sessionId": session})), json!({}));
        let completed = agent.turn_events(&session).pop().unwrap();
        assert_eq!(completed["payload"]["resultType"], "cancelled", "{app}");
        let read = agent.ok("session/read", json!({"sessionId": session, "messageLimit": 1}));
        let revision = read["runtime"]["stateRevision"].as_u64().unwrap();
        let stale = agent.err(
            "session/setMode",
            json!({"sessionId": session, "mode": "yolo", "expectedRevision": revision + 5}),
        );
        assert_eq!(stale["code"], -32009, "{app}");
        assert_eq!(
            stale["data"],
            json!({"actualRevision": revision, "expectedRevision": revision + 5})
        );
        let set = agent.ok(
            "session/setMode",
            json!({"sessionId": session, "mode": "yolo", "expectedRevision": revision}),
        );
        assert_eq!(set["settings"]["mode"]["current"], "yolo");
        let changed = agent.take(|frame| {
            frame["method"] == "state.updated" && frame["params"]["reason"] == "mode_changed"
        });
        assert_eq!(changed["params"]["patch"]["mode"]["current"], "yolo");
        let level = agent
            .err("session/setThoughtLevel", json!({"sessionId": session, "thoughtLevel": "max"}));
        assert_eq!(
            level["message"], "Reasoning effort \"max\" is not supported by sim-local/sim-echo",
            "{app}: sim-echo has no levels"
        );
        let unknown: Value = agent.err(
            "session/setModel",
            json!({"sessionId": session, "model": {"providerId": "x", "modelId": "y"}}),
        );
        assert_eq!(unknown["code"], -32603);
        assert_eq!(unknown["data"]["code"], "MODEL_UNAVAILABLE");
    }
}

#[test]
fn browser_mcp_auth_and_scheduled_task_requests_reach_the_host() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({"mode": "yolo"}));
    agent.prompt(&session, "sim:browser");
    let asked = agent.reverse("interaction/browserList");
    assert_eq!(asked["params"]["sessionId"], session.as_str());
    assert_eq!(asked["params"]["workspacePath"], desktop.ws()["workspacePath"]);
    agent.answer_error(&asked["id"], -32601, "bridge unsupported: interaction/browserList");
    assert_eq!(streamed_text(&agent.turn_events(&session)), "No browser is available.");

    agent.prompt(&session, "sim:mcp-auth");
    let asked = agent.reverse("interaction/requestOfficialMcpAuthHeaders");
    assert_eq!(asked["params"]["workspace"], desktop.ws());
    agent.answer(&asked["id"], json!({"ok": true, "headers": {"Authorization": "Bearer t"}}));
    assert_eq!(
        streamed_text(&agent.turn_events(&session)),
        "The official MCP server accepted the request."
    );

    // An older host without the binding check: the Agent falls back to listing.
    agent.prompt(&session, "sim:cron");
    let check = agent.reverse("automation/checkTaskBinding");
    assert_eq!(check["params"], json!({"targetTaskId": session}));
    agent.answer_error(&check["id"], -32601, "Method not found");
    let list = agent.reverse("automation/list");
    agent.answer(&list["id"], json!({"automations": []}));
    let create = agent.reverse("automation/create");
    assert_eq!(create["params"]["targetTaskId"], session.as_str());
    assert_eq!(create["params"]["mode"], "yolo");
    agent.answer(&create["id"], json!({"automation": {"automationId": "auto-1"}}));
    assert_eq!(streamed_text(&agent.turn_events(&session)), "The scheduled task was created.");

    // A failed check fails closed.
    agent.prompt(&session, "sim:cron");
    let check = agent.reverse("automation/checkTaskBinding");
    agent.answer_error(&check["id"], -32000, "database locked");
    assert_eq!(
        streamed_text(&agent.turn_events(&session)),
        "The scheduled task could not be created."
    );
}

#[test]
fn guarded_mode_turns_a_failed_permission_round_trip_into_a_typed_error() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({"mode": "guarded"}));
    agent.prompt(&session, "sim:shell ls");
    let asked = agent.reverse("interaction/requestPermission");
    agent.answer_error(&asked["id"], -32020, "No client attached");
    let events = agent.turn_events(&session);
    let error = events.iter().find(|event| event["payload"]["kind"] == "error").unwrap();
    assert_eq!(error["payload"]["error"]["type"], "ConfigurationError");
    // Outside guarded mode the same failure is a plain denial, never an approval.
    let build = agent.session(&desktop.ws(), json!({"mode": "build"}));
    agent.prompt(&build, "sim:shell ls");
    let asked = agent.reverse("interaction/requestPermission");
    agent.answer_error(&asked["id"], -32020, "No client attached");
    let events = agent.turn_events(&build);
    let error = events.iter().find(|event| event["payload"]["kind"] == "error").unwrap();
    assert_eq!(error["payload"]["error"]["type"], "PermissionDenied");
}
