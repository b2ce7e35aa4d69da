//! Modes and config options: what the session state says (model, thinking level, mode) as ACP
//! shows it, and switching them (V4 `switchCollaborationMode` / `switchModelConfig`, or the
//! legacy `session/setMode`, `session/setModel`, `session/setThoughtLevel`).

use serde_json::{Value, json};
use zcode_contract::{MapperError, NativeReply, Step};
use zcode_mapper_sdk::acp::update;
use zcode_mapper_sdk::json::{invalid_params, protocol};
use zcode_v4::command;

use super::{AppServerSession, Op, done, request, wait};
use crate::connection::ok_body;
use crate::releases;
use crate::wire::acp_params;

impl AppServerSession {
    pub(super) fn settings(&mut self, state: &Value) {
        if let Some(mode) = state.pointer("/settings/mode/current").and_then(Value::as_str) {
            self.mode = Some(mode.to_string());
        }
        if let Some(current) = state.pointer("/settings/model/current")
            && let (Some(p), Some(m)) = (
                current.get("providerId").and_then(Value::as_str),
                current.get("modelId").and_then(Value::as_str),
            )
        {
            self.model = Some((p.to_string(), m.to_string()));
        }
        if let Some(available) =
            state.pointer("/settings/model/available").and_then(Value::as_array)
        {
            self.models = available.clone();
        }
        let thought = state.pointer("/settings/thoughtLevel");
        if let Some(levels) = thought.and_then(|t| t.get("available")).and_then(Value::as_array) {
            self.thoughts = levels.clone();
        }
        if let Some(level) = thought
            .and_then(|t| t.get("current").or_else(|| t.get("defaultLevel")))
            .and_then(Value::as_str)
        {
            self.thought = Some(level.to_string());
        }
    }

    pub(super) fn modes(&self) -> Value {
        let available: Vec<Value> = releases::modes(self.profile)
            .iter()
            .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
            .collect();
        json!({"currentModeId": self.mode.as_deref().unwrap_or("build"), "availableModes": available})
    }

    pub(super) fn config_options(&self) -> Value {
        let mut options = Vec::new();
        let value = |p: &str, m: &str| format!("{p}/{m}");
        let models: Vec<Value> = self
            .models
            .iter()
            .filter_map(|m| {
                let p = m.pointer("/ref/providerId")?.as_str()?;
                let id = m.pointer("/ref/modelId")?.as_str()?;
                let mut option = json!({"value": value(p, id), "name": m.get("label").and_then(Value::as_str).unwrap_or(id)});
                if let Some(provider) = m.get("providerLabel").and_then(Value::as_str) {
                    option["description"] = json!(provider);
                }
                Some(option)
            })
            .collect();
        if let Some((p, m)) = &self.model {
            options.push(json!({"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": value(p, m), "options": models}));
        }
        let thoughts: Vec<Value> = self
            .thoughts
            .iter()
            .filter_map(|t| Some(json!({"value": t.get("value")?.as_str()?, "name": t.get("label").and_then(Value::as_str).or(t.get("value")?.as_str())?})))
            .collect();
        if let (Some(current), false) = (&self.thought, thoughts.is_empty()) {
            options.push(json!({"id": "thought_level", "name": "Thinking", "category": "thought_level", "type": "select", "currentValue": current, "options": thoughts}));
        }
        json!(options)
    }

