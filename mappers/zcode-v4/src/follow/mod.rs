//! Following a V4 conversation for one ACP session: the state a session knows (the
//! conversation, what the client was told of each row, the turn, settings, interactions,
//! plans), the frames mapped in batches ([`feed`]: physical frames in, logical frames applied
//! in sequence, recovery when the stream is damaged or has a gap, rows paged when a snapshot
//! skipped some), and the requests that mapping needs ([`MapRequest`]), which the mapper's
//! transport writes. A V4-only mapper's session is its operations (open, prompt, settings,
//! close) over its transport plus a [`Follow`].

pub mod feed;

use std::collections::BTreeMap;

use serde_json::Value;
use zcode_contract::{
    Action, ClientFeatures, Effects, ErrorKind, MapperError, NativeData, NativeReply, ReplyBody,
    SessionInit, SessionInput, Terminal,
};
use zcode_mapper_sdk::ids::derived_uuid;
use zcode_mapper_sdk::json::{error, protocol};
use zcode_mapper_sdk::pieces::Joiner;

use crate::acp::interactions::Interactions;
use crate::acp::plan::PlanView;
use crate::acp::settings::Settings;
use crate::acp::track::Tracker;
use crate::acp::turn::Turn;
use crate::state::Conversation;
use feed::Sync;

/// The native session this resource is bound to.
#[derive(Clone, Debug)]
pub struct Bound {
    pub session_id: String,
    /// `conversation/<sessionId>`.
    pub topic: String,
    /// The listen's request id: the event route.
    pub listen_id: u64,
    pub subscription_id: Option<String>,
}

/// Everything a session knows, shared by its operations and its frame mapping.
pub struct State {
    pub workspace: String,
    pub client: ClientFeatures,
    pub bound: Option<Bound>,
    pub conversation: Option<Conversation>,
    pub sync: Sync,
    pub tracker: Tracker,
    pub settings: Settings,
    pub interactions: Interactions,
    pub plan: PlanView,
    pub turn: Turn,
    /// The CLI's clock at the last frame (ms): the only time the mapper knows.
    pub clock: f64,
    /// Commands sent (for command ids).
    pub commands: u64,
    /// The first native request id of the running operation: unique on the connection.
    pub op_request: u64,
    /// The stream broke: nothing more is mapped and no prompt is sent.
    pub broken: Option<String>,
    /// An open (create, load, resume) has not answered yet: metadata the initial snapshot
    /// brings waits for the answer (ACP sends a session's metadata after its open response).
    pub opening: bool,
}

impl State {
    pub fn plan_operations(&self) -> bool {
        self.client.plan_operations
    }

    /// A fresh command id: deterministic (there is no randomness), and mixed with the native
    /// session's log position so a restarted adapter does not repeat an id. Before the first
    /// snapshot the position is unknown; the operation's first request id, unique on the
    /// connection, stands in for it, so a session opened again does not repeat the ids of the
    /// one before (ZCode would answer `duplicate` and drop the input).
    pub fn command_id(&mut self) -> String {
        self.commands += 1;
        let session = self.bound.as_ref().map(|b| b.session_id.as_str()).unwrap_or_default();
        let (epoch, seq) = match &self.conversation {
            Some(c) => (c.log_epoch.as_str(), c.seq.to_string()),
            None => ("", format!("request-{}", self.op_request)),
        };
        derived_uuid(&[
            "zcode-acp-command",
            session,
            &self.commands.to_string(),
            epoch,
            &seq,
            &self.clock.to_string(),
        ])
    }

    /// Metadata updates that changed, as action updates.
    pub fn metadata(&mut self) -> Result<Vec<String>, MapperError> {
        let plan_operations = self.plan_operations();
        self.settings.metadata(self.conversation.as_ref(), plan_operations)
    }
}

/// A request the session's mapping needs, announced by `map` and written by `issue`.
#[derive(Clone, Debug, PartialEq)]
pub enum MapRequest {
    Resync,
    /// `conversationRowsRangeV4` for rows before `before`.
    RowsPage {
        before: u64,
    },
}

/// How the transport names the calls behind the requests, for error messages.
#[derive(Clone, Copy, Debug)]
pub struct Labels {
    /// The resync that asks for a fresh snapshot.
    pub resync: &'static str,
    /// A page of rows.
    pub rows_page: &'static str,
}

/// A session's conversation, followed.
pub struct Follow {
    pub state: State,
    pub labels: Labels,
    /// Requests the last `map` announced, for the transport to write.
    pub announced: Vec<MapRequest>,
    /// Requests written, by native request id.
    pub in_flight: BTreeMap<u64, MapRequest>,
    /// A large event coming in pieces (a Services Server turn's last frame).
    pieces: Joiner,
}

/// The largest event joined from pieces: the largest message of the Services Server's IPC.
const LARGEST_EVENT: usize = 16 * 1024 * 1024;

