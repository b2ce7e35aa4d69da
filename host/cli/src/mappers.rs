//! The mappers this process may use: the embedded ones, then every trusted `*.wasm` in the
//! drop-in folder (`--mappers-dir`, then `ZCODE_ACP_MAPPERS`, then the OS data folder). A
//! drop-in that is not trusted (`zcode-acp mapper trust <file>`) is listed, never loaded.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zcode_contract::Mapper;
use zcode_discovery::{DropInReport, DropInTrust, EMBEDDED_SOURCE_PREFIX, MapperContract};
use zcode_mapper_runtime::{MapperRuntime, RuntimeConfig, WasmMapper};
use zcode_mapper_trust::{Admission, TrustStore};

use crate::Target;
use crate::paths;

pub const MAPPERS_ENV: &str = "ZCODE_ACP_MAPPERS";

pub struct MapperSet {
    pub mappers: Vec<Arc<WasmMapper>>,
    /// Every `*.wasm` of the drop-in folder: its trust state, and why it was not loaded.
    pub drop_ins: Vec<DropInReport>,
    /// The folder that was searched for drop-in mappers, if any.
    pub drop_in_dir: Option<PathBuf>,
}

impl MapperSet {
    pub fn load(target: &Target) -> Result<Self, String> {
        let runtime = runtime()?;
        let mut mappers = Vec::new();
        for (name, bytes) in zcode_embedded_mappers::EMBEDDED {
            let mapper = runtime
                .load_bytes(&format!("{EMBEDDED_SOURCE_PREFIX}{name}"), bytes)
                .map_err(|e| format!("the embedded mapper {name} does not load: {e}"))?;
            mappers.push(mapper);
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
                        mappers.push(mapper);
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
        Ok(Self { mappers, drop_ins, drop_in_dir })
    }

    /// (source, contract) pairs in load order, for discovery.
    pub fn contracts(&self) -> Vec<MapperContract<'_>> {
        self.mappers
            .iter()
            .map(|m| MapperContract { source: m.source(), contract: m.contract() })
            .collect()
    }
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
