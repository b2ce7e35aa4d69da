//! What each scenario step becomes in the V4 conversation: streaming text and reasoning rows,
//! tool calls with permission interactions, questions, plan approval, the plan (todos),
//! titles and usage.

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Turn;
use crate::common::clock::now_ms;
use crate::common::scenario::{
    Action, Condition, Permission, PlanApproval, PlanSource, Question, ToolCall,
    default_permission_options,
};
use crate::common::turn::{
    Halt, PLAN_QUESTION, StepResult, Verdict, answers_summary, auto_approved, failed, new_call_id,
    output_text, plan_questions,
};
use crate::services::conversation::{Batch, Expect, Key, PermissionRecord, Waiting};
use crate::services::fault::Fault;
use crate::v4;

/// Deltas per frame of a bulk `stream` step.
const STREAM_BATCH: u64 = 1024;
/// AskUserQuestion's hidden grace before its countdown shows (the simulator never fires it).
const AUTO_RESOLUTION_GRACE_MS: u64 = 60_000;

impl Turn {
    pub(super) async fn step(&mut self, action: Action) -> StepResult {
        match action {
            Action::Text(chunks) => self.stream_rows("assistantText", chunks).await,
            Action::Reasoning(chunks) => self.stream_rows("reasoning", chunks).await,
            Action::Stream { count, chunk } => self.bulk_stream(count, &chunk).await,
            Action::Tool(call) => self.tool(*call).await,
            Action::Question(question) => self.question(question).await,
            Action::PlanApproval(plan) => self.plan_approval(plan).await,
            Action::Todos(todos) => {
                self.update(&[Key::Plan], |conversation| {
                    conversation.record.plan = v4::zone::plan(&todos, now_ms());
                });
                Ok(())
            }
            Action::Title(title) => {
                self.update(&[Key::Meta], |conversation| {
                    conversation.record.title = title;
                    conversation.record.title_source = "generated".into();
                });
                Ok(())
            }
            // The Services Server supplies provider headers itself; nothing reaches the client.
            Action::ProviderHeaders { .. } => {
                self.last_outcome = Some(Condition::Allowed);
                Ok(())
            }
            Action::Sleep(duration) => self.interrupt.sleep(duration).await,
            Action::Stall => {
                self.interrupt.stopped().await;
                Err(Halt::Cancelled)
            }
            Action::Event(delta) => {
                self.publish(|_, batch| batch.push(delta));
                Ok(())
            }
            // Session events have no V4 counterpart.
            Action::SessionEvent { .. } => Ok(()),
            Action::Usage(usage) => {
                self.usage_override = usage;
                Ok(())
            }
            Action::End(result) => Err(Halt::Completed(result)),
            Action::Fail(message) => Err(failed("ModelError", message)),
            Action::Fault(kind) => match Fault::from_scenario(kind) {
                Some(fault) => self.fire(fault),
                None => Ok(()),
            },
        }
    }

    /// Changes the conversation and sends the patched keys.
    fn update(
        &self,
        keys: &[Key],
        change: impl FnOnce(&mut crate::services::conversation::Conversation),
    ) {
        let mut conversation = self.conversation();
        change(&mut conversation);
        let mut batch = Batch::default();
        conversation.patch(&mut batch, keys);
        conversation.commit_with(batch, |conversation| self.server.persist(conversation));
    }

    fn open_row(&mut self, kind: &str) -> u64 {
        let model = json!(self.conversation().record.config.model_id);
        let entity = format!("{kind}:{}", uuid::Uuid::new_v4().simple());
        let id = self.publish(|conversation, batch| {
            self.rows.open_text(&mut conversation.publisher, batch, (kind, entity), Some(model))
        });
        self.open_rows.push(id);
        id
    }

    fn close_row(&mut self, row: u64, started: u64) {
        self.publish(|conversation, batch| {
            v4::turn::close_text(&mut conversation.publisher, batch, row, started)
        });
        self.open_rows.retain(|open| *open != row);
    }

