//! The one capability a mapper gets from the core: its log. Natively (tests, benchmarks) the
//! messages go to stderr.
//!
//! Never log native payloads, prompt text, tool input or anything a user typed: the core's log
//! carries what a mapper writes here.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::guest::bindings::zcode::mapper::logging::{Level as Wit, log};
        let level = match level {
            Level::Trace => Wit::Trace,
            Level::Debug => Wit::Debug,
            Level::Info => Wit::Info,
            Level::Warn => Wit::Warn,
            Level::Error => Wit::Error,
        };
        log(level, message);
    }
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("mapper {level:?}: {message}");
}

pub fn warn(message: &str) {
    log(Level::Warn, message);
}

pub fn debug(message: &str) {
    log(Level::Debug, message);
}
