//! Fault injection: named misbehaviours fired at named points.
//!
//! `ZCODE_SIM_FAULT=<name>[@<point>][=<ms>][,<name>...]` arms faults for the whole process;
//! each armed fault fires once, the first time its point is reached. Scenario `fault` steps
//! fire a fault at their position in the turn instead.

use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Exit with status 1 and a worker-failure message, like a crashed host.
    Crash,
    /// Exit without answering or explaining, like a host worker that quit (status 1, as the
    /// bridge reports any unexpected worker exit).
    Exit,
    /// Write a line that is not JSON.
    Malformed,
    /// Write one valid JSON line longer than 16 MiB.
    Oversize,
    /// Write a line containing invalid UTF-8.
    InvalidUtf8,
    /// Write an event whose `type` is not in the dynamic-event union.
    UnknownEvent,
    /// Write a `session.event` whose inner `type` no client knows.
    UnknownSessionEvent,
    /// Skip sequence numbers: the next session event's `seq` jumps.
    SeqGap,
    /// Stop answering: a call never gets its response, a turn freezes (ignoring stop).
    Stall,
    /// Answer a call only after a delay (longer than a caller's timeout by default).
    Late,
    /// Write a call's response twice.
    Duplicate,
    /// Wait before reading stdin at all.
    SlowStart,
}

/// Every fault name, as written in `ZCODE_SIM_FAULT` and scenario `fault` steps.
const NAMES: &[(&str, FaultKind)] = &[
    ("crash", FaultKind::Crash),
    ("exit", FaultKind::Exit),
    ("malformed", FaultKind::Malformed),
    ("oversize", FaultKind::Oversize),
    ("invalid-utf8", FaultKind::InvalidUtf8),
    ("unknown-event", FaultKind::UnknownEvent),
    ("unknown-session-event", FaultKind::UnknownSessionEvent),
    ("seq-gap", FaultKind::SeqGap),
    ("stall", FaultKind::Stall),
    ("late", FaultKind::Late),
    ("duplicate", FaultKind::Duplicate),
    ("slow-start", FaultKind::SlowStart),
];

/// Points inside a turn, in the order a turn can reach them.
pub const TURN_POINTS: &[&str] =
    &["turn-start", "stream", "tool", "permission", "question", "plan", "headers", "turn-end"];

/// Bridge-level points besides native method names.
const BRIDGE_POINTS: &[&str] = &["start", "subscribe", "unsubscribe"];

/// Default delay of `late` when neither `=ms` nor `ZCODE_SIM_FAULT_DELAY_MS` is given: longer
/// than the 30 s default request timeout of a ZCode client.
const DEFAULT_LATE_MS: u64 = 35_000;
const DEFAULT_SLOW_START_MS: u64 = 2_000;

impl FaultKind {
    pub fn parse(name: &str) -> Result<FaultKind, String> {
        let normalized = name.trim().replace('_', "-");
        NAMES
            .iter()
            .find(|(known, _)| *known == normalized)
            .map(|(_, kind)| *kind)
            .ok_or_else(|| format!("unknown fault `{name}`"))
    }

    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, kind)| *kind == self).map(|(name, _)| *name).unwrap_or("?")
    }

    fn default_point(self) -> &'static str {
        match self {
            FaultKind::Exit => "permission",
            FaultKind::Late | FaultKind::Duplicate => "initialize",
            FaultKind::SlowStart => "start",
            _ => "stream",
        }
    }

    fn default_delay_ms(self) -> u64 {
        match self {
            FaultKind::SlowStart => DEFAULT_SLOW_START_MS,
            _ => DEFAULT_LATE_MS,
        }
    }

    /// Faults about a response need a call to answer.
    fn needs_call(self) -> bool {
        matches!(self, FaultKind::Late | FaultKind::Duplicate)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub point: String,
    pub delay: Duration,
}

/// Faults armed from the environment; each fires once.
#[derive(Debug, Default)]
pub struct Faults {
    armed: Mutex<Vec<Fault>>,
}

impl Faults {
    /// Parses `ZCODE_SIM_FAULT` (and `ZCODE_SIM_FAULT_DELAY_MS`) from the environment.
    pub fn from_env(method_points: &[&str]) -> Result<Faults, String> {
        let spec = std::env::var("ZCODE_SIM_FAULT").unwrap_or_default();
        let delay = match std::env::var("ZCODE_SIM_FAULT_DELAY_MS") {
            Ok(text) => Some(
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("ZCODE_SIM_FAULT_DELAY_MS is not a number: {text}"))?,
            ),
            Err(_) => None,
        };
        let armed = parse_spec(&spec, delay, method_points)?;
        Ok(Faults { armed: Mutex::new(armed) })
    }

    #[cfg(test)]
    pub fn new(armed: Vec<Fault>) -> Faults {
        Faults { armed: Mutex::new(armed) }
    }

    /// Disarms and returns the faults armed for `point`, in the order they were given.
    pub fn take(&self, point: &str) -> Vec<Fault> {
        let mut armed = self.armed.lock().expect("fault lock");
        let (fired, kept): (Vec<Fault>, Vec<Fault>) =
            armed.drain(..).partition(|fault| fault.point == point);
        *armed = kept;
        fired
    }
}

