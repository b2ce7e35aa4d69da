//! The engine and the load path: bytes -> compiled (or cached) component -> checks -> linked,
//! pre-instantiated mapper with its contract read once.

use std::path::Path;
use std::sync::Arc;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine};
use zcode_contract::Contract;

use crate::bindings::ZcodeMapperPre;
use crate::cache::{ArtifactCache, CacheOutcome, Lookup};
use crate::config::{Input, RuntimeConfig};
use crate::error::{EngineError, LoadError, LoadFailure, one_line};
use crate::mapper::WasmMapper;
use crate::policy;
use crate::sandbox::{self, Instance, Limits, StoreState};

/// Loads mappers. Create one per process: it owns the WebAssembly engine (compiler settings,
/// code memory), which every loaded mapper and instance shares.
pub struct MapperRuntime {
    engine: Engine,
    limits: Limits,
    cache: Option<ArtifactCache>,
}

impl MapperRuntime {
    pub fn new(config: RuntimeConfig) -> Result<Self, EngineError> {
        let mut engine_config = Config::new();
        engine_config.consume_fuel(true).max_wasm_stack(config.max_wasm_stack_bytes);
        let engine = Engine::new(&engine_config).map_err(|err| EngineError(one_line(&err)))?;
        let cache = config.cache_dir.clone().map(|dir| ArtifactCache::new(dir, &engine));
        Ok(Self { engine, limits: Limits::from_config(&config), cache })
    }

    /// Loads a mapper from a file (a `.wasm` component).
    pub fn load_file(&self, path: &Path) -> Result<Arc<WasmMapper>, LoadError> {
        let origin = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => self.load_bytes(&origin, &bytes),
            Err(err) => Err(LoadError { origin, failure: LoadFailure::Read(err) }),
        }
    }

    /// Loads a mapper component; `origin` names it in reports and logs (e.g. `embedded
    /// zcode-task-v1` or a path).
    pub fn load_bytes(&self, origin: &str, bytes: &[u8]) -> Result<Arc<WasmMapper>, LoadError> {
        let fail = |failure| LoadError { origin: origin.to_string(), failure };
        let (component, cache_outcome) = self.compile(bytes).map_err(fail)?;
        check_component(&self.engine, &component).map_err(fail)?;
        let pre = link(&component).map_err(fail)?;

        let origin: Arc<str> = origin.into();
        let mut instance = Instance::new(&pre, origin.clone(), &self.limits)
            .map_err(|fault| fail(LoadFailure::Contract(fault)))?;
        let contract: Contract = instance
            .call(Input::NONE, |guest, store| guest.call_contract(store).map(Into::into))
            .map_err(|fault| fail(LoadFailure::Contract(fault)))?;
        tracing::debug!(
            mapper = %origin,
            protocol = %contract.protocol_id,
            cache = ?cache_outcome,
            "mapper loaded"
        );
        Ok(Arc::new(WasmMapper::new(origin, contract, pre, self.limits.clone(), cache_outcome)))
    }

    /// The compiled component, from the cache when possible.
    fn compile(&self, bytes: &[u8]) -> Result<(Component, CacheOutcome), LoadFailure> {
        let Some(cache) = &self.cache else {
            return Ok((self.compile_fresh(bytes)?, CacheOutcome::Disabled));
        };
        let key = cache.key(bytes);
        let outcome = match cache.load(&self.engine, &key) {
            Lookup::Hit(component) => return Ok((component, CacheOutcome::Hit)),
            Lookup::Absent => CacheOutcome::Miss,
            Lookup::Refused(reason) => {
                tracing::warn!("ignoring precompiled mapper {key}: {reason}");
                CacheOutcome::Replaced(reason)
            }
        };
        let component = self.compile_fresh(bytes)?;
        if let Err(err) = cache.store(&key, &component) {
            // Only start-up time is lost: the next load compiles again.
            tracing::warn!("cannot store precompiled mapper {key}: {err}");
        }
        Ok((component, outcome))
    }

    fn compile_fresh(&self, bytes: &[u8]) -> Result<Component, LoadFailure> {
        Component::new(&self.engine, bytes).map_err(|err| LoadFailure::Invalid(one_line(&err)))
    }
}

/// The WIT version and the import allowlist, checked before anything runs.
fn check_component(engine: &Engine, component: &Component) -> Result<(), LoadFailure> {
    let ty = component.component_type();
    let imports: Vec<&str> = ty.imports(engine).map(|(name, _)| name).collect();
    let exports: Vec<&str> = ty.exports(engine).map(|(name, _)| name).collect();
    policy::check_wit_version(imports.iter().copied(), exports)?;
    policy::check_imports(imports)
}

/// Links the `logging` interface and turns the allowed WASI imports into traps: a mapper gets no
/// WASI capability at all, and calling one fails the call.
fn link(component: &Component) -> Result<ZcodeMapperPre<StoreState>, LoadFailure> {
    let link_failure = |err: wasmtime::Error| LoadFailure::Link(one_line(&err));
    let mut linker = Linker::new(component.engine());
    sandbox::add_host_to_linker(&mut linker).map_err(link_failure)?;
    linker.define_unknown_imports_as_traps(component).map_err(link_failure)?;
    let pre = linker.instantiate_pre(component).map_err(link_failure)?;
    ZcodeMapperPre::new(pre).map_err(link_failure)
}
