//! ZCode 3.12.3 sessions and connections against scripted host replies: opening with the
//! workspace presentation and the model catalogue, models and reasoning levels resolved through
//! `model-selection`, and plan as a flag beside the editing mode. Every ACP object emitted is
//! checked against the ACP schema. (What the generations share is tested with 3.11.2 and in
//! `zcode-task`.)

use serde_json::{Value, json};
use zcode_mapper_sdk::Connection as _;
use zcode_mapper_sdk::acp_check;
use zcode_mapper_sdk::contract::{
    ConnectionOp, ErrorKind, InteractionAnswer, InteractionOutcome, NativeReply, ReplyBody,
    SessionOp, Step,
};

use zcode_task::test_support::Run;

use crate::TaskV2Connection;
use crate::generation::TaskV2;

const WORKSPACE: &str = "/w";
const ZAI: &str = "builtin:zai-coding-plan";

fn ok(value: Value) -> ReplyBody {
    ReplyBody::Ok(value.to_string().into())
}

fn selection(model: &str, level: &str) -> Value {
    json!({"providerId": ZAI, "modelId": model, "options": {"reasoningLevel": level}})
}

/// The bridge's projection of `getView`: GLM-5.2 with three levels, GLM-4.7 with two.
fn view() -> Value {
    json!({
        "revision": 7,
        "models": [
            {"ref": {"providerId": ZAI, "modelId": "GLM-5.2"}, "label": "GLM-5.2", "providerLabel": "Z.ai - Coding Plan", "reasoningLevels": ["low", "medium", "high"]},
            {"ref": {"providerId": ZAI, "modelId": "GLM-4.7"}, "label": "GLM-4.7", "providerLabel": "Z.ai - Coding Plan", "reasoningLevels": ["low", "high"]}
        ],
        "preferredSelection": {"providerId": ZAI, "modelId": "GLM-5.2"},
        "effectiveSelection": selection("GLM-5.2", "high")
    })
}

fn resolved(model: &str, level: &str) -> Value {
    let mut view = view();
    view["effectiveSelection"] = selection(model, level);
    view
}

/// A 3.12.3 snapshot: the current model carries its level, the list holds only it.
fn snapshot(model: &str, level: &str, mode: &str) -> Value {
    json!({
        "session": {"sessionId": "s-1", "status": "idle", "workspace": {"workspacePath": WORKSPACE}, "title": "Plan it", "updatedAt": 1_764_500_000_000_u64},
        "settings": {
            "model": {"current": selection(model, level), "available": [{"ref": selection(model, level), "label": model}]},
            "thoughtLevel": {"enabled": true, "current": level, "available": [{"value": "low", "label": "Low"}, {"value": "medium", "label": "Medium"}, {"value": "high", "label": "High"}]},
            "mode": {"current": mode}
        },
        "messages": [],
        "runtime": {},
        "slashCommands": []
    })
}

fn presentation() -> Value {
    json!({"workspace": {"workspacePath": WORKSPACE}, "mode": "build"})
}

fn update<'a>(updates: &'a [Value], kind: &str) -> &'a Value {
    updates.iter().find(|u| u["sessionUpdate"] == kind).unwrap_or_else(|| panic!("no {kind}"))
}

fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options.as_array().unwrap().iter().find(|o| o["id"] == id).unwrap_or_else(|| panic!("no {id}"))
}

/// The family's driver with this generation.
struct Driver(zcode_task::test_support::Driver<TaskV2>);

impl Driver {
    fn new() -> Self {
        Self(zcode_task::test_support::Driver::new(true, true))
    }

    fn run(&mut self, op: SessionOp, replies: Vec<ReplyBody>) -> Run {
        self.0.run(op, replies)
    }

    fn create(&mut self) -> Run {
        let run = self.run(
            SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": []}).to_string()),
            vec![
                ok(json!({"available": true})),
                ok(presentation()),
                ok(view()),
                ok(snapshot("GLM-5.2", "high", "build")),
                ok(json!({"subscribed": true})),
            ],
        );
        assert!(run.outcome.is_ok(), "create failed: {:?}", run.outcome);
        run
    }

