//! Tool calls: the model streams the call (`model.streaming` `tool_input_*`, `tool_call`), the
//! Agent schedules it (`tool.updated scheduled`, input omitted — it already went out in the
//! stream), asks the host when the session's mode requires it, runs it and reports the
//! result. Every tool is followed by the next model request.

use serde_json::{Value, json};

use super::super::delta_batch::DeltaKind;
use super::super::reverse::ClientError;
use super::super::wire::CLIENT_REQUEST_NO_CLIENT;
use super::Turn;
use super::ask::{Answer, Interaction};
use crate::common::clock::now_ms;
use crate::common::scenario::{Condition, ToolCall};
use crate::common::turn::{Halt, StepResult, new_call_id, output_text};
use crate::v4;

/// Tools that only read: no mode asks before them.
const READ_ONLY: &[&str] =
    &["Read", "Grep", "Glob", "LS", "TodoWrite", "WebSearch", "WebFetch", "NotebookRead"];
/// Tools `edit` (and `auto`) mode runs without asking.
const EDITS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// What a session's mode does with a tool call that may need approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Policy {
    Run,
    Ask,
    /// Plan mode refuses changes until the plan is approved.
    RefuseInPlan,
}

pub(super) fn policy(mode: &str, tool: &str) -> Policy {
    if READ_ONLY.contains(&tool) {
        return Policy::Run;
    }
    match mode {
        "yolo" => Policy::Run,
        "edit" | "auto" if EDITS.contains(&tool) => Policy::Run,
        "plan" => Policy::RefuseInPlan,
        _ => Policy::Ask,
    }
}

/// The denial reason of a permission round trip that failed (see `ask_permission`).
pub const PERMISSION_REQUEST_FAILED: &str = "Permission request failed";

/// The outcome of asking for a tool.
pub(super) enum Verdict {
    Allow {
        input: Value,
    },
    Deny {
        reason: String,
    },
    /// `guarded` mode: a failed round trip is a typed tool error, not a denial.
    Error {
        kind: &'static str,
        message: String,
    },
}

/// The three options the Agent offers (3.15.1 `permission-options.ts`). The allow-for-project
/// rule names the command a `Bash` call runs as its `ruleContent`, as a live record saw
/// (`{"ruleContent":"printf 'A' > probe-a.txt","toolName":"Bash"}`: "ZCode Protocol v1
/// (app-server stdio): live verification record", Desktop 3.12.3 / CLI 0.16.5, tool turn,
/// issue 25 [B]); other tools' rules name the tool alone *(choice: no record shows one)*.
pub(super) fn permission_options(tool: &str, input: &Value) -> Value {
    let mut rule = json!({"toolName": tool});
    if let Some(command) = input.get("command").and_then(Value::as_str).filter(|_| tool == "Bash") {
        rule["ruleContent"] = json!(command);
    }
    json!([
        {"optionId": "allow_once", "kind": "allow_once", "name": "Allow once",
         "response": {"decision": "allow", "reason": "Approved once"}},
        {"optionId": "allow_project", "kind": "allow_always", "name": "Always allow in this project",
         "description": "Do not ask again for matching requests in this project",
         "response": {"decision": "allow", "reason": "Approved for this project",
                      "permissionUpdates": [{"type": "addRules", "behavior": "allow",
                                             "rules": [rule]}]}},
        {"optionId": "deny", "kind": "deny", "name": "Deny",
         "response": {"decision": "deny", "reason": "The user denied this tool call."}},
    ])
}

/// The options a V4 client picks from (`allowOnce`, `allowAlways`, `deny`).
fn v4_options() -> Value {
    json!([
        {"optionId": "allowOnce", "label": "Allow once"},
        {"optionId": "allowAlways", "label": "Always allow in this project"},
        {"optionId": "deny", "label": "Deny"},
    ])
}

/// The `response` of the offered option whose id is `option_id`.
fn offered_response(options: &Value, option_id: Option<&str>) -> Option<Value> {
    let option_id = option_id?;
    options.as_array()?.iter().find(|option| option["optionId"] == option_id).and_then(|option| {
        // A scenario's own options may name only their decision.
        option
            .get("response")
            .cloned()
            .or_else(|| option.get("decision").map(|decision| json!({"decision": decision})))
    })
}

