//! The Agent's reverse requests (permission, user input, provider headers) as ACP interactions,
//! and their answers: over V4 `resolveInteraction` where the release races the reverse request
//! with it, else as the reply; each asked once, answered once.

use serde_json::{Value, json};
use zcode_contract::{
    Action, Effects, ErrorKind, Interaction, InteractionAnswer, InteractionRequest, MapperError,
    NativeReply, NativeWrite, Outgoing, PermissionRequest, ReplyBody, Step, Terminal,
};
use zcode_mapper_sdk::json::protocol;

use super::{AppServerSession, Op, done, request, wait};
use crate::interactions::{self, Pending};
use crate::wire::{self, native_value};

impl AppServerSession {
    pub(super) fn answer(
        &mut self,
        op_id: u64,
        answer: &InteractionAnswer,
        first: u64,
    ) -> Result<Step, MapperError> {
        let pending = self
            .interactions
            .get_mut(&answer.key)
            .ok_or_else(|| protocol(format!("No ZCode interaction {}", answer.key)))?;
        if pending.answered {
            return Err(protocol(format!("ZCode interaction {} was answered already", answer.key)));
        }
        pending.answered = true;
        let pending = pending.clone();
        let native_answer = interactions::answer(&pending.kind, &answer.outcome)?;
        let sid = self.sid()?.to_string();
        // Both paths reach the same ZCode request and the first answer wins; only one is sent.
        if self.profile.v4_resolve_interaction && self.v4.active() && !native_answer.v4.is_null() {
            let payload = json!({"interactionId": pending.request_id, "answer": native_answer.v4});
            let command = self.v4.command(&sid, "resolveInteraction", payload, first);
            self.ops.insert(
                op_id,
                Op::Answer { key: answer.key.clone(), answer: native_answer, v4: true },
            );
            return Ok(wait(vec![request(first, "v4/command", command)]));
        }
        let write = interactions::reply_write(&pending, &native_answer);
        self.ops.insert(
            op_id,
            Op::Answer { key: answer.key.clone(), answer: native_answer, v4: false },
        );
        Ok(Step::Wait(Outgoing { writes: vec![write], ..Outgoing::default() }))
    }

    /// The answer's reply: V4 took it, or the reverse request is answered, once.
    pub(super) fn answer_replied(
        &mut self,
        op_id: u64,
        (key, answer, v4): (String, interactions::Answer, bool),
        reply: Option<&NativeReply>,
    ) -> Result<Step, MapperError> {
        if !v4 {
            return Ok(done(json!({}), Vec::new()));
        }
        let accepted = reply.and_then(|r| match &r.body {
            ReplyBody::Ok(data) => native_value(data.as_text().unwrap_or(""), "v4/command").ok(),
            _ => None,
        });
        let status = accepted.as_ref().and_then(|a| a.get("status")).and_then(Value::as_str);
        // Accepted, or `noop` (already resolved): ZCode has its answer. Anything else
        // and the reverse request is still waiting: answer it there, once.
        if matches!(status, Some("accepted" | "noop" | "duplicate")) {
            return Ok(done(json!({}), Vec::new()));
        }
        let pending =
            self.interactions.get(&key).ok_or_else(|| protocol("answered interaction vanished"))?;
        let write = interactions::reply_write(pending, &answer);
        self.ops.insert(op_id, Op::Answer { key, answer, v4: false });
        Ok(Step::Wait(Outgoing { writes: vec![write], ..Outgoing::default() }))
    }

    pub(super) fn reverse_request(
        &mut self,
        id: Value,
        method: &str,
        params: &Value,
        effects: &mut Effects,
    ) {
        let outcome = match method {
            "interaction/requestPermission" => self.permission(id.clone(), params, effects),
            "interaction/requestUserInput" => self.user_input(id.clone(), params, effects),
            "interaction/requestProviderRuntimeHeaders" => {
                interactions::provider_headers(&id, params).map(|write| {
                    effects.writes.push(write);
                    effects
                        .actions
                        .push(Action::Ignore("provider runtime headers answered".to_string()));
                })
            }
            other => {
                // Never silence: ZCode gets an error, and the turn fails saying what was asked.
                effects.writes.push(NativeWrite::new(
                    "unknown request",
                    wire::error_reply(&id, -32601, &format!("zcode-acp does not serve {other}")),
                ));
                effects.actions.push(Action::Terminal(Terminal::Broken(MapperError::new(
                    ErrorKind::Unsupported,
                    format!("ZCode asked zcode-acp for {other}, which it does not know"),
                ))));
                Ok(())
            }
        };
        if let Err(error) = outcome {
            effects.writes.push(NativeWrite::new(
                "malformed request",
                wire::error_reply(&id, -32602, &error.message),
            ));
            effects.actions.push(Action::Terminal(Terminal::Broken(error)));
        }
    }

    /// A repeat of a known interaction: newest id kept, nothing asked twice.
    pub(super) fn reannounce(&mut self, key: &str, id: &Value, effects: &mut Effects) -> bool {
        match self.interactions.get_mut(key) {
            Some(pending) => {
                pending.reverse_id = id.clone();
                effects.actions.push(Action::Ignore("re-announced interaction".to_string()));
                true
            }
            None => false,
        }
    }

    pub(super) fn permission(
        &mut self,
        id: Value,
        params: &Value,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        let request_id = params.get("requestId").and_then(Value::as_str).unwrap_or_default();
        let key = format!("permission:{request_id}");
        if self.reannounce(&key, &id, effects) {
            return Ok(());
        }
        let tool_call =
            params.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
        let input = self.tools.input(&tool_call).cloned();
        let (pending, request, deny) =
            interactions::permission(&id, params, &self.workspace, input.as_ref())?;
        if !self.running || self.cancelled {
            // After a stop ZCode may keep asking while it winds down: deny, never ask.
            let answer = interactions::answer(
                &pending.kind,
                &zcode_contract::InteractionOutcome::Unavailable("no running turn".into()),
            )?;
            effects.writes.push(interactions::reply_write(&pending, &answer));
            effects
                .actions
                .push(Action::Ignore("permission outside a running turn denied".to_string()));
            self.interactions.insert(key, Pending { answered: true, ..pending });
            return Ok(());
        }
        self.tools.set(
            &tool_call,
            params.get("toolName").and_then(Value::as_str),
            params.get("input"),
        );
        if let Some(announce) = self.tools.announce(&tool_call, &self.workspace) {
            effects.actions.push(Action::Update(announce));
        }
        self.interactions.insert(key.clone(), pending);
        effects.actions.push(Action::Interaction(Interaction {
            key,
            request: InteractionRequest::Permission(PermissionRequest {
                request: interactions::request_text(&request),
                deny_option: deny,
            }),
        }));
        Ok(())
    }

    pub(super) fn user_input(
        &mut self,
        id: Value,
        params: &Value,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        let request_id = params.get("requestId").and_then(Value::as_str).unwrap_or_default();
        let key = format!("input:{request_id}");
        if self.reannounce(&key, &id, effects) {
            return Ok(());
        }
        // Without forms, the SDK's fallback: a permission, or a decline the model reads.
        let (pending, asked) = interactions::user_input(&id, params, self.forms)?;
        let request = if !self.running || self.cancelled {
            InteractionRequest::Headless(
                "ZCode asked a question outside a running turn".to_string(),
            )
        } else {
            asked
        };
        self.interactions.insert(key.clone(), pending);
        effects.actions.push(Action::Interaction(Interaction { key, request }));
        Ok(())
    }
}
