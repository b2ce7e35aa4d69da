//! Fault injection for the Services Server, in the syntax of `ZCODE_SIM_FAULT`
//! (`<name>[@<point>][=<ms>][,…]`, each fault fires once, `_` and `-` interchangeable).
//!
//! Faults here break the binary transport and the V4 stream rather than NDJSON lines, so they
//! have their own names; the scenario `fault` step's names map onto them ([`Fault::from_scenario`]).

use std::sync::Mutex;
use std::time::Duration;

use crate::task::fault::{FaultKind, TURN_POINTS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Print a fatal error on stderr and exit 1 (what the real entry does on a crash).
    Crash,
    /// Exit 1 without a word.
    Exit,
    /// Stop: at `hello`, nothing after the hello line is ever read or written; at a method, that
    /// call is never answered; in a turn, the turn freezes.
    Stall,
    /// Answer a call only after a delay.
    Late,
    /// Answer a call twice.
    Duplicate,
    /// Wait before writing the hello.
    SlowStart,
    /// Write every output byte with its own write (the whole process).
    SplitWrites,
    /// Write a transport header whose length no client can accept (0xFFFFFFF0).
    CorruptHeader,
    /// Write a well-framed message whose header value has an unknown tag.
    CorruptMessage,
    /// Send the next V4 logical frame as fragments with a wrong CRC-32.
    CrcMismatch,
    /// Drop the next V4 frame, so the one after it starts past the client's sequence.
    SeqGap,
    /// Put a delta with an unknown `op` into the next V4 frame.
    UnknownDelta,
    /// Write one complete V4 wire frame far beyond the 1 MiB physical limit.
    Oversize,
    /// Write an event whose JSON text is not UTF-8.
    InvalidUtf8,
    /// Claim a version in the hello line that is not the package's.
    WrongHelloVersion,
    /// Answer the next CAS command `stale` although its `baseRevision` is right (another
    /// client's change raced it).
    StaleCas,
}

const NAMES: &[(&str, Fault)] = &[
    ("crash", Fault::Crash),
    ("exit", Fault::Exit),
    ("stall", Fault::Stall),
    ("late", Fault::Late),
    ("duplicate", Fault::Duplicate),
    ("slow-start", Fault::SlowStart),
    ("split-writes", Fault::SplitWrites),
    ("corrupt-header", Fault::CorruptHeader),
    ("corrupt-message", Fault::CorruptMessage),
    ("crc-mismatch", Fault::CrcMismatch),
    ("seq-gap", Fault::SeqGap),
    ("unknown-delta", Fault::UnknownDelta),
    ("oversize", Fault::Oversize),
    ("invalid-utf8", Fault::InvalidUtf8),
    ("wrong-hello-version", Fault::WrongHelloVersion),
    ("stale-cas", Fault::StaleCas),
];

/// Points outside methods and turns.
pub const START: &str = "start";
pub const HELLO: &str = "hello";

const DEFAULT_LATE_MS: u64 = 35_000;
const DEFAULT_SLOW_START_MS: u64 = 2_000;

impl Fault {
    pub fn parse(name: &str) -> Result<Fault, String> {
        let normalized = name.trim().replace('_', "-");
        NAMES
            .iter()
            .find(|(known, _)| *known == normalized)
            .map(|(_, fault)| *fault)
            .ok_or_else(|| format!("unknown fault `{name}`"))
    }

    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, fault)| *fault == self).map_or("?", |(name, _)| name)
    }

    /// The services fault a scenario `fault` step names (the scenario language keeps the
    /// bridge-era names).
    pub fn from_scenario(kind: FaultKind) -> Option<Fault> {
        Some(match kind {
            FaultKind::Crash => Fault::Crash,
            FaultKind::Exit => Fault::Exit,
            FaultKind::Stall => Fault::Stall,
            FaultKind::Malformed => Fault::CorruptMessage,
            FaultKind::Oversize => Fault::Oversize,
            FaultKind::InvalidUtf8 => Fault::InvalidUtf8,
            FaultKind::UnknownEvent | FaultKind::UnknownSessionEvent => Fault::UnknownDelta,
            FaultKind::SeqGap => Fault::SeqGap,
            FaultKind::Late | FaultKind::Duplicate | FaultKind::SlowStart => return None,
        })
    }

    fn default_point(self) -> &'static str {
        match self {
            Fault::SplitWrites | Fault::SlowStart => START,
            Fault::WrongHelloVersion => HELLO,
            Fault::Late | Fault::Duplicate => "helloConversationV4",
            Fault::StaleCas => "sendConversationCommandV4",
            _ => "stream",
        }
    }

    /// Faults that change a V4 frame rather than write something of their own.
    pub fn is_frame_fault(self) -> bool {
        matches!(self, Fault::CrcMismatch | Fault::SeqGap | Fault::UnknownDelta)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmedFault {
    pub fault: Fault,
    pub point: String,
    pub delay: Duration,
}

/// Faults armed for the process; each fires once.
#[derive(Debug, Default)]
pub struct Faults {
    armed: Mutex<Vec<ArmedFault>>,
}

impl Faults {
    pub fn from_env(methods: &[&str]) -> Result<Faults, String> {
        let spec = std::env::var("ZCODE_SIM_FAULT").unwrap_or_default();
        let delay = match std::env::var("ZCODE_SIM_FAULT_DELAY_MS") {
            Ok(text) => Some(
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("ZCODE_SIM_FAULT_DELAY_MS is not a number: {text}"))?,
            ),
            Err(_) => None,
        };
        Ok(Faults { armed: Mutex::new(parse_spec(&spec, delay, methods)?) })
    }

    /// Disarms and returns the faults armed for `point`.
    pub fn take(&self, point: &str) -> Vec<ArmedFault> {
        let mut armed = self.armed.lock().expect("fault lock");
        let (fired, kept) = armed.drain(..).partition(|fault| fault.point == point);
        *armed = kept;
        fired
    }

    /// Whether a fault is armed for the whole process (`split-writes`).
    pub fn has(&self, fault: Fault) -> bool {
        self.armed.lock().expect("fault lock").iter().any(|armed| armed.fault == fault)
    }
}

