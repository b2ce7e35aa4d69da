//! Which ZCode protocol generation the suite runs against (`ZCODE_ACP_E2E_SIMULATE_VERSION`),
//! the simulator's names (fault points) for what a test means in that generation, and the ZCode
//! facts that differ between generations (mode ids, form fields, result vocabulary).
//!
//! Most tests are about the core and hold for every generation; they ask this module only for
//! the facts they need. A test about one generation's own behaviour (a native method a fault is
//! armed at, a switch only one simulator has) asks [`applies`] or [`skip_unless`]: for the other
//! generations it says why it does not apply, visibly, and returns.

use std::io::Write;

use serde_json::Value;

use super::simulated_release;

/// ZCode's protocol generations, as the simulator plays them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// 3.11.2 / 3.12.3: the desktop host service behind a bridge script (`zcode-task-v1/v2`).
    HostBridge,
    /// Desktop 3.14–4.0: the Agent's `app-server` (`zcode-app-server`).
    AppServer,
    /// Runtime archives 3.14.3–4.0.0: the stdio Services Server (`zcode-services-v4`).
    ServicesServer,
}

/// The generation of [`simulated_release`]. A name the suite does not know fails the test
/// rather than running another generation.
pub fn generation() -> Generation {
    match simulated_release() {
        "3.11.2" | "3.12.3" => Generation::HostBridge,
        name if name.starts_with("desktop-") => Generation::AppServer,
        name if name.starts_with("runtime-") => Generation::ServicesServer,
        other => panic!("ZCODE_ACP_E2E_SIMULATE_VERSION names no known release: {other}"),
    }
}

/// The task-protocol host generations (3.11.2, 3.12.3): the host simulator's switches apply.
pub fn is_host() -> bool {
    generation() == Generation::HostBridge
}

/// The app version of the release under test (`3.18.2` for `desktop-3.18.2`).
pub fn app_version() -> &'static str {
    let release = simulated_release();
    release.rsplit('-').next().unwrap_or(release)
}

/// Whether the release's app version is at least `major.minor`.
pub fn at_least(major: u64, minor: u64) -> bool {
    let mut parts = app_version().split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}

/// Whether a test written for `generations` applies to the release under test. When it does
/// not, a line on the real stderr (not captured by the test harness) names the test's reason,
/// so a skip is never silent.
pub fn applies(generations: &[Generation], why_not: &str) -> bool {
    if generations.contains(&generation()) {
        return true;
    }
    skip(why_not);
    false
}

/// [`applies`] for a condition finer than a generation (a release, a switch).
pub fn skip_unless(test: &str, applies: bool, why_not: &str) -> bool {
    if !applies {
        skip(&format!("{test}: {why_not}"));
    }
    applies
}

/// Says on the real stderr that the running test does not apply to the release under test,
/// and why (the caller returns).
pub fn skip(why_not: &str) {
    let release = simulated_release();
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let current = generation();
    let _ = writeln!(std::io::stderr(), "skipped for {release} ({current:?}): {test}: {why_not}");
}

/// `<fault>@<point>` for `ZCODE_SIM_FAULT`, or `None` (and a visible skip) when the generation
/// has no such call.
pub fn fault_at(fault: &str, point: Point) -> Option<String> {
    match fault_point(point) {
        Some(name) => Some(format!("{fault}@{name}")),
        None => {
            skip(&format!("this generation has no {point:?} call to arm `{fault}` at"));
            None
        }
    }
}

/// What a fault point means, across generations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// The call that hands ZCode a prompt.
    SendPrompt,
    /// The call that answers a permission question.
    AnswerPermission,
    /// The call that stops a running turn.
    Stop,
    /// The call that changes the session's mode.
    SetMode,
    /// The call that opens (subscribes to) a session's events.
    Subscribe,
    /// The call that asks for a turn's token usage.
    Usage,
}

/// The simulator's fault point for `point` in the generation under test, or `None` where the
/// generation has no such call (e.g. the V4 state carries usage: no request asks for it).
pub fn fault_point(point: Point) -> Option<&'static str> {
    use Point::*;
    match generation() {
        Generation::HostBridge => Some(match point {
            SendPrompt => "sendPrompt",
            AnswerPermission => "respondPermission",
            Stop => "stopGeneration",
            SetMode => "setMode",
            Subscribe => "subscribe",
            Usage => "getTaskTokenUsage",
        }),
        // The Services Server's V4 commands are fault points of their own (their `type`).
        Generation::ServicesServer => match point {
            SendPrompt => Some("sendText"),
            AnswerPermission => Some("resolveInteraction"),
            Stop => Some("stop"),
            SetMode => Some("switchCollaborationMode"),
            Subscribe => Some("subscribeConversationV4"),
            Usage => None,
        },
        // Not mapped here yet: the app-server generation's tests name their own points.
        Generation::AppServer => None,
    }
}

/// The thought level a new session starts with, where the simulated release fixes one: 3.11.2's
/// default, and 3.12.3's last level of the model (ZCode's `projectAppModelOption`).
pub fn default_thought_level() -> Option<&'static str> {
    match app_version() {
        "3.11.2" => Some("medium"),
        "3.12.3" => Some("high"),
        _ => None,
    }
}

/// Whether plan mode survives loading the session in a new process. From 3.12.3 on, plan is a
/// flag that a native `resumeSession` turns off (docs/mapper-zcode-task-v2.md, ADR 0011 of the
/// Paseo plugin), so there the session comes back in its editing mode; the Desktop Agent keeps
/// it.
pub fn plan_survives_a_load() -> bool {
    match generation() {
        Generation::HostBridge => app_version() == "3.11.2",
        Generation::AppServer => true,
        Generation::ServicesServer => false,
    }
}

/// Whether each turn's metadata repeats the session's mode (3.11.2's host does; the later
/// generations send only what changed).
pub fn repeats_mode_each_turn() -> bool {
    app_version() == "3.11.2"
}

/// The ACP mode ids a new session offers, in the mapper's order.
pub fn mode_ids() -> Vec<&'static str> {
    match generation() {
        // The V4 commands also know `guarded` (3.15.1 `switchCollaborationMode`), and plan is an
        // independent flag; a session cannot know its release, so every release offers it.
        Generation::ServicesServer => vec!["build", "edit", "yolo", "guarded", "plan"],
        // 3.12.3 made plan an independent flag too (docs/mapper-zcode-task-v2.md).
        Generation::HostBridge if app_version() == "3.12.3" => {
            vec!["build", "edit", "yolo", "plan"]
        }
        Generation::AppServer if at_least(3, 15) => {
            vec!["build", "edit", "plan", "yolo", "guarded"]
        }
        _ => vec!["build", "edit", "plan", "yolo"],
    }
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