    fn set_mode(&mut self, mode: &str, reply: Value) -> Run {
        let params = json!({"sessionId": "s-1", "modeId": mode});
        self.run(SessionOp::SetMode(params.to_string()), vec![ok(reply)])
    }

    fn set_option(&mut self, params: Value, replies: Vec<ReplyBody>) -> Run {
        let mut params = params;
        params["sessionId"] = json!("s-1");
        self.run(SessionOp::SetConfigOption(params.to_string()), replies)
    }
}

#[test]
fn creates_with_the_catalogue_and_the_preferred_model() {
    let mut driver = Driver::new();
    let run = driver.create();
    assert_eq!(
        run.methods(),
        [
            "agent.initialize",
            "agent.readWorkspacePresentation",
            "modelSelection.getView",
            "agent.createSession",
            "__subscribe"
        ]
    );
    assert_eq!(run.params(1), &json!({"workspacePath": WORKSPACE}));
    assert_eq!(run.params(2), &json!({}));
    assert_eq!(
        run.params(3),
        &json!({"workspacePath": WORKSPACE, "persistence": "immediate", "mcpServers": [],
                "model": selection("GLM-5.2", "high"), "thoughtLevel": "high"}),
        "the preferred model at its default (last) level, the level passed twice"
    );
    let response = run.response();
    acp_check::new_session_response(&response);
    assert_eq!(response["modes"]["currentModeId"], "build");
    let modes: Vec<&str> = response["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["build", "edit", "yolo", "plan"]);
    let options = &response["configOptions"];
    acp_check::config_options(options);
    let model = option(options, "zcode.model");
    assert_eq!(model["currentValue"], "[\"builtin:zai-coding-plan\",\"GLM-5.2\"]");
    assert_eq!(
        model["options"],
        json!([
            {"value": "[\"builtin:zai-coding-plan\",\"GLM-5.2\"]", "name": "GLM-5.2", "description": "Z.ai - Coding Plan"},
            {"value": "[\"builtin:zai-coding-plan\",\"GLM-4.7\"]", "name": "GLM-4.7", "description": "Z.ai - Coding Plan"}
        ]),
        "every catalogue model, not just the snapshot's current one"
    );
    let level = option(options, "zcode.thought_level");
    assert_eq!(level["currentValue"], "high");
    assert_eq!(
        level["options"],
        json!([{"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"}, {"value": "high", "name": "High"}])
    );
    assert_eq!(
        option(options, "zcode.plan"),
        &json!({"id": "zcode.plan", "name": "Plan", "description": "Plan before editing, whatever the editing mode", "type": "boolean", "currentValue": false})
    );
    let updates = run.updates();
    assert_eq!(update(&updates, "current_mode_update")["currentModeId"], "build");
}

#[test]
fn refuses_what_3_12_3_does_not_promise() {
    let create = || SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": []}).to_string());
    let prelude = || vec![ok(json!({"available": true})), ok(presentation())];

    let mut no_models = prelude();
    no_models.push(ok(json!({"revision": 1, "models": []})));
    let run = Driver::new().run(create(), no_models);
    assert_eq!(run.error().kind, ErrorKind::AuthRequired);

    let run = Driver::new().run(
        create(),
        vec![
            ok(json!({"available": true})),
            ok(json!({"workspace": {"workspacePath": "/other"}, "mode": "build"})),
        ],
    );
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::Protocol, "ZCode presented another workspace: /other")
    );

    let mut other_model = prelude();
    other_model.extend([ok(view()), ok(snapshot("GLM-4.7", "high", "build"))]);
    let run = Driver::new().run(create(), other_model);
    assert_eq!(
        run.error().message,
        "ZCode created the session with another model or reasoning level than requested"
    );

    let mut legacy = snapshot("GLM-5.2", "high", "build");
    legacy["settings"]["model"]["current"]["variant"] = json!("fast");
    let mut variant = prelude();
    variant.extend([ok(view()), ok(legacy)]);
    let run = Driver::new().run(create(), variant);
    assert_eq!(
        run.error().message,
        "Native result validation failed: createSession: model ref: unexpected field `variant`"
    );

    let mut plan_mode = prelude();
    plan_mode.extend([ok(view()), ok(snapshot("GLM-5.2", "high", "plan"))]);
    let run = Driver::new().run(create(), plan_mode);
    assert_eq!(
        run.error().message,
        "ZCode returned a mode outside the published catalog: plan",
        "plan is a flag in 3.12.3, never the editing mode"
    );
}

