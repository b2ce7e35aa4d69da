//! The engine and the load path: bytes -> compiled (or cached) component -> checks -> linked,
//! pre-instantiated mapper with its contract read once.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};
use zcode_contract::Contract;

use crate::bindings::ZcodeMapperPre;
use crate::cache::{ArtifactCache, CacheOutcome, Lookup};
use crate::config::{Input, RuntimeConfig};
use crate::error::{EngineError, LoadError, LoadFailure, one_line};
use crate::mapper::WasmMapper;
use crate::sandbox::{self, Instance, Limits, StoreState};
use crate::{engine, in_place, policy};

/// Loads mappers. Create one per process: it owns the WebAssembly engine (compiler settings,
/// code memory), which every loaded mapper and instance shares.
pub struct MapperRuntime {
    engine: Engine,
    limits: Limits,
    cache: Option<ArtifactCache>,
    /// Artifacts this runtime runs in place, by address, each loaded once (`in_place::claim`).
    in_place: Mutex<Vec<(usize, Component)>>,
}

impl MapperRuntime {
    pub fn new(config: RuntimeConfig) -> Result<Self, EngineError> {
        let engine = engine::engine(&config)?;
        let cache = config.cache_dir.clone().map(|dir| ArtifactCache::new(dir, &engine));
        let limits = Limits::from_config(&config);
        Ok(Self { engine, limits, cache, in_place: Mutex::new(Vec::new()) })
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
    /// checks are the same either way. Where the platform allows and `precompiled` starts on a
    /// page, its code runs where it lies, without a copy ([`CacheOutcome::EmbeddedInPlace`]).
    ///
    /// # Safety
    ///
    /// `precompiled` is run as machine code: it must be an artifact [`crate::precompile`] wrote
    /// (for any target) that is as trusted as the program's own code, such as one the
    /// program's build script wrote and the program embeds. wasmtime checks its header (version,
    /// target, engine settings, CPU features), not its code. Nothing may write to it while the
    /// program runs, and it must not be memory whose protection anything else manages: its
    /// code pages become executable where they are.
    pub unsafe fn load_embedded(
        &self,
        origin: &str,
        bytes: &[u8],
        precompiled: Option<&'static [u8]>,
    ) -> Result<Arc<WasmMapper>, LoadError> {
        self.load_with(origin, bytes, precompiled)
    }

    /// `precompiled`: see the safety contract of [`Self::load_embedded`].
    fn load_with(
        &self,
        origin: &str,
        bytes: &[u8],
        precompiled: Option<&'static [u8]>,
    ) -> Result<Arc<WasmMapper>, LoadError> {
        let fail = |failure| LoadError { origin: origin.to_string(), failure };
        let embedded = precompiled.and_then(|artifact| self.deserialize_embedded(origin, artifact));
        let (component, cache_outcome) = match embedded {
            Some(loaded) => loaded,
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

    /// The artifact built into the binary, run where it lies when it can be, or `None`
    /// (logged) when wasmtime refuses it: a CPU without a feature it was compiled for, or a
    /// wasmtime built with other settings.
    fn deserialize_embedded(
        &self,
        origin: &str,
        artifact: &'static [u8],
    ) -> Option<(Component, CacheOutcome)> {
        let address = artifact.as_ptr().addr();
        let mut ran_in_place = self.in_place.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, component)) = ran_in_place.iter().find(|(at, _)| *at == address) {
            return Some((component.clone(), CacheOutcome::EmbeddedInPlace));
        }
        let in_place = in_place::claim(artifact);
        // SAFETY: the caller of `load_embedded` vouches for `artifact` (its `# Safety`): an
        // artifact of `crate::precompile` as trusted as the program's code, that lives and
        // stays unchanged as long as the program, in memory nothing else protects. wasmtime
        // checks its header (version, target, CPU features, engine settings) before using any
        // of it. In place, the engine's code memory (`in_place`) makes its code pages
        // executable.
        let loaded = unsafe {
            if in_place {
                Component::deserialize_raw(&self.engine, NonNull::from(artifact))
            } else {
                Component::deserialize(&self.engine, artifact)
            }
        };
        match loaded {
            Ok(component) if in_place => {
                ran_in_place.push((address, component.clone()));
                Some((component, CacheOutcome::EmbeddedInPlace))
            }
            Ok(component) => Some((component, CacheOutcome::Embedded)),
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
