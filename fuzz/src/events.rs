//! The mapper's event mapping under arbitrary event sequences.
//!
//! A native session is created and a prompt started against a scripted host; then a script of
//! moves runs: native events (real payloads from the golden traces, mutated, or raw text),
//! answers to the interactions the mapper raised, cancels and new prompts. Properties:
//! - no panic (in the sandbox a panic is a trap that fails the session);
//! - every update is a valid ACP `SessionUpdate`, every permission a valid ACP
//!   `RequestPermissionRequest`, every form a valid ACP `CreateElicitationRequest` — the core
//!   would otherwise fail the session;
//! - never allow by accident: an option shown as `reject_*` denies natively, one shown as
//!   `allow_*` allows, and the declared deny option denies;
//! - errors are not silence: an event of a type no ZCode release has, or a payload that is not
//!   a JSON object, ends in a broken stream;
//! - a turn ends at most once (one stop or failure per prompt);
//! - each interaction is answered natively at most once: a second answer sends nothing.

use std::collections::{BTreeMap, BTreeSet};

use agent_client_protocol_schema::v1 as acp;
use arbitrary::{Result, Unstructured};
use serde_json::{Value, json};
use zcode_contract::{
    Action, InteractionAnswer, InteractionOutcome, InteractionRequest, NativeData, SessionInput,
    SessionOp, Terminal,
};

use crate::host::{Driven, SESSION_ID};
use crate::mutate::{any_value, invented_name, mutate};
use crate::templates::event_templates;

/// One move of a script.
#[derive(Clone, Debug)]
pub enum Move {
    /// A native event; `must_break` when no release could mean anything by it.
    Event {
        payload: String,
        must_break: bool,
    },
    /// Answers the `pick`-th interaction raised so far (again, if it was answered before).
    Answer {
        pick: usize,
        choice: Choice,
    },
    Cancel,
    Prompt,
}

#[derive(Clone, Copy, Debug)]
pub enum Choice {
    DenyOption,
    FirstOption,
    LastOption,
    UnknownOption,
    Unavailable,
}

/// Longest script built from one input.
const MAX_MOVES: usize = 48;

/// libFuzzer entry: builds a script from `data` and runs it.
pub fn check_events(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let script = script(&mut u);
    run(&script);
}

/// Builds a script from fuzzer bytes (as many moves as the bytes allow).
pub fn script(u: &mut Unstructured<'_>) -> Vec<Move> {
    let mut moves = Vec::new();
    while moves.len() < MAX_MOVES && !u.is_empty() {
        match one_move(u) {
            Ok(m) => moves.push(m),
            Err(_) => break,
        }
    }
    moves
}

fn one_move(u: &mut Unstructured<'_>) -> Result<Move> {
    let templates = event_templates();
    Ok(match u.int_in_range(0..=31u8)? {
        0 => Move::Cancel,
        1 => Move::Prompt,
        2..=4 => {
            let choice = *u.choose(&[
                Choice::DenyOption,
                Choice::FirstOption,
                Choice::LastOption,
                Choice::UnknownOption,
                Choice::Unavailable,
            ])?;
            Move::Answer { pick: u.int_in_range(0..=7usize)?, choice }
        }
        5 => {
            let text = raw_text(u)?;
            let must_break = serde_json::from_str::<Value>(&text).map_or(true, |v| !v.is_object());
            Move::Event { payload: text, must_break }
        }
        6 => {
            let value = any_value(u, 3)?;
            let must_break = !value.is_object();
            Move::Event { payload: value.to_string(), must_break }
        }
        7 | 8 => {
            // An outer event type, or a session event type, that no release has.
            let mut event = u.choose(templates)?.clone();
            let invented = json!(invented_name(u)?);
            if event_is_session_event(&event) && u.arbitrary::<bool>()? {
                event["event"]["type"] = invented;
            } else {
                event["type"] = invented;
            }
            Move::Event { payload: event.to_string(), must_break: true }
        }
        _ => {
            let mut event = u.choose(templates)?.clone();
            let rounds = u.int_in_range(0..=3usize)?;
            mutate(u, &mut event, rounds)?;
            Move::Event { payload: event.to_string(), must_break: false }
        }
    })
}

fn event_is_session_event(event: &Value) -> bool {
    event["type"] == "session.event" && event["event"].is_object()
}

