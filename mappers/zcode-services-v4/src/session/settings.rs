//! Modes and config options: `switchCollaborationMode` / `switchModelConfig` (CAS commands),
//! and what the client is told once ZCode accepted one.
//!
//! The change is applied when ZCode accepts it, before its state shows it, so the answer
//! carries the new values; the ACK's revision marks it, and ZCode's state takes over again from
//! the first revision after it (`zcode_v4` `Settings::decided`, F-38).

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};

use crate::session::ServicesSession;
use crate::session::command::Command;
use crate::session::ops::{Finish, Next, bound, commands, done};
use zcode_mapper_sdk::acp::update;
use zcode_mapper_sdk::json::{invalid_params, parse};
use zcode_v4::acp::settings::{
    MODEL_OPTION, ModelChoice, PLAN_MODE, PLAN_OPTION, THOUGHT_LEVEL_OPTION, is_editing_mode,
    model_value,
};
use zcode_v4::follow::State;
use zcode_v4::schema::Fields;

/// The commands whose change [`applied`] makes before ZCode's state shows it.
pub(super) const COMMANDS: [&str; 2] = ["switchCollaborationMode", "switchModelConfig"];

/// A settings change ZCode accepted, to apply and tell the client.
pub(super) enum Change {
    Mode { mode: String, plan: bool, option_response: bool },
    Thought { level: String },
    Model { choice: ModelChoice, thought: String },
}

pub(super) fn set_mode(session: &mut ServicesSession, params: &str) -> Result<Next, MapperError> {
    let params = parse(params, ErrorKind::InvalidParams, "session/set_mode params")?;
    let mode = Fields::acp(&params, "session/set_mode params")?.str("modeId")?.to_string();
    if mode != PLAN_MODE && !is_editing_mode(&mode) {
        return Err(invalid_params(format!("Unknown ZCode mode: {mode}")));
    }
    bound(session)?;
    let plan = mode == PLAN_MODE;
    mode_commands(session, mode, plan, false)
}

fn mode_commands(
    session: &mut ServicesSession,
    mode: String,
    plan: bool,
    option_response: bool,
) -> Result<Next, MapperError> {
    let id = session.follow.state.command_id();
    let steps = vec![Command::new("switchCollaborationMode", json!({"mode": mode}), id)];
    commands(session, steps, Finish::Settings(Change::Mode { mode, plan, option_response }))
}

pub(super) fn set_config_option(
    session: &mut ServicesSession,
    params: &str,
) -> Result<Next, MapperError> {
    let params = parse(params, ErrorKind::InvalidParams, "session/set_config_option params")?;
    let fields = Fields::acp(&params, "session/set_config_option params")?;
    let config_id = fields.str("configId")?;
    let kind = fields.opt_str("type")?;
    let value = fields.get("value");
    bound(session)?;
    let config = session.follow.state.settings.config.clone().unwrap_or_default();
    match config_id {
        PLAN_OPTION => {
            let (Some("boolean"), Some(Value::Bool(on))) = (kind, value) else {
                return Err(invalid_params("zcode.plan takes a boolean value"));
            };
            let mode = if *on {
                PLAN_MODE.to_string()
            } else {
                session.follow.state.settings.editing_mode()
            };
            mode_commands(session, mode, *on, true)
        }
        MODEL_OPTION | THOUGHT_LEVEL_OPTION if kind.is_none_or(|kind| kind == "value_id") => {
            let value = match value {
                Some(Value::String(value)) => value.clone(),
                other => other.map_or_else(|| "<missing>".to_string(), Value::to_string),
            };
            if config_id == MODEL_OPTION {
                if value == model_value(&config.provider, &config.model) && !config.model.is_empty()
                {
                    let options = session.follow.state.settings.config_options();
                    return Ok(done(json!({"configOptions": options}), Vec::new()));
                }
                let Some(choice) = (session.follow.state.settings.models.iter())
                    .find(|m| model_value(&m.provider, &m.model) == value)
                    .cloned()
                else {
                    return Err(invalid_params(format!("Unknown ZCode model: {value}")));
                };
                let thought = choice.thought_for(&config.thought);
                let payload =
                    json!({"provider": choice.provider, "model": choice.model, "thought": thought});
                let id = session.follow.state.command_id();
                return commands(
                    session,
                    vec![Command::new("switchModelConfig", payload, id)],
                    Finish::Settings(Change::Model { choice, thought }),
                );
            }
            if !config.thought_levels.contains(&value) {
                return Err(invalid_params(format!("Unknown thought level: {value}")));
            }
            let payload =
                json!({"provider": config.provider, "model": config.model, "thought": value});
            let id = session.follow.state.command_id();
            commands(
                session,
                vec![Command::new("switchModelConfig", payload, id)],
                Finish::Settings(Change::Thought { level: value }),
            )
        }
        _ => Err(invalid_params(format!("Unknown config option: {config_id}"))),
    }
}

/// Applies an accepted change: the answer to the client's request, with its updates.
pub(super) fn applied(state: &mut State, change: Change) -> Result<Next, MapperError> {
    Ok(match change {
        Change::Mode { mode, plan, option_response } => {
            let config = state.settings.config.get_or_insert_with(Default::default);
            let was_planning = config.plan_enabled == Some(true) || config.mode == PLAN_MODE;
            if plan {
                config.plan_enabled = Some(true);
            } else {
                config.mode = mode;
                config.plan_enabled = Some(false);
            }
            let options = state.settings.config_options();
            let mut updates = vec![update::current_mode(&state.settings.current_mode()?)];
            if was_planning != plan || option_response {
                updates.push(update::config_options(&options));
            }
            state.settings.remember(&updates);
            let response =
                if option_response { json!({"configOptions": options}) } else { json!({}) };
            done(response, updates)
        }
        Change::Thought { level } => {
            if let Some(config) = &mut state.settings.config {
                config.thought = level;
            }
            let options = state.settings.config_options();
            let updates = vec![update::config_options(&options)];
            state.settings.remember(&updates);
            done(json!({"configOptions": options}), updates)
        }
        Change::Model { choice, thought } => {
            // Optimistic, as for the other settings: the next state update says what ZCode did.
            if let Some(config) = &mut state.settings.config {
                config.provider = choice.provider;
                config.model = choice.model;
                config.thought = thought;
                config.thought_levels =
                    choice.levels.iter().map(|(level, _)| level.clone()).collect();
            }
            for (level, label) in choice.levels {
                if !state.settings.thought_labels.iter().any(|(known, _)| *known == level) {
                    state.settings.thought_labels.push((level, label));
                }
            }
            let options = state.settings.config_options();
            let updates = vec![update::config_options(&options)];
            state.settings.remember(&updates);
            done(json!({"configOptions": options}), updates)
        }
    })
}
