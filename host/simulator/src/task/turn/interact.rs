//! Steps that involve tools and the user: tool calls (with permission and real workspace
//! effects), structured questions, plan approval and provider runtime headers.

use serde_json::{Value, json};

use super::Turn;
use crate::common::scenario::{
    Condition, Permission, PlanApproval, PlanSource, Question, ToolCall,
};
use crate::common::turn::{
    Halt, PLAN_QUESTION, StepResult, Verdict, answers_summary, auto_approved, failed, new_call_id,
    output_text, plan_questions,
};
use crate::task::host_service::session::PendingKind;

const INTERRUPTED: &str = "Tool execution was interrupted";

impl Turn {
    pub(super) async fn tool(&mut self, call: ToolCall) -> StepResult {
        self.fault_point("tool").await?;
        let call_id = call.call_id.clone().unwrap_or_else(new_call_id);
        self.announce_tool(&call_id, &call.name, &call.input, call.input_chunks);
        let outcome = self.run_tool(&call_id, call).await;
        self.tool_calls += 1;
        outcome
    }

    /// Streams the tool input and declares the call (`tool_input_*`, `tool_call`, `scheduled`).
    fn announce_tool(&mut self, call_id: &str, name: &str, input: &Value, input_chunks: usize) {
        let input_text = input.to_string();
        self.output_chars += input_text.chars().count() as u64;
        let ids = json!({"toolCallId": call_id, "toolName": name});
        self.session_event("model.streaming", with(&ids, json!({"kind": "tool_input_start"})));
        let piece = input_text.chars().count().div_ceil(input_chunks).max(1);
        for delta in crate::common::scenario::split_chars(&input_text, piece) {
            self.session_event(
                "model.streaming",
                with(&ids, json!({"kind": "tool_input_delta", "delta": delta})),
            );
        }
        self.session_event("model.streaming", with(&ids, json!({"kind": "tool_input_end"})));
        self.session_event(
            "model.streaming",
            with(&ids, json!({"kind": "tool_call", "input": input})),
        );
        self.session_event("tool.updated", with(&ids, json!({"kind": "scheduled"})));
    }

    async fn run_tool(&mut self, call_id: &str, call: ToolCall) -> StepResult {
        let ids = json!({"toolCallId": call_id, "toolName": call.name});
        let title = call.title.clone().unwrap_or_else(|| call.name.clone());
        let mut input = call.input.clone();
        if call.permission.is_some() && self.auto_allowed(&call.name) {
            // Approved by policy, without asking: `if: allowed` steps still follow.
            self.last_outcome = Some(Condition::Allowed);
        } else if let Some(permission) = &call.permission {
            let asked = self.ask_permission(call_id, &call.name, &input, permission, "permission");
            let verdict = match asked.await {
                Ok(verdict) => verdict,
                Err(halt) => return self.interrupted(&ids, &call, &title, halt),
            };
            if !verdict.allowed {
                let denied = Err("Permission denied by the user".to_owned());
                self.end_tool(&ids, &title, &input, denied);
                return Ok(());
            }
            input = verdict.input.unwrap_or(input);
        }
        self.session_event("tool.updated", with(&ids, json!({"kind": "started"})));
        for progress in &call.progress {
            if let Err(halt) = self.start.stop.check() {
                return self.interrupted(&ids, &call, &title, halt);
            }
            let mut payload = progress.clone();
            payload["kind"] = json!("progress");
            self.session_event("tool.updated", with(&ids, payload));
            tokio::task::yield_now().await;
        }
        let result = call.result(&self.start.workspace);
        self.end_tool(&ids, &title, &input, result);
        Ok(())
    }

    /// A stop while the tool was pending or running: the tool ends as an error, then the turn.
    fn interrupted(&mut self, ids: &Value, call: &ToolCall, title: &str, halt: Halt) -> StepResult {
        if let Halt::Cancelled = halt {
            self.end_tool(ids, title, &call.input, Err(INTERRUPTED.to_owned()));
        }
        Err(halt)
    }

    /// The tool's end: its `result` or `error` event, and its final state in the message.
    fn end_tool(&mut self, ids: &Value, title: &str, input: &Value, result: Result<Value, String>) {
        let end = match &result {
            Ok(value) => json!({"kind": "result", "result": value}),
            Err(message) => json!({"kind": "error", "error": {"message": message}}),
        };
        self.session_event("tool.updated", with(ids, end));
        let (call_id, tool) = (ids["toolCallId"].as_str(), ids["toolName"].as_str());
        self.record_tool(
            call_id.unwrap_or_default(),
            tool.unwrap_or_default(),
            title,
            input,
            result,
        );
    }

