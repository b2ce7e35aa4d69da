//! The mapping state of one native session: operations (open, prompt, cancel, settings,
//! answers, close) as step machines, and the mapping of the session's conversation frames.

pub mod command;
mod feed;
mod history;
mod open;
mod ops;
mod prompt;

use std::collections::BTreeMap;

use zcode_contract::{
    Action, ClientFeatures, Effects, MapperError, NativeReply, NativeRequest, Outgoing,
    SessionInit, SessionInput, SessionOp, Step, Terminal,
};

use crate::session::feed::Sync;
use zcode_mapper_sdk::ids::derived_uuid;
use zcode_v4::acp::interactions::Interactions;
use zcode_v4::acp::plan::PlanView;
use zcode_v4::acp::settings::Settings;
use zcode_v4::acp::track::Tracker;
use zcode_v4::acp::turn::Turn;
use zcode_v4::state::Conversation;

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

/// The session resource.
pub struct ServicesSession {
    state: State,
    ops: BTreeMap<u64, ops::PendingOp>,
    announced: Vec<MapRequest>,
    in_flight: BTreeMap<u64, MapRequest>,
}

impl ServicesSession {
    pub fn new(init: &SessionInit) -> Self {
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
            ops: BTreeMap::new(),
            announced: Vec::new(),
            in_flight: BTreeMap::new(),
        }
    }

    fn announce(&mut self, request: MapRequest) {
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
    fn break_stream(&mut self, problem: MapperError, actions: &mut Vec<Action>) {
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
            self.state.turn.phase = zcode_v4::acp::turn::TurnPhase::Ended;
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
}

/// The session maps whole batches itself (fragments and deltas of one frame arrive together),
/// so it is its own state machine rather than an SDK `Session`.
impl zcode_mapper_sdk::SessionMachine for ServicesSession {
    fn start(&mut self, op_id: u64, op: &SessionOp, first: u64) -> Step {
        self.state.op_request = first;
        ops::start(self, op_id, op, first)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first: u64) -> Step {
        ops::resume(self, op_id, reply, first)
    }

    /// Maps a batch of input in arrival order; a protocol break is a `terminal(broken)`.
    fn map(&mut self, inputs: &[SessionInput]) -> Effects {
        let mut actions = Vec::new();
        for input in inputs {
            if let Some(reason) = &self.state.broken {
                actions.push(Action::Ignore(format!("input after a protocol break ({reason})")));
                continue;
            }
            let result = match input {
                SessionInput::Event(payload) => match payload.as_text() {
                    Some(json) => feed::on_event(self, json, &mut actions),
                    None => Err(zcode_mapper_sdk::json::protocol(
                        "A conversation event is not JSON text",
                    )),
                },
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

    /// Writes the requests the last `map` announced.
    fn issue(&mut self, first: u64) -> Outgoing {
        let workspace = self.state.workspace.clone();
        let mut requests: Vec<NativeRequest> = Vec::new();
        for (index, request) in std::mem::take(&mut self.announced).into_iter().enumerate() {
            let id = first + index as u64;
            let call = feed::call(&self.state, &workspace, &request);
            requests.push(call.into_request(id));
            self.in_flight.insert(id, request);
        }
        Outgoing { requests, ..Outgoing::default() }
    }
}