#[test]
fn plan_is_a_flag_that_keeps_the_editing_mode() {
    let mut driver = Driver::new();
    driver.create();
    let run = driver.set_mode("yolo", snapshot("GLM-5.2", "high", "yolo"));
    assert_eq!(run.params(0)["mode"], "yolo");

    let run = driver.set_mode("plan", snapshot("GLM-5.2", "high", "yolo"));
    assert_eq!(run.methods(), ["agent.setMode"]);
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": WORKSPACE, "sessionId": "s-1", "mode": "plan"})
    );
    assert_eq!(run.response(), json!({}));
    let updates = run.updates();
    assert_eq!(update(&updates, "current_mode_update")["currentModeId"], "plan");
    let options = &update(&updates, "config_option_update")["configOptions"];
    assert_eq!(option(options, "zcode.plan")["currentValue"], true);

    // Turning the flag off through the config option returns to the kept editing mode.
    let run = driver.set_option(
        json!({"configId": "zcode.plan", "type": "boolean", "value": false}),
        vec![ok(snapshot("GLM-5.2", "high", "yolo"))],
    );
    assert_eq!(run.params(0)["mode"], "yolo", "the editing mode the host kept");
    let response = run.response();
    acp_check::set_config_option_response(&response);
    assert_eq!(option(&response["configOptions"], "zcode.plan")["currentValue"], false);
    assert_eq!(update(&run.updates(), "current_mode_update")["currentModeId"], "yolo");

    // On again through the option, off again by choosing an editing mode.
    let run = driver.set_option(
        json!({"configId": "zcode.plan", "type": "boolean", "value": true}),
        vec![ok(snapshot("GLM-5.2", "high", "yolo"))],
    );
    assert_eq!(run.params(0)["mode"], "plan");
    let run = driver.set_mode("edit", snapshot("GLM-5.2", "high", "edit"));
    let updates = run.updates();
    assert_eq!(update(&updates, "current_mode_update")["currentModeId"], "edit");
    assert_eq!(
        option(&update(&updates, "config_option_update")["configOptions"], "zcode.plan")["currentValue"],
        false
    );
}

#[test]
fn approving_a_plan_ends_planning() {
    let mut driver = Driver::new();
    driver.create();
    driver.set_mode("plan", snapshot("GLM-5.2", "high", "edit"));
    let prompt = json!({"sessionId": "s-1", "prompt": [{"type": "text", "text": "plan it"}]});
    driver.run(
        SessionOp::Prompt(prompt.to_string()),
        vec![ok(json!({"sessionId": "s-1", "accepted": true}))],
    );
    let actions = driver
        .0
        .try_event(
            json!({"type": "permission.request", "request": {
                "requestId": "p1", "sessionId": "s-1", "turnId": "t", "toolCallId": "exit", "toolName": "ExitPlanMode",
                "reason": "Review the plan", "riskLevel": "medium", "input": {"plan": "1. Do it"},
                "options": [
                    {"optionId": "allow-plan", "kind": "allow_once", "name": "Approve", "response": {"decision": "allow"}},
                    {"optionId": "deny-plan", "kind": "reject_once", "name": "Reject", "response": {"decision": "deny"}}
                ]}}),
        )
        .unwrap();
    assert!(!actions.is_empty());
    let accept = json!({"action": "accept", "content": {"optionId": "allow-plan"}});
    let run = driver.run(
        SessionOp::Answer(InteractionAnswer {
            key: "permission:p1".into(),
            outcome: InteractionOutcome::Elicited(accept.to_string()),
        }),
        vec![ok(Value::Null)],
    );
    assert_eq!(run.params(0)["optionId"], "allow-plan");
    let updates = run.updates();
    assert_eq!(update(&updates, "current_mode_update")["currentModeId"], "edit");
    assert_eq!(
        option(&update(&updates, "config_option_update")["configOptions"], "zcode.plan")["currentValue"],
        false
    );
}

