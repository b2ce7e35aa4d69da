//! The task generation's fault switches: the scenario language's names ([`FaultKind`]) fired
//! at bridge points (`start`, `subscribe`, `unsubscribe`), native method names and turn points.
//! Syntax and arming are the shared mechanism (`common/fault.rs`).

pub use crate::common::fault::FaultKind;
use crate::common::fault::{self, Switch, TURN_POINTS};

pub type Faults = fault::Faults<FaultKind>;

/// Bridge-level points besides native method names.
const BRIDGE_POINTS: &[&str] = &["start", "subscribe", "unsubscribe"];

/// Default delay of `late` when neither `=ms` nor `ZCODE_SIM_FAULT_DELAY_MS` is given: longer
/// than the 30 s default request timeout of a ZCode client.
const DEFAULT_LATE_MS: u64 = 35_000;
const DEFAULT_SLOW_START_MS: u64 = 2_000;

impl Switch for FaultKind {
    const NAMES: &'static [(&'static str, FaultKind)] = FaultKind::NAMES;
    const DELAY_VARIABLE: bool = true;
    const VALUE: &'static str = "delay";

    fn default_point(self) -> &'static str {
        match self {
            FaultKind::Exit => "permission",
            FaultKind::Late | FaultKind::Duplicate => "initialize",
            FaultKind::SlowStart => "start",
            _ => "stream",
        }
    }

    fn default_value(self) -> u64 {
        match self {
            FaultKind::SlowStart => DEFAULT_SLOW_START_MS,
            _ => DEFAULT_LATE_MS,
        }
    }

    /// `method_points` are the native method names of the profile.
    fn known_point(point: &str, method_points: &[&str]) -> bool {
        is_method(point, method_points)
            || TURN_POINTS.contains(&point)
            || BRIDGE_POINTS.contains(&point)
    }

    fn fits(self, point: &str, method_points: &[&str]) -> bool {
        match self {
            FaultKind::SlowStart => point == "start",
            // Faults about a response need a call to answer.
            FaultKind::Late | FaultKind::Duplicate => is_method(point, method_points),
            FaultKind::Crash | FaultKind::Exit | FaultKind::Stall => true,
            _ => point != "start",
        }
    }
}

fn is_method(point: &str, method_points: &[&str]) -> bool {
    method_points.contains(&point) || point == "subscribe" || point == "unsubscribe"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::fault::parse_spec;
    use std::time::Duration;

    const METHODS: &[&str] = &["initialize", "listSessions", "sendPrompt"];

    #[test]
    fn parses_names_points_and_delays() {
        let faults = parse_spec::<FaultKind>(
            "crash@initialize, late@listSessions=1500,seq_gap",
            None,
            METHODS,
        )
        .unwrap();
        assert_eq!(faults.len(), 3);
        assert_eq!(faults[0].kind, FaultKind::Crash);
        assert_eq!(faults[0].point, "initialize");
        assert_eq!(faults[1].kind, FaultKind::Late);
        assert_eq!(faults[1].delay(), Duration::from_millis(1500));
        assert_eq!(faults[2].kind, FaultKind::SeqGap);
        assert_eq!(faults[2].point, "stream");
    }

    #[test]
    fn applies_default_points_and_the_delay_variable() {
        let faults = parse_spec::<FaultKind>("late,exit,slow-start", Some(700), METHODS).unwrap();
        assert_eq!(faults[0].point, "initialize");
        assert_eq!(faults[0].delay(), Duration::from_millis(700));
        assert_eq!(faults[1].point, "permission");
        assert_eq!(faults[2].point, "start");
        let defaults = parse_spec::<FaultKind>("late", None, METHODS).unwrap();
        assert_eq!(defaults[0].delay(), Duration::from_millis(DEFAULT_LATE_MS));
    }

    #[test]
    fn rejects_unknown_names_points_and_misplaced_faults() {
        assert!(
            parse_spec::<FaultKind>("explode", None, METHODS)
                .unwrap_err()
                .contains("unknown fault")
        );
        assert!(
            parse_spec::<FaultKind>("crash@nowhere", None, METHODS).unwrap_err().contains("point")
        );
        assert!(
            parse_spec::<FaultKind>("late@stream", None, METHODS)
                .unwrap_err()
                .contains("cannot fire")
        );
        assert!(parse_spec::<FaultKind>("slow-start@initialize", None, METHODS).is_err());
        assert!(parse_spec::<FaultKind>("late@x=abc", None, METHODS).is_err());
    }

    #[test]
    fn each_fault_fires_once() {
        let faults =
            Faults::new(parse_spec::<FaultKind>("duplicate@listSessions", None, METHODS).unwrap());
        assert_eq!(faults.take("initialize"), vec![]);
        assert_eq!(faults.take("listSessions").len(), 1);
        assert!(faults.take("listSessions").is_empty());
    }
}