/// Parses a comma-separated fault list. `method_points` are the native method names that are
/// valid points (the profile's methods).
pub fn parse_spec(
    spec: &str,
    default_delay_ms: Option<u64>,
    method_points: &[&str],
) -> Result<Vec<Fault>, String> {
    let mut faults = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|item| !item.is_empty()) {
        let (rest, inline_delay) = match item.split_once('=') {
            Some((rest, ms)) => {
                let ms = ms.trim().parse::<u64>().map_err(|_| format!("bad delay in `{item}`"))?;
                (rest, Some(ms))
            }
            None => (item, None),
        };
        let (name, point) = match rest.split_once('@') {
            Some((name, point)) => (name, Some(point.trim())),
            None => (rest, None),
        };
        let kind = FaultKind::parse(name)?;
        let point = point.unwrap_or(kind.default_point()).to_owned();
        check_point(kind, &point, method_points)?;
        let ms = inline_delay.or(default_delay_ms).unwrap_or(kind.default_delay_ms());
        faults.push(Fault { kind, point, delay: Duration::from_millis(ms) });
    }
    Ok(faults)
}

fn check_point(kind: FaultKind, point: &str, method_points: &[&str]) -> Result<(), String> {
    let is_method =
        method_points.contains(&point) || point == "subscribe" || point == "unsubscribe";
    let is_turn = TURN_POINTS.contains(&point);
    let known = is_method || is_turn || BRIDGE_POINTS.contains(&point);
    if !known {
        return Err(format!("unknown fault point `{point}`"));
    }
    let fits = match kind {
        FaultKind::SlowStart => point == "start",
        _ if kind.needs_call() => is_method,
        FaultKind::Crash | FaultKind::Exit | FaultKind::Stall => true,
        _ => point != "start",
    };
    if fits { Ok(()) } else { Err(format!("fault `{}` cannot fire at `{point}`", kind.name())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METHODS: &[&str] = &["initialize", "listSessions", "sendPrompt"];

    #[test]
    fn parses_names_points_and_delays() {
        let faults =
            parse_spec("crash@initialize, late@listSessions=1500,seq_gap", None, METHODS).unwrap();
        assert_eq!(faults.len(), 3);
        assert_eq!(faults[0].kind, FaultKind::Crash);
        assert_eq!(faults[0].point, "initialize");
        assert_eq!(faults[1].kind, FaultKind::Late);
        assert_eq!(faults[1].delay, Duration::from_millis(1500));
        assert_eq!(faults[2].kind, FaultKind::SeqGap);
        assert_eq!(faults[2].point, "stream");
    }

    #[test]
    fn applies_default_points_and_the_delay_variable() {
        let faults = parse_spec("late,exit,slow-start", Some(700), METHODS).unwrap();
        assert_eq!(faults[0].point, "initialize");
        assert_eq!(faults[0].delay, Duration::from_millis(700));
        assert_eq!(faults[1].point, "permission");
        assert_eq!(faults[2].point, "start");
        let defaults = parse_spec("late", None, METHODS).unwrap();
        assert_eq!(defaults[0].delay, Duration::from_millis(DEFAULT_LATE_MS));
    }

    #[test]
    fn rejects_unknown_names_points_and_misplaced_faults() {
        assert!(parse_spec("explode", None, METHODS).unwrap_err().contains("unknown fault"));
        assert!(parse_spec("crash@nowhere", None, METHODS).unwrap_err().contains("point"));
        assert!(parse_spec("late@stream", None, METHODS).unwrap_err().contains("cannot fire"));
        assert!(parse_spec("slow-start@initialize", None, METHODS).is_err());
        assert!(parse_spec("late@x=abc", None, METHODS).is_err());
    }

    #[test]
    fn each_fault_fires_once() {
        let faults = Faults::new(parse_spec("duplicate@listSessions", None, METHODS).unwrap());
        assert_eq!(faults.take("initialize"), vec![]);
        assert_eq!(faults.take("listSessions").len(), 1);
        assert!(faults.take("listSessions").is_empty());
    }
}
