//! Limits and settings of the mapper runtime, with their defaults.

use std::path::PathBuf;

const MIB: usize = 1024 * 1024;

/// Settings for one [`crate::MapperRuntime`]. `Default` gives the documented limits and no
/// cache; the application passes its OS cache directory in `cache_dir`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Directory for precompiled mappers (e.g. `~/.cache/zcode-acp/mappers`); `None` compiles
    /// every mapper on each load.
    pub cache_dir: Option<PathBuf>,
    /// Linear memory one mapper instance may grow to. Inputs the core passes in are copied into
    /// this memory too, so it also bounds the size of one call's arguments.
    pub memory_limit_bytes: usize,
    /// WebAssembly fuel for one call (roughly one unit per instruction): the CPU limit.
    pub fuel_per_call: u64,
    /// Total bytes of strings and byte lists one call may return.
    pub output_limit_bytes: usize,
    /// Stack the WebAssembly code of a call may use (an engine setting).
    pub max_wasm_stack_bytes: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            memory_limit_bytes: 64 * MIB,
            fuel_per_call: 50_000_000,
            output_limit_bytes: 16 * MIB,
            max_wasm_stack_bytes: 512 * 1024,
        }
    }
}

/// Formats a byte count for messages: whole MiB when exact, bytes otherwise.
pub(crate) fn describe_bytes(bytes: usize) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}
