//! The mappers this process may use: the embedded ones, then every trusted `*.wasm` in the
//! drop-in folder (`--mappers-dir`, then `ZCODE_ACP_MAPPERS`, then the OS data folder). A
//! drop-in that is not trusted (`zcode-acp mapper trust <file>`) is listed, never loaded.
//!
//! Discovery needs every mapper's contract, a session only the selected mapper. The contracts
//! of the embedded mappers were read by the runtime at build time (`zcode-embedded-mappers`),
//! so an embedded mapper is loaded (from its precompiled artifact) only when it is selected;
//! its contract is then checked against the one discovery used. A drop-in is loaded at once:
//! reading its contract is loading it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use zcode_contract::{Contract, Mapper};
use zcode_discovery::{DropInReport, DropInTrust, EMBEDDED_SOURCE_PREFIX, MapperContract};
use zcode_mapper_runtime::{CacheOutcome, MapperRuntime, RuntimeConfig, WasmMapper};
use zcode_mapper_trust::{Admission, TrustStore};

use crate::Target;
use crate::paths;

pub const MAPPERS_ENV: &str = "ZCODE_ACP_MAPPERS";

pub struct MapperSet {
    /// In discovery's order: the embedded mappers, then the trusted drop-ins that loaded.
    pub mappers: Vec<MapperEntry>,
    /// Every `*.wasm` of the drop-in folder: its trust state, and why it was not loaded.
    pub drop_ins: Vec<DropInReport>,
    /// The folder that was searched for drop-in mappers, if any.
    pub drop_in_dir: Option<PathBuf>,
    runtime: MapperRuntime,
}

/// One mapper: its source and contract, and the loaded mapper (at once for a drop-in, on first
/// use for an embedded one).
pub struct MapperEntry {
    source: String,
    contract: Contract,
    embedded: Option<&'static str>,
    loaded: OnceLock<Result<Arc<WasmMapper>, String>>,
}

impl MapperEntry {
    fn embedded(name: &'static str) -> Result<Self, String> {
        let json = zcode_precompiled_mappers::contract_json(name)
            .ok_or_else(|| format!("the embedded mapper {name} has no contract"))?;
        let contract = serde_json::from_str(json).map_err(|e| {
            format!("the contract of the embedded mapper {name} does not parse: {e}")
        })?;
        let source = format!("{EMBEDDED_SOURCE_PREFIX}{name}");
        Ok(Self { source, contract, embedded: Some(name), loaded: OnceLock::new() })
    }

    fn loaded(mapper: Arc<WasmMapper>) -> Self {
        Self {
            source: mapper.source().to_string(),
            contract: mapper.contract().clone(),
            embedded: None,
            loaded: OnceLock::from(Ok(mapper)),
        }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn contract(&self) -> &Contract {
        &self.contract
    }
}

/// The contracts of the embedded mappers, as read when the binary was built (none is loaded).
pub fn embedded_contracts() -> Vec<Contract> {
    zcode_embedded_mappers::EMBEDDED
        .iter()
        .filter_map(|(name, _)| zcode_precompiled_mappers::contract_json(name))
        .filter_map(|json| serde_json::from_str(json).ok())
        .collect()
}

impl MapperSet {
    pub fn load(target: &Target) -> Result<Self, String> {
        let runtime = runtime()?;
        let mut mappers = Vec::new();
        for (name, _) in zcode_embedded_mappers::EMBEDDED {
            mappers.push(MapperEntry::embedded(name)?);
        }
        let drop_in_dir = drop_in_dir(target);
        let mut drop_ins = Vec::new();
        if let Some(dir) = &drop_in_dir {
            let store = open_trust_store();
            let store = store.as_ref().map_err(String::as_str);
            for drop_in in zcode_mapper_trust::scan(dir, store)? {
                let path = drop_in.path.display().to_string();
                // The bytes that were hashed are the bytes loaded: the file is not read again.
                let loaded = match drop_in.trusted_bytes() {
                    Some(bytes) => runtime.load_bytes(&path, bytes).map_err(|e| e.to_string()),
                    None => Err(drop_in.admission.to_string()),
                };
                let error = match loaded {
                    Ok(mapper) => {
                        mappers.push(MapperEntry::loaded(mapper));
                        None
                    }
                    Err(error) => {
                        tracing::warn!(target: "zcode_acp::mappers", %path, %error, "mapper not loaded");
                        Some(error)
                    }
                };
                let trust = match drop_in.admission {
                    Admission::Trusted(_) => DropInTrust::Trusted,
                    Admission::Untrusted => DropInTrust::Untrusted,
                    Admission::Changed { .. } => DropInTrust::Changed,
                    Admission::Unreadable(_) | Admission::NoTrust(_) => DropInTrust::Unknown,
                };
                let trust_command =
                    (trust != DropInTrust::Trusted).then(|| trust_command(&drop_in.path));
                drop_ins.push(DropInReport {
                    path,
                    sha256: drop_in.sha256,
                    trust,
                    loaded: error.is_none(),
                    error,
                    trust_command,
                });
            }
        }
        Ok(Self { mappers, drop_ins, drop_in_dir, runtime })
    }

