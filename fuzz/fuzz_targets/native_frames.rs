//! Host stdout bytes, split arbitrarily, through the zcode-task-v1 decoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zcode_acp_fuzz::frames::check_frames(data));
