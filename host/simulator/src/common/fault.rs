//! Fault injection, the mechanism every generation shares:
//! `ZCODE_SIM_FAULT=<name>[@<point>][=<n>][,<name>…]` arms faults for the whole process; each
//! fires once, the first time its point is reached; `_` and `-` are interchangeable in names.
//! A generation names its faults and says where each may fire ([`Switch`]); `=<n>` is a delay
//! in ms or a count, as the fault reads it.
//!
//! The scenario language's `fault` step names the faults of the task generation
//! ([`FaultKind`]); the other generations map those names onto their own.

use std::fmt::Debug;
use std::sync::Mutex;
use std::time::Duration;

/// Points inside a turn of the scenario engine, in the order a turn can reach them.
pub const TURN_POINTS: &[&str] =
    &["turn-start", "stream", "tool", "permission", "question", "plan", "headers", "turn-end"];

/// A generation's fault names and where each may fire.
pub trait Switch: Copy + PartialEq + Debug + 'static {
    /// Every name, as written in `ZCODE_SIM_FAULT`.
    const NAMES: &'static [(&'static str, Self)];
    /// `ZCODE_SIM_FAULT_DELAY_MS` sets the value of faults armed without `=<n>`.
    const DELAY_VARIABLE: bool;
    /// What `=<n>` is, in the error for one that is not a number (`bad delay in …`).
    const VALUE: &'static str;

    /// Where the fault fires when no point is given.
    fn default_point(self) -> &'static str;
    /// `=<n>` when it is not given.
    fn default_value(self) -> u64;
    /// Whether `point` is a point at all (`methods` are the process's method names).
    fn known_point(point: &str, methods: &[&str]) -> bool;
    /// Whether the fault can fire at a known `point`.
    fn fits(self, point: &str, methods: &[&str]) -> bool;

    fn parse(name: &str) -> Result<Self, String> {
        parse_name(Self::NAMES, name)
    }

    fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, kind)| *kind == self).map_or("?", |(name, _)| name)
    }
}

/// The fault `name` names in `names` (`_` and `-` alike).
pub fn parse_name<K: Copy>(names: &[(&str, K)], name: &str) -> Result<K, String> {
    let normalized = name.trim().replace('_', "-");
    names
        .iter()
        .find(|(known, _)| *known == normalized)
        .map(|(_, kind)| *kind)
        .ok_or_else(|| format!("unknown fault `{name}`"))
}

/// A fault armed for a point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Armed<K> {
    pub kind: K,
    pub point: String,
    /// `=<n>`: a delay in ms or a count.
    pub value: u64,
}

impl<K> Armed<K> {
    pub fn delay(&self) -> Duration {
        Duration::from_millis(self.value)
    }
}

/// Faults armed for the process; each fires once.
#[derive(Debug)]
pub struct Faults<K> {
    armed: Mutex<Vec<Armed<K>>>,
}

impl<K: Switch> Faults<K> {
    /// Parses `ZCODE_SIM_FAULT` (and `ZCODE_SIM_FAULT_DELAY_MS` where it applies).
    pub fn from_env(methods: &[&str]) -> Result<Faults<K>, String> {
        let spec = std::env::var("ZCODE_SIM_FAULT").unwrap_or_default();
        let delay = match std::env::var("ZCODE_SIM_FAULT_DELAY_MS") {
            Ok(text) if K::DELAY_VARIABLE => Some(
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("ZCODE_SIM_FAULT_DELAY_MS is not a number: {text}"))?,
            ),
            _ => None,
        };
        Ok(Faults::new(parse_spec(&spec, delay, methods)?))
    }

    pub fn new(armed: Vec<Armed<K>>) -> Faults<K> {
        Faults { armed: Mutex::new(armed) }
    }

    /// Disarms and returns the faults armed for `point`, in the order they were given.
    pub fn take(&self, point: &str) -> Vec<Armed<K>> {
        self.take_if(|armed| armed.point == point)
    }

    /// Disarms and returns the faults of the given kinds armed for `point`.
    pub fn take_kinds(&self, point: &str, kinds: &[K]) -> Vec<Armed<K>> {
        self.take_if(|armed| armed.point == point && kinds.contains(&armed.kind))
    }

    fn take_if(&self, fires: impl Fn(&Armed<K>) -> bool) -> Vec<Armed<K>> {
        let mut armed = self.armed.lock().expect("fault lock");
        let (fired, kept) = armed.drain(..).partition(fires);
        *armed = kept;
        fired
    }

    /// Disarms one fault of `kind` armed for `point`, if any.
    pub fn take_one(&self, point: &str, kind: K) -> Option<Armed<K>> {
        let mut armed = self.armed.lock().expect("fault lock");
        let index = armed.iter().position(|armed| armed.point == point && armed.kind == kind)?;
        Some(armed.remove(index))
    }

    /// Whether a fault of `kind` is armed at all (a fault of the whole process).
    pub fn has(&self, kind: K) -> bool {
        self.armed.lock().expect("fault lock").iter().any(|armed| armed.kind == kind)
    }
}

/// Parses a comma-separated fault list; `default_value` is `ZCODE_SIM_FAULT_DELAY_MS`.
pub fn parse_spec<K: Switch>(
    spec: &str,
    default_value: Option<u64>,
    methods: &[&str],
) -> Result<Vec<Armed<K>>, String> {
    let mut faults = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|item| !item.is_empty()) {
        let (rest, inline) = match item.split_once('=') {
            Some((rest, n)) => {
                let bad = || format!("bad {} in `{item}`", K::VALUE);
                (rest, Some(n.trim().parse::<u64>().map_err(|_| bad())?))
            }
            None => (item, None),
        };
        let (name, point) = match rest.split_once('@') {
            Some((name, point)) => (name, Some(point.trim())),
            None => (rest, None),
        };
        let kind = K::parse(name)?;
        let point = point.unwrap_or(kind.default_point()).to_owned();
        if !K::known_point(&point, methods) {
            return Err(format!("unknown fault point `{point}`"));
        }
        if !kind.fits(&point, methods) {
            return Err(format!("fault `{}` cannot fire at `{point}`", kind.name()));
        }
        let value = inline.or(default_value).unwrap_or(kind.default_value());
        faults.push(Armed { kind, point, value });
    }
    Ok(faults)
}

/// The fault names of the scenario language, which are the task generation's switches
/// (`task/fault.rs` says where each fires).
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

impl FaultKind {
    /// Every name, as written in `ZCODE_SIM_FAULT` and scenario `fault` steps.
    pub const NAMES: &[(&str, FaultKind)] = &[
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
}
