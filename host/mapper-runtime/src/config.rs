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
    /// Linear memory one mapper instance may grow to during a call. Inputs the core passes in
    /// are copied into this memory too, so it also bounds the size of one call's arguments.
    pub memory: SizeBudget,
    /// The CPU limit of each call.
    pub fuel: FuelBudget,
    /// Total bytes of strings and byte lists one call may return. It grows with the call's input
    /// and with the memory the instance held before the call (see [`SizeBudget::for_output`]).
    pub output: SizeBudget,
    /// Stack the WebAssembly code of a call may use (an engine setting).
    pub max_wasm_stack_bytes: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            memory: SizeBudget { base: 64 * MIB, per_byte: 8 },
            fuel: FuelBudget::default(),
            output: SizeBudget { base: 16 * MIB, per_byte: 4 },
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
        Self { base: 50_000_000, per_byte: 512, per_input: 250_000 }
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

/// A byte limit of one call that grows with what the call is handed, like the fuel: a mapper
/// holds its input, what it parses it into and what it returns, and ACP output repeats what a
/// native event carries (a written file's text is in the tool call, its diff and the permission
/// question). Input the core accepts (`docs/reliability.md`, size limits) must never hit it; a
/// mapper that allocates or returns without bound still does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeBudget {
    pub base: usize,
    pub per_byte: usize,
}

impl SizeBudget {
    /// The limit of a call handed `input`. Memory a mapper already holds is not taken back.
    pub(crate) fn for_call(&self, input: Input) -> usize {
        self.base.saturating_add(self.per_byte.saturating_mul(input.bytes))
    }

    /// The output limit of a call handed `input`, in an instance whose memory had grown by
    /// `held` bytes before the call. A native message assembled over several calls (a V4 frame
    /// in fragments) is answered by the call that completes it, whose own input is small: what
    /// earlier calls handed in counts as this call's. Growth during the call does not, so a
    /// mapper cannot raise its own limit by allocating.
    pub(crate) fn for_output(&self, input: Input, held: usize) -> usize {
        self.for_call(Input::bytes(input.bytes.saturating_add(held)))
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

/// Formats a byte count for messages: MiB to one decimal from 1 MiB on, bytes below.
pub(crate) fn describe_bytes(bytes: usize) -> String {
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_limit_counts_the_memory_held_before_the_call() {
        let budget = SizeBudget { base: 100, per_byte: 4 };
        assert_eq!(budget.for_output(Input::bytes(10), 0), budget.for_call(Input::bytes(10)));
        assert_eq!(budget.for_output(Input::bytes(10), 1000), 100 + 4 * 1010);
        assert_eq!(budget.for_output(Input::bytes(usize::MAX), 1), usize::MAX);
    }

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

    #[test]
    fn size_limits_grow_with_the_input_only() {
        let budget = SizeBudget { base: 100, per_byte: 4 };
        assert_eq!(budget.for_call(Input::NONE), 100);
        assert_eq!(budget.for_call(Input { bytes: 10, items: 7 }), 140);
        let huge = SizeBudget { base: usize::MAX - 1, per_byte: 2 };
        assert_eq!(huge.for_call(Input::bytes(usize::MAX)), usize::MAX);
    }
}