    /// The session's mode approves the tool without asking. Planning is the `plan` mode, or
    /// the independent plan flag over any editing mode.
    fn auto_allowed(&self, tool: &str) -> bool {
        let live = self.session();
        let always = live.record.always_allowed.contains(tool);
        auto_approved(&live.record.mode, live.planning(), always, tool)
    }

    async fn ask_permission(
        &mut self,
        call_id: &str,
        tool: &str,
        input: &Value,
        permission: &Permission,
        point: &str,
    ) -> Result<Verdict, Halt> {
        let request_id = new_request_id("permission");
        let option_ids = option_ids(&permission.options);
        let request = json!({
            "requestId": request_id, "sessionId": self.start.session_id,
            "turnId": self.start.turn_id,
            "toolCallId": call_id, "toolName": tool, "reason": permission.reason,
            "riskLevel": permission.risk, "input": input, "options": permission.options,
        });
        self.session_event(
            "permission.requested",
            json!({"requestId": request_id, "toolCallId": call_id, "toolName": tool}),
        );
        let event = json!({"type": "permission.request", "request": request});
        let answer =
            self.ask(&request_id, PendingKind::Permission { option_ids }, event, point).await?;
        let option_id = answer["optionId"].as_str().unwrap_or_default();
        let option = permission
            .options
            .iter()
            .find(|option| option["optionId"] == option_id)
            .expect("the task channel only accepts offered options");
        let verdict = Verdict::of(&option["response"], false);
        self.session_event(
            "permission.resolved",
            json!({"requestId": request_id, "optionId": option_id, "decision": verdict.decision}),
        );
        if verdict.allowed && verdict.remember {
            self.session().record.always_allowed.insert(tool.to_owned());
        }
        let allowed = verdict.allowed;
        self.last_outcome = Some(if allowed { Condition::Allowed } else { Condition::Denied });
        Ok(verdict)
    }

    /// Adds the tool's final state to the assistant message.
    fn record_tool(
        &mut self,
        call_id: &str,
        tool: &str,
        title: &str,
        input: &Value,
        result: Result<Value, String>,
    ) {
        let state = match result {
            Ok(value) => {
                let output = output_text(&value);
                json!({"status": "completed", "title": title, "input": input, "output": output})
            }
            Err(message) => {
                json!({"status": "error", "title": title, "input": input, "error": message})
            }
        };
        self.parts.push(json!({"type": "tool", "callId": call_id, "tool": tool, "state": state}));
    }

    pub(super) async fn question(&mut self, question: Question) -> StepResult {
        let call_id = question.call_id.clone().unwrap_or_else(new_call_id);
        let tool = "AskUserQuestion";
        let input = json!({"questions": question.questions});
        self.announce_tool(&call_id, tool, &input, 1);
        let ids = json!({"toolCallId": call_id, "toolName": tool});
        self.session_event("tool.updated", with(&ids, json!({"kind": "started"})));
        let request_id = new_request_id("user-input");
        let mut request = json!({
            "requestId": request_id, "sessionId": self.start.session_id,
            "turnId": self.start.turn_id,
            "toolCallId": call_id, "toolName": tool, "questions": question.questions,
        });
        if let Some(prompt) = &question.prompt {
            request["prompt"] = json!(prompt);
        }
        let title = "Ask the user";
        let call = ToolCall::asking(tool, &call_id, &input, 1, title);
        let event = json!({"type": "userInput.request", "request": request});
        let response =
            match self.ask(&request_id, PendingKind::Elicitation, event, "question").await {
                Ok(response) => response,
                Err(halt) => return self.interrupted(&ids, &call, title, halt),
            };
        self.session().emit(
            &json!({"type": "userInput.response", "requestId": request_id, "response": response}),
        );
        self.tool_calls += 1;
        let result = if response["action"] == "accept" {
            self.last_outcome = Some(Condition::Allowed);
            let content = response.get("content").cloned().unwrap_or_else(|| json!({}));
            Ok(json!({"content": answers_summary(&content), "answers": content.get("answers")}))
        } else {
            self.last_outcome = Some(Condition::Denied);
            Err(format!(
                "The user did not answer ({})",
                response["action"].as_str().unwrap_or("decline")
            ))
        };
        self.end_tool(&ids, title, &input, result);
        Ok(())
    }