    /// (source, contract) pairs in load order, for discovery.
    pub fn contracts(&self) -> Vec<MapperContract<'_>> {
        self.mappers
            .iter()
            .map(|m| MapperContract { source: &m.source, contract: &m.contract })
            .collect()
    }

    /// The mapper at `index` of [`Self::mappers`], loaded on first use. An embedded mapper
    /// must report the contract discovery used.
    pub fn mapper(&self, index: usize) -> Result<Arc<WasmMapper>, String> {
        let entry = self.mappers.get(index).ok_or_else(|| format!("no mapper {index}"))?;
        let loaded = entry.loaded.get_or_init(|| {
            let name = entry.embedded.expect("a drop-in is loaded with its entry");
            let mapper = load_embedded(&self.runtime, name)
                .map_err(|e| format!("the embedded mapper {name} does not load: {e}"))?;
            if mapper.contract() != &entry.contract {
                return Err(format!(
                    "the embedded mapper {name} reports another contract than the one read \
                     when the binary was built"
                ));
            }
            Ok(mapper)
        });
        loaded.clone()
    }
}

/// The embedded mapper `name`, from the artifact precompiled into the binary when it fits.
pub fn load_embedded(runtime: &MapperRuntime, name: &str) -> Result<Arc<WasmMapper>, String> {
    let bytes = zcode_embedded_mappers::get(name)
        .ok_or_else(|| format!("no embedded mapper named {name}"))?;
    let precompiled = zcode_precompiled_mappers::precompiled(name);
    let origin = format!("{EMBEDDED_SOURCE_PREFIX}{name}");
    // SAFETY: the artifact is part of this binary: the build script of zcode-embedded-mappers
    // wrote it with `zcode_mapper_runtime::precompile` (wasmtime's own compiler) and the binary
    // includes it with `include_bytes!`. It is trusted exactly as much as the binary's own
    // code: whoever could change it could change the binary.
    let mapper =
        unsafe { runtime.load_embedded(&origin, bytes, precompiled) }.map_err(|e| e.to_string())?;
    // A copy was made of the artifact (not run in place): its pages in the binary are not read
    // again.
    if let (Some(artifact), CacheOutcome::Embedded) = (precompiled, mapper.cache_outcome()) {
        zcode_precompiled_mappers::release(artifact);
    }
    Ok(mapper)
}

/// The mapper runtime, with its precompiled-component cache.
pub fn runtime() -> Result<MapperRuntime, String> {
    let config = RuntimeConfig {
        cache_dir: paths::cache_dir().map(|dir| dir.join("mappers")),
        ..RuntimeConfig::default()
    };
    MapperRuntime::new(config).map_err(|e| format!("cannot start the mapper runtime: {e}"))
}

/// The trust file, or why nothing can be trusted.
pub fn open_trust_store() -> Result<TrustStore, String> {
    let path = paths::trust_file()
        .ok_or("no config folder for the trust file: nothing is trusted (is $HOME set?)")?;
    TrustStore::open(&path).map_err(|e| e.to_string())
}

/// The command that trusts `file`.
pub fn trust_command(file: &Path) -> String {
    let text = file.display().to_string();
    let plain = text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@\\".contains(&b));
    let quoted = if plain { text } else { format!("'{}'", text.replace('\'', r"'\''")) };
    format!("zcode-acp mapper trust {quoted}")
}

/// The drop-in folder: an explicit one must exist; the OS default may be absent.
pub fn drop_in_dir(target: &Target) -> Option<PathBuf> {
    target
        .mappers_dir
        .clone()
        .or_else(|| std::env::var_os(MAPPERS_ENV).map(PathBuf::from))
        .or_else(|| paths::default_mappers_dir().filter(|dir| dir.is_dir()))
}