pub fn parse_spec(
    spec: &str,
    default_delay_ms: Option<u64>,
    methods: &[&str],
) -> Result<Vec<ArmedFault>, String> {
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
        let fault = Fault::parse(name)?;
        let point = point.unwrap_or(fault.default_point()).to_owned();
        check_point(fault, &point, methods)?;
        let default_ms =
            if fault == Fault::SlowStart { DEFAULT_SLOW_START_MS } else { DEFAULT_LATE_MS };
        let ms = inline_delay.or(default_delay_ms).unwrap_or(default_ms);
        faults.push(ArmedFault { fault, point, delay: Duration::from_millis(ms) });
    }
    Ok(faults)
}

fn check_point(fault: Fault, point: &str, methods: &[&str]) -> Result<(), String> {
    let is_method = methods.contains(&point);
    let is_turn = TURN_POINTS.contains(&point);
    if !(is_method || is_turn || point == START || point == HELLO) {
        return Err(format!("unknown fault point `{point}`"));
    }
    let fits = match fault {
        Fault::SplitWrites | Fault::SlowStart => point == START,
        Fault::WrongHelloVersion => point == HELLO,
        Fault::Late | Fault::Duplicate | Fault::StaleCas => is_method,
        Fault::Crash | Fault::Exit | Fault::Stall => true,
        _ => is_method || is_turn,
    };
    if fits { Ok(()) } else { Err(format!("fault `{}` cannot fire at `{point}`", fault.name())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METHODS: &[&str] = &["helloConversationV4", "sendConversationCommandV4"];

    #[test]
    fn parses_names_points_and_defaults() {
        let faults =
            parse_spec("split_writes, crc-mismatch@permission, stall@hello, late=5", None, METHODS)
                .unwrap();
        let summary: Vec<(Fault, &str)> =
            faults.iter().map(|fault| (fault.fault, fault.point.as_str())).collect();
        assert_eq!(
            summary,
            [
                (Fault::SplitWrites, "start"),
                (Fault::CrcMismatch, "permission"),
                (Fault::Stall, "hello"),
                (Fault::Late, "helloConversationV4"),
            ]
        );
        assert_eq!(faults[3].delay, Duration::from_millis(5));
    }

    #[test]
    fn refuses_misplaced_faults() {
        assert!(parse_spec("split-writes@stream", None, METHODS).is_err());
        assert!(parse_spec("crc-mismatch@start", None, METHODS).is_err());
        assert!(parse_spec("late@stream", None, METHODS).is_err());
        assert!(parse_spec("wrong-hello-version@stream", None, METHODS).is_err());
        assert!(parse_spec("seq-gap@nowhere", None, METHODS).unwrap_err().contains("point"));
        assert!(parse_spec("explode", None, METHODS).unwrap_err().contains("unknown fault"));
    }

    #[test]
    fn scenario_names_map_onto_services_faults() {
        assert_eq!(Fault::from_scenario(FaultKind::Malformed), Some(Fault::CorruptMessage));
        assert_eq!(Fault::from_scenario(FaultKind::SeqGap), Some(Fault::SeqGap));
        assert_eq!(Fault::from_scenario(FaultKind::Late), None);
    }
}
