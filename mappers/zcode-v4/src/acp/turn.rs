//! The ACP prompt turn and when it ends: ZCode's V4 state has no "turn completed" event, so a
//! turn ends by the Paseo plugin's completion rule (V4S §5.5): the input was accepted and
//! consumed (a user input row carries its command id), the conversation is idle (nothing can be
//! stopped, no active work, not running or prewarming, queue empty, nothing pending) and every
//! turn header of the run has ended. The outcome: cancelled if the client cancelled, failed if
//! a header failed or the conversation is in error, cancelled if a header was interrupted,
//! else the end of the turn.

use std::collections::BTreeMap;

use zcode_contract::{Action, MapperError, StopReason, Terminal};

use crate::acp::track::TurnSignal;
use crate::rows::HeaderState;
use crate::schema::native;
use crate::state::{Conversation, Phase};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TurnPhase {
    #[default]
    Idle,
    /// A prompt was sent; its end is still to come.
    Running,
    /// The terminal action was emitted; `finish-turn` is next.
    Ended,
    /// The mapper ended the turn broken and the core asked ZCode to stop: ZCode's own end is
    /// still to come, and is reported (as `cancelled`) so the core knows the session is free.
    Broken,
}

#[derive(Default)]
pub struct Turn {
    pub phase: TurnPhase,
    pub command_id: Option<String>,
    pub accepted: bool,
    /// ZCode admitted the input to start now: it is the foreground from its admission on, so
    /// a cancelled turn waits for ZCode to take it up, or for the stop to be acknowledged.
    pub starts_now: bool,
    pub consumed: bool,
    pub cancelled: bool,
    /// The cancel's commands were all acknowledged: a state that is idle after them is final.
    pub stop_sent: bool,
    /// Rows above this id are the turn's own (the watermark when the prompt was sent).
    pub first_row: Option<u64>,
    pub headers: BTreeMap<u64, HeaderState>,
}

impl Turn {
    pub fn running(&self) -> bool {
        self.phase == TurnPhase::Running
    }

    /// A turn for a prompt with `command_id` starts.
    pub fn start(&mut self, command_id: &str, watermark: Option<u64>) {
        *self = Turn {
            phase: TurnPhase::Running,
            command_id: Some(command_id.to_string()),
            first_row: watermark,
            ..Turn::default()
        };
    }

    pub fn signal(&mut self, signal: &TurnSignal) {
        if !matches!(self.phase, TurnPhase::Running | TurnPhase::Broken) {
            return;
        }
        match signal {
            TurnSignal::Header { row_id, state, source_command_id } => {
                let ours = source_command_id.is_some() && *source_command_id == self.command_id;
                // A header of another input is not this turn's, however new: an earlier
                // prompt's input that ZCode ran late must not end this one interrupted.
                let new = source_command_id.is_none()
                    && self.first_row.is_none_or(|first| *row_id > first);
                if ours || new || self.headers.contains_key(row_id) {
                    self.headers.insert(*row_id, *state);
                }
            }
            TurnSignal::Input { source_command_id } => {
                if self.command_id.as_deref() == Some(source_command_id) {
                    self.consumed = true;
                }
            }
        }
    }

    /// The turn's end, if the completion rule holds now.
    pub fn check(&mut self, conversation: &Conversation, live: bool) -> Option<Terminal> {
        if !live
            || !conversation.idle()
            || self.headers.values().any(|state| *state == HeaderState::Running)
        {
            return None;
        }
        match self.phase {
            TurnPhase::Broken => {
                self.phase = TurnPhase::Ended;
                Some(Terminal::Stop(StopReason::Cancelled))
            }
            TurnPhase::Running if self.accepted && (self.consumed || self.cancel_settled()) => {
                self.phase = TurnPhase::Ended;
                let failed = self.headers.values().any(|state| *state == HeaderState::Failed)
                    || conversation.control.phase == Phase::Error;
                let interrupted =
                    self.headers.values().any(|state| *state == HeaderState::CompletedInterrupted);
                Some(if self.cancelled {
                    Terminal::Stop(StopReason::Cancelled)
                } else if failed {
                    let message = conversation.control.last_error.clone().filter(|m| !m.is_empty());
                    Terminal::Failed(native(
                        message.unwrap_or_else(|| "ZCode turn failed".to_string()),
                    ))
                } else if interrupted {
                    Terminal::Stop(StopReason::Cancelled)
                } else {
                    Terminal::Stop(StopReason::EndTurn)
                })
            }
            _ => None,
        }
    }

    /// A cancelled turn whose input was never taken up may end: an input admitted to start now
    /// is the foreground even before its turn starts, and an idle state seen before the stop
    /// was acknowledged may only mean ZCode has yet to start it (and would run it after the
    /// client was told `cancelled`).
    fn cancel_settled(&self) -> bool {
        self.cancelled && (!self.starts_now || self.stop_sent)
    }

