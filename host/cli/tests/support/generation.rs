//! Which ZCode protocol generation the suite runs against (`ZCODE_ACP_E2E_SIMULATE_VERSION`),
//! and what differs between generations where a test checks a ZCode fact rather than the core.
//!
//! A test about the core (scenarios, fail-closed rules, the wire) runs on every generation and
//! asks this module only for the facts it needs (mode ids, form fields, result vocabulary). A
//! test about one generation's simulator switches (3.11's host faults, its sign-in gate) says
//! why it does not apply elsewhere and skips visibly with [`skip_unless`].

use serde_json::Value;

use super::simulated_release;

/// A protocol generation of ZCode, as the simulator plays it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// ZCode 3.11.2's host service over the task protocol (the default).
    Task311,
    /// ZCode 3.12.3's host service.
    Task312,
    /// The Agent a Desktop 3.14–4.0 bundles (`zcode.cjs app-server --stdio`).
    AppServer,
    /// The runtime archives' Services Server.
    Services,
}

/// The generation of the release under test.
pub fn generation() -> Generation {
    match simulated_release() {
        None | Some("3.11.2") => Generation::Task311,
        Some("3.12.3") => Generation::Task312,
        Some(name) if name.starts_with("desktop-") => Generation::AppServer,
        Some(name) if name.starts_with("runtime-") => Generation::Services,
        Some(other) => panic!("ZCODE_ACP_E2E_SIMULATE_VERSION names no known release: {other}"),
    }
}

/// The app version of the release under test (`3.18.2` for `desktop-3.18.2`).
pub fn app_version() -> &'static str {
    let release = simulated_release().unwrap_or("3.11.2");
    release.rsplit('-').next().unwrap_or(release)
}

/// Whether the release's app version is at least `major.minor`.
pub fn at_least(major: u64, minor: u64) -> bool {
    let mut parts = app_version().split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}

/// The task-protocol host generations (3.11.2, 3.12.3): the simulator's host switches apply.
pub fn is_host() -> bool {
    matches!(generation(), Generation::Task311 | Generation::Task312)
}

/// Runs the rest of a test only where `applies`; elsewhere it says on stderr which test was
/// skipped for which release and why (`cargo test -- --nocapture` shows it), and returns false.
pub fn skip_unless(test: &str, applies: bool, why: &str) -> bool {
    if !applies {
        eprintln!("SKIPPED {test} on {}: {why}", simulated_release().unwrap_or("3.11.2 (default)"));
    }
    applies
}

/// The ACP mode ids a new session offers.
pub fn mode_ids() -> Vec<&'static str> {
    let mut modes = vec!["build", "edit", "plan", "yolo"];
    if generation() == Generation::AppServer && at_least(3, 15) {
        modes.push("guarded");
    }
    modes
}

/// The slash command every simulated workspace offers.
pub fn a_slash_command() -> &'static str {
    match generation() {
        Generation::AppServer => "compact",
        _ => "review",
    }
}

/// Native result types of `sim:end <type>` and the ACP stop reasons they map to.
pub fn result_types() -> Vec<(&'static str, &'static str)> {
    match generation() {
        // `turn.completed.resultType` is a closed enum (3.15.1 `zcode-protocol/index.ts`).
        Generation::AppServer => vec![
            ("error_max_budget", "max_tokens"),
            ("error_max_turns", "max_turn_requests"),
            ("error_max_tool_calls", "max_turn_requests"),
            ("success", "end_turn"),
        ],
        _ => vec![
            ("max_tokens", "max_tokens"),
            ("refusal", "refusal"),
            ("max_turn_requests", "max_turn_requests"),
            ("success", "end_turn"),
        ],
    }
}

/// The simulator's local models only: the Desktop Agent lists its account (Coding Plan) models
/// after an account push, which zcode-acp does not make (README, Honest limits).
pub fn one_local_model() -> bool {
    generation() == Generation::AppServer
}

/// The properties of a form's `requestedSchema`, in the order the form lists them.
pub fn form_fields(params: &Value) -> Vec<(String, Value)> {
    params["requestedSchema"]["properties"]
        .as_object()
        .map(|props| props.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// The form field that offers `choice` as one of its constants (`oneOf` or `items.anyOf`).
pub fn field_offering(params: &Value, choices: &[&str]) -> Option<(String, String)> {
    form_fields(params).into_iter().find_map(|(name, field)| {
        let offered = field["oneOf"].as_array().or_else(|| field["items"]["anyOf"].as_array())?;
        choices.iter().find_map(|choice| {
            offered
                .iter()
                .any(|c| c["const"] == *choice)
                .then(|| (name.clone(), choice.to_string()))
        })
    })
}

/// What approves a plan in a plan-approval form (3.11 host: `allow-plan`, the Agent: `approve`).
pub const PLAN_APPROVE: [&str; 2] = ["allow-plan", "approve"];
/// What keeps it from going ahead (3.11 host: `deny-plan`, the Agent: keep planning).
pub const PLAN_REJECT: [&str; 2] = ["deny-plan", "revise"];