impl Turn {
    pub(super) async fn tool(&mut self, call: ToolCall) -> StepResult {
        let call_id = call.call_id.clone().unwrap_or_else(new_call_id);
        let row = self.announce_tool(&call_id, &call.name, &call.input, call.input_chunks);
        self.fault_point("tool").await?;
        if call.name == "Bash" {
            self.user_execution_preferences().await;
        }
        let verdict = match (call.permission.as_ref(), self.mode()) {
            (None, _) => Verdict::Allow { input: call.input.clone() },
            (Some(_), _) if self.always_allowed(&call.name) => {
                Verdict::Allow { input: call.input.clone() }
            }
            (Some(permission), mode) => match policy(&mode, &call.name) {
                Policy::Run => Verdict::Allow { input: call.input.clone() },
                Policy::RefuseInPlan => {
                    Verdict::Deny { reason: format!("{} is not allowed in plan mode", call.name) }
                }
                Policy::Ask => {
                    // The scenario language fills in the host profiles' options; the Agent
                    // offers its own unless a scenario wrote options of its own.
                    let defaulted = permission.options
                        == crate::common::scenario::default_permission_options(&call.name);
                    let options = if permission.options.is_empty() || defaulted {
                        permission_options(&call.name, &call.input)
                    } else {
                        Value::Array(permission.options.clone())
                    };
                    let request = PermissionRequest {
                        call_id: &call_id,
                        tool: &call.name,
                        input: &call.input,
                        reason: &permission.reason,
                        risk: &permission.risk,
                        options,
                        row,
                    };
                    self.ask_permission(request, "permission").await?
                }
            },
        };
        let title = call.title.clone().unwrap_or_else(|| call.name.clone());
        match verdict {
            Verdict::Allow { input } => {
                self.last_outcome = Some(Condition::Allowed);
                self.run_tool(&call_id, &call, &title, &input, row).await?;
            }
            Verdict::Deny { reason } => {
                self.last_outcome = Some(Condition::Denied);
                self.tool_failed(
                    &call_id,
                    &call.name,
                    &call.input,
                    row,
                    "PermissionDenied",
                    &reason,
                );
            }
            Verdict::Error { kind, message } => {
                self.last_outcome = Some(Condition::Denied);
                self.tool_failed(&call_id, &call.name, &call.input, row, kind, &message);
            }
        }
        self.model_request().await
    }

    fn mode(&self) -> String {
        self.resident(|resident| resident.record.mode.clone()).unwrap_or_default()
    }

    fn always_allowed(&self, tool: &str) -> bool {
        self.resident(|resident| resident.always_allowed.contains(tool)).unwrap_or(false)
    }

    /// The model's side of a tool call and its scheduling; returns the V4 row id.
    pub(super) fn announce_tool(
        &mut self,
        call_id: &str,
        tool: &str,
        input: &Value,
        chunks: usize,
    ) -> u64 {
        self.close_row();
        self.tool_calls += 1;
        let text = input.to_string();
        self.output_chars += text.chars().count() as u64;
        self.stream_event(
            json!({"kind": "tool_input_start", "toolCallId": call_id, "toolName": tool}),
        );
        let size = text.chars().count().div_ceil(chunks.max(1));
        for chunk in crate::common::scenario::split_chars(&text, size) {
            let delta = self.delta(DeltaKind::ToolInput, None, Some(call_id), &chunk, None);
            self.state().stream_delta(self.session_id(), &delta);
        }
        self.stream_event(json!({"kind": "tool_input_end", "toolCallId": call_id}));
        self.stream_event(
            json!({"kind": "tool_call", "toolCallId": call_id, "toolName": tool, "input": input}),
        );
        self.event(
            "tool.updated",
            json!({"kind": "scheduled", "toolCallId": call_id, "toolName": tool,
                   "assistantMessageId": self.assistant_id, "inputOmitted": true,
                   "inputByteLength": text.len(), "inputRef": "model_stream"}),
        );
        let row_id = self.v4_rows(|rows, log, batch| {
            rows.announce_tool(log, batch, call_id, tool, input, chunks)
        });
        let active = json!({"toolCallId": call_id, "toolName": tool, "status": "pending"});
        self.resident(|resident| resident.active_tools.push(active));
        row_id.unwrap_or_default()
    }

