//! Fault switches of the app-server profiles: `ZCODE_SIM_FAULT=<name>[@<point>][=<n>][,...]`,
//! the same syntax as the host profiles' switches. Each armed fault fires once, the first time
//! its point is reached. Points are `start`, a method name (`session/send`, `v4/command`, ...)
//! or a turn point (`turn-start`, `stream`, `tool`, `permission`, `question`, `plan`,
//! `headers`, `model-request`, `turn-end`).

use crate::common::fault::{self, Switch};

pub type AppFaults = fault::Faults<AppFault>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppFault {
    /// Exit with status 1 and an error on stderr, like a crashed Agent.
    Crash,
    /// Exit quietly with status 1.
    Exit,
    /// At a method: never answer it. At a turn point: freeze the turn. At `start`: never read.
    Stall,
    /// Write a line that is not JSON.
    Malformed,
    /// Write a line with bytes that are not UTF-8.
    InvalidUtf8,
    /// Write a `session/event` whose `type` no client knows.
    UnknownEvent,
    /// The next `session/event` of the session skips sequence numbers.
    SeqGap,
    /// The next `n` `session/event` notifications (default 2) are kept in the session's log
    /// but never written: a stream seen without notifications (issue 25 [A] §6.3), which
    /// `session/events` with `afterSeq` replays.
    DropEvents,
    /// The next V4 conversation frame's `fromSeq` is ahead of the last `toSeq`.
    V4SeqGap,
    /// The next CAS V4 command is answered `stale` / `proto.staleRevision`.
    StaleCas,
    /// The next `session/send` is refused with `-32010` although the session is idle.
    Busy,
    /// The next `session/send` is answered with a plain string result, ZCode's refusal when
    /// the session's stored model no longer resolves (live record [B] of issue 25).
    ModelGone,
    /// The session's resident runtime is deactivated: session RPCs answer `-32004`.
    Evict,
    /// The next interaction request is re-announced at once, so two ids are outstanding.
    InteractionRace,
    /// The next model request asks for runtime headers `n` times (default 5).
    HeadersStorm,
    /// The next `session/close` also deletes the persisted session.
    CloseDeletes,
    /// The next V4 subscribe writes its initial frame before the subscribe ACK.
    SnapshotFirst,
    /// Wait `n` ms (default 2000) before reading stdin.
    SlowStart,
    /// The turn writes nothing for `n` ms (default 600 000) and goes on after: a model request
    /// in quota back-off, which retries for minutes without a frame ("ZCode app-server Session
    /// Protocol" probe log, §6.3: `maxAttempts: 11`; issue 25 [C], ZC-GUI 0.4.1). A stop ends it
    /// at once, as `cancelled`.
    Silence,
    /// Write `n` KiB (default 8192) of stack traces to stderr, all at once, then go on: the
    /// app-server prints them under model errors (issue 25 [C]). A host that does not drain
    /// stderr would block the Agent's next write, and with it the turn.
    StderrFlood,
    /// The next cold `session/resume` finds `n` MiB (default 30) of finished exchanges in the
    /// session's history, so its reply (which carries every message) and `session/messages`
    /// are that big: a real resume answered 26 MB in one reply ("ZCode Protocol v1 (app-server
    /// stdio): live verification record", Desktop 3.12.3 / CLI 0.16.5, issue 25 [B]).
    BigHistory,
    /// Play an Agent without V4: `v4/connection/flow` is `Method not found` (no known release
    /// is one; it drives a host's legacy-only path).
    NoV4,
}

/// Points inside a turn.
pub const TURN_POINTS: &[&str] = &[
    "turn-start",
    "model-request",
    "stream",
    "tool",
    "permission",
    "question",
    "plan",
    "headers",
    "turn-end",
];