    /// A text or reasoning row: opened empty, grown by `row.delta`s, then completed. The
    /// `stream` fault point sits in the middle.
    async fn stream_rows(&mut self, kind: &str, chunks: Vec<String>) -> StepResult {
        let row = self.open_row(kind);
        let started = now_ms();
        let middle = chunks.len().saturating_sub(1) / 2;
        for (index, chunk) in chunks.iter().enumerate() {
            self.interrupt.check()?;
            if index > 0
                && let Some(delay) = self.server.options.chunk_delay
            {
                self.interrupt.sleep(delay).await?;
            }
            self.publish(|conversation, batch| conversation.stream_row(batch, row, "text", chunk));
            let chars = chunk.chars().count() as u64;
            if kind == "reasoning" {
                self.counts.reasoning_chars += chars;
            } else {
                self.counts.output_chars += chars;
            }
            if index == middle {
                self.fault_point("stream").await?;
            }
            tokio::task::yield_now().await;
        }
        self.close_row(row, started);
        Ok(())
    }

    /// `count` deltas of one chunk, [`STREAM_BATCH`] per frame, pausing while the reader
    /// falls behind (a stop still ends it at once).
    async fn bulk_stream(&mut self, count: u64, chunk: &str) -> StepResult {
        let row = self.open_row("assistantText");
        let started = now_ms();
        let middle = count.saturating_sub(1) / 2 + 1;
        let mut emitted = 0;
        while emitted < count {
            self.interrupt.check()?;
            tokio::select! {
                () = self.server.out.drain_below_limit() => {}
                () = self.interrupt.stopped() => return Err(Halt::Cancelled),
            }
            let limit = if emitted < middle { middle } else { count };
            let end = limit.min(emitted + STREAM_BATCH);
            self.publish(|conversation, batch| {
                for _ in emitted..end {
                    conversation.stream_row(batch, row, "text", chunk);
                }
            });
            self.counts.output_chars += (end - emitted) * chunk.chars().count() as u64;
            emitted = end;
            if emitted == middle {
                self.fault_point("stream").await?;
            }
            tokio::task::yield_now().await;
        }
        self.close_row(row, started);
        Ok(())
    }

    /// A tool row streams its input, may wait for a permission, runs, and ends `success`,
    /// `error` or `cancelled`.
    async fn tool(&mut self, call: ToolCall) -> StepResult {
        self.fault_point("tool").await?;
        let call_id = call.call_id.clone().unwrap_or_else(new_call_id);
        let row = self.announce_tool(&call_id, &call.name, &call.input, call.input_chunks);
        let guarded = self.conversation().record.config.mode == "guarded";
        let permission = call.permission.clone().or_else(|| {
            // `guarded` asks before every tool (a simulator choice; the rule is not public).
            guarded.then(|| Permission {
                reason: format!("Run {}", call.name),
                risk: "medium".into(),
                options: default_permission_options(&call.name),
            })
        });
        let mut input = call.input.clone();
        if let Some(permission) = permission {
            if self.auto_allowed(&call.name) {
                self.last_outcome = Some(Condition::Allowed);
            } else {
                match self
                    .ask_permission(row, &call_id, &call.name, &input, &permission, "permission")
                    .await
                {
                    Ok(verdict) if verdict.allowed => input = verdict.input.unwrap_or(input),
                    Ok(_) => {
                        self.end_tool(
                            row,
                            Err(("permissionDenied", "Permission denied by the user".into())),
                        );
                        return Ok(());
                    }
                    Err(halt) => return self.cancel_tool(row, halt),
                }
            }
        }
        self.run_tool(row, &input);
        for progress in &call.progress {
            if let Err(halt) = self.interrupt.check() {
                return self.cancel_tool(row, halt);
            }
            let message = progress.get("message").and_then(Value::as_str);
            self.publish(|conversation, batch| {
                v4::turn::tool_progress(&mut conversation.publisher, batch, row, message)
            });
            tokio::task::yield_now().await;
        }
        let result = call.result(&self.workspace).map_err(|message| ("toolError", message));
        self.end_tool(row, result);
        Ok(())
    }

    fn announce_tool(&mut self, call_id: &str, name: &str, input: &Value, chunks: usize) -> u64 {
        self.counts.output_chars += input.to_string().chars().count() as u64;
        self.publish(|conversation, batch| {
            let log = &mut conversation.publisher;
            self.rows.announce_tool(log, batch, call_id, name, input, chunks)
        })
    }

