//! What two or more protocol generations share: the scripted model (`scenario/`) and the
//! pieces of a turn every runner uses (`turn.rs`), the fault-switch mechanism, the single stdout
//! writer, the session store, the process frame (runtime, signals, settings, platform names),
//! the model catalogue of the GLM releases, the sign-in state, the clock, JSON text written by
//! hand, member look-ups that do not hash, and the zod-like schema validator. Nothing here
//! knows a generation: they build on it.

pub mod attachments;
pub mod auth;
pub mod catalog;
pub mod clock;
pub mod fault;
pub mod json_text;
pub mod members;
pub mod output;
pub mod process;
pub mod scenario;
pub mod store;
pub mod turn;
pub mod zod;
