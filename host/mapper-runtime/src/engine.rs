//! The one wasmtime configuration of mappers. The runtime's engine and the build-time
//! precompile of the embedded mappers (`host/embedded-mappers/build.rs`) both take it from
//! here, with the same wasmtime (one version in `Cargo.lock`), so an artifact built into the
//! binary is compiled with the settings that load it: fuel metering, the stack limit, the wasm
//! features. What could still differ (the CPU, a wasmtime built with other cargo features) is
//! refused by wasmtime's own header check at load, and the runtime then compiles the component.

use wasmtime::{Config, Engine};

use crate::config::RuntimeConfig;
use crate::error::{EngineError, one_line};

/// x86-64 features the precompiled code may use: the x86-64-v2 level (2009 on), which every
/// x86-64 CPU zcode-acp runs on in practice has. wasmtime checks each one against the CPU
/// before loading an artifact that uses it, and a CPU without one gets the component compiled
/// for it instead. Without them Cranelift would emit SSE2-only code (and libcalls for some
/// float operations) for every machine.
const X86_64_FEATURES: &[&str] =
    &["has_sse3", "has_ssse3", "has_sse41", "has_sse42", "has_popcnt", "has_cmpxchg16b"];

/// The engine settings every mapper runs with, for the machine this process runs on.
pub(crate) fn config(runtime: &RuntimeConfig) -> Config {
    let mut config = Config::new();
    config.consume_fuel(true).max_wasm_stack(runtime.max_wasm_stack_bytes);
    crate::in_place::configure(&mut config);
    config
}

pub(crate) fn engine(runtime: &RuntimeConfig) -> Result<Engine, EngineError> {
    Engine::new(&config(runtime)).map_err(|err| EngineError(one_line(&err)))
}

/// Compiles `component` ahead of time for the Rust target `target` (e.g.
/// `x86_64-unknown-linux-musl`, the `TARGET` of a build script), with the settings of
/// [`config`] and a fixed CPU level instead of this machine's features (the artifact runs
/// elsewhere). Returns the serialized artifact, which a runtime loads with
/// [`crate::MapperRuntime::load_embedded`].
pub fn precompile(
    runtime: &RuntimeConfig,
    target: &str,
    component: &[u8],
) -> Result<Vec<u8>, EngineError> {
    let mut config = config(runtime);
    // An explicit target disables the detection of this machine's CPU features.
    config.target(target).map_err(|err| EngineError(one_line(&err)))?;
    if target.starts_with("x86_64-") {
        for feature in X86_64_FEATURES {
            // SAFETY: this engine only compiles and never runs code; the engine that loads the
            // artifact checks that its CPU has every enabled feature before it runs any of it.
            unsafe {
                config.cranelift_flag_enable(feature);
            }
        }
    }
    let engine = Engine::new(&config).map_err(|err| EngineError(one_line(&err)))?;
    engine.precompile_component(component).map_err(|err| EngineError(one_line(&err)))
}