    pub(super) async fn plan_approval(&mut self, plan: PlanApproval) -> StepResult {
        let call_id = new_call_id();
        let tool = "ExitPlanMode";
        let input = json!({"plan": plan.plan});
        self.announce_tool(&call_id, tool, &input, 2);
        let ids = json!({"toolCallId": call_id, "toolName": tool});
        let title = "Present the plan";
        let call = ToolCall::asking(tool, &call_id, &input, 2, title);
        let approved = match plan.source {
            PlanSource::Permission => {
                let permission = Permission {
                    reason: plan.reason.clone(),
                    risk: "medium".into(),
                    options: vec![
                        json!({"optionId": "allow-plan", "kind": "allow_once", "name": "Approve",
                               "response": {"decision": "allow"}}),
                        json!({"optionId": "deny-plan", "kind": "reject_once", "name": "Reject",
                               "response": {"decision": "deny"}}),
                    ],
                };
                match self.ask_permission(&call_id, tool, &input, &permission, "plan").await {
                    Ok(verdict) => verdict.allowed,
                    Err(halt) => return self.interrupted(&ids, &call, title, halt),
                }
            }
            PlanSource::UserInput => match self.ask_plan_input(&call_id, tool, &input).await {
                Ok(approved) => approved,
                Err(halt) => return self.interrupted(&ids, &call, title, halt),
            },
        };
        self.last_outcome = Some(if approved { Condition::Allowed } else { Condition::Denied });
        self.tool_calls += 1;
        let result = if approved {
            self.session_event("tool.updated", with(&ids, json!({"kind": "started"})));
            Ok(json!({"content": "User approved the plan"}))
        } else {
            Err("User rejected the plan".to_owned())
        };
        self.end_tool(&ids, title, &input, result);
        // Approving the plan ends planning, as the desktop app does: the `plan` mode gives
        // way to `build`; the independent flag is cleared and the editing mode stays.
        if approved && self.session().planning() {
            self.update_session(|live| {
                if live.record.mode == "plan" {
                    live.record.mode = "build".into();
                }
                live.record.plan_enabled = false;
            });
        }
        Ok(())
    }

    async fn ask_plan_input(
        &mut self,
        call_id: &str,
        tool: &str,
        input: &Value,
    ) -> Result<bool, Halt> {
        let request_id = new_request_id("user-input-plan");
        let request = json!({
            "requestId": request_id, "sessionId": self.start.session_id,
            "turnId": self.start.turn_id,
            "toolCallId": call_id, "toolName": tool, "prompt": PLAN_QUESTION,
            "questions": plan_questions(), "input": input,
            "schema": {"interaction": "plan_approval"},
        });
        let event = json!({"type": "userInput.request", "request": request});
        let response = self.ask(&request_id, PendingKind::Elicitation, event, "plan").await?;
        self.session().emit(
            &json!({"type": "userInput.response", "requestId": request_id, "response": response}),
        );
        let content = &response["content"];
        let selected = content["answer"]
            .as_str()
            .or_else(|| content["answer_0"].as_str())
            .or_else(|| content["optionId"].as_str())
            .or_else(|| content["answers"][PLAN_QUESTION][0].as_str());
        Ok(response["action"] == "accept" && selected == Some("approve"))
    }

    pub(super) async fn provider_headers(&mut self, reason: &str) -> StepResult {
        let request_id = new_request_id("provider-headers");
        let model = self.session().record.model.clone();
        let request = json!({
            "requestId": request_id, "sessionId": self.start.session_id,
            "turnId": self.start.turn_id,
            "workspace": {"workspacePath": self.start.workspace}, "modelRef": model,
            "providerId": model["providerId"], "reason": reason,
        });
        let event = json!({"type": "providerRuntimeHeaders.request", "request": request});
        let response =
            self.ask(&request_id, PendingKind::ProviderHeaders, event, "headers").await?;
        if response["headersApplied"] == true {
            self.last_outcome = Some(Condition::Allowed);
            Ok(())
        } else {
            self.last_outcome = Some(Condition::Denied);
            let detail = response["errorMessage"].as_str().unwrap_or("no reason given");
            Err(failed(
                "ModelError",
                format!("Provider runtime headers were not applied: {detail}"),
            ))
        }
    }
}

/// `base` (ids) merged with `extra`.
fn with(base: &Value, extra: Value) -> Value {
    let mut merged = base.clone();
    if let (Some(target), Value::Object(fields)) = (merged.as_object_mut(), extra) {
        target.extend(fields);
    }
    merged
}

fn option_ids(options: &[Value]) -> Vec<String> {
    options.iter().filter_map(|option| option["optionId"].as_str().map(str::to_owned)).collect()
}

fn new_request_id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}
