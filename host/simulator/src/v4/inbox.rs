//! The V4 command inbox both servers admit commands through, in the order of 3.15.1's
//! `command-inbox.ts` (`CommandInbox.handle`, `decide`, `settle`): the envelope and its payload
//! are checked against `commands.zod`, an earlier decision of the same command is replayed, the
//! session is looked up, a CAS base is compared, and only then does the command execute. Each
//! server supplies an [`Inbox`]: where its session and remembered decisions live, and what each
//! command does. What 3.15.1's handlers refuse before they change anything is decided here,
//! once for both servers ([`before_handler`]).

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::commands::{COMMAND_TYPES, Decision, missing_base, remembered, replay, stale_base};
use crate::common::zod::{self, Schema, UnknownKeys};

/// The envelope and payload schemas (`command.ts`), as data.
pub const SCHEMAS: &str = include_str!("commands.zod");

fn schema(name: &str) -> Option<Schema> {
    static DEFINED: OnceLock<HashMap<&'static str, Schema>> = OnceLock::new();
    let defined = DEFINED.get_or_init(|| {
        zod::parse(&[SCHEMAS]).unwrap_or_else(|error| panic!("commands.zod: {error}"))
    });
    defined.get(name).cloned()
}

/// An envelope that parsed (`parseCommandEnvelope`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<'a> {
    pub command_id: &'a str,
    pub client_id: &'a str,
    #[serde(borrow)]
    pub session_id: Option<&'a str>,
    #[serde(rename = "type")]
    pub kind: &'a str,
    /// Always an object (`{}` when the envelope has none).
    #[serde(skip, default = "no_payload")]
    pub payload: &'a Value,
    pub base_revision: Option<u64>,
    #[serde(borrow)]
    pub base_log_epoch: Option<&'a str>,
}

fn no_payload<'a>() -> &'a Value {
    static EMPTY: OnceLock<Value> = OnceLock::new();
    EMPTY.get_or_init(|| json!({}))
}

impl<'a> Envelope<'a> {
    /// The envelope, or the ACK refusing it (`rejected` `proto.invalidPayload` at revision 0).
    /// `modes` are the release's collaboration modes (`switchCollaborationMode`, and
    /// `sendText`'s submission mode).
    pub fn parse(raw: &'a Value, modes: &[&'static str]) -> Result<Envelope<'a>, Value> {
        Envelope::read(raw, modes).map_err(|message| {
            let command_id = raw["commandId"].as_str().unwrap_or_default();
            Decision::rejected("proto.invalidPayload", message).ack(command_id, 0)
        })
    }

    /// `parseCommandEnvelope`: the envelope, the payload its type takes, then the CAS base.
    fn read(raw: &'a Value, modes: &[&'static str]) -> Result<Envelope<'a>, String> {
        let checked = |schema: Schema, value| match zod::check(&schema, Some(value)) {
            issues if issues.is_empty() => Ok(()),
            issues => Err(zod::invalid_params_message(&issues)),
        };
        checked(schema("envelope").expect("defined").bind("type", &COMMAND_TYPES), raw)?;
        let mut envelope = Envelope::deserialize(raw).map_err(|error| error.to_string())?;
        if !raw["payload"].is_null() {
            envelope.payload = &raw["payload"];
        }
        // A command the simulator executes nowhere takes any object.
        let any = Schema::Object { fields: Vec::new(), unknown: UnknownKeys::Strip };
        let payload = schema(&format!("command/{}", envelope.kind)).unwrap_or(any);
        checked(payload.bind("mode", modes), envelope.payload)?;
        let (revision, log_epoch) = (envelope.base_revision, envelope.base_log_epoch);
        match missing_base(envelope.kind, revision.is_some(), log_epoch.is_some()) {
            Some(message) => Err(message.into()),
            None => Ok(envelope),
        }
    }

    /// A payload member as text, `""` when absent.
    pub fn text(&self, key: &str) -> &'a str {
        self.payload[key].as_str().unwrap_or_default()
    }

    pub fn members(&self) -> &'a Map<String, Value> {
        self.payload.as_object().expect("a parsed payload is an object")
    }
}

/// `PROTOCOL_V4_LIMITS.idempotencyTablePerSession` (`packages/shared`, `limits`).
pub const REMEMBERED_PER_SESSION: usize = 512;

/// One session's remembered decisions, least recently used first (`command-inbox.ts`:
/// `rememberSettled` puts a decision last and drops the first beyond the limit; a look-up,
/// `touchSettled`, puts it last again).
#[derive(Debug, Default)]
pub struct Remembered(VecDeque<(String, Value)>);

