//! The mapping state of one session, shared by its operations and its event mapping.

use zcode_mapper_sdk::contract::{Action, ClientFeatures, MapperError, StopReason, Terminal};

use crate::interactions::Interactions;
use crate::settings::Settings;
use crate::tools::Tools;
use zcode_mapper_sdk::json::internal;
use zcode_mapper_sdk::plan::PlanView;

/// The native session this resource is bound to, and its event subscription (the route).
#[derive(Clone, Debug)]
pub struct Bound {
    pub session_id: String,
    pub subscription_id: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TurnPhase {
    /// No prompt since the last `finish-turn`.
    #[default]
    Idle,
    /// A prompt was started and its terminal event has not arrived.
    Running,
    /// The terminal action was emitted; `finish-turn` is next.
    Ended,
    /// The mapper ended the turn broken and the core asked ZCode to stop; ZCode's own end of
    /// that turn is still to come, and the core waits for it before the next prompt.
    Broken,
}

pub struct State {
    pub workspace: String,
    pub client: ClientFeatures,
    pub bound: Option<Bound>,
    pub settings: Settings,
    pub phase: TurnPhase,
    /// The client cancelled the running turn: whatever ends it ends it `cancelled`.
    pub cancelled: bool,
    pub tools: Tools,
    pub plan: PlanView,
    pub interactions: Interactions,
    /// The `seq` of the last session event: ZCode numbers a session's events without gaps.
    pub last_seq: Option<u64>,
    subscriptions: u64,
    prompts: u64,
}

impl State {
    pub fn new(workspace: String, client: ClientFeatures) -> Self {
        Self {
            workspace,
            client,
            bound: None,
            settings: Settings::default(),
            phase: TurnPhase::Idle,
            cancelled: false,
            tools: Tools::default(),
            plan: PlanView::default(),
            interactions: Interactions::default(),
            last_seq: None,
            subscriptions: 0,
            prompts: 0,
        }
    }

    pub fn running(&self) -> bool {
        self.phase == TurnPhase::Running
    }

    pub fn plan_operations(&self) -> bool {
        self.client.plan_operations
    }

    /// The client renders form elicitation; without, questions are asked as permissions or
    /// declined (the SDK's `elicit::ask`, `plan::ask_approval`).
    pub fn forms(&self) -> bool {
        self.client.form_elicitation
    }

    pub fn bound(&self) -> Result<&Bound, MapperError> {
        self.bound.as_ref().ok_or_else(|| internal("The native session is not open"))
    }

    pub fn session_id(&self) -> Result<&str, MapperError> {
        self.bound().map(|bound| bound.session_id.as_str())
    }

    /// A fresh subscription id; unique per session resource.
    pub fn next_subscription_id(&mut self, session_id: &str) -> String {
        self.subscriptions += 1;
        format!("zcode-acp-{session_id}-{}", self.subscriptions)
    }

    /// A fresh prompt counter value.
    pub fn next_prompt_number(&mut self) -> u64 {
        self.prompts += 1;
        self.prompts
    }

    pub fn start_turn(&mut self) {
        self.phase = TurnPhase::Running;
        self.cancelled = false;
        self.tools.clear();
    }

    /// Ends the running turn with `terminal`, taking down a proposal the turn no longer needs
    /// (an accepted one survives a normal end until `finish-turn`).
    pub fn end_turn(&mut self, terminal: Terminal) -> Vec<Action> {
        self.phase = TurnPhase::Ended;
        let keep_proposal = matches!(terminal, Terminal::Stop(_)) && !self.cancelled;
        let mut actions: Vec<Action> = Vec::new();
        if !keep_proposal {
            let plan_operations = self.plan_operations();
            actions.extend(self.plan.remove(plan_operations).into_iter().map(Action::Update));
        }
        actions.push(Action::Terminal(terminal));
        actions
    }

    /// A protocol break inside the running turn: the turn ends broken.
    pub fn break_turn(&mut self, error: MapperError) -> Vec<Action> {
        let actions = self.end_turn(Terminal::Broken(error));
        self.phase = TurnPhase::Broken;
        actions
    }

    /// The event that ended the native turn cannot be mapped: the turn breaks, and its native
    /// end has come with it.
    pub fn break_ended_turn(&mut self, error: MapperError) -> Vec<Action> {
        let mut actions = self.break_turn(error);
        actions.extend(self.end_broken_turn());
        actions
    }

    /// ZCode's own end of a turn the mapper broke: the core only needs to know it came (a
    /// `cancelled` stop, since the core stopped it), so the session is free again.
    pub fn end_broken_turn(&mut self) -> Vec<Action> {
        self.phase = TurnPhase::Ended;
        vec![Action::Terminal(Terminal::Stop(StopReason::Cancelled))]
    }
}
