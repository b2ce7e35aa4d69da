//! Golden traces: a mapper's calls and results as JSON Lines (`docs/golden-traces.md`). The
//! recorder (`host/recorder`) writes them from a live session; the replayer performs them
//! through any [`zcode_contract::Mapper`] and compares every result with its expectation
//! (`zcode-acp mapper test`, mapper crates' tests).
//!
//! - `format`: the lines ([`Call`], [`Outcome`]) and how they are read and written.
//! - `values`: contract values in the trace form (the readability rules).
//! - `replay`: performing a trace, comparing, blessing.

mod diff;
pub mod format;
mod replay;
mod values;

pub use format::{Call, DEFAULT_SESSION, Line, Outcome, parse_line, write_line};
pub use replay::{
    BlessScope, Mismatch, Report, TraceError, bless, bless_files, bless_files_if_asked, replay,
    replay_files, trace_files,
};
