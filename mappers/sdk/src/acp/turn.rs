//! The prompt turn of a session as ACP has it: one at a time, ended by the host, and a turn the
//! client cancelled ends `cancelled`, whatever the host says.

use zcode_contract::{Action, MapperError, StopReason, Terminal};

use crate::json::internal;

/// Whether a turn runs, and whether the client cancelled it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Turn {
    running: bool,
    cancelled: bool,
}

impl Turn {
    /// A prompt starts a turn; refused while one runs.
    pub fn start(&mut self) -> Result<(), MapperError> {
        if self.running {
            return Err(internal("A prompt turn is already running in this session"));
        }
        *self = Turn { running: true, cancelled: false };
        Ok(())
    }

    pub fn running(&self) -> bool {
        self.running
    }

    /// The client cancelled the running turn (if one runs).
    pub fn cancel(&mut self) {
        self.cancelled = self.running;
    }

    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// The host ended the turn with `reason`: the terminal action, `cancelled` if the client
    /// cancelled the turn.
    pub fn stop(&mut self, reason: StopReason) -> Action {
        let reason = if self.cancelled { StopReason::Cancelled } else { reason };
        self.running = false;
        Action::Terminal(Terminal::Stop(reason))
    }

    /// The core finished the turn (`finish_turn`): whatever runs is over.
    pub fn finish(&mut self) {
        self.running = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(reason: StopReason) -> Action {
        Action::Terminal(Terminal::Stop(reason))
    }

    #[test]
    fn runs_one_turn_at_a_time() {
        let mut turn = Turn::default();
        assert!(!turn.running());
        turn.start().unwrap();
        assert_eq!(
            turn.start().unwrap_err().message,
            "A prompt turn is already running in this session"
        );
        assert_eq!(turn.stop(StopReason::EndTurn), stopped(StopReason::EndTurn));
        assert!(!turn.running());
        turn.start().unwrap();
        turn.finish();
        assert!(!turn.running());
    }

    #[test]
    fn a_cancelled_turn_ends_cancelled() {
        let mut turn = Turn::default();
        turn.cancel();
        assert!(!turn.cancelled(), "no turn runs");
        turn.start().unwrap();
        turn.cancel();
        assert!(turn.cancelled());
        assert_eq!(turn.stop(StopReason::EndTurn), stopped(StopReason::Cancelled));
        turn.start().unwrap();
        assert!(!turn.cancelled(), "a new turn starts uncancelled");
    }
}