impl Follow {
    pub fn new(init: &SessionInit, labels: Labels) -> Self {
        Self {
            state: State {
                workspace: init.workspace.clone(),
                client: init.client,
                bound: None,
                conversation: None,
                sync: Sync::default(),
                tracker: Tracker::default(),
                settings: Settings::default(),
                interactions: Interactions::default(),
                plan: PlanView::default(),
                turn: Turn::default(),
                clock: 0.0,
                commands: 0,
                op_request: 0,
                broken: None,
                opening: false,
            },
            labels,
            announced: Vec::new(),
            in_flight: BTreeMap::new(),
            pieces: Joiner::default(),
        }
    }

    pub fn announce(&mut self, request: MapRequest) {
        // A resync is only asked for outside a recovery, so one still in flight has already
        // delivered its snapshot: its reply (which may follow that snapshot) is no answer to
        // the new one. Skipping it left the session waiting for a snapshot nobody was asked
        // for, its broken turn never ending (F-21). A page in flight does answer a repeat.
        let in_flight =
            request != MapRequest::Resync && self.in_flight.values().any(|r| *r == request);
        if !self.announced.contains(&request) && !in_flight {
            self.announced.push(request);
        }
    }

    /// Something in the stream was not understood. The running turn ends broken (never
    /// `end_turn`); what was mapped of the state can no longer be trusted, so the session
    /// drops the live stream and asks for a fresh snapshot, as for damage in transit: once the
    /// recovery snapshot is understood, the session follows ZCode again and ZCode's own end of
    /// the broken turn frees it. A break before the first snapshot or during a recovery (the
    /// snapshot itself is not understood) is final: the session maps nothing more and a load
    /// opens it again.
    pub fn break_stream(&mut self, problem: MapperError, actions: &mut Vec<Action>) {
        let subscribed = self.state.bound.as_ref().is_some_and(|b| b.subscription_id.is_some());
        let recoverable = subscribed
            && self.state.conversation.is_some()
            && !matches!(
                self.state.sync.phase,
                feed::Phase::Recovering | feed::Phase::AwaitSnapshot
            );
        if !recoverable {
            self.state.broken = Some(problem.message.clone());
            self.announced.clear();
            self.state.turn.phase = crate::acp::turn::TurnPhase::Ended;
            actions.push(Action::Terminal(Terminal::Broken(problem)));
            return;
        }
        let reason = problem.message.clone();
        match self.state.turn.break_turn(problem) {
            Some(terminal) => {
                let plan_operations = self.state.plan_operations();
                actions.extend(
                    self.state.plan.remove(plan_operations).into_iter().map(Action::Update),
                );
                actions.push(terminal);
            }
            None => {
                actions.push(Action::Ignore(format!("not understood outside a turn: {reason}")))
            }
        }
        feed::resync(self, actions, &reason);
    }

    /// Maps a batch of input in arrival order; a protocol break is a `terminal(broken)`.
    pub fn map(&mut self, inputs: &[SessionInput]) -> Effects {
        let mut actions = Vec::new();
        for input in inputs {
            if let Some(reason) = &self.state.broken {
                actions.push(Action::Ignore(format!("input after a protocol break ({reason})")));
                continue;
            }
            let result = match input {
                SessionInput::Event(NativeData::Binary(piece)) => {
                    match self.pieces.push(piece, LARGEST_EVENT) {
                        Ok(Some(json)) => feed::on_event(self, &json, &mut actions),
                        Ok(None) => Ok(()),
                        Err(problem) => Err(problem),
                    }
                }
                SessionInput::Event(NativeData::Text(_)) if self.pieces.in_progress() => {
                    Err(protocol("An event came between the pieces of a large event"))
                }
                SessionInput::Event(NativeData::Text(json)) => {
                    feed::on_event(self, json, &mut actions)
                }
                SessionInput::Reply(reply) => feed::on_reply(self, reply, &mut actions),
            };
            if let Err(problem) = result {
                self.break_stream(problem, &mut actions);
            }
        }
        if self.state.broken.is_none()
            && let Err(problem) = feed::settle(self, &mut actions)
        {
            self.break_stream(problem, &mut actions);
        }
        Effects { actions, writes: Vec::new(), requests: self.announced.len() as u32 }
    }
}

/// A reply as JSON, or the error it carries.
pub fn reply_value(reply: &NativeReply, label: &str) -> Result<Value, MapperError> {
    match &reply.body {
        ReplyBody::Ok(NativeData::Text(json)) => serde_json::from_str(json)
            .map_err(|e| protocol(format!("{label} answered with invalid JSON: {e}"))),
        ReplyBody::Ok(NativeData::Binary(_)) => {
            Err(protocol(format!("{label} answered with binary data")))
        }
        ReplyBody::Error(problem) => Err(problem.clone()),
        ReplyBody::Lost(reason) => {
            Err(error(ErrorKind::Native, format!("ZCode did not answer {label}: {reason}")))
        }
    }
}

/// Names a native validation failure after the call.
pub fn invalid_result(label: &str, problem: &MapperError) -> MapperError {
    protocol(format!("Native result validation failed: {label}: {}", problem.message))
}
