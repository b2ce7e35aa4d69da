//! The prompt state machine of one session.
//!
//! ```text
//! idle → sending → running → completing → idle
//!        running ↔ awaiting interaction (pending non-empty)
//!        running → cancelling → completing
//! ```
//! A turn completes only when the native side has ended it (a terminal action) *and* every
//! interaction it raised has been answered natively.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::PromptResponse;
use tokio::sync::oneshot;
use tokio::time::Instant;
use zcode_contract::{MapperError, StopReason};

use super::interaction::Asking;
use crate::error::{CoordinatorError, FailureKind};

pub(crate) type PromptReply = oneshot::Sender<Result<PromptResponse, CoordinatorError>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The input is being handed to the host; events wait until it is accepted.
    Sending,
    Running,
    /// `session/cancel` arrived: the native stop was sent, waiting for the native end.
    Cancelling,
}

/// How the native side ended the turn.
#[derive(Debug, Clone)]
pub(crate) enum Ending {
    Stopped(StopReason),
    /// The native turn failed (the host stopped it itself).
    Failed(MapperError),
    /// We could not follow the stream (or the client failed us): the native generation was
    /// asked to stop and its own end is still to come.
    Broken(CoordinatorError),
}

/// An interaction the host is waiting on.
pub(crate) struct Pending {
    /// The option that denies, for permissions: what the host gets on any failure.
    pub deny_option: Option<String>,
    /// The task asking the client, if any; it ends with this entry.
    pub asking: Option<Asking>,
}

pub(crate) struct Turn {
    pub reply: Option<PromptReply>,
    pub phase: Phase,
    pub pending: HashMap<String, Pending>,
    pub ending: Option<Ending>,
    pub stop_sent: bool,
    /// After a cancel: answer `cancelled` by then even if the host never ends the turn.
    pub cancel_deadline: Option<Instant>,
}

impl Turn {
    pub fn new(reply: PromptReply) -> Self {
        Self {
            reply: Some(reply),
            phase: Phase::Sending,
            pending: HashMap::new(),
            ending: None,
            stop_sent: false,
            cancel_deadline: None,
        }
    }

    pub fn cancelled(&self) -> bool {
        self.phase == Phase::Cancelling
    }

    /// ZCode itself ended the turn: there is nothing left to stop.
    pub fn ended_natively(&self) -> bool {
        matches!(self.ending, Some(Ending::Stopped(_) | Ending::Failed(_)))
    }

    /// The first ending wins: a later one (say the native failure that follows a stream we broke) does
    /// not overwrite what the client will be told.
    pub fn end(&mut self, ending: Ending) {
        if self.ending.is_none() {
            self.ending = Some(ending);
        }
    }

    pub fn ready_to_complete(&self) -> bool {
        self.phase != Phase::Sending && self.ending.is_some() && self.pending.is_empty()
    }

    /// The stop reason or error the client gets. A cancelled turn always reports `cancelled`
    /// (ACP requires it after `session/cancel`, whatever happened underneath).
    pub fn outcome(&self) -> Result<StopReason, CoordinatorError> {
        if self.cancelled() {
            return Ok(StopReason::Cancelled);
        }
        match self.ending.as_ref().expect("outcome of an unfinished turn") {
            Ending::Stopped(reason) => Ok(*reason),
            Ending::Failed(error) => Err(CoordinatorError::failed(
                FailureKind::TurnFailed,
                format!("ZCode turn failed: {}", error.message),
            )),
            Ending::Broken(error) => Err(error.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zcode_contract::ErrorKind;

    fn turn() -> Turn {
        Turn::new(oneshot::channel().0)
    }

    #[test]
    fn completes_only_after_ending_and_answers() {
        let mut turn = turn();
        turn.end(Ending::Stopped(StopReason::EndTurn));
        assert!(!turn.ready_to_complete(), "still sending");
        turn.phase = Phase::Running;
        turn.pending.insert("p1".into(), Pending { deny_option: None, asking: None });
        assert!(!turn.ready_to_complete(), "an interaction is unanswered");
        turn.pending.clear();
        assert!(turn.ready_to_complete());
        assert_eq!(turn.outcome().unwrap(), StopReason::EndTurn);
    }

    #[test]
    fn cancelled_turns_report_cancelled_whatever_the_ending() {
        let mut turn = turn();
        turn.phase = Phase::Cancelling;
        turn.end(Ending::Failed(MapperError::new(ErrorKind::Native, "stopped")));
        assert_eq!(turn.outcome().unwrap(), StopReason::Cancelled);
    }

    #[test]
    fn the_first_ending_wins_and_failures_are_errors() {
        let mut turn = turn();
        turn.phase = Phase::Running;
        turn.end(Ending::Broken(CoordinatorError::failed(
            FailureKind::NativeProtocol,
            "unknown event",
        )));
        turn.end(Ending::Stopped(StopReason::EndTurn));
        let error = turn.outcome().unwrap_err();
        assert!(error.to_string().contains("unknown event"));
    }
}
