//! The engine and the load path: bytes -> compiled (or cached) component -> checks -> linked,
//! pre-instantiated mapper with its contract read once.

use std::path::Path;
use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};
use zcode_contract::Contract;

use crate::bindings::ZcodeMapperPre;
use crate::cache::{ArtifactCache, CacheOutcome, Lookup};
use crate::config::{Input, RuntimeConfig};
use crate::error::{EngineError, LoadError, LoadFailure, one_line};
use crate::mapper::WasmMapper;
use crate::sandbox::{self, Instance, Limits, StoreState};
use crate::{engine, policy};

/// Loads mappers. Create one per process: it owns the WebAssembly engine (compiler settings,
/// code memory), which every loaded mapper and instance shares.
pub struct MapperRuntime {
    engine: Engine,
    limits: Limits,
    cache: Option<ArtifactCache>,
}

impl MapperRuntime {
    pub fn new(config: RuntimeConfig) -> Result<Self, EngineError> {
        let engine = engine::engine(&config)?;
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
        self.load_with(origin, bytes, None)
    }

    /// Loads a mapper built into the binary: from `precompiled`, the artifact the build made of
    /// `bytes` with [`crate::precompile`], when wasmtime accepts it for this engine and CPU;
    /// else like [`Self::load_bytes`] (compiled, or from the cache), with a debug log. The load
    /// checks are the same either way.
    ///
    /// # Safety
    ///
    /// `precompiled` is run as machine code: it must be an artifact [`crate::precompile`] wrote
    /// (for any target) that is as trusted as the program's own code, such as one the
    /// program's build script wrote and the program embeds. wasmtime checks its header (version,
    /// target, engine settings, CPU features), not its code.
    pub unsafe fn load_embedded(
        &self,
        origin: &str,
        bytes: &[u8],
        precompiled: Option<&[u8]>,
    ) -> Result<Arc<WasmMapper>, LoadError> {
        self.load_with(origin, bytes, precompiled)
    }

    /// `precompiled`: see the safety contract of [`Self::load_embedded`].
    fn load_with(
        &self,
        origin: &str,
        bytes: &[u8],
        precompiled: Option<&[u8]>,
    ) -> Result<Arc<WasmMapper>, LoadError> {
        let fail = |failure| LoadError { origin: origin.to_string(), failure };
        let embedded = precompiled.and_then(|artifact| self.deserialize_embedded(origin, artifact));
        let (component, cache_outcome) = match embedded {
            Some(component) => (component, CacheOutcome::Embedded),
            None => self.compile(bytes).map_err(fail)?,
        };
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

    /// The artifact built into the binary, or `None` (logged) when wasmtime refuses it: a CPU
    /// without a feature it was compiled for, or a wasmtime built with other settings.
    fn deserialize_embedded(&self, origin: &str, artifact: &[u8]) -> Option<Component> {
        // SAFETY: the caller of `load_embedded` vouches for `artifact` (its `# Safety`): an
        // artifact of `crate::precompile` as trusted as the program's code. wasmtime checks its
        // header (version, target, CPU features, engine settings) before using any of it.
        match unsafe { Component::deserialize(&self.engine, artifact) } {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::debug!(
                    mapper = %origin,
                    "the precompiled mapper in the binary does not fit this engine, compiling \
                     it instead: {}",
                    one_line(&err)
                );
                None
            }
        }
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