    /// The 3.15.1 Agent asks for the `user-execution` preferences the first time a session
    /// runs a shell; a failure keeps the fallback.
    async fn user_execution_preferences(&mut self) {
        let asked = {
            let mut state = self.state();
            let Some(resident) = state.sessions.get_mut(self.session_id()) else { return };
            std::mem::replace(&mut resident.user_execution_asked, true)
        };
        if !asked
            && let Err(error) =
                self.server.runtime_preferences(self.session_id(), "user-execution").await
        {
            eprintln!("zcode-sim: user-execution preferences failed: {}", error.message);
        }
    }

    /// `interaction/requestPermission` and its V4 twin; the first answer wins.
    pub(super) async fn ask_permission(
        &mut self,
        request: PermissionRequest<'_>,
        point: &'static str,
    ) -> Result<Verdict, Halt> {
        let request_id = format!("permission-{}", uuid::Uuid::new_v4().simple());
        let PermissionRequest { call_id, tool, input, reason, risk, options, row } = request;
        let params = json!({
            "requestId": request_id, "sessionId": self.start.session_id, "turnId": self.start.turn_id,
            "toolCallId": call_id, "toolName": tool, "reason": reason, "riskLevel": risk,
            "input": input, "options": options,
        });
        self.event(
            "permission.requested",
            json!({"requestId": request_id, "toolCallId": call_id, "toolName": tool, "riskLevel": risk,
                   "reason": reason, "input": input, "options": options}),
        );
        self.v4_rows(|_, log, batch| v4::turn::await_approval(log, batch, row, &request_id));
        self.state().store.audit_permission(self.session_id(), &request_id, None);
        let pending_permission = json!({
            "requestId": request_id, "toolCallId": call_id, "toolName": tool, "reason": reason,
            "riskLevel": risk, "input": input, "options": options, "requestedAt": now_ms(),
        });
        let pending = v4::pending::interaction(
            &request_id,
            "permission",
            row,
            json!({"toolCallId": call_id, "toolName": tool, "summary": reason, "riskLevel": risk,
                   "detail": input, "options": v4_options()}),
        );
        let options_offered = options.clone();
        let interaction = Interaction {
            id: request_id.clone(),
            method: "interaction/requestPermission",
            params,
            schema: super::super::schemas::named("permissionResponse"),
            point,
            pending,
            permission: Some(pending_permission),
            auto_resolve: false,
        };
        let answer = self.interact(interaction).await?;
        let guarded = self.mode() == "guarded";
        // A V4 answer naming one of the offered options is that option's own response (3.15.1
        // `interaction-broker.ts` `v4AnswerToPermissionResponse`: exact match first, so an
        // "always" answer keeps its `permissionUpdates`); only then the V4 ids below.
        let answer = match answer {
            Answer::V4(v4) => match offered_response(&options_offered, v4.option_id.as_deref()) {
                Some(response) => Answer::Host(response),
                None => Answer::V4(v4),
            },
            other => other,
        };
        let verdict = match answer {
            Answer::Host(answer) => {
                let decision = answer["decision"].as_str().unwrap_or("deny");
                let always = answer["permissionUpdates"].as_array().is_some_and(|updates| {
                    updates.iter().any(|update| update["behavior"] == "allow")
                });
                match decision {
                    "allow" | "modify" => {
                        if always {
                            self.allow_always(tool);
                        }
                        // `Null` stands for the call's own input (replaced below).
                        let modified = answer.get("modifiedInput").filter(|_| decision == "modify");
                        Verdict::Allow { input: modified.cloned().unwrap_or(Value::Null) }
                    }
                    _ => Verdict::Deny {
                        reason: answer["reason"]
                            .as_str()
                            .unwrap_or("Denied by the user")
                            .to_owned(),
                    },
                }
            }
            Answer::V4(answer) => match answer.option_id.as_deref() {
                Some("allowOnce") => Verdict::Allow { input: Value::Null },
                Some("allowAlways") => {
                    self.allow_always(tool);
                    Verdict::Allow { input: Value::Null }
                }
                // An unknown option counts as a denial.
                _ => Verdict::Deny {
                    reason: answer.free_text.unwrap_or_else(|| "Denied by the user".into()),
                },
            },
            Answer::Auto => Verdict::Deny { reason: "Not answered".into() },
            Answer::Failed(error) if guarded => {
                let kind = match &error {
                    ClientError::Cancelled => "ToolCancelled",
                    ClientError::TimedOut { .. } => "PermissionTimeout",
                    ClientError::Remote(remote) if remote.code == CLIENT_REQUEST_NO_CLIENT => {
                        "ConfigurationError"
                    }
                    _ => "ToolExecutionFailed",
                };
                let message = error.into_protocol("interaction/requestPermission").message;
                Verdict::Error { kind, message }
            }
            // Outside `guarded`, an error answer and an answer that fails the schema alike are
            // a silent denial: `permission.resolved {decision: "deny", reason: "Permission
            // request failed"}`, the same text as the tool's error, and no validation text
            // anywhere ("ZCode Protocol v1 (app-server stdio): live verification record",
            // Desktop 3.12.3 / CLI 0.16.5, malformed-answer experiments, issue 25 [B]).
            Answer::Failed(_) => Verdict::Deny { reason: PERMISSION_REQUEST_FAILED.into() },
        };
        let verdict = match verdict {
            Verdict::Allow { input: Value::Null } => Verdict::Allow { input: input.clone() },
            other => other,
        };
        let (decision, why) = match &verdict {
            Verdict::Allow { .. } => ("allow", None),
            Verdict::Deny { reason } => ("deny", Some(reason.clone())),
            Verdict::Error { message, .. } => ("deny", Some(message.clone())),
        };
        let mut resolved = json!({"requestId": request_id, "toolCallId": call_id, "toolName": tool, "decision": decision});
        if let Some(why) = why {
            resolved["reason"] = json!(why);
        }
        self.event("permission.resolved", resolved);
        self.state().store.audit_permission(self.session_id(), &request_id, Some(decision));
        Ok(verdict)
    }