#[test]
fn changes_models_through_model_selection() {
    let mut driver = Driver::new();
    driver.create();
    let run = driver.set_option(
        json!({"configId": "zcode.model", "value": "[\"builtin:zai-coding-plan\",\"GLM-4.7\"]"}),
        vec![
            ok(resolved("GLM-4.7", "high")),
            ok(snapshot("GLM-4.7", "low", "build")),
            ok(snapshot("GLM-4.7", "high", "build")),
        ],
    );
    assert_eq!(
        run.methods(),
        ["modelSelection.getView", "agent.setModel", "agent.setThoughtLevel"],
        "the host kept its own level, so the level is set too"
    );
    assert_eq!(
        run.params(0),
        &json!({"selection": selection("GLM-4.7", "high")}),
        "high is offered by GLM-4.7 too"
    );
    assert_eq!(
        run.params(1),
        &json!({"workspacePath": WORKSPACE, "sessionId": "s-1", "model": selection("GLM-4.7", "high"), "persistAsWorkspaceLastUsed": true})
    );
    assert_eq!(run.params(2)["thoughtLevel"], "high");
    let response = run.response();
    acp_check::set_config_option_response(&response);
    let level = option(&response["configOptions"], "zcode.thought_level");
    assert_eq!(
        level["options"],
        json!([{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]),
        "GLM-4.7's own levels"
    );

    let run = driver.set_option(
        json!({"configId": "zcode.thought_level", "value": "low"}),
        vec![ok(resolved("GLM-4.7", "low")), ok(snapshot("GLM-4.7", "low", "build"))],
    );
    assert_eq!(run.methods(), ["modelSelection.getView", "agent.setThoughtLevel"]);
    assert_eq!(
        option(&run.response()["configOptions"], "zcode.thought_level")["currentValue"],
        "low"
    );

    let run =
        driver.set_option(json!({"configId": "zcode.thought_level", "value": "medium"}), vec![]);
    assert_eq!(run.error().message, "Unknown thought level: medium", "GLM-4.7 has no medium");
}

#[test]
fn never_accepts_a_substituted_selection() {
    let mut driver = Driver::new();
    driver.create();
    let run = driver.set_option(
        json!({"configId": "zcode.model", "value": "[\"builtin:zai-coding-plan\",\"GLM-4.7\"]"}),
        vec![ok(resolved("GLM-5.2", "high"))],
    );
    assert_eq!(run.methods(), ["modelSelection.getView"], "nothing is set");
    assert_eq!(run.error().message, "ZCode resolved the selection to another model: GLM-5.2");

    let mut issue = view();
    issue["selectionIssue"] = json!("model_unavailable");
    let run = driver
        .set_option(json!({"configId": "zcode.thought_level", "value": "low"}), vec![ok(issue)]);
    assert_eq!(run.error().kind, ErrorKind::InvalidParams);

    let run = driver.set_option(
        json!({"configId": "zcode.model", "value": "[\"builtin:zai-coding-plan\",\"GLM-5.2\"]"}),
        vec![ok(resolved("GLM-5.2", "high")), ok(snapshot("GLM-4.7", "high", "build"))],
    );
    assert_eq!(run.error().message, "ZCode did not apply the requested model");
}

#[test]
fn refuses_bad_settings_before_any_request() {
    let mut driver = Driver::new();
    driver.create();
    for (params, message) in [
        (json!({"configId": "zcode.plan", "value": "on"}), "zcode.plan takes a boolean value"),
        (
            json!({"configId": "zcode.model", "type": "boolean", "value": true}),
            "Unknown config option: zcode.model",
        ),
        (json!({"configId": "zcode.model", "value": "none"}), "Unknown ZCode model: none"),
        (
            json!({"configId": "zcode.variant", "value": "x"}),
            "Unknown config option: zcode.variant",
        ),
    ] {
        let run = driver.set_option(params, vec![]);
        assert!(run.requests.is_empty());
        assert_eq!(
            (run.error().kind, run.error().message.as_str()),
            (ErrorKind::InvalidParams, message)
        );
    }
    let run = driver
        .run(SessionOp::SetMode(json!({"sessionId": "s-1", "modeId": "auto"}).to_string()), vec![]);
    assert_eq!(run.error().message, "Unknown ZCode mode: auto");
}

#[test]
fn waits_for_a_model_before_prompting() {
    let mut driver = Driver::new();
    let mut unselected = snapshot("GLM-5.2", "high", "build");
    unselected["settings"]["model"] = json!({"available": []});
    unselected["settings"]["thoughtLevel"] = json!({"enabled": true, "available": []});
    let mut no_preference = view();
    no_preference.as_object_mut().unwrap().remove("preferredSelection");
    let run = driver.run(
        SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": []}).to_string()),
        vec![
            ok(json!({"available": true})),
            ok(presentation()),
            ok(no_preference),
            ok(unselected),
            ok(json!({"subscribed": true})),
        ],
    );
    assert!(run.params(3).get("model").is_none(), "no model is invented");
    let model = option(&run.response()["configOptions"], "zcode.model").clone();
    assert_eq!(model["currentValue"], "none");
    assert_eq!(model["options"][0], json!({"value": "none", "name": "No model selected"}));
    let prompt = json!({"sessionId": "s-1", "prompt": [{"type": "text", "text": "hi"}]});
    let run = driver.run(SessionOp::Prompt(prompt.to_string()), vec![]);
    assert!(run.requests.is_empty());
    assert_eq!(
        run.error().message,
        "No ZCode model is selected: choose one with the config option zcode.model"
    );
}

#[test]
fn loading_drops_the_plan_flag_like_a_native_resume() {
    let mut driver = Driver::new();
    driver.create();
    driver.set_mode("plan", snapshot("GLM-5.2", "high", "build"));
    // A fresh resource for the same native session: what session/load does.
    let mut other = Driver::new();
    let run = other.run(
        SessionOp::Load(
            json!({"cwd": WORKSPACE, "sessionId": "s-1", "mcpServers": []}).to_string(),
        ),
        vec![
            ok(json!({"available": true})),
            ok(presentation()),
            ok(view()),
            ok(snapshot("GLM-5.2", "high", "build")),
            ok(json!({"subscribed": true})),
        ],
    );
    assert_eq!(run.methods()[3], "agent.resumeSession");
    assert!(run.params(3).get("model").is_none());
    let response = run.response();
    acp_check::load_session_response(&response);
    assert_eq!(response["modes"]["currentModeId"], "build");
}

#[test]
fn lists_sessions_after_checking_the_catalogue() {
    let mut connection = TaskV2Connection::default();
    let request = |step: &Step| -> Value {
        match step {
            Step::Wait(outgoing) => serde_json::from_slice(&outgoing.requests[0].bytes).unwrap(),
            other => panic!("expected a request, got {other:?}"),
        }
    };
    let reply = |id, value: Value| NativeReply { id, body: ok(value) };
    let step =
        connection.start(1, &ConnectionOp::ListSessions(json!({"cwd": WORKSPACE}).to_string()), 1);
    assert_eq!(request(&step)["params"]["method"], "initialize");
    let step = connection.resume(1, Some(&reply(1, json!({"available": true}))), 2);
    assert_eq!(
        request(&step)["params"],
        json!({"service": "modelSelection", "method": "getView", "params": {}})
    );
    let step = connection.resume(1, Some(&reply(2, view())), 3);
    assert_eq!(request(&step)["params"]["method"], "listSessions");
    let step = connection.resume(
        1,
        Some(&reply(3, json!([{"sessionId": "s-1", "workspace": {"workspacePath": WORKSPACE}}]))),
        4,
    );
    let Step::Done(Ok(result)) = step else { panic!("expected sessions, got {step:?}") };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    acp_check::list_sessions_response(&response);
    assert_eq!(response["sessions"][0]["sessionId"], "s-1");

    connection.start(2, &ConnectionOp::ListSessions(json!({"cwd": WORKSPACE}).to_string()), 5);
    connection.resume(2, Some(&reply(5, json!({"available": true}))), 6);
    let step = connection.resume(2, Some(&reply(6, json!({"revision": 1, "models": []}))), 7);
    let Step::Done(Err(problem)) = step else { panic!("expected an error, got {step:?}") };
    assert_eq!(problem.kind, ErrorKind::AuthRequired);
}