    fn run_tool(&mut self, row: u64, input: &Value) {
        self.publish(|conversation, batch| {
            if let Some(turn) = conversation.turn.as_mut() {
                turn.tool_running = true;
            }
            v4::turn::run_tool(&mut conversation.publisher, batch, row, input);
            conversation.patch(batch, &[Key::Control]);
        });
    }

    fn end_tool(&mut self, row: u64, result: Result<Value, (&str, String)>) {
        // The tool's result goes back to the model in a request of its own.
        self.counts.model_requests += 1;
        let text = result.as_ref().map(output_text);
        let result = match &text {
            Ok(text) => Ok(text.as_str()),
            Err((code, message)) => Err((*code, message.as_str())),
        };
        self.publish(|conversation, batch| {
            let was_running = conversation
                .turn
                .as_mut()
                .is_some_and(|turn| std::mem::replace(&mut turn.tool_running, false));
            v4::turn::end_tool(&mut conversation.publisher, batch, row, result);
            if was_running {
                conversation.patch(batch, &[Key::Control]);
            }
        });
    }

    /// A stop while the tool waited or ran: the row ends `cancelled`, then the turn.
    fn cancel_tool(&mut self, row: u64, halt: Halt) -> StepResult {
        if let Halt::Cancelled = halt {
            self.publish(|conversation, batch| {
                if let Some(turn) = conversation.turn.as_mut() {
                    turn.tool_running = false;
                }
                v4::turn::cancel_tool(&mut conversation.publisher, batch, row);
            });
        }
        Err(halt)
    }

    /// The session's mode approves the tool without asking (Plan is the planning flag).
    fn auto_allowed(&self, tool: &str) -> bool {
        let conversation = self.conversation();
        let (record, config) = (&conversation.record, &conversation.record.config);
        let always = record.always_allowed.contains(tool);
        auto_approved(&config.mode, config.plan_enabled, always, tool)
    }

    /// Opens an interaction, points the tool row at it and waits for the answer or a stop.
    async fn interact(
        &mut self,
        row: u64,
        interaction: Value,
        expect: Expect,
        point: &str,
    ) -> Result<Value, Halt> {
        let id = interaction["interactionId"].as_str().unwrap_or_default().to_owned();
        let (reply, answer) = oneshot::channel();
        {
            let mut conversation = self.conversation();
            conversation.pending.push(interaction.clone());
            conversation.waiting.insert(id.clone(), Waiting { expect, reply });
            let mut batch = Batch::default();
            if interaction["kind"] == "permission" {
                v4::turn::await_approval(&mut conversation.publisher, &mut batch, row, &id);
            }
            conversation.patch(&mut batch, &[Key::Pending]);
            conversation.commit(batch);
        }
        self.fault_point(point).await?;
        let answer = tokio::select! {
            // An answer that came before the stop is taken first: the user's decision counts.
            biased;
            answer = answer => answer.map_err(|_| Halt::Cancelled),
            () = self.interrupt.stopped() => Err(Halt::Cancelled),
        };
        let mut conversation = self.conversation();
        let before = conversation.pending.len();
        conversation.pending.retain(|pending| pending["interactionId"] != id.as_str());
        if conversation.pending.len() != before {
            conversation.publish(&[Key::Pending]);
        }
        answer
    }