    /// Ends a running turn broken (the stream goes on).
    pub fn break_turn(&mut self, problem: MapperError) -> Option<Action> {
        if self.phase != TurnPhase::Running {
            return None;
        }
        self.phase = TurnPhase::Broken;
        Some(Action::Terminal(Terminal::Broken(problem)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::draft;

    fn conversation() -> Conversation {
        Conversation::parse(&draft("s", 0)).unwrap().0
    }

    #[test]
    fn ends_when_consumed_idle_and_headers_done() {
        let mut turn = Turn::default();
        turn.start("c1", Some(4));
        let mut idle = conversation();
        assert_eq!(turn.check(&idle, true), None, "not accepted yet");
        turn.accepted = true;
        assert_eq!(turn.check(&idle, true), None, "not consumed yet");
        turn.signal(&TurnSignal::Input { source_command_id: "other".into() });
        assert!(!turn.consumed);
        turn.signal(&TurnSignal::Input { source_command_id: "c1".into() });
        turn.signal(&TurnSignal::Header {
            row_id: 5,
            state: HeaderState::Running,
            source_command_id: None,
        });
        assert_eq!(turn.check(&idle, true), None, "a header runs");
        turn.signal(&TurnSignal::Header {
            row_id: 5,
            state: HeaderState::CompletedSuccess,
            source_command_id: None,
        });
        idle.control.can_stop = true;
        assert_eq!(turn.check(&idle, true), None, "can still stop");
        idle.control.can_stop = false;
        assert_eq!(turn.check(&idle, false), None, "recovering");
        assert_eq!(turn.check(&idle, true), Some(Terminal::Stop(StopReason::EndTurn)));
        assert_eq!(turn.phase, TurnPhase::Ended);
        assert_eq!(turn.check(&idle, true), None, "once");
    }

    #[test]
    fn reports_failures_interruptions_and_cancellation() {
        let idle = conversation();
        let mut failed = Turn::default();
        failed.start("c", None);
        failed.accepted = true;
        failed.consumed = true;
        failed.signal(&TurnSignal::Header {
            row_id: 1,
            state: HeaderState::Failed,
            source_command_id: Some("c".into()),
        });
        assert_eq!(failed.check(&idle, true), Some(Terminal::Failed(native("ZCode turn failed"))));
        let mut interrupted = Turn::default();
        interrupted.start("c", None);
        interrupted.accepted = true;
        interrupted.consumed = true;
        interrupted.signal(&TurnSignal::Header {
            row_id: 1,
            state: HeaderState::CompletedInterrupted,
            source_command_id: None,
        });
        assert_eq!(interrupted.check(&idle, true), Some(Terminal::Stop(StopReason::Cancelled)));
        let mut cancelled = Turn::default();
        cancelled.start("c", None);
        cancelled.accepted = true;
        cancelled.cancelled = true;
        assert_eq!(
            cancelled.check(&idle, true),
            Some(Terminal::Stop(StopReason::Cancelled)),
            "cancelled before consumption"
        );
        let mut old = Turn::default();
        old.start("c", Some(9));
        old.signal(&TurnSignal::Header {
            row_id: 3,
            state: HeaderState::Running,
            source_command_id: None,
        });
        assert!(old.headers.is_empty(), "headers before the prompt are not the turn's");
    }

    #[test]
    fn a_cancelled_input_admitted_to_start_now_ends_once_consumed_or_once_the_stop_is_acknowledged()
    {
        let idle = conversation();
        let mut turn = Turn::default();
        turn.start("c", Some(4));
        turn.accepted = true;
        turn.starts_now = true;
        turn.cancelled = true;
        assert_eq!(turn.check(&idle, true), None, "ZCode has yet to run (and stop) the input");
        let mut dropped = std::mem::take(&mut turn);
        dropped.stop_sent = true;
        assert_eq!(
            dropped.check(&idle, true),
            Some(Terminal::Stop(StopReason::Cancelled)),
            "idle once the stop was acknowledged: ZCode dropped the input"
        );
        turn.start("c", Some(4));
        turn.accepted = true;
        turn.starts_now = true;
        turn.cancelled = true;
        turn.signal(&TurnSignal::Input { source_command_id: "c".into() });
        turn.signal(&TurnSignal::Header {
            row_id: 5,
            state: HeaderState::CompletedInterrupted,
            source_command_id: Some("c".into()),
        });
        assert_eq!(turn.check(&idle, true), Some(Terminal::Stop(StopReason::Cancelled)));
    }

    #[test]
    fn a_late_header_of_another_input_is_not_the_turns() {
        let idle = conversation();
        let mut turn = Turn::default();
        turn.start("c2", Some(4));
        turn.accepted = true;
        // The earlier prompt's input, run late and interrupted by this one.
        turn.signal(&TurnSignal::Header {
            row_id: 5,
            state: HeaderState::CompletedInterrupted,
            source_command_id: Some("c1".into()),
        });
        turn.signal(&TurnSignal::Input { source_command_id: "c2".into() });
        turn.signal(&TurnSignal::Header {
            row_id: 7,
            state: HeaderState::CompletedSuccess,
            source_command_id: Some("c2".into()),
        });
        assert_eq!(turn.headers.keys().copied().collect::<Vec<_>>(), vec![7]);
        assert_eq!(turn.check(&idle, true), Some(Terminal::Stop(StopReason::EndTurn)));
    }

    #[test]
    fn a_broken_turn_reports_zcodes_own_end() {
        let mut turn = Turn::default();
        turn.start("c", None);
        assert!(turn.break_turn(native("x")).is_some());
        assert!(turn.break_turn(native("x")).is_none(), "once");
        assert_eq!(turn.check(&conversation(), true), Some(Terminal::Stop(StopReason::Cancelled)));
    }
}
