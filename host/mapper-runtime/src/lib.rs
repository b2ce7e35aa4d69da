//! Loads, sandboxes and calls WebAssembly mapper components through the `zcode:mapper` WIT
//! contract (`wit/mapper.wit`), and presents them as `zcode_contract::Mapper`s.
//!
//! A mapper gets no capability but the `logging.log` import: no files, sockets, clocks, randomness
//! or environment. Each connection and session runs in its own store with a memory cap, a fuel
//! (CPU) budget per call that grows with the call's work, and an output cap; a trap or limit
//! hit fails that instance only. See `docs/mapper-runtime.md`.

mod bindings {
    wasmtime::component::bindgen!({ world: "zcode-mapper", path: "../../wit" });
}

mod cache;
mod config;
mod convert;
mod engine;
mod error;
mod in_place;
mod mapper;
mod policy;
mod runtime;
mod sandbox;
mod size;

pub use cache::CacheOutcome;
pub use config::{FuelBudget, RuntimeConfig, SizeBudget};
pub use engine::precompile;
pub use error::{EngineError, LoadError, LoadFailure};
pub use mapper::{WasmConnection, WasmMapper, WasmSession};
pub use policy::WitAge;
pub use runtime::MapperRuntime;
