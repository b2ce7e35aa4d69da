//! The ZCode 3.12.3 profile over real stdio: no `readWorkspaceState`, the workspace
//! presentation and the `model-selection` channel (projected by the bridge), model selections
//! with reasoning levels per model, plan as a flag beside the editing mode, and the bridge's
//! need for the built-in provider config. The 3.11.2 profile is covered by the other tests.

mod common;

use common::*;
use serde_json::{Value, json};

const ZAI: &str = "builtin:zai-coding-plan";

fn create(sim: &mut Sim, workspace: &str, extra: Value) -> Value {
    let mut params =
        json!({"workspacePath": workspace, "persistence": "immediate", "mcpServers": []});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    sim.agent("createSession", params)
}

fn set_mode(sim: &mut Sim, workspace: &str, session: &str, mode: &str) -> Value {
    sim.agent("setMode", json!({"workspacePath": workspace, "sessionId": session, "mode": mode}))
}

/// Runs `sim:edit` and answers any permission with `option`; whether the host asked.
fn edit_asks(sim: &mut Sim, workspace: &str, session: &str, option: &str) -> bool {
    prompt(sim, workspace, session, "sim:edit plan-check.txt changed").unwrap();
    let mut asked = false;
    loop {
        let event = sim.next_event();
        if event["type"] == "permission.request" {
            asked = true;
            let request_id = event["request"]["requestId"].as_str().unwrap().to_owned();
            sim.task(
                "respondPermission",
                json!({"workspacePath": workspace, "taskId": session, "requestId": request_id, "optionId": option}),
            )
            .unwrap();
        }
        if is_terminal(&event) {
            return asked;
        }
    }
}

#[test]
fn read_workspace_state_is_not_allowlisted_and_presentation_replaces_it() {
    let install = Install::zcode_3_12_3();
    let mut sim = install.spawn();
    let workspace = install.ws();
    let refused = sim.call("agent", "readWorkspaceState", json!({"workspacePath": workspace}));
    assert_eq!(refused.unwrap_err(), "Unsupported native bridge method: agent:readWorkspaceState");
    let presentation = sim.agent("readWorkspacePresentation", json!({"workspacePath": workspace}));
    assert_eq!(presentation, json!({"workspace": {"workspacePath": workspace}, "mode": "build"}));
    let other = sim.call("modelSelection", "setSelection", json!({}));
    assert_eq!(other.unwrap_err(), "Unsupported native bridge method: modelSelection:setSelection");
}

#[test]
fn the_bridge_projects_the_model_selection_view() {
    let install = Install::zcode_3_12_3();
    let mut sim = install.spawn();
    let view = sim.call("modelSelection", "getView", json!({})).unwrap();
    let text = view.to_string();
    assert!(
        !text.contains("apiKey") && !text.contains("sim-api-key"),
        "credentials leaked: {text}"
    );
    assert_eq!(view["revision"], 1);
    assert_eq!(view["models"].as_array().unwrap().len(), 3);
    assert_eq!(
        view["models"][1],
        json!({"ref": {"providerId": ZAI, "modelId": "GLM-4.7"}, "label": "GLM-4.7", "providerLabel": "Z.ai - Coding Plan", "reasoningLevels": ["low", "high"]})
    );
    let preferred =
        json!({"providerId": ZAI, "modelId": "GLM-5.2", "options": {"reasoningLevel": "high"}});
    assert_eq!(view["preferredSelection"], preferred, "the default level is the last one");

    // Resolution: an unknown level resolves to the model's default, an unknown model is an issue.
    let asked = json!({"selection": {"providerId": ZAI, "modelId": "GLM-4.7", "options": {"reasoningLevel": "medium"}}});
    let view = sim.call("modelSelection", "getView", asked).unwrap();
    assert_eq!(view["effectiveSelection"]["options"]["reasoningLevel"], "high");
    let unknown = json!({"selection": {"providerId": ZAI, "modelId": "GLM-9"}});
    let view = sim.call("modelSelection", "getView", unknown).unwrap();
    assert_eq!(view["selectionIssue"], "model_not_found");
    assert!(view.get("effectiveSelection").is_none());

    let mut signed_out = install.spawn_with(&[("ZCODE_SIM_SIGNED_OUT", "1")]);
    let view = signed_out.call("modelSelection", "getView", json!({})).unwrap();
    assert_eq!(view, json!({"revision": 1, "models": []}));
}

#[test]
fn sessions_carry_model_selections_with_levels_per_model() {
    let install = Install::zcode_3_12_3();
    let mut sim = install.spawn();
    let workspace = install.ws();
    let glm47 =
        json!({"providerId": ZAI, "modelId": "GLM-4.7", "options": {"reasoningLevel": "low"}});
    let snapshot = create(&mut sim, &workspace, json!({"model": glm47, "thoughtLevel": "low"}));
    let settings = &snapshot["settings"];
    assert_eq!(settings["model"]["current"], glm47);
    assert_eq!(
        settings["model"]["available"].as_array().unwrap().len(),
        1,
        "only the current model"
    );
    assert_eq!(
        settings["thoughtLevel"]["available"],
        json!([{"value": "low", "label": "Low"}, {"value": "high", "label": "High"}])
    );
    assert_eq!(settings["mode"]["current"], "build");

    // Creation drops the level inside `model`: without `thoughtLevel` the default applies.
    let dropped = create(&mut sim, &workspace, json!({"model": glm47}));
    assert_eq!(dropped["settings"]["thoughtLevel"]["current"], "high");

    let session = snapshot["session"]["sessionId"].as_str().unwrap().to_owned();
    let scope = json!({"workspacePath": workspace, "sessionId": session});
    let mut params = scope.clone();
    params["model"] = json!({"providerId": ZAI, "modelId": "GLM-5.2", "variant": "fast"});
    let refused = sim.call("agent", "setModel", params).unwrap_err();
    assert!(refused.starts_with("Unknown model:"), "{refused}");
    let mut params = scope.clone();
    params["thoughtLevel"] = json!("medium");
    assert_eq!(
        sim.call("agent", "setThoughtLevel", params).unwrap_err(),
        "Unknown thought level: medium",
        "GLM-4.7 offers low and high only"
    );
    let mut params = scope.clone();
    params["model"] = json!({"providerId": ZAI, "modelId": "GLM-5.2"});
    let changed = sim.agent("setModel", params);
    assert_eq!(
        changed["settings"]["model"]["current"]["options"]["reasoningLevel"], "low",
        "the session's level stays when the new model offers it"
    );
}