    pub(super) fn set_mode_op(
        &mut self,
        op_id: u64,
        params: &str,
        first: u64,
    ) -> Result<Step, MapperError> {
        let params = acp_params(params)?;
        let mode = params
            .get("modeId")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params("modeId is missing"))?;
        self.set_mode(op_id, mode, first)
    }

    pub(super) fn set_config_option(
        &mut self,
        op_id: u64,
        params: &str,
        first: u64,
    ) -> Result<Step, MapperError> {
        let params = acp_params(params)?;
        let value = params
            .get("value")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params("value is missing"))?;
        match params.get("configId").and_then(Value::as_str) {
            Some("mode") => self.set_mode(op_id, value, first),
            Some("model") => {
                let (provider, model) = value
                    .split_once('/')
                    .ok_or_else(|| invalid_params(format!("Unknown model {value}")))?;
                if !self.models.iter().any(|m| {
                    m.pointer("/ref/providerId").and_then(Value::as_str) == Some(provider)
                        && m.pointer("/ref/modelId").and_then(Value::as_str) == Some(model)
                }) {
                    return Err(invalid_params(format!("Unknown model {value}")));
                }
                let thought = self.thought.clone();
                self.set_model(op_id, provider.to_string(), model.to_string(), thought, first)
            }
            Some("thought_level") => {
                let (provider, model) =
                    self.model.clone().ok_or_else(|| invalid_params("The session has no model"))?;
                if !self
                    .thoughts
                    .iter()
                    .any(|t| t.get("value").and_then(Value::as_str) == Some(value))
                {
                    return Err(invalid_params(format!("Unknown thinking level {value}")));
                }
                self.set_model(op_id, provider, model, Some(value.to_string()), first)
            }
            other => {
                Err(invalid_params(format!("Unknown config option {}", other.unwrap_or("(none)"))))
            }
        }
    }

    pub(super) fn set_mode(
        &mut self,
        op_id: u64,
        mode: &str,
        first: u64,
    ) -> Result<Step, MapperError> {
        if !releases::modes(self.profile).iter().any(|(id, _, _)| *id == mode) {
            return Err(invalid_params(format!("Unknown mode {mode}")));
        }
        let sid = self.sid()?.to_string();
        let v4 = self.v4.active() && self.v4.revision.is_some();
        self.ops.insert(op_id, Op::Mode { mode: mode.to_string(), legacy: !v4 });
        Ok(wait(vec![if v4 {
            request(
                first,
                "v4/command",
                self.v4.command(&sid, "switchCollaborationMode", json!({"mode": mode}), first),
            )
        } else {
            request(first, "session/setMode", json!({"sessionId": sid, "mode": mode}))
        }]))
    }

    pub(super) fn set_model(
        &mut self,
        op_id: u64,
        provider: String,
        model: String,
        thought: Option<String>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let sid = self.sid()?.to_string();
        let v4 = self.v4.active() && self.v4.revision.is_some() && thought.is_some();
        let step = if v4 {
            let payload = json!({"provider": provider, "model": model, "thought": thought});
            request(first, "v4/command", self.v4.command(&sid, "switchModelConfig", payload, first))
        } else {
            request(
                first,
                "session/setModel",
                json!({"sessionId": sid, "model": {"providerId": provider, "modelId": model}}),
            )
        };
        self.ops.insert(
            op_id,
            // Legacy: the thinking level follows the model only when it is what changes (a level
            // kept across a model switch may not exist for the new model).
            Op::Model {
                legacy_step: if v4 {
                    0
                } else if thought != self.thought {
                    1
                } else {
                    3
                },
                provider,
                model,
                thought,
            },
        );
        Ok(wait(vec![step]))
    }

    /// The answer to a mode switch: V4 refused (a lost race) retries without the revision guard.
    pub(super) fn mode_replied(
        &mut self,
        op_id: u64,
        mode: String,
        legacy: bool,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let reply = reply.ok_or_else(|| protocol("set-mode resumed without a reply"))?;
        let outcome = ok_body(&reply.body, "mode")
            .and_then(|body| if legacy { Ok(()) } else { command::switched(&body) });
        match outcome {
            Ok(()) => {
                // Announced already when ZCode's state change came before the answer.
                let updates = if self.mode.as_deref() == Some(mode.as_str()) {
                    Vec::new()
                } else {
                    let update = update::current_mode(&mode);
                    self.mode = Some(mode);
                    vec![update]
                };
                Ok(done(json!({}), updates))
            }
            // A V4 switch that lost a race with another change: the legacy call has no
            // revision guard.
            Err(_) if !legacy => {
                let sid = self.sid()?.to_string();
                self.ops.insert(op_id, Op::Mode { mode: mode.clone(), legacy: true });
                Ok(wait(vec![request(
                    first,
                    "session/setMode",
                    json!({"sessionId": sid, "mode": mode}),
                )]))
            }
            Err(error) => Err(error),
        }
    }

    /// The answer to a model or thinking-level switch (legacy: the level follows the model).
    pub(super) fn model_replied(
        &mut self,
        op_id: u64,
        (provider, model, thought, legacy_step): (String, String, Option<String>, u8),
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let reply = reply.ok_or_else(|| protocol("set-config-option resumed without a reply"))?;
        let body = ok_body(&reply.body, "model switch")?;
        if legacy_step == 0 {
            command::switched(&body)?;
        } else if legacy_step == 1
            && let Some(level) = &thought
        {
            {
                let sid = self.sid()?.to_string();
                self.ops.insert(
                    op_id,
                    Op::Model { provider, model, thought: thought.clone(), legacy_step: 2 },
                );
                return Ok(wait(vec![request(
                    first,
                    "session/setThoughtLevel",
                    json!({"sessionId": sid, "thoughtLevel": level}),
                )]));
            }
        }
        if let Some(state) = body.get("settings").map(|_| &body) {
            self.settings(state);
        } else {
            self.model = Some((provider, model));
            if thought.is_some() {
                self.thought = thought;
            }
        }
        let options = self.config_options();
        let update = update::config_options(&options);
        Ok(done(json!({"configOptions": options}), vec![update]))
    }
}
