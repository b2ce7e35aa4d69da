//! Interactions a turn waits on, and the requests of the app-server-only triggers.
//!
//! An interaction is announced to the host as a reverse request (re-announced under a new id
//! while unanswered) and to V4 clients as a `pendingInteractions` entry; whichever answer
//! reaches the Agent first wins (`interactions.rs`). AskUserQuestion resolves itself after
//! the auto-resolution delay when the session's preferences allow it and no V4 client
//! snoozed it.

use serde_json::{Value, json};
use tokio::sync::watch;

use super::super::interactions::V4Answer;
use super::super::reverse::{ClientError, ClientRequest};
use super::super::schemas;
use super::super::wire::METHOD_NOT_FOUND;
use super::super::zod::Schema;
use super::Turn;
use super::extra::Extra;
use crate::common::clock::now_ms;
use crate::common::scenario::{Condition, PlanApproval, Question};
use crate::common::turn::{Halt, PLAN_QUESTION, StepResult, new_call_id, plan_questions};
use crate::v4;

/// The sentinel option of a free-text elicitation field.
const FREE_TEXT_OPTION: &str = "__zcode_free_text__";

/// Who answered an interaction.
pub(super) enum Answer {
    Host(Value),
    V4(V4Answer),
    /// The auto-resolution delay passed.
    Auto,
    Failed(ClientError),
}

pub(super) struct Interaction {
    pub id: String,
    pub method: &'static str,
    pub params: Value,
    pub schema: Schema,
    /// The fault point reached while it waits (`permission`, `question`, `plan`).
    pub point: &'static str,
    /// The V4 `pendingInteractions` entry.
    pub pending: Value,
    /// The legacy projection's `pendingPermissions` entry (permissions only).
    pub permission: Option<Value>,
    pub auto_resolve: bool,
}