impl Remembered {
    pub fn lookup(&mut self, command_id: &str) -> Option<Value> {
        let index = self.0.iter().position(|(id, _)| id == command_id)?;
        let entry = self.0.remove(index)?;
        self.0.push_back(entry);
        self.0.back().map(|(_, ack)| ack.clone())
    }

    pub fn remember(&mut self, command_id: &str, ack: Value) {
        self.0.retain(|(id, _)| id != command_id);
        self.0.push_back((command_id.to_owned(), ack));
        if self.0.len() > REMEMBERED_PER_SESSION {
            self.0.pop_front();
        }
    }
}

/// What `model-config.ts` compares a switch with: the session's model selection
/// (`{providerId, modelId, options?: {reasoningLevel}}`, none before one is chosen), its mode
/// and whether plan is on.
pub struct Settings {
    pub selection: Option<Value>,
    pub mode: String,
    pub plan_enabled: bool,
}

/// What a server keeps for its inbox.
pub trait Inbox {
    /// The ACK this command settled with, if it is remembered (`lookupExact`).
    fn settled(&mut self, envelope: &Envelope<'_>) -> Option<Value>;
    /// The named session's revision and log epoch, or `None` when this server has no such
    /// session.
    fn session(&self, envelope: &Envelope<'_>) -> Option<(u64, String)>;
    /// A simulated race: the next CAS compare loses.
    fn raced(&self) -> bool;
    /// The named session's settings.
    fn settings(&self, envelope: &Envelope<'_>) -> Settings;
    fn execute(&mut self, envelope: &Envelope<'_>) -> Decision;
    fn remember(&mut self, envelope: &Envelope<'_>, ack: &Value);
}

/// Decides one parsed command and returns its ACK. A refusal at admission (no session, a
/// stale base) is not remembered; what executed is, per `remembered` (`settle`).
pub fn decide(inbox: &mut impl Inbox, envelope: &Envelope<'_>) -> Value {
    let command_id = envelope.command_id;
    if let Some(first) = inbox.settled(envelope) {
        return replay(&first);
    }
    let Some((revision, log_epoch)) = inbox.session(envelope) else {
        return Decision::refused("rejected", "proto.sessionNotFound", None).ack(command_id, 0);
    };
    let base = (envelope.base_revision, envelope.base_log_epoch);
    let current = (revision, log_epoch.as_str());
    if let Some(stale) = stale_base(envelope.kind, base, current, || inbox.raced()) {
        return stale.ack(command_id, revision);
    }
    let decision = before_handler(inbox, envelope).unwrap_or_else(|| inbox.execute(envelope));
    let ack = decision.ack(command_id, revision);
    if remembered(&decision) {
        inbox.remember(envelope, &ack);
    }
    ack
}

/// The first thing 3.15.1's handler does with an admitted command, when that is to refuse it
/// or to do nothing; it is settled, so remembered, like any outcome.
/// - `sendText` without input: `failed` `proto.invalidPayload` (`handlers/session-flow.ts`,
///   `sendText`): no text but whitespace (`String.prototype.trim`), no attachment and no
///   conversation quote (`hasPromptInput` in `commands/input-admission.ts`).
/// - A switch to what the session has: `noop` `config.unchanged`, no `result`
///   (`handlers/model-config.ts`, thrown as `V4CommandNoopError`, which `v4-gateway.ts`
///   settles as `noop`). A model switch is unchanged when provider and model are the
///   selection's and the thought, trimmed, is empty or the selection's level; a mode switch
///   when the mode is the session's and plan is off.
fn before_handler(inbox: &impl Inbox, envelope: &Envelope<'_>) -> Option<Decision> {
    let payload = envelope.payload;
    let listed = |key: &str| payload[key].as_array().is_some_and(|list| !list.is_empty());
    let unchanged = match envelope.kind {
        "sendText" => {
            let empty = js_trim(envelope.text("text")).is_empty()
                && !listed("attachments")
                && !listed("conversationQuotes");
            let message = Some("input must not be empty".to_owned());
            return empty.then(|| Decision::refused("failed", "proto.invalidPayload", message));
        }
        "switchModelConfig" => {
            let selection = inbox.settings(envelope).selection.unwrap_or_default();
            let thought = js_trim(envelope.text("thought"));
            selection["providerId"] == envelope.text("provider")
                && selection["modelId"] == envelope.text("model")
                && (thought.is_empty() || selection["options"]["reasoningLevel"] == thought)
        }
        "switchCollaborationMode" => {
            let settings = inbox.settings(envelope);
            settings.mode == envelope.text("mode") && !settings.plan_enabled
        }
        _ => false,
    };
    unchanged.then(|| Decision::noop("config.unchanged"))
}

/// `String.prototype.trim`: JavaScript's white space is Rust's less U+0085, plus U+FEFF.
fn js_trim(text: &str) -> &str {
    text.trim_matches(|c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(kind: &str, extra: Value) -> Value {
        let mut envelope = json!({"commandId": "c1", "clientId": "client", "sessionId": "sess_1",
                                  "type": kind, "payload": {}, "issuedAt": 1});
        if let (Some(target), Some(extra)) = (envelope.as_object_mut(), extra.as_object()) {
            target.extend(extra.clone());
        }
        envelope
    }

    const MODES: [&str; 4] = ["build", "edit", "plan", "yolo"];

    fn refusal(raw: &Value) -> String {
        let ack = Envelope::parse(raw, &MODES).unwrap_err();
        assert_eq!((&ack["status"], &ack["revisionAtDecision"]), (&json!("rejected"), &json!(0)));
        ack["message"].as_str().unwrap().to_owned()
    }

    #[test]
    fn parses_envelopes_strictly() {
        let stop = envelope("stop", json!({}));
        assert_eq!(Envelope::parse(&stop, &MODES).unwrap().kind, "stop");
        assert!(refusal(&envelope("dance", json!({}))).starts_with("Invalid params — type: "));
        // The payload is checked before the CAS base (`parseCommandEnvelope`).
        let mut drain = envelope("setAutoDrain", json!({}));
        assert!(refusal(&drain).starts_with("Invalid params — autoDrain: "));
        drain["payload"] = json!({"autoDrain": true});
        assert_eq!(refusal(&drain), "CAS commands require baseRevision and baseLogEpoch");
        drain["baseRevision"] = json!(3);
        assert!(Envelope::parse(&drain, &MODES).is_ok());
        let retry = envelope("retryTurn", json!({"baseRevision": 3}));
        assert!(refusal(&retry).contains("Epoch"));
        assert!(refusal(&json!({"commandId": "c"})).contains("clientId: Invalid input"));
        assert!(refusal(&envelope("stop", json!({"commandId": 7}))).contains("commandId: Invalid"));
        let mut sessionless = envelope("stop", json!({}));
        sessionless.as_object_mut().unwrap().remove("sessionId");
        assert!(refusal(&sessionless).contains("sessionId: Invalid input"));
        let null = envelope("stop", json!({"sessionId": null}));
        assert_eq!(Envelope::parse(&null, &MODES).unwrap().session_id, None);
        assert!(refusal(&envelope("stop", json!({"issuedAt": "now"}))).contains("issuedAt"));
        let blank = envelope("stop", json!({"baseLogEpoch": " "}));
        assert!(refusal(&blank).contains("baseLogEpoch: Too small"));
        let parsed = envelope("stop", json!({"payload": null}));
        assert_eq!(Envelope::parse(&parsed, &MODES).unwrap().payload, &json!({}));
    }

    #[test]
    fn payloads_are_checked_against_their_type_and_the_modes_given() {
        let payload = |kind: &str, payload: Value| {
            let raw = envelope(kind, json!({"payload": payload, "baseRevision": 1}));
            Envelope::parse(&raw, &MODES).err().map(|ack| ack["message"].clone())
        };
        assert_eq!(payload("setAutoDrain", json!({"autoDrain": true, "extra": 1})), None);
        assert_eq!(
            payload("setAutoDrain", json!({})),
            Some(json!(
                "Invalid params — autoDrain: Invalid input: expected boolean, received undefined"
            ))
        );
        let action = payload(
            "resolveInteraction",
            json!({"interactionId": "i", "answer": {"action": "maybe"}}),
        );
        assert!(action.unwrap().as_str().unwrap().starts_with("Invalid params — answer.action: "));
        // The modes come from the release; `setFollowupMode`'s own `mode` keeps its values.
        assert_eq!(payload("switchCollaborationMode", json!({"mode": "plan"})), None);
        assert!(payload("switchCollaborationMode", json!({"mode": "guarded"})).is_some());
        assert!(payload("sendText", json!({"text": "hi", "mode": "guarded"})).is_some());
        assert!(payload("setFollowupMode", json!({"mode": "plan"})).is_some());
        assert_eq!(payload("setFollowupMode", json!({"mode": "guide"})), None);
        // `null` is no absent member, and `beforeQueueItemId` must be there.
        assert!(payload("sendText", json!({"text": "hi", "attachments": null})).is_some());
        let reorder = |before: Value| {
            payload("reorderQueueItem", json!({"queueItemId": "q", "beforeQueueItemId": before}))
        };
        assert_eq!(reorder(Value::Null), None);
        assert!(payload("reorderQueueItem", json!({"queueItemId": "q"})).is_some());
        // An alias is the schema it names; a command executed nowhere takes any object.
        assert!(
            payload("sendQueuedNow", json!({})).unwrap().as_str().unwrap().contains("queueItemId")
        );
        assert_eq!(payload("compact", json!({"anything": 1})), None);
        assert!(payload("compact", json!("text")).is_some());
    }

    /// One session at revision 3, recording what the pipeline asked of it.
    #[derive(Default)]
    struct Fake {
        remembered: Remembered,
        executed: usize,
        outcome: Option<Decision>,
        selection: Option<Value>,
        plan_enabled: bool,
    }

    impl Inbox for Fake {
        fn settled(&mut self, envelope: &Envelope<'_>) -> Option<Value> {
            self.remembered.lookup(envelope.command_id)
        }
        fn session(&self, envelope: &Envelope<'_>) -> Option<(u64, String)> {
            (envelope.session_id == Some("sess_1")).then(|| (3, "epoch".to_owned()))
        }
        fn raced(&self) -> bool {
            false
        }
        fn settings(&self, _: &Envelope<'_>) -> Settings {
            let (selection, plan_enabled) = (self.selection.clone(), self.plan_enabled);
            Settings { selection, mode: "build".into(), plan_enabled }
        }
        fn execute(&mut self, _: &Envelope<'_>) -> Decision {
            self.executed += 1;
            self.outcome.clone().unwrap_or(Decision::accepted(None))
        }
        fn remember(&mut self, envelope: &Envelope<'_>, ack: &Value) {
            self.remembered.remember(envelope.command_id, ack.clone());
        }
    }

    #[test]
    fn admission_refusals_are_decided_afresh_and_outcomes_replay() {
        let mut inbox = Fake::default();
        let mut ack = |raw: Value| decide(&mut inbox, &Envelope::parse(&raw, &MODES).unwrap());
        let nobody = ack(envelope("stop", json!({"sessionId": "sess_2"})));
        assert_eq!(
            (&nobody["reasonCode"], &nobody["revisionAtDecision"]),
            (&json!("proto.sessionNotFound"), &json!(0))
        );
        let drain = |base| json!({"baseRevision": base, "payload": {"autoDrain": true}});
        let stale = ack(envelope("setAutoDrain", drain(2)));
        assert_eq!((&stale["status"], &stale["revisionAtDecision"]), (&json!("stale"), &json!(3)));
        let accepted = ack(envelope("setAutoDrain", drain(3)));
        assert_eq!(accepted["status"], "accepted");
        // The same command id, even with a stale base now: the first outcome, replayed.
        let again = ack(envelope("setAutoDrain", drain(2)));
        assert_eq!(again["status"], "duplicate");
        assert_eq!((inbox.executed, inbox.remembered.0.len()), (1, 1));
    }

    #[test]
    fn an_executed_failure_or_noop_is_remembered() {
        for outcome in [Decision::failed("x"), Decision::noop("queue.itemMissing")] {
            let mut inbox = Fake { outcome: Some(outcome.clone()), ..Fake::default() };
            let raw = envelope("stop", json!({}));
            let first = decide(&mut inbox, &Envelope::parse(&raw, &MODES).unwrap());
            let second = decide(&mut inbox, &Envelope::parse(&raw, &MODES).unwrap());
            assert_eq!(inbox.executed, 1, "{outcome:?}");
            assert_eq!(second, replay(&first));
        }
    }

    fn decided(inbox: &mut Fake, id: &str, kind: &str, payload: Value) -> Value {
        let base = json!({"commandId": id, "payload": payload, "baseRevision": 3});
        let raw = envelope(kind, base);
        decide(inbox, &Envelope::parse(&raw, &MODES).unwrap())
    }

    #[test]
    fn a_session_remembers_its_512_most_recently_used_decisions() {
        let mut inbox = Fake::default();
        let stop =
            |inbox: &mut Fake, id: &str| decided(inbox, id, "stop", json!({}))["status"].clone();
        for n in 0..REMEMBERED_PER_SESSION {
            assert_eq!(stop(&mut inbox, &format!("c{n}")), "accepted");
        }
        // A look-up makes `c0` the most recent: `c1` is the least recent one, and goes first.
        assert_eq!(stop(&mut inbox, "c0"), "duplicate");
        assert_eq!(stop(&mut inbox, "new"), "accepted");
        assert_eq!(inbox.remembered.0.len(), REMEMBERED_PER_SESSION);
        assert_eq!(stop(&mut inbox, "c0"), "duplicate");
        assert_eq!(stop(&mut inbox, "c1"), "accepted", "forgotten, so executed again");
        assert_eq!(inbox.executed, REMEMBERED_PER_SESSION + 2);
    }

    #[test]
    fn an_empty_input_fails_in_the_handler_and_is_remembered() {
        let mut inbox = Fake::default();
        for text in ["", " \n\t", "\u{feff}\u{3000}"] {
            let ack = decided(&mut inbox, text, "sendText", json!({"text": text}));
            assert_eq!(
                ack,
                json!({"commandId": text, "status": "failed", "reasonCode": "proto.invalidPayload",
                       "message": "input must not be empty", "revisionAtDecision": 3}),
                "{text:?}"
            );
        }
        // Remembered: the same command id with text now is the failure again.
        let again = decided(&mut inbox, "", "sendText", json!({"text": "hi"}));
        assert_eq!(again["status"], "failed");
        assert_eq!(inbox.executed, 0);
        // An attachment or a quote is input; so is any other character (U+0085 is not blank).
        let inputs = [
            json!({"text": " ", "attachments": [{"ref": "a"}]}),
            json!({"text": "", "conversationQuotes": [{"text": "q"}]}),
            json!({"text": "\u{85}"}),
            json!({"text": "", "attachments": [], "conversationQuotes": []}),
        ];
        let statuses: Vec<Value> = inputs
            .into_iter()
            .enumerate()
            .map(|(n, payload)| {
                decided(&mut inbox, &format!("i{n}"), "sendText", payload)["status"].clone()
            })
            .collect();
        assert_eq!(
            statuses,
            [json!("accepted"), json!("accepted"), json!("accepted"), json!("failed")]
        );
        assert_eq!(inbox.executed, 3);
    }

    #[test]
    fn a_switch_to_the_current_settings_is_a_remembered_noop() {
        let selection =
            json!({"providerId": "p", "modelId": "m", "options": {"reasoningLevel": "low"}});
        let mut inbox = Fake { selection: Some(selection), ..Fake::default() };
        let model = |provider: &str, model: &str, thought: &str| json!({"provider": provider, "model": model, "thought": thought});
        let mut status = |id: &str, kind: &str, payload: Value| {
            let ack = decided(&mut inbox, id, kind, payload);
            format!(
                "{} {}",
                ack["status"].as_str().unwrap(),
                ack["reasonCode"].as_str().unwrap_or("-")
            )
        };
        let unchanged = "noop config.unchanged";
        assert_eq!(status("m1", "switchModelConfig", model("p", "m", "low")), unchanged);
        // An empty or blank thought keeps the level.
        assert_eq!(status("m2", "switchModelConfig", model("p", "m", " ")), unchanged);
        assert_eq!(status("m3", "switchModelConfig", model("p", "m", " low ")), unchanged);
        assert_eq!(status("m4", "switchModelConfig", model("p", "m", "high")), "accepted -");
        assert_eq!(status("m5", "switchModelConfig", model("p", "m2", "low")), "accepted -");
        assert_eq!(status("m6", "switchModelConfig", model("q", "m", "")), "accepted -");
        assert_eq!(status("b1", "switchCollaborationMode", json!({"mode": "build"})), unchanged);
        assert_eq!(status("e1", "switchCollaborationMode", json!({"mode": "edit"})), "accepted -");
        // Remembered: replayed as a duplicate, whatever the payload is now.
        let replayed = status("m1", "switchModelConfig", model("p", "m", "high"));
        assert_eq!(replayed, "duplicate config.unchanged");
        assert_eq!(inbox.executed, 4);
        // No selection yet: any model is a change; plan on: the same mode turns it off.
        let mut inbox = Fake { plan_enabled: true, ..Fake::default() };
        assert_eq!(
            decided(&mut inbox, "a", "switchModelConfig", model("p", "m", ""))["status"],
            "accepted"
        );
        let build = decided(&mut inbox, "b", "switchCollaborationMode", json!({"mode": "build"}));
        assert_eq!(build["status"], "accepted");
    }
}