    async fn ask_permission(
        &mut self,
        row: u64,
        call_id: &str,
        tool: &str,
        detail: &Value,
        permission: &Permission,
        point: &str,
    ) -> Result<Verdict, Halt> {
        let options = v4_options(tool, &permission.options);
        let option_ids = options
            .iter()
            .filter_map(|option| option["optionId"].as_str().map(str::to_owned))
            .collect();
        let interaction = v4::pending::interaction(
            &format!("perm_{}", uuid::Uuid::new_v4().simple()),
            "permission",
            row,
            json!({"toolCallId": call_id, "toolName": tool, "summary": permission.reason,
                   "detail": detail, "options": options}),
        );
        let interaction_id = interaction["interactionId"].as_str().unwrap_or_default().to_owned();
        self.conversation()
            .record
            .permissions
            .push(PermissionRecord { interaction_id: interaction_id.clone(), answers: Vec::new() });
        let answer =
            self.interact(row, interaction, Expect::Permission { option_ids }, point).await?;
        let declined = matches!(answer["action"].as_str(), Some("decline" | "cancel"));
        // An option id nobody offered counts as a denial.
        let option = answer["optionId"]
            .as_str()
            .and_then(|id| options.iter().find(|option| option["optionId"] == id));
        let response = option.map(|option| option["response"].clone()).unwrap_or(Value::Null);
        let verdict = Verdict::of(&response, declined);
        self.conversation().record.permission_answered(&interaction_id, &verdict.decision);
        if verdict.allowed && verdict.remember {
            self.conversation().record.always_allowed.insert(tool.to_owned());
        }
        let allowed = verdict.allowed;
        self.last_outcome = Some(if allowed { Condition::Allowed } else { Condition::Denied });
        Ok(verdict)
    }

    fn user_input_interaction(&self, row: u64, call_id: &str, mut payload: Value) -> Value {
        payload["toolCallId"] = json!(call_id);
        let id = format!("input_{}", uuid::Uuid::new_v4().simple());
        let mut interaction = v4::pending::interaction(&id, "userInput", row, payload);
        let now = interaction["createdAt"].as_u64().unwrap_or_else(now_ms);
        if self.conversation().ask_auto_resolution && payload_is_question(&interaction) {
            interaction["autoResolution"] = json!({"state": "hiddenGrace", "startedAt": now,
                "visibleAt": now + AUTO_RESOLUTION_GRACE_MS, "deadlineAt": now + 2 * AUTO_RESOLUTION_GRACE_MS});
        }
        interaction
    }

    pub(super) async fn question(&mut self, question: Question) -> StepResult {
        let call_id = question.call_id.clone().unwrap_or_else(new_call_id);
        let tool = "AskUserQuestion";
        let input = json!({"questions": question.questions});
        let row = self.announce_tool(&call_id, tool, &input, 1);
        self.run_tool(row, &input);
        let payload = json!({"prompt": question.prompt.clone().unwrap_or_default(), "freeText": false,
                             "toolName": tool, "input": input, "questions": question.questions});
        let interaction = self.user_input_interaction(row, &call_id, payload);
        let answer = match self.interact(row, interaction, Expect::UserInput, "question").await {
            Ok(answer) => answer,
            Err(halt) => return self.cancel_tool(row, halt),
        };
        let (accepted, content) = accepted_content(&answer);
        if accepted {
            self.last_outcome = Some(Condition::Allowed);
            self.end_tool(row, Ok(json!({"content": answers_summary(&content)})));
        } else {
            self.last_outcome = Some(Condition::Denied);
            let action = answer["action"].as_str().unwrap_or("decline").to_owned();
            self.end_tool(
                row,
                Err(("userDeclined", format!("The user did not answer ({action})"))),
            );
        }
        Ok(())
    }

