//! Fuzzing the mappers natively: the `zcode-task-v1` decoder of host stdout ([`frames`]) and
//! its mapping of native events to ACP ([`events`]), and the `zcode-services-v4` decoder of
//! the Services Server's binary stdout ([`services`]).
//!
//! Each module exposes a `check_*` function that panics when a property is broken. The
//! libFuzzer targets (`fuzz_targets/`, run with `cargo +nightly fuzz run <target> --features
//! libfuzzer`) feed it arbitrary bytes; the property tests (`tests/prop_*.rs`, part of
//! `cargo test`) feed it generated input for a bounded number of cases. Figures and findings:
//! `docs/reliability.md`.

pub mod events;
pub mod frames;
mod host;
mod mutate;
pub mod services;
mod split;
mod templates;

pub use templates::{event_templates, frame_templates};