    fn allow_always(&self, tool: &str) {
        self.resident(|resident| resident.always_allowed.insert(tool.to_owned()));
    }

    async fn run_tool(
        &mut self,
        call_id: &str,
        call: &ToolCall,
        title: &str,
        input: &Value,
        row: u64,
    ) -> StepResult {
        let started = now_ms();
        let tool = call.name.as_str();
        self.event("tool.updated", json!({"kind": "started", "toolCallId": call_id, "toolName": tool, "startedAt": started}));
        self.v4_rows(|_, log, batch| v4::turn::run_tool(log, batch, row, input));
        for progress in &call.progress {
            self.start.stop.check()?;
            let mut payload = json!({"kind": "progress", "toolCallId": call_id, "toolName": tool});
            if let (Some(target), Some(fields)) = (payload.as_object_mut(), progress.as_object()) {
                target.extend(fields.clone());
            }
            self.event("tool.updated", payload);
            tokio::task::yield_now().await;
        }
        match call.result(&self.workspace) {
            Ok(result) => self.tool_succeeded(call_id, tool, title, input, row, result, started),
            Err(message) => {
                self.tool_failed(call_id, tool, input, row, "ToolExecutionFailed", &message)
            }
        }
        Ok(())
    }

    /// Reports a finished tool on both projections and records its part.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tool_succeeded(
        &mut self,
        call_id: &str,
        tool: &str,
        title: &str,
        input: &Value,
        row: u64,
        result: Value,
        started: u64,
    ) {
        // The text is rendered from the tool's own output, as on every generation: a string as
        // it is, anything else as JSON of the whole output (ZCode 3.15.1
        // `core/src/tool/executor/result-serialization.ts`; a scenario's `{content}` shows its
        // text). `success` is the legacy event's, not the tool's.
        let output = output_text(&result);
        let mut result = result;
        if result.is_object() && result.get("success").is_none() {
            result["success"] = json!(true);
        }
        let duration = now_ms().saturating_sub(started);
        self.event(
            "tool.updated",
            json!({"kind": "result", "toolCallId": call_id, "toolName": tool, "result": result,
                   "duration": duration}),
        );
        // A batch's summary follows its tools' results (`scheduled → started → progress×N →
        // result → batch`, the Desktop 3.12.3 live record's tool turn; issue 25 [B]); each tool
        // is its own batch here.
        self.event(
            "tool.updated",
            json!({"kind": "batch", "toolCallIds": [call_id], "successCount": 1, "errorCount": 0}),
        );
        // The V4 row keeps ZCode's cut of the output; the legacy event and the part keep it whole.
        self.v4_rows(|_, log, batch| v4::turn::end_tool(log, batch, row, Ok(&output)));
        let state = json!({"status": "completed", "input": object_or_empty(input), "output": output,
                           "title": title, "metadata": {}, "startedAt": started, "completedAt": now_ms()});
        self.push_tool_part(call_id, tool, state);
    }

    pub(super) fn tool_failed(
        &mut self,
        call_id: &str,
        tool: &str,
        input: &Value,
        row: u64,
        kind: &str,
        message: &str,
    ) {
        self.event(
            "tool.updated",
            json!({"kind": "error", "toolCallId": call_id, "toolName": tool,
                   "error": {"type": kind, "message": message}}),
        );
        self.v4_rows(|_, log, batch| v4::turn::end_tool(log, batch, row, Err((kind, message))));
        let now = now_ms();
        let state = json!({"status": "error", "input": object_or_empty(input), "error": message,
                           "metadata": {}, "startedAt": now, "completedAt": now});
        self.push_tool_part(call_id, tool, state);
    }

    fn push_tool_part(&mut self, call_id: &str, tool: &str, state: Value) {
        self.resident(|resident| {
            resident.active_tools.retain(|tool| tool["toolCallId"] != call_id)
        });
        let part = super::super::messages::part(
            &self.start.session_id,
            &self.assistant_id,
            json!({"type": "tool", "callId": call_id, "tool": tool, "state": state}),
        );
        self.parts.push(part);
    }
}