    pub(super) async fn plan_approval(&mut self, plan: PlanApproval) -> StepResult {
        let call_id = new_call_id();
        let tool = "ExitPlanMode";
        let input = json!({"plan": plan.plan});
        let row = self.announce_tool(&call_id, tool, &input, 2);
        let approved = match plan.source {
            PlanSource::Permission => {
                let permission = Permission {
                    reason: plan.reason.clone(),
                    risk: "medium".into(),
                    options: vec![
                        json!({"optionId": "allow-plan", "kind": "allow_once", "name": "Approve",
                               "response": {"decision": "allow"}}),
                        json!({"optionId": "deny-plan", "kind": "reject_once", "name": "Keep planning",
                               "response": {"decision": "deny"}}),
                    ],
                };
                match self
                    .ask_permission(row, &call_id, tool, &json!(plan.plan), &permission, "plan")
                    .await
                {
                    Ok(verdict) => verdict.allowed,
                    Err(halt) => return self.cancel_tool(row, halt),
                }
            }
            PlanSource::UserInput => {
                self.run_tool(row, &input);
                let payload = json!({
                    "prompt": PLAN_QUESTION, "freeText": false, "toolName": tool, "input": input,
                    "schema": {"interaction": "plan_approval"}, "questions": plan_questions(),
                });
                let interaction = self.user_input_interaction(row, &call_id, payload);
                match self.interact(row, interaction, Expect::UserInput, "plan").await {
                    Ok(answer) => {
                        let (accepted, content) = accepted_content(&answer);
                        let selected = content["answer"]
                            .as_str()
                            .or_else(|| content["answer_0"].as_str())
                            .or_else(|| content["answers"][PLAN_QUESTION][0].as_str());
                        accepted && selected == Some("approve")
                    }
                    Err(halt) => return self.cancel_tool(row, halt),
                }
            }
        };
        self.last_outcome = Some(if approved { Condition::Allowed } else { Condition::Denied });
        if approved {
            if self.conversation().turn.as_ref().is_some_and(|turn| !turn.tool_running) {
                self.run_tool(row, &input);
            }
            self.end_tool(row, Ok(json!({"content": "User approved the plan"})));
            // Approving the plan ends Plan; the editing mode stays (independent plan state).
            if self.conversation().record.config.plan_enabled {
                self.update(&[Key::Config], |conversation| {
                    conversation.record.config.plan_enabled = false
                });
            }
        } else {
            self.end_tool(row, Err(("userRejected", "User rejected the plan".into())));
        }
        Ok(())
    }
}

fn payload_is_question(interaction: &Value) -> bool {
    interaction["payload"]["toolName"] == "AskUserQuestion"
}

/// `{action, content}`; an answer without `action` but with an option or free text counts as
/// accepted with that answer (the older optionId/freeText path).
fn accepted_content(answer: &Value) -> (bool, Value) {
    match answer["action"].as_str() {
        Some("accept") => (true, answer.get("content").cloned().unwrap_or_else(|| json!({}))),
        Some(_) => (false, Value::Null),
        None => match answer["optionId"].as_str().or_else(|| answer["freeText"].as_str()) {
            Some(choice) => (true, json!({"answer": choice})),
            None => (false, Value::Null),
        },
    }
}

/// The scenario's permission options in V4 form. The scenario language's default options get
/// the ids a real V4 host offers (`allowOnce`, `allowAlways`, `deny`).
fn v4_options(tool: &str, options: &[Value]) -> Vec<Value> {
    if options == default_permission_options(tool).as_slice() {
        let always = &options[1]["response"];
        return vec![
            json!({"optionId": "allowOnce", "label": "Allow once", "kind": "allowOnce", "response": {"decision": "allow"}}),
            json!({"optionId": "allowAlways", "label": "Always allow in this project", "kind": "allowAlways", "response": always}),
            json!({"optionId": "deny", "label": "Deny", "kind": "deny", "response": {"decision": "deny"}}),
        ];
    }
    options
        .iter()
        .map(|option| {
            let kind = match option["kind"].as_str() {
                Some("allow_once") => "allowOnce",
                Some("allow_always") => "allowAlways",
                Some("reject_once" | "reject_always") => "deny",
                _ => "custom",
            };
            json!({"optionId": option["optionId"], "label": option["name"], "kind": kind, "response": option["response"]})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_options_take_the_v4_ids() {
        let options = v4_options("Bash", &default_permission_options("Bash"));
        let ids: Vec<&str> =
            options.iter().map(|option| option["optionId"].as_str().unwrap()).collect();
        assert_eq!(ids, ["allowOnce", "allowAlways", "deny"]);
        assert!(options[1]["response"]["permissionUpdates"].is_array());
        let custom = v4_options(
            "X",
            &[
                json!({"optionId": "ok", "kind": "allow_once", "name": "OK", "response": {"decision": "allow"}}),
            ],
        );
        assert_eq!(
            custom[0],
            json!({"optionId": "ok", "label": "OK", "kind": "allowOnce", "response": {"decision": "allow"}})
        );
    }

    #[test]
    fn answers_without_action_use_the_option() {
        assert_eq!(
            accepted_content(&json!({"optionId": "approve"})),
            (true, json!({"answer": "approve"}))
        );
        assert!(!accepted_content(&json!({"action": "decline"})).0);
        assert!(!accepted_content(&json!({})).0);
    }
}
