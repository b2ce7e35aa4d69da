//! Which protocol generation the simulated release under test speaks, and the simulator's
//! names (fault points) for what a test means in that generation.
//!
//! Most tests are about the core and hold for every generation. A test about one generation's
//! own behaviour (a native method a fault is armed at, a switch only one simulator has) asks
//! [`applies`]: for the other generations it says why it does not apply, visibly, and returns.

use std::io::Write;

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

/// The generation of [`simulated_release`] (the default, 3.11.2, is the host bridge).
pub fn generation() -> Generation {
    match simulated_release() {
        Some(release) if release.starts_with("desktop-") => Generation::AppServer,
        Some(release) if release.starts_with("runtime-") => Generation::ServicesServer,
        _ => Generation::HostBridge,
    }
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

/// Says on the real stderr that the running test does not apply to the release under test,
/// and why (the caller returns).
pub fn skip(why_not: &str) {
    let release = simulated_release().unwrap_or("3.11.2");
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