impl Turn {
    /// Announces an interaction on both paths and waits for the first answer.
    pub(super) async fn interact(&mut self, interaction: Interaction) -> Result<Answer, Halt> {
        let id = interaction.id.clone();
        let registration = self.server.interactions.register(&id, self.session_id());
        self.set_pending(&interaction, true);
        let race = self
            .server
            .faults
            .take_one(interaction.point, super::super::fault::AppFault::InteractionRace)
            .is_some();
        let (auto_fired, auto) = watch::channel(false);
        let timer = interaction.auto_resolve.then(|| {
            let server = self.server.clone();
            let delay = server.options.auto_resolution;
            let id = id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let snoozed = server.state().snoozed.contains(&id);
                // Claiming first: an answer that arrived meanwhile keeps its win.
                if !snoozed && server.interactions.claim_for_legacy(&id) {
                    auto_fired.send_replace(true);
                }
            })
        });
        let mut request = ClientRequest::new(
            interaction.method,
            interaction.params.clone(),
            interaction.schema.clone(),
        );
        request.reannounce = true;
        request.announce_twice = race;
        request.interaction = Some(id.clone());
        request.cancel =
            vec![self.start.stop.0.clone(), registration.aborted.clone(), auto.clone()];
        // The interaction's fault point is reached once the question is out (a host that dies
        // "at a permission" dies while the client is deciding), as in the host profiles.
        let (announced, written) = tokio::sync::oneshot::channel();
        request.announced = Some(announced);
        let server = self.server.clone();
        let asking = server.reverse.request(request);
        tokio::pin!(asking);
        let early = tokio::select! {
            biased;
            outcome = &mut asking => Some(outcome),
            _ = written => None,
        };
        let outcome = match early {
            Some(outcome) => outcome,
            None => {
                self.fault_point(interaction.point).await?;
                asking.await
            }
        };
        if let Some(timer) = timer {
            timer.abort();
        }
        let mut v4 = registration.answer;
        let answer = match outcome {
            Ok(answer) => Ok(Answer::Host(answer)),
            Err(ClientError::Cancelled) => match v4.try_recv() {
                Ok(answer) => Ok(Answer::V4(answer)),
                Err(_) if *auto.borrow() => Ok(Answer::Auto),
                Err(_) => Err(Halt::Cancelled),
            },
            Err(other) => Ok(Answer::Failed(other)),
        };
        self.server.interactions.finish(&id);
        self.set_pending(&interaction, false);
        answer
    }

    fn set_pending(&self, interaction: &Interaction, add: bool) {
        {
            let mut state = self.state();
            let Some(resident) = state.sessions.get_mut(self.session_id()) else { return };
            let id = interaction.id.as_str();
            if add {
                resident.pending_interactions.push(interaction.pending.clone());
                resident.pending_requests.push(id.to_owned());
                if let Some(permission) = &interaction.permission {
                    resident.pending_permissions.push(permission.clone());
                }
            } else {
                resident.pending_interactions.retain(|entry| entry["interactionId"] != id);
                resident.pending_requests.retain(|pending| pending != id);
                resident.pending_permissions.retain(|entry| entry["requestId"] != id);
            }
        }
        self.v4_patch(&["pendingInteractions"]);
    }

    /// `AskUserQuestion` through `interaction/requestUserInput`.
    pub(super) async fn question(&mut self, question: Question) -> StepResult {
        let call_id = question.call_id.clone().unwrap_or_else(new_call_id);
        let tool = "AskUserQuestion";
        let questions: Vec<Value> = question.questions.iter().map(normalize_question).collect();
        let input = json!({"questions": questions});
        let row = self.announce_tool(&call_id, tool, &input, 1);
        let request_id = format!("ask-{}", uuid::Uuid::new_v4().simple());
        let prompt = question.prompt.clone().unwrap_or_default();
        let labels: Vec<Value> = questions
            .iter()
            .flat_map(|question| question["options"].as_array().cloned().unwrap_or_default())
            .map(|option| option["label"].clone())
            .collect();
        self.event(
            "userInput.requested",
            json!({"requestId": request_id, "prompt": prompt, "inputType": "choice", "choices": labels}),
        );
        let params = json!({
            "requestId": request_id, "sessionId": self.start.session_id, "turnId": self.start.turn_id,
            "toolCallId": call_id, "toolName": tool, "prompt": prompt, "questions": questions,
            "input": input, "schema": {"toolName": tool},
        });
        let pending = v4::pending::interaction(
            &request_id,
            "userInput",
            row,
            json!({"toolCallId": call_id, "toolName": tool, "prompt": prompt, "freeText": false,
                   "input": input, "questions": questions}),
        );
        let auto_resolve = self.state().auto_resolves(self.session_id());
        let interaction = Interaction {
            id: request_id.clone(),
            method: "interaction/requestUserInput",
            params,
            schema: schemas::named("userInputResponse"),
            point: "question",
            pending,
            permission: None,
            auto_resolve,
        };
        let started = now_ms();
        let answer = self.interact(interaction).await?;
        let content = match answer {
            Answer::Host(answer) if answer["action"] == "accept" => Some(answer["content"].clone()),
            Answer::V4(answer) => v4_content(&answer),
            Answer::Auto => Some(first_options(&questions)),
            _ => None,
        };
        self.event(
            "userInput.resolved",
            json!({"requestId": request_id, "value": content.clone().unwrap_or(Value::Null),
                   "cancelled": content.is_none()}),
        );
        match content {
            Some(content) => {
                self.last_outcome = Some(Condition::Allowed);
                let result = json!({"content": format!("User answered: {content}")});
                self.tool_succeeded(&call_id, tool, tool, &input, row, result, started);
            }
            None => {
                self.last_outcome = Some(Condition::Denied);
                self.tool_failed(
                    &call_id,
                    tool,
                    &input,
                    row,
                    "ToolCancelled",
                    "The user declined to answer.",
                );
            }
        }
        self.model_request().await
    }

    /// `ExitPlanMode`: `requestUserInput` with the `plan_approval` schema. An approved plan
    /// leaves plan mode.
    pub(super) async fn plan_approval(&mut self, plan: PlanApproval) -> StepResult {
        let call_id = new_call_id();
        let tool = "ExitPlanMode";
        let input = json!({"plan": plan.plan});
        let row = self.announce_tool(&call_id, tool, &input, 1);
        let started = now_ms();
        // The Agent asks every `ExitPlanMode` through `requestUserInput` with the
        // `plan_approval` schema, whatever the scenario names as its source: the broker routes
        // the tool there before any permission is built (3.15.1 `interaction-broker.ts`,
        // `requestExitPlanModeApproval`).
        let approved = {
            let request_id = format!("plan-{}", uuid::Uuid::new_v4().simple());
            let params = json!({
                "requestId": request_id, "sessionId": self.start.session_id,
                "turnId": self.start.turn_id, "toolCallId": call_id, "toolName": tool,
                "prompt": PLAN_QUESTION, "questions": plan_questions(), "input": input,
                "schema": {"interaction": "plan_approval", "toolName": tool},
            });
            let pending = v4::pending::interaction(
                &request_id,
                "userInput",
                row,
                json!({"toolCallId": call_id, "toolName": tool, "prompt": PLAN_QUESTION,
                       "freeText": false, "input": input,
                       "schema": {"interaction": "plan_approval"}, "questions": plan_questions()}),
            );
            let interaction = Interaction {
                id: request_id,
                method: "interaction/requestUserInput",
                params,
                schema: schemas::named("userInputResponse"),
                point: "plan",
                pending,
                permission: None,
                auto_resolve: false,
            };
            match self.interact(interaction).await? {
                Answer::Host(answer) => {
                    answer["action"] == "accept" && approves(&answer["content"])
                }
                Answer::V4(answer) => {
                    answer.option_id.as_deref() == Some("approve")
                        || (answer.action.as_deref() == Some("accept")
                            && answer.content.as_ref().is_some_and(approves))
                }
                _ => false,
            }
        };
        if approved {
            self.last_outcome = Some(Condition::Allowed);
            self.leave_plan_mode();
            let result = json!({"content": "The user approved the plan."});
            self.tool_succeeded(&call_id, tool, tool, &input, row, result, started);
        } else {
            self.last_outcome = Some(Condition::Denied);
            self.tool_failed(
                &call_id,
                tool,
                &input,
                row,
                "PermissionDenied",
                "The user rejected the plan.",
            );
        }
        self.model_request().await
    }

    fn leave_plan_mode(&self) {
        let mut state = self.state();
        let in_plan = state
            .sessions
            .get_mut(self.session_id())
            .map(|resident| {
                let in_plan = resident.record.mode == "plan";
                if in_plan {
                    resident.record.mode = "build".into();
                }
                in_plan
            })
            .unwrap_or(false);
        if in_plan {
            let _ = state.announce_settings(self.session_id(), "mode_changed", &["mode"]);
        }
    }

    // ── app-server-only triggers ──

    pub(super) async fn play_extra(&mut self, extra: Extra) -> StepResult {
        match extra {
            Extra::Elicit => self.elicit().await,
            Extra::Browser => self.browser().await,
            Extra::McpAuth => self.mcp_auth().await,
            Extra::Cron => self.cron().await,
        }
    }

    /// An MCP server's elicitation, relayed as `requestUserInput` with the
    /// `mcp_elicitation` schema; each schema field becomes one question.
    async fn elicit(&mut self) -> StepResult {
        let call_id = new_call_id();
        let tool = "mcp__sim__deploy";
        let input = json!({"target": "release"});
        let row = self.announce_tool(&call_id, tool, &input, 1);
        let requested = json!({
            "type": "object",
            "properties": {
                "environment": {"type": "string", "enum": ["staging", "production"],
                                "description": "Where to deploy"},
                "confirm": {"type": "boolean", "description": "Deploy now?"},
                "note": {"type": "string", "description": "A note for the release"},
            },
            "required": ["environment", "confirm"],
        });
        let request_id = format!("mcp-elicit-{}", uuid::Uuid::new_v4());
        let questions = elicitation_questions(&requested);
        let message = "The deploy server needs a few details.";
        let params = json!({
            "requestId": request_id, "sessionId": self.start.session_id, "turnId": self.start.turn_id,
            "toolName": "McpElicitation", "prompt": message, "questions": questions,
            "schema": {"interaction": "mcp_elicitation", "serverName": "sim", "requestedSchema": requested},
        });
        // No tool row asks this: the entry is anchored to the turn's header.
        let pending = v4::pending::interaction(
            &request_id,
            "userInput",
            self.turn_row,
            json!({"toolName": "McpElicitation", "prompt": message, "freeText": false,
                   "questions": questions, "schema": {"interaction": "mcp_elicitation"}}),
        );
        let interaction = Interaction {
            id: request_id,
            method: "interaction/requestUserInput",
            params,
            schema: schemas::named("userInputResponse"),
            point: "question",
            pending,
            permission: None,
            auto_resolve: false,
        };
        let started = now_ms();
        let content = match self.interact(interaction).await? {
            Answer::Host(answer) if answer["action"] == "accept" => Some(answer["content"].clone()),
            Answer::V4(answer) => v4_content(&answer),
            _ => None,
        };
        self.finish_extra(
            &call_id,
            tool,
            &input,
            row,
            started,
            content
                .map(|content| json!({"content": format!("Elicitation accepted: {content}")}))
                .ok_or_else(|| "The elicitation was declined.".to_owned()),
        );
        self.model_request().await
    }

    /// `interaction/browserList`: which browser backends the Desktop can offer.
    async fn browser(&mut self) -> StepResult {
        let call_id = new_call_id();
        let tool = "Browser";
        let input = json!({"action": "list"});
        let row = self.announce_tool(&call_id, tool, &input, 1);
        let (key, path) = self.workspace_ids();
        let params = json!({
            "requestId": format!("browser-{}", uuid::Uuid::new_v4().simple()),
            "sessionId": self.start.session_id, "turnId": self.start.turn_id,
            "workspaceKey": key, "workspacePath": path,
            "clientMode": "desktop-continuous", "sessionContext": "agent",
        });
        let started = now_ms();
        let outcome = self
            .plain_request("interaction/browserList", params, schemas::named("anyObject"))
            .await?;
        let result = outcome.map(|answer| json!({"content": answer.to_string()}));
        self.finish_extra(&call_id, tool, &input, row, started, result);
        self.model_request().await
    }

    /// `interaction/requestOfficialMcpAuthHeaders`: the host signs an official MCP call.
    async fn mcp_auth(&mut self) -> StepResult {
        let call_id = new_call_id();
        let tool = "mcp__zcode__web_search";
        let input = json!({"query": "zcode"});
        let row = self.announce_tool(&call_id, tool, &input, 1);
        let workspace = self.workspace_ref();
        let params = json!({
            "requestId": format!("mcp-auth-{}", uuid::Uuid::new_v4().simple()),
            "workspace": workspace, "pluginId": "zcode-official", "mcpKey": "web-search",
            "targetOrigin": "https://zcode.z.ai",
        });
        let started = now_ms();
        let outcome = self
            .plain_request(
                "interaction/requestOfficialMcpAuthHeaders",
                params,
                schemas::named("officialMcpAuthResponse"),
            )
            .await?;
        let result = outcome.and_then(|answer| {
            if answer["ok"] == true {
                Ok(json!({"content": "Search results for zcode (simulated)."}))
            } else {
                Err(format!(
                    "Official MCP auth unavailable: {}",
                    answer["reason"].as_str().unwrap_or("unknown")
                ))
            }
        });
        self.finish_extra(&call_id, tool, &input, row, started, result);
        self.model_request().await
    }

    /// `CronCreate`: the Agent checks the session is no scheduled task's own session
    /// (`automation/checkTaskBinding`, or `automation/list` where that method is missing),
    /// then `automation/create`. A failed check fails closed.
    async fn cron(&mut self) -> StepResult {
        let call_id = new_call_id();
        let tool = "CronCreate";
        let input = json!({"cron": "0 9 * * *", "prompt": "Summarise yesterday's commits", "title": "Daily summary"});
        let row = self.announce_tool(&call_id, tool, &input, 1);
        let started = now_ms();
        let session = self.start.session_id.clone();
        let bound = match self
            .plain_request_raw(
                "automation/checkTaskBinding",
                json!({"targetTaskId": session}),
                schemas::named("taskBinding"),
            )
            .await?
        {
            Ok(answer) => Ok(answer["bound"] == true),
            Err(ClientError::Remote(error)) if error.code == METHOD_NOT_FOUND => {
                match self
                    .plain_request_raw(
                        "automation/list",
                        json!({}),
                        schemas::named("automationList"),
                    )
                    .await?
                {
                    Ok(answer) => Ok(answer["automations"].as_array().is_some_and(|all| {
                        all.iter().any(|item| item["targetTaskId"] == session.as_str())
                    })),
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        };
        let result = match bound {
            Err(_) => {
                Err("Cannot verify whether this session belongs to a scheduled task.".to_owned())
            }
            Ok(true) => Err("This session already belongs to a scheduled task.".to_owned()),
            Ok(false) => {
                let (mode, model) = self
                    .resident(|r| (r.record.mode.clone(), r.record.model.clone()))
                    .unwrap_or_default();
                let mut params = json!({"cronExpr": "0 9 * * *", "prompt": input["prompt"],
                                        "title": input["title"], "recurring": true,
                                        "mode": if mode == "auto" { "build".to_owned() } else { mode },
                                        "targetTaskId": session});
                if let Some(model) = model {
                    params["modelSelection"] = model;
                }
                self.plain_request("automation/create", params, schemas::named("automationCreated"))
                    .await?
                    .map(|answer| json!({"content": format!("Created {}", answer["automation"])}))
            }
        };
        self.finish_extra(&call_id, tool, &input, row, started, result);
        self.model_request().await
    }

    fn finish_extra(
        &mut self,
        call_id: &str,
        tool: &str,
        input: &Value,
        row: u64,
        started: u64,
        result: Result<Value, String>,
    ) {
        match result {
            Ok(result) => {
                self.last_outcome = Some(Condition::Allowed);
                self.tool_succeeded(call_id, tool, tool, input, row, result, started);
            }
            Err(message) => {
                self.last_outcome = Some(Condition::Denied);
                self.tool_failed(call_id, tool, input, row, "ToolExecutionFailed", &message);
            }
        }
    }

    /// A one-shot request to the host (no re-announce), abandoned when the turn stops.
    async fn plain_request_raw(
        &mut self,
        method: &'static str,
        params: Value,
        schema: Schema,
    ) -> Result<Result<Value, ClientError>, Halt> {
        let mut request = ClientRequest::new(method, params, schema);
        request.cancel.push(self.start.stop.0.clone());
        match self.server.reverse.request(request).await {
            Err(ClientError::Cancelled) => Err(Halt::Cancelled),
            other => Ok(other),
        }
    }

    async fn plain_request(
        &mut self,
        method: &'static str,
        params: Value,
        schema: Schema,
    ) -> Result<Result<Value, String>, Halt> {
        Ok(self
            .plain_request_raw(method, params, schema)
            .await?
            .map_err(|error| error.into_protocol(method).message))
    }

    fn workspace_ref(&self) -> Value {
        self.resident(|resident| resident.record.workspace.clone()).unwrap_or_default()
    }

    fn workspace_ids(&self) -> (Value, Value) {
        let workspace = self.workspace_ref();
        (workspace["workspaceKey"].clone(), workspace["workspacePath"].clone())
    }
}

/// Question options as the Agent sends them: `value` is the label.
fn normalize_question(question: &Value) -> Value {
    let mut question = question.clone();
    if let Some(options) = question["options"].as_array_mut() {
        for option in options {
            let label = option["label"].clone();
            option["value"] = label;
        }
    }
    if question.get("header").is_none() {
        question["header"] = json!("Question");
    }
    question
}

/// What a V4 answer to a question means: accepted content, or `None` for a refusal.
fn v4_content(answer: &V4Answer) -> Option<Value> {
    match answer.action.as_deref() {
        Some("accept") => Some(answer.content.clone().unwrap_or_else(|| json!({}))),
        Some(_) => None,
        None => answer
            .free_text
            .clone()
            .or_else(|| answer.option_id.clone())
            .map(|text| json!({"answer": text})),
    }
}

/// The auto-resolved answer: every question's first option.
fn first_options(questions: &[Value]) -> Value {
    let mut answers = serde_json::Map::new();
    for question in questions {
        if let (Some(text), Some(label)) =
            (question["question"].as_str(), question["options"][0]["label"].as_str())
        {
            answers.insert(text.to_owned(), json!(label));
        }
    }
    json!({"answers": answers, "autoResolved": true})
}

/// A plan approval's accept content says `approve` (`answer_0`, `answers{...}` or `answer`).
fn approves(content: &Value) -> bool {
    let is_approve =
        |value: &Value| value.as_str().is_some_and(|text| text.eq_ignore_ascii_case("approve"));
    is_approve(&content["answer_0"])
        || is_approve(&content["answer"])
        || content["answers"].as_object().is_some_and(|answers| answers.values().any(is_approve))
}

/// One question per elicitation field: booleans get `true`/`false`, enums their values, text
/// and numbers the free-text sentinel.
fn elicitation_questions(schema: &Value) -> Vec<Value> {
    let Some(properties) = schema["properties"].as_object() else { return Vec::new() };
    properties
        .iter()
        .map(|(name, field)| {
            let options: Vec<Value> = match (field["type"].as_str(), field["enum"].as_array()) {
                (_, Some(values)) => values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|value| json!({"value": value, "label": value}))
                    .collect(),
                (Some("boolean"), None) => {
                    vec![
                        json!({"value": "true", "label": "true"}),
                        json!({"value": "false", "label": "false"}),
                    ]
                }
                _ => vec![json!({"value": FREE_TEXT_OPTION, "label": "Type an answer"})],
            };
            let text = field["description"].as_str().unwrap_or(name);
            json!({"question": text, "header": name, "options": options})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_fields_become_questions() {
        let schema = json!({"properties": {
            "env": {"type": "string", "enum": ["a", "b"]},
            "ok": {"type": "boolean"},
            "note": {"type": "string"}}});
        let questions = elicitation_questions(&schema);
        assert_eq!(questions.len(), 3);
        let options =
            |name: &str| questions.iter().find(|q| q["header"] == name).unwrap()["options"].clone();
        assert_eq!(options("env")[1]["value"], "b");
        assert_eq!(options("ok")[0]["value"], "true");
        assert_eq!(options("note")[0]["value"], FREE_TEXT_OPTION);
    }

    #[test]
    fn answers_are_read_in_every_shape() {
        assert!(approves(&json!({"answer_0": "approve"})));
        assert!(approves(&json!({"answers": {"Review this implementation plan.": "Approve"}})));
        assert!(!approves(&json!({"answer": "no"})));
        let auto = first_options(&[
            json!({"question": "Q?", "options": [{"label": "A"}, {"label": "B"}]}),
        ]);
        assert_eq!(auto["answers"]["Q?"], "A");
        let free = V4Answer::from_payload(&json!({"freeText": "hi"}), "c");
        assert_eq!(v4_content(&free), Some(json!({"answer": "hi"})));
        let declined = V4Answer::from_payload(&json!({"action": "decline"}), "c");
        assert_eq!(v4_content(&declined), None);
        let question = normalize_question(
            &json!({"question": "Q", "options": [{"value": "x", "label": "X"}]}),
        );
        assert_eq!(question["options"][0]["value"], "X");
    }
}
