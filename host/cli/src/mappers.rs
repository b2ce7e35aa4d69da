//! The mappers this process may use: the embedded ones, then every `*.wasm` in the drop-in
//! folder (`--mappers-dir`, then `ZCODE_ACP_MAPPERS`, then the OS data folder).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zcode_contract::Mapper;
use zcode_discovery::MapperContract;
use zcode_mapper_runtime::{MapperRuntime, RuntimeConfig, WasmMapper};

use crate::Target;
use crate::paths;

pub const MAPPERS_ENV: &str = "ZCODE_ACP_MAPPERS";

pub struct MapperSet {
    pub mappers: Vec<Arc<WasmMapper>>,
    /// Drop-in files that could not be loaded, with the reason (they can accept nothing).
    pub rejected: Vec<(PathBuf, String)>,
    /// The folder that was searched for drop-in mappers, if any.
    pub drop_in_dir: Option<PathBuf>,
}

impl MapperSet {
    pub fn load(target: &Target) -> Result<Self, String> {
        let config = RuntimeConfig {
            cache_dir: paths::cache_dir().map(|dir| dir.join("mappers")),
            ..RuntimeConfig::default()
        };
        let runtime = MapperRuntime::new(config)
            .map_err(|e| format!("cannot start the mapper runtime: {e}"))?;
        let mut mappers = Vec::new();
        for (name, bytes) in zcode_embedded_mappers::EMBEDDED {
            let mapper = runtime
                .load_bytes(&format!("embedded:{name}"), bytes)
                .map_err(|e| format!("the embedded mapper {name} does not load: {e}"))?;
            mappers.push(mapper);
        }
        let drop_in_dir = drop_in_dir(target);
        let mut rejected = Vec::new();
        if let Some(dir) = &drop_in_dir {
            for path in wasm_files(dir)? {
                match runtime.load_file(&path) {
                    Ok(mapper) => mappers.push(mapper),
                    Err(error) => {
                        tracing::warn!(target: "zcode_acp::mappers", path = %path.display(), %error, "mapper not loaded");
                        rejected.push((path, error.to_string()));
                    }
                }
            }
        }
        Ok(Self { mappers, rejected, drop_in_dir })
    }

    /// (source, contract) pairs in load order, for discovery.
    pub fn contracts(&self) -> Vec<MapperContract<'_>> {
        self.mappers
            .iter()
            .map(|m| MapperContract { source: m.source(), contract: m.contract() })
            .collect()
    }
}

/// The drop-in folder: an explicit one must exist; the OS default may be absent.
fn drop_in_dir(target: &Target) -> Option<PathBuf> {
    target
        .mappers_dir
        .clone()
        .or_else(|| std::env::var_os(MAPPERS_ENV).map(PathBuf::from))
        .or_else(|| paths::default_mappers_dir().filter(|dir| dir.is_dir()))
}

fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read the mappers folder {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm") && path.is_file())
        .collect();
    files.sort();
    Ok(files)
}
