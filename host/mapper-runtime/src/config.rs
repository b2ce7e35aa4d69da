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
    /// The CPU limit of each call.
    pub fuel: FuelBudget,
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
            fuel: FuelBudget::default(),
            output_limit_bytes: 16 * MIB,
            max_wasm_stack_bytes: 512 * 1024,
        }
    }
}

/// The WebAssembly fuel (about one unit per instruction) one call may use. A call's work grows
/// with the data it touches, so the budget does too: a fixed budget either stops an endless
/// loop late or traps a mapper on large but legitimate input (a 2 MB prompt ran out of 50 M).
/// The defaults and how they were measured are in `docs/mapper-runtime.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuelBudget {
    /// What every call (and each instantiation) gets.
    pub base: u64,
    /// Per byte of the call's input, and per byte the instance's memory has grown since it was
    /// created: work on data handed in earlier (a frame buffered across pushes, updates kept
    /// for a later step) happens in calls whose own input is small.
    pub per_byte: u64,
    /// Per input of a `map` batch (each input has a fixed cost besides its bytes).
    pub per_input: u64,
}

impl Default for FuelBudget {
    fn default() -> Self {
        Self { base: 50_000_000, per_byte: 256, per_input: 250_000 }
    }
}

impl FuelBudget {
    /// The fuel for a call handed `input`, in an instance whose memory grew by `grown` bytes.
    pub(crate) fn for_call(&self, input: Input, grown: usize) -> u64 {
        let bytes = (input.bytes as u64).saturating_add(grown as u64);
        self.base
            .saturating_add(self.per_byte.saturating_mul(bytes))
            .saturating_add(self.per_input.saturating_mul(input.items as u64))
    }
}

/// What one call hands the mapper, for its fuel budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Input {
    /// Bytes of strings and byte lists.
    pub bytes: usize,
    /// Inputs of a `map` batch (0 for other calls).
    pub items: usize,
}

impl Input {
    pub const NONE: Input = Input { bytes: 0, items: 0 };

    pub fn bytes(bytes: usize) -> Self {
        Input { bytes, items: 0 }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_grows_with_input_memory_and_batch_size() {
        let budget = FuelBudget { base: 1000, per_byte: 10, per_input: 100 };
        assert_eq!(budget.for_call(Input::NONE, 0), 1000);
        assert_eq!(budget.for_call(Input::bytes(5), 0), 1050);
        assert_eq!(budget.for_call(Input::bytes(5), 7), 1120);
        assert_eq!(budget.for_call(Input { bytes: 5, items: 3 }, 0), 1350);
        let huge = FuelBudget { base: u64::MAX - 1, per_byte: u64::MAX, per_input: 1 };
        assert_eq!(huge.for_call(Input { bytes: usize::MAX, items: 1 }, usize::MAX), u64::MAX);
    }
}