impl Switch for AppFault {
    const NAMES: &'static [(&'static str, AppFault)] = &[
        ("crash", AppFault::Crash),
        ("exit", AppFault::Exit),
        ("stall", AppFault::Stall),
        ("malformed", AppFault::Malformed),
        ("invalid-utf8", AppFault::InvalidUtf8),
        ("unknown-event", AppFault::UnknownEvent),
        ("seq-gap", AppFault::SeqGap),
        ("drop-events", AppFault::DropEvents),
        ("v4-seq-gap", AppFault::V4SeqGap),
        ("stale-cas", AppFault::StaleCas),
        ("busy", AppFault::Busy),
        ("model-gone", AppFault::ModelGone),
        ("evict", AppFault::Evict),
        ("interaction-race", AppFault::InteractionRace),
        ("headers-storm", AppFault::HeadersStorm),
        ("close-deletes", AppFault::CloseDeletes),
        ("snapshot-first", AppFault::SnapshotFirst),
        ("slow-start", AppFault::SlowStart),
        ("no-v4", AppFault::NoV4),
        ("silence", AppFault::Silence),
        ("stderr-flood", AppFault::StderrFlood),
        ("big-history", AppFault::BigHistory),
    ];
    const DELAY_VARIABLE: bool = false;
    const VALUE: &'static str = "number";

    /// Where a fault fires when no point is given.
    fn default_point(self) -> &'static str {
        match self {
            AppFault::SlowStart => "start",
            AppFault::Busy | AppFault::ModelGone => "session/send",
            AppFault::StaleCas => "v4/command",
            AppFault::CloseDeletes => "session/close",
            AppFault::SnapshotFirst => "v4/conversation/subscribe",
            AppFault::NoV4 => "v4/connection/flow",
            AppFault::Evict => "turn-end",
            AppFault::InteractionRace => "permission",
            AppFault::HeadersStorm | AppFault::Silence => "model-request",
            AppFault::StderrFlood => "stream",
            AppFault::BigHistory => "session/resume",
            AppFault::Crash | AppFault::Malformed | AppFault::InvalidUtf8 => "stream",
            AppFault::UnknownEvent => "stream",
            AppFault::Exit | AppFault::Stall => "permission",
            AppFault::SeqGap | AppFault::V4SeqGap | AppFault::DropEvents => "stream",
        }
    }

    /// `=n`: a delay in ms (`slow-start`) or a count (`headers-storm`, `drop-events`).
    fn default_value(self) -> u64 {
        match self {
            AppFault::SlowStart => 2_000,
            AppFault::HeadersStorm => 5,
            AppFault::DropEvents => 2,
            AppFault::Silence => 600_000,
            AppFault::StderrFlood => 8 * 1024,
            AppFault::BigHistory => 30,
            _ => 0,
        }
    }

    /// A turn point, `start`, or a method (any name with a `/`).
    fn known_point(point: &str, _methods: &[&str]) -> bool {
        TURN_POINTS.contains(&point) || point.contains('/') || point == "start"
    }

    fn fits(self, point: &str, _methods: &[&str]) -> bool {
        let is_method = point.contains('/');
        match self {
            AppFault::SlowStart => point == "start",
            AppFault::Crash | AppFault::Exit | AppFault::Stall => true,
            AppFault::Busy
            | AppFault::ModelGone
            | AppFault::StaleCas
            | AppFault::CloseDeletes
            | AppFault::SnapshotFirst
            | AppFault::BigHistory => is_method,
            AppFault::NoV4 => point == "v4/connection/flow",
            AppFault::InteractionRace => matches!(point, "permission" | "question" | "plan"),
            AppFault::HeadersStorm => point == "model-request",
            AppFault::Silence | AppFault::StderrFlood => TURN_POINTS.contains(&point),
            _ => point != "start",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::fault::{Armed, parse_spec};

    #[test]
    fn parses_names_points_and_counts() {
        let faults =
            parse_spec::<AppFault>("headers-storm=3, evict@turn-end, stale_cas", None, &[])
                .unwrap();
        assert_eq!(
            faults[0],
            Armed { kind: AppFault::HeadersStorm, point: "model-request".into(), value: 3 }
        );
        assert_eq!(faults[1].point, "turn-end");
        assert_eq!(faults[2].point, "v4/command");
        assert!(parse_spec::<AppFault>("explode", None, &[]).is_err());
        assert!(
            parse_spec::<AppFault>("busy@stream", None, &[]).unwrap_err().contains("cannot fire")
        );
        assert!(
            parse_spec::<AppFault>("crash@nowhere", None, &[])
                .unwrap_err()
                .contains("unknown fault point")
        );
    }

    #[test]
    fn each_fault_fires_once() {
        let faults = AppFaults::new(parse_spec("busy,busy@session/send", None, &[]).unwrap());
        assert!(faults.take_one("session/send", AppFault::Busy).is_some());
        assert_eq!(faults.take("session/send").len(), 1);
        assert!(faults.take("session/send").is_empty());
    }
}