fn raw_text(u: &mut Unstructured<'_>) -> Result<String> {
    let len = u.int_in_range(0..=64usize)?;
    let mut text = String::new();
    for _ in 0..len {
        text.push(u.arbitrary::<char>()?);
    }
    Ok(text)
}

/// What the script has seen so far.
#[derive(Default)]
struct Observed {
    /// Interaction keys in the order they were raised, with what an answer may select.
    raised: Vec<Raised>,
    answered: BTreeSet<String>,
    /// Stops or failures since the last accepted prompt.
    endings: usize,
    /// Highest `seq` of the session events delivered so far.
    last_seq: Option<u64>,
}

/// The `seq` of a `session.event`, if the payload is one.
fn session_event_seq(payload: &str) -> Option<u64> {
    let event: Value = serde_json::from_str(payload).ok()?;
    if event["type"] != "session.event" {
        return None;
    }
    event["event"]["seq"].as_u64()
}

struct Raised {
    key: String,
    options: Vec<String>,
    deny: Option<String>,
}

/// Runs `script` against a fresh session with a running prompt; panics when a property breaks.
pub fn run(script: &[Move]) {
    let mut driven = Driven::created();
    let started = driven.prompt();
    assert!(started.outcome.is_ok(), "setup: the prompt failed: {:?}", started.outcome);
    let mut seen = Observed::default();
    for step in script {
        match step {
            Move::Event { payload, must_break } => {
                // A session event whose seq was already delivered may be dropped as a
                // re-delivery before its content is looked at.
                let seq = session_event_seq(payload);
                let redelivered = seq.is_some_and(|seq| seen.last_seq.is_some_and(|l| seq <= l));
                if let Some(seq) = seq {
                    seen.last_seq = Some(seen.last_seq.map_or(seq, |last| last.max(seq)));
                }
                let input = SessionInput::Event(NativeData::Text(payload.to_string()));
                let effects = driven.session.map(vec![input]).expect("native mappers never fault");
                assert!(effects.writes.is_empty() && effects.requests == 0, "{effects:?}");
                let actions = effects.actions;
                if *must_break && !redelivered {
                    assert!(
                        actions.iter().any(|a| matches!(a, Action::Terminal(Terminal::Broken(_)))),
                        "an event no release has was not a broken stream: {payload}\n{actions:?}"
                    );
                }
                for action in &actions {
                    check_action(action, payload, &mut seen);
                }
            }
            Move::Answer { pick, choice } => answer(&mut driven, &mut seen, *pick, *choice),
            Move::Cancel => {
                let _ = driven.run(SessionOp::Cancel);
            }
            Move::Prompt => {
                if driven.prompt().outcome.is_ok() {
                    seen.endings = 0;
                }
            }
        }
    }
}

fn check_action(action: &Action, payload: &str, seen: &mut Observed) {
    match action {
        Action::Update(json) => {
            if let Err(error) = serde_json::from_str::<acp::SessionUpdate>(json) {
                panic!("invalid ACP update ({error}): {json}\nfrom event: {payload}");
            }
        }
        Action::Interaction(interaction) => {
            let (options, deny) = match &interaction.request {
                InteractionRequest::Permission(permission) => {
                    check_permission(&permission.request, &permission.deny_option, payload);
                    (option_ids(&permission.request), Some(permission.deny_option.clone()))
                }
                InteractionRequest::Elicitation(form) => {
                    let request = with_session(form);
                    if let Err(error) =
                        serde_json::from_value::<acp::CreateElicitationRequest>(request)
                    {
                        panic!("invalid ACP elicitation ({error}): {form}\nfrom event: {payload}");
                    }
                    (Vec::new(), None)
                }
                InteractionRequest::Headless(_) => (Vec::new(), None),
            };
            seen.raised.push(Raised { key: interaction.key.clone(), options, deny });
        }
        Action::Terminal(Terminal::Stop(_) | Terminal::Failed(_)) => {
            seen.endings += 1;
            assert!(seen.endings <= 1, "a turn ended twice; the second end came from {payload}");
        }
        Action::Terminal(Terminal::Broken(_)) | Action::Ignore(_) => {}
    }
}

fn with_session(json: &str) -> Value {
    let mut value: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.insert("sessionId".into(), json!(SESSION_ID));
    }
    value
}

