//! Services Server stdout bytes (hello, binary IPC frames, values), split arbitrarily, through
//! the zcode-services-v4 decoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zcode_acp_fuzz::services::check_services_frames(data));