/// What `ask_permission` needs about the call.
pub(super) struct PermissionRequest<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
    pub reason: &'a str,
    pub risk: &'a str,
    pub options: Value,
    pub row: u64,
}

/// Tool states keep `input` as an object.
fn object_or_empty(input: &Value) -> Value {
    if input.is_object() { input.clone() } else { json!({}) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_decide_who_asks() {
        assert_eq!(policy("yolo", "Bash"), Policy::Run);
        assert_eq!(policy("build", "Bash"), Policy::Ask);
        assert_eq!(policy("guarded", "Write"), Policy::Ask);
        assert_eq!(policy("edit", "Write"), Policy::Run);
        assert_eq!(policy("edit", "Bash"), Policy::Ask);
        assert_eq!(policy("plan", "Write"), Policy::RefuseInPlan);
        assert_eq!(policy("plan", "Read"), Policy::Run);
    }

    #[test]
    fn the_default_options_carry_their_responses() {
        let options = permission_options("Bash", &json!({"command": "printf 'A' > probe-a.txt"}));
        assert_eq!(options[0]["response"]["decision"], "allow");
        assert_eq!(options[1]["kind"], "allow_always");
        // The rule the live record [B] shows, member for member.
        assert_eq!(
            options[1]["response"]["permissionUpdates"][0]["rules"][0],
            json!({"ruleContent": "printf 'A' > probe-a.txt", "toolName": "Bash"})
        );
        let write = permission_options("Write", &json!({"file_path": "a.txt"}));
        assert_eq!(
            write[1]["response"]["permissionUpdates"][0]["rules"][0],
            json!({"toolName": "Write"})
        );
        assert_eq!(options[2]["response"]["decision"], "deny");
    }
}