fn option_ids(request: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(request).unwrap_or(Value::Null);
    value["options"]
        .as_array()
        .map(|options| {
            options.iter().filter_map(|o| o["optionId"].as_str().map(str::to_string)).collect()
        })
        .unwrap_or_default()
}

/// The ACP permission is valid, and every option means natively what it says in ACP.
fn check_permission(request: &str, deny_option: &str, payload: &str) {
    let typed = serde_json::from_value::<acp::RequestPermissionRequest>(with_session(request));
    if let Err(error) = typed {
        panic!("invalid ACP permission ({error}): {request}\nfrom event: {payload}");
    }
    let event: Value = serde_json::from_str(payload).expect("a mapped event was JSON");
    // Every native decision given for each option id (an id may be listed twice).
    let mut decisions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for option in event["request"]["options"].as_array().into_iter().flatten() {
        if let (Some(id), Some(decision)) =
            (option["optionId"].as_str(), option["response"]["decision"].as_str())
        {
            decisions.entry(id.to_string()).or_default().insert(decision.to_string());
        }
    }
    if option_ids_repeat(&event) && suppressed("duplicate-option-ids") {
        return;
    }
    let denies = |id: &str| decisions.get(id).is_some_and(|d| d.iter().all(|d| d == "deny"));
    let allows = |id: &str| decisions.get(id).is_some_and(|d| d.iter().all(|d| d == "allow"));
    assert!(
        denies(deny_option),
        "the declared deny option {deny_option:?} does not deny natively ({:?})\nfrom event: {payload}",
        decisions.get(deny_option)
    );
    let acp: Value = serde_json::from_str(request).expect("checked above");
    for option in acp["options"].as_array().into_iter().flatten() {
        let id = option["optionId"].as_str().unwrap_or_default();
        let kind = option["kind"].as_str().unwrap_or_default();
        if kind.starts_with("reject") {
            assert!(denies(id), "option {id:?} is shown as {kind} but allows natively: {payload}");
        } else if kind.starts_with("allow") {
            assert!(allows(id), "option {id:?} is shown as {kind} but denies natively: {payload}");
        }
    }
}

/// Two native options share an id (finding F-1 of docs/reliability.md).
fn option_ids_repeat(event: &Value) -> bool {
    let ids: Vec<&str> = event["request"]["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["optionId"].as_str())
        .collect();
    ids.iter().collect::<BTreeSet<_>>().len() != ids.len()
}

/// Findings already recorded can be switched off (`ZCODE_FUZZ_SUPPRESS=<name>,...`) so a long
/// run keeps looking for new ones instead of stopping at a known one.
fn suppressed(finding: &str) -> bool {
    static SUPPRESSED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SUPPRESSED
        .get_or_init(|| {
            std::env::var("ZCODE_FUZZ_SUPPRESS")
                .unwrap_or_default()
                .split(',')
                .map(str::to_string)
                .collect()
        })
        .iter()
        .any(|name| name == finding)
}

/// Answers a raised interaction; a second answer must not reach the host.
fn answer(driven: &mut Driven, seen: &mut Observed, pick: usize, choice: Choice) {
    if seen.raised.is_empty() {
        return;
    }
    let raised = &seen.raised[pick % seen.raised.len()];
    let outcome = match choice {
        Choice::DenyOption => raised.deny.clone().map(InteractionOutcome::Selected),
        Choice::FirstOption => raised.options.first().cloned().map(InteractionOutcome::Selected),
        Choice::LastOption => raised.options.last().cloned().map(InteractionOutcome::Selected),
        Choice::UnknownOption => Some(InteractionOutcome::Selected("fuzz-made-up".into())),
        Choice::Unavailable => None,
    }
    .unwrap_or_else(|| InteractionOutcome::Unavailable("fuzz: no answer".into()));
    let key = raised.key.clone();
    let again = seen.answered.contains(&key);
    let ran = driven.run(SessionOp::Answer(InteractionAnswer { key: key.clone(), outcome }));
    if again {
        assert!(ran.methods.is_empty(), "interaction {key} was answered natively twice");
        assert!(ran.outcome.is_err(), "a second answer to {key} was accepted");
    } else if !ran.methods.is_empty() {
        seen.answered.insert(key);
    }
}
