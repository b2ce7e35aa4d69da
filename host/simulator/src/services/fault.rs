//! Fault injection for the Services Server, in the syntax of `ZCODE_SIM_FAULT`
//! (`<name>[@<point>][=<ms>][,…]`, each fault fires once, `_` and `-` interchangeable).
//!
//! Faults here break the binary transport and the V4 stream rather than NDJSON lines, so they
//! have their own names; the scenario `fault` step's names map onto them ([`Fault::from_scenario`]).

use crate::common::fault::{self, FaultKind, Switch, TURN_POINTS};

pub type Faults = fault::Faults<Fault>;
pub type ArmedFault = fault::Armed<Fault>;

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
    /// The first `conversationRowsRangeV4` (the history read of a load) finds `n` MiB (default
    /// 30) of finished exchanges before the session's own rows, so a load pages through all of
    /// it: a real `session/resume` answered 26 MB of history in one reply ("ZCode Protocol v1
    /// (app-server stdio): live verification record", Desktop 3.12.3 / CLI 0.16.5, issue 25
    /// [B]); the Services Server hands the same history out 200 rows a page.
    BigHistory,
}

/// Points outside methods and turns.
pub const START: &str = "start";
pub const HELLO: &str = "hello";

const DEFAULT_LATE_MS: u64 = 35_000;
const DEFAULT_SLOW_START_MS: u64 = 2_000;
const DEFAULT_BIG_HISTORY_MIB: u64 = 30;
/// The history read: where `big-history` fires.
pub const ROWS_RANGE: &str = "conversationRowsRangeV4";

impl Switch for Fault {
    const NAMES: &'static [(&'static str, Fault)] = &[
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
        ("big-history", Fault::BigHistory),
    ];
    const DELAY_VARIABLE: bool = true;
    const VALUE: &'static str = "delay";

    fn default_point(self) -> &'static str {
        match self {
            Fault::SplitWrites | Fault::SlowStart => START,
            Fault::WrongHelloVersion => HELLO,
            Fault::Late | Fault::Duplicate => "helloConversationV4",
            Fault::StaleCas => "sendConversationCommandV4",
            Fault::BigHistory => ROWS_RANGE,
            _ => "stream",
        }
    }

    /// `=n`: a delay in ms, or the MiB of history (`big-history`).
    fn default_value(self) -> u64 {
        match self {
            Fault::SlowStart => DEFAULT_SLOW_START_MS,
            Fault::BigHistory => DEFAULT_BIG_HISTORY_MIB,
            _ => DEFAULT_LATE_MS,
        }
    }

    fn known_point(point: &str, methods: &[&str]) -> bool {
        methods.contains(&point) || TURN_POINTS.contains(&point) || point == START || point == HELLO
    }

    fn fits(self, point: &str, methods: &[&str]) -> bool {
        let (is_method, is_turn) = (methods.contains(&point), TURN_POINTS.contains(&point));
        match self {
            Fault::SplitWrites | Fault::SlowStart => point == START,
            Fault::WrongHelloVersion => point == HELLO,
            Fault::BigHistory => point == ROWS_RANGE,
            Fault::Late | Fault::Duplicate | Fault::StaleCas => is_method,
            Fault::Crash | Fault::Exit | Fault::Stall => true,
            _ => is_method || is_turn,
        }
    }
}

impl Fault {
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

    /// Faults that change a V4 frame rather than write something of their own.
    pub fn is_frame_fault(self) -> bool {
        matches!(self, Fault::CrcMismatch | Fault::SeqGap | Fault::UnknownDelta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::fault::parse_spec;
    use std::time::Duration;

    const METHODS: &[&str] =
        &["helloConversationV4", "sendConversationCommandV4", "conversationRowsRangeV4"];

    #[test]
    fn parses_names_points_and_defaults() {
        let faults = parse_spec::<Fault>(
            "split_writes, crc-mismatch@permission, stall@hello, late=5",
            None,
            METHODS,
        )
        .unwrap();
        let summary: Vec<(Fault, &str)> =
            faults.iter().map(|fault| (fault.kind, fault.point.as_str())).collect();
        assert_eq!(
            summary,
            [
                (Fault::SplitWrites, "start"),
                (Fault::CrcMismatch, "permission"),
                (Fault::Stall, "hello"),
                (Fault::Late, "helloConversationV4"),
            ]
        );
        assert_eq!(faults[3].delay(), Duration::from_millis(5));
        let big = parse_spec::<Fault>("big-history, big_history=2", None, METHODS).unwrap();
        assert_eq!(
            (big[0].kind, big[0].point.as_str(), big[0].value),
            (Fault::BigHistory, ROWS_RANGE, 30)
        );
        assert_eq!(big[1].value, 2);
    }

    #[test]
    fn refuses_misplaced_faults() {
        assert!(parse_spec::<Fault>("split-writes@stream", None, METHODS).is_err());
        assert!(parse_spec::<Fault>("crc-mismatch@start", None, METHODS).is_err());
        assert!(parse_spec::<Fault>("late@stream", None, METHODS).is_err());
        assert!(parse_spec::<Fault>("wrong-hello-version@stream", None, METHODS).is_err());
        assert!(parse_spec::<Fault>("big-history@stream", None, METHODS).is_err());
        assert!(
            parse_spec::<Fault>("seq-gap@nowhere", None, METHODS).unwrap_err().contains("point")
        );
        assert!(
            parse_spec::<Fault>("explode", None, METHODS).unwrap_err().contains("unknown fault")
        );
    }

    #[test]
    fn scenario_names_map_onto_services_faults() {
        assert_eq!(Fault::from_scenario(FaultKind::Malformed), Some(Fault::CorruptMessage));
        assert_eq!(Fault::from_scenario(FaultKind::SeqGap), Some(Fault::SeqGap));
        assert_eq!(Fault::from_scenario(FaultKind::Late), None);
    }
}
