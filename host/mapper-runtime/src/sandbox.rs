//! One sandboxed mapper instance: its own `Store`, resource limits, a fuel budget per call that
//! grows with the call's work, and the rule that a failed instance is never called again.

use std::sync::Arc;

use wasmtime::component::HasSelf;
use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap};
use zcode_contract::MapperFault;

use crate::bindings::exports::zcode::mapper::mapper::Guest;
use crate::bindings::zcode::mapper::{logging, types};
use crate::bindings::{ZcodeMapper, ZcodeMapperPre};
use crate::config::{FuelBudget, Input, RuntimeConfig, SizeBudget, describe_bytes};
use crate::size::ByteSize;

/// A component holds several core instances, tables and memories (the adapter, the main
/// module, shims), so these bounds are generous; the memory size cap is what matters.
const MAX_CORE_INSTANCES: usize = 64;
const MAX_TABLES: usize = 16;
const MAX_MEMORIES: usize = 8;
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Longest mapper log message forwarded to `tracing`, in bytes.
const LOG_MESSAGE_LIMIT: usize = 2048;
/// Log lines one call may emit; the rest are counted and reported once.
const LOG_LINES_PER_CALL: u32 = 200;

/// The limits every call and store of one mapper runs under.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub memory: SizeBudget,
    pub fuel: FuelBudget,
    pub output: SizeBudget,
}

impl Limits {
    pub fn from_config(config: &RuntimeConfig) -> Self {
        Self { memory: config.memory, fuel: config.fuel, output: config.output }
    }
}

/// Store data: the resource limiter and the host side of the `logging` interface.
pub(crate) struct StoreState {
    limiter: CappedLimits,
    log: MapperLog,
}

impl StoreState {
    fn new(mapper: Arc<str>, limits: &Limits) -> Self {
        // The memory cap is checked by `CappedLimits`, per call; the rest by `StoreLimits`.
        let inner = StoreLimitsBuilder::new()
            .table_elements(MAX_TABLE_ELEMENTS)
            .instances(MAX_CORE_INSTANCES)
            .tables(MAX_TABLES)
            .memories(MAX_MEMORIES)
            .trap_on_grow_failure(true)
            .build();
        Self {
            limiter: CappedLimits {
                inner,
                cap: limits.memory.for_call(Input::NONE),
                refused_growth: None,
                grown: 0,
            },
            log: MapperLog { mapper, lines_left: LOG_LINES_PER_CALL, suppressed: 0 },
        }
    }
}

/// `StoreLimits` plus a record of whether the memory cap (rather than, say, a bad memory
/// declaration) stopped a growth, so the fault message can say so, and of how much the
/// instance's memory grew (the data it holds, for the fuel budget).
struct CappedLimits {
    inner: StoreLimits,
    cap: usize,
    refused_growth: Option<usize>,
    /// Bytes all memories grew by since instantiation ended.
    grown: usize,
}

