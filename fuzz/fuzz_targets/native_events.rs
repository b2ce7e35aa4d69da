//! Native event sequences (mutated real payloads, answers, cancels) through a zcode-task-v1
//! session with a running prompt.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zcode_acp_fuzz::events::check_events(data));