#[test]
fn plan_is_a_flag_beside_the_editing_mode() {
    let install = Install::zcode_3_12_3();
    let mut sim = install.spawn();
    let workspace = install.ws();
    let (session, _subscription) = open_session(&mut sim, &workspace);
    set_mode(&mut sim, &workspace, &session, "yolo");
    sim.next_event(); // the snapshot of the change
    assert!(!edit_asks(&mut sim, &workspace, &session, "allow"), "yolo edits without asking");

    let planning = set_mode(&mut sim, &workspace, &session, "plan");
    assert_eq!(planning["settings"]["mode"]["current"], "yolo", "plan keeps the editing mode");
    assert!(edit_asks(&mut sim, &workspace, &session, "deny"), "while planning, yolo asks too");

    let editing = set_mode(&mut sim, &workspace, &session, "edit");
    assert_eq!(editing["settings"]["mode"]["current"], "edit");
    sim.next_event();
    assert!(!edit_asks(&mut sim, &workspace, &session, "allow"), "another mode ends planning");
}

#[test]
fn approving_the_plan_or_resuming_ends_planning() {
    let install = Install::zcode_3_12_3();
    let mut sim = install.spawn();
    let workspace = install.ws();
    let (session, _subscription) = open_session(&mut sim, &workspace);
    set_mode(&mut sim, &workspace, &session, "yolo");
    set_mode(&mut sim, &workspace, &session, "plan");
    prompt(&mut sim, &workspace, &session, "sim:plan").unwrap();
    let events = sim.events_until(|event| event["type"] == "permission.request");
    let request = &events.last().unwrap()["request"];
    assert_eq!(request["toolName"], "ExitPlanMode");
    let request_id = request["requestId"].as_str().unwrap().to_owned();
    sim.task(
        "respondPermission",
        json!({"workspacePath": workspace, "taskId": session, "requestId": request_id, "optionId": "allow-plan"}),
    )
    .unwrap();
    let rest = sim.events_until_terminal();
    let snapshot = rest.iter().rev().find(|event| event["type"] == "snapshot").unwrap();
    assert_eq!(snapshot["snapshot"]["settings"]["mode"]["current"], "yolo");
    assert!(
        !edit_asks(&mut sim, &workspace, &session, "allow"),
        "the approved plan ended planning"
    );

    set_mode(&mut sim, &workspace, &session, "plan");
    sim.agent(
        "resumeSession",
        json!({"workspacePath": workspace, "sessionId": session, "mcpServers": []}),
    );
    assert!(!edit_asks(&mut sim, &workspace, &session, "allow"), "a resume does not keep the flag");
}

#[test]
fn the_bridge_needs_the_built_in_provider_config() {
    let install = Install::zcode_3_12_3();
    let missing = install.run(&["-e", "/* bridge */"], &[("ZCODE_ACP_HOST_PROVIDER_CONFIG", "")]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("Missing ZCode built-in provider config (ZCODE_ACP_HOST_PROVIDER_CONFIG)")
    );
    let elsewhere = install.workspace.join("zcode-builtin.json");
    let absent = install.run(
        &["-e", "/* bridge */"],
        &[("ZCODE_ACP_HOST_PROVIDER_CONFIG", elsewhere.to_str().unwrap())],
    );
    assert_eq!(absent.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&absent.stderr)
            .contains("ZCode built-in provider config is not a file")
    );
    let old_protocol =
        install.run(&["-e", "/* bridge */"], &[("ZCODE_ACP_HOST_PROTOCOL", PROTOCOL)]);
    assert_eq!(old_protocol.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&old_protocol.stderr)
            .contains("including agent and modelSelection")
    );
    let version = install.run(&[&install.cli_entry(), "version"], &[]);
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), "0.16.5");
}

#[test]
fn the_3_11_2_profile_has_no_model_selection() {
    let install = Install::new();
    let mut sim = install.spawn();
    assert_eq!(
        sim.call("modelSelection", "getView", json!({})).unwrap_err(),
        "Unsupported bridge service: modelSelection"
    );
    let mut with_channel = install.spawn_with(&[("ZCODE_ACP_HOST_PROTOCOL", PROTOCOL_3_12)]);
    assert_eq!(
        with_channel.call("modelSelection", "getView", json!({})).unwrap_err(),
        "Unsupported native bridge method: modelSelection:getView"
    );
    let workspace = install.ws();
    let (session, _subscription) = open_session(&mut sim, &workspace);
    let planning = set_mode(&mut sim, &workspace, &session, "plan");
    assert_eq!(planning["settings"]["mode"]["current"], "plan", "plan is still a mode in 3.11.2");
}