impl ResourceLimiter for CappedLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.refused_growth = Some(desired);
            return Ok(false);
        }
        let allowed = self.inner.memory_growing(current, desired, maximum)?;
        if allowed {
            self.grown = self.grown.saturating_add(desired.saturating_sub(current));
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

/// The `logging.log` import: mapper log lines go to `tracing`, bounded in size and number.
struct MapperLog {
    mapper: Arc<str>,
    lines_left: u32,
    suppressed: u32,
}

impl MapperLog {
    fn start_call(&mut self) {
        self.lines_left = LOG_LINES_PER_CALL;
        self.suppressed = 0;
    }

    fn finish_call(&mut self) {
        if self.suppressed > 0 {
            tracing::warn!(
                target: "zcode_acp::mapper",
                mapper = %self.mapper,
                "{} more mapper log lines dropped (limit {LOG_LINES_PER_CALL} per call)",
                self.suppressed
            );
        }
        self.suppressed = 0;
    }
}

impl logging::Host for StoreState {
    fn log(&mut self, level: logging::Level, message: String) {
        let log = &mut self.log;
        if log.lines_left == 0 {
            log.suppressed += 1;
            return;
        }
        log.lines_left -= 1;
        let message = sanitize(&message, LOG_MESSAGE_LIMIT);
        let mapper = &*log.mapper;
        match level {
            logging::Level::Trace => {
                tracing::trace!(target: "zcode_acp::mapper", mapper, "{message}")
            }
            logging::Level::Debug => {
                tracing::debug!(target: "zcode_acp::mapper", mapper, "{message}")
            }
            logging::Level::Info => {
                tracing::info!(target: "zcode_acp::mapper", mapper, "{message}")
            }
            logging::Level::Warn => {
                tracing::warn!(target: "zcode_acp::mapper", mapper, "{message}")
            }
            logging::Level::Error => {
                tracing::error!(target: "zcode_acp::mapper", mapper, "{message}")
            }
        }
    }
}

impl types::Host for StoreState {}

/// Adds the only import a mapper gets, `zcode:mapper/logging`, to a linker.
pub(crate) fn add_host_to_linker(
    linker: &mut wasmtime::component::Linker<StoreState>,
) -> wasmtime::Result<()> {
    ZcodeMapper::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}

/// Cuts a mapper log message to `limit` bytes and escapes control characters, so a mapper
/// cannot forge log lines (newlines) or drive the terminal (escape sequences).
fn sanitize(text: &str, limit: usize) -> String {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut clean = String::with_capacity(end + 32);
    for c in text[..end].chars() {
        if c.is_control() && c != '\t' {
            clean.extend(c.escape_default());
        } else {
            clean.push(c);
        }
    }
    if end < text.len() {
        clean.push_str(&format!("… ({} bytes truncated)", text.len() - end));
    }
    clean
}

/// One instance of a mapper in a store of its own. After a trap, a limit hit or output the
/// core refuses, it is poisoned: its state may be half-updated, so it is never called again.
pub(crate) struct Instance {
    store: Store<StoreState>,
    exports: ZcodeMapper,
    limits: Limits,
    poisoned: Option<String>,
}

impl Instance {
    pub fn new(
        pre: &ZcodeMapperPre<StoreState>,
        mapper: Arc<str>,
        limits: &Limits,
    ) -> Result<Self, MapperFault> {
        let mut store = Store::new(pre.engine(), StoreState::new(mapper, limits));
        store.limiter(|state| &mut state.limiter);
        // Instantiation runs guest start-up code, which is metered like a call.
        let fuel = limits.fuel.for_call(Input::NONE, 0);
        set_fuel(&mut store, fuel)?;
        let exports = pre
            .instantiate(&mut store)
            .map_err(|err| MapperFault(describe_failure(&err, store.data(), fuel)))?;
        // What the instance starts with is not data it was handed.
        store.data_mut().limiter.grown = 0;
        Ok(Self { store, exports, limits: limits.clone(), poisoned: None })
    }

    /// Runs one guest call under the per-call limits; `input` is what the call hands the
    /// mapper. `invoke` makes the call and converts its result; a trap, a limit hit or
    /// oversized output poisons the instance.
    pub fn call<R: ByteSize>(
        &mut self,
        input: Input,
        invoke: impl FnOnce(&Guest, &mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<R, MapperFault> {
        if let Some(first) = &self.poisoned {
            return Err(MapperFault(format!(
                "this mapper instance failed earlier and refuses further calls ({first})"
            )));
        }
        self.store.data_mut().log.start_call();
        let state = self.store.data_mut();
        state.limiter.cap = self.limits.memory.for_call(input);
        state.limiter.refused_growth = None;
        // What the instance held before this call: data handed in by earlier calls (a frame
        // assembled from fragments) that this call may work on and answer.
        let held = self.store.data().limiter.grown;
        let fuel = self.limits.fuel.for_call(input, held);
        set_fuel(&mut self.store, fuel)?;
        let outcome = invoke(self.exports.zcode_mapper_mapper(), &mut self.store);
        self.store.data_mut().log.finish_call();
        let output = match outcome {
            Ok(output) => output,
            Err(err) => {
                let message = describe_failure(&err, self.store.data(), fuel);
                return Err(self.poison(message));
            }
        };
        let size = output.byte_size();
        let limit = self.limits.output.for_output(input, held);
        if size > limit {
            return Err(self.poison(format!(
                "mapper returned {size} bytes in one call, over the output limit of {} for this \
                 call",
                describe_bytes(limit)
            )));
        }
        Ok(output)
    }

    /// Marks the instance failed with `message` (the first failure is kept) and returns the
    /// fault to report.
    pub fn poison(&mut self, message: String) -> MapperFault {
        tracing::warn!(
            target: "zcode_acp::mapper",
            mapper = %self.store.data().log.mapper,
            "mapper instance failed: {message}"
        );
        self.poisoned.get_or_insert_with(|| message.clone());
        MapperFault(message)
    }
}

fn set_fuel(store: &mut Store<StoreState>, fuel: u64) -> Result<(), MapperFault> {
    store.set_fuel(fuel).map_err(|err| MapperFault(format!("cannot meter the mapper: {err}")))
}

/// A clear message for a failed call: which limit was hit, or what the trap was. `fuel` is
/// what the call was given.
fn describe_failure(err: &wasmtime::Error, state: &StoreState, fuel: u64) -> String {
    if let Some(desired) = state.limiter.refused_growth {
        return format!(
            "memory limit of {} for this call exceeded (the mapper tried to grow its memory to \
             {desired} bytes)",
            describe_bytes(state.limiter.cap)
        );
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => {
            format!("mapper trapped: all fuel consumed (CPU limit of {fuel} for this call)")
        }
        Some(Trap::UnreachableCodeReached) => {
            "mapper trapped: wasm `unreachable` executed (a panic or abort in the mapper)".into()
        }
        Some(trap) => format!("mapper trapped: {trap}"),
        None => format!("mapper trapped: {}", err.root_cause()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_messages_are_cut_on_a_char_boundary_and_escaped() {
        assert_eq!(sanitize("short\ttab", 100), "short\ttab");
        let cut = sanitize(&"é".repeat(10), 5); // 20 bytes
        assert_eq!(cut, "éé… (16 bytes truncated)");
        assert_eq!(sanitize("a\nfake line\u{1b}[31m", 100), "a\\nfake line\\u{1b}[31m");
    }
}
