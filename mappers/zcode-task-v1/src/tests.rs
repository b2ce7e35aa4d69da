//! What 3.11.2 adds to the family's session machine (whose own tests are in `zcode-task`): the
//! session is opened after `initialize` and `readWorkspaceState`, the four-mode catalog, and the
//! model and thought-level options.

use serde_json::{Value, json};
use zcode_mapper_sdk::acp_check;
use zcode_mapper_sdk::contract::{ErrorKind, SessionOp};
use zcode_task::test_support::{Driver, WORKSPACE, ok, snapshot_json, update_kinds};

use crate::generation::TaskV1;

fn driver(plan_operations: bool, form_elicitation: bool) -> Driver<TaskV1> {
    Driver::new(plan_operations, form_elicitation)
}

fn workspace_state() -> Value {
    json!({"workspace": {"workspacePath": WORKSPACE}, "settings": snapshot_json()["settings"], "modelCatalog": {"providers": [{}], "available": []}})
}

/// `session/new` as 3.11.2 opens it.
fn create(driver: &mut Driver<TaskV1>) {
    let run = driver.run(
        SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": []}).to_string()),
        vec![
            ok(json!({"available": true})),
            ok(workspace_state()),
            ok(snapshot_json()),
            ok(json!({"subscribed": true})),
        ],
    );
    assert!(run.outcome.is_ok(), "create failed: {:?}", run.outcome);
}

#[test]
fn creates_subscribes_and_publishes_the_session() {
    let mut driver = driver(true, true);
    let servers = json!([
        {"name": "fs", "command": "/bin/mcp", "args": ["--x"], "env": [{"name": "A", "value": "1"}]},
        {"type": "http", "name": "web", "url": "https://mcp.example", "headers": [{"name": "H", "value": "v"}]},
    ]);
    let run = driver.run(
        SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": servers}).to_string()),
        vec![
            ok(json!({"available": true})),
            ok(workspace_state()),
            ok(snapshot_json()),
            ok(json!({"subscribed": true})),
        ],
    );
    assert_eq!(
        run.methods(),
        ["agent.initialize", "agent.readWorkspaceState", "agent.createSession", "__subscribe"]
    );
    assert_eq!(
        run.params(2),
        &json!({"workspacePath": "/w", "persistence": "immediate", "mcpServers": [
            {"name": "fs", "command": "/bin/mcp", "args": ["--x"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "https://mcp.example", "headers": [{"name": "H", "value": "v"}]},
        ]})
    );
    assert_eq!(
        run.requests[3]["params"],
        json!({"subscriptionId": "zcode-acp-session-1-1", "target": {
        "workspacePath": "/w", "sessionId": "session-1", "deliveryKind": "desktop-continuous", "includeSnapshot": true}})
    );
    assert_eq!(run.routes_added, ["zcode-acp-session-1-1"]);
    let response = run.response();
    acp_check::new_session_response(&response);
    assert_eq!(response["sessionId"], "session-1");
    assert_eq!(response["modes"]["currentModeId"], "build");
    assert_eq!(response["modes"]["availableModes"].as_array().unwrap().len(), 4);
    assert_eq!(response["configOptions"][0]["id"], "zcode.model");
    assert_eq!(
        update_kinds(&run.updates()),
        [
            "available_commands_update",
            "config_option_update",
            "current_mode_update",
            "session_info_update",
            "usage_update",
            "plan_update",
        ]
    );
}

#[test]
fn requires_sign_in_before_creating() {
    let mut driver = driver(true, true);
    let run = driver.run(
        SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string()),
        vec![
            ok(json!({"available": true})),
            ok(json!({"workspace": {"workspacePath": "/w"}, "settings": {}})),
        ],
    );
    assert_eq!(run.error().kind, ErrorKind::AuthRequired);
    let run = driver.run(SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string()), vec![
        ok(json!({"available": false, "reasonCode": "provider_not_ready", "reason": "Not signed in"})),
    ]);
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::AuthRequired, "Not signed in")
    );
}

#[test]
fn refuses_a_native_mode_outside_the_catalog() {
    let mut snapshot = snapshot_json();
    snapshot["settings"]["mode"]["current"] = json!("auto");
    let run = driver(true, true).run(
        SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string()),
        vec![ok(json!({"available": true})), ok(workspace_state()), ok(snapshot)],
    );
    assert_eq!(run.error().message, "ZCode returned a mode outside the published catalog: auto");
}

#[test]
fn sets_modes_and_reports_the_returned_one() {
    let mut driver = driver(true, true);
    create(&mut driver);
    let run = driver.run(
        SessionOp::SetMode(json!({"sessionId": "session-1", "modeId": "auto"}).to_string()),
        vec![],
    );
    assert!(run.requests.is_empty());
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::InvalidParams, "Unknown ZCode mode: auto")
    );
    let mut returned = snapshot_json();
    returned["settings"]["mode"]["current"] = json!("edit");
    let run = driver.run(
        SessionOp::SetMode(json!({"sessionId": "session-1", "modeId": "plan"}).to_string()),
        vec![ok(returned)],
    );
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "sessionId": "session-1", "mode": "plan"})
    );
    assert_eq!(
        run.updates(),
        [json!({"sessionUpdate": "current_mode_update", "currentModeId": "edit"})]
    );
    assert_eq!(run.response(), json!({}));
    let mut future = snapshot_json();
    future["settings"]["mode"]["current"] = json!("future-mode");
    let run = driver.run(
        SessionOp::SetMode(json!({"sessionId": "session-1", "modeId": "yolo"}).to_string()),
        vec![ok(future)],
    );
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::Protocol, "ZCode returned a mode outside the published catalog: future-mode")
    );
}

#[test]
fn sets_models_and_thought_levels_from_advertised_values() {
    let mut driver = driver(true, true);
    create(&mut driver);
    let model = "[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]";
    let run = driver.run(
        SessionOp::SetConfigOption(
            json!({"sessionId": "session-1", "configId": "zcode.model", "value": model})
                .to_string(),
        ),
        vec![ok(snapshot_json())],
    );
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "sessionId": "session-1", "model": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.6", "variant": "fast"}, "persistAsWorkspaceLastUsed": true})
    );
    let response = run.response();
    acp_check::set_config_option_response(&response);
    assert_eq!(run.updates()[0]["sessionUpdate"], "config_option_update");
    assert_eq!(run.updates()[0]["configOptions"], response["configOptions"]);
    let run = driver.run(
        SessionOp::SetConfigOption(
            json!({"sessionId": "session-1", "configId": "zcode.thought_level", "value": "high"})
                .to_string(),
        ),
        vec![ok(snapshot_json())],
    );
    assert_eq!(run.params(0)["thoughtLevel"], "high");
    let cases = [
        (
            json!({"configId": "zcode.model", "value": "[\"x\",\"y\",null]"}),
            "Unknown ZCode model: [\"x\",\"y\",null]",
        ),
        (json!({"configId": "zcode.thought_level", "value": "max"}), "Unknown thought level: max"),
        (json!({"configId": "zcode.thought_level", "value": 3}), "Unknown thought level: 3"),
        (json!({"configId": "zcode.speed", "value": "x"}), "Unknown config option: zcode.speed"),
        (
            json!({"configId": "zcode.model", "type": "boolean", "value": true}),
            "Unknown config option: zcode.model",
        ),
    ];
    for (params, message) in cases {
        let run = driver.run(SessionOp::SetConfigOption(params.to_string()), vec![]);
        assert!(run.requests.is_empty());
        assert_eq!(
            (run.error().kind, run.error().message.as_str()),
            (ErrorKind::InvalidParams, message)
        );
    }
}
