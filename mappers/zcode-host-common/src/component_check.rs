//! What a mapper crate's test checks in its built component: that it reaches for none of the
//! capabilities the sandbox withholds (the runtime would refuse it at load).

use std::path::{Path, PathBuf};

/// Import families the sandbox withholds.
pub const FORBIDDEN_IMPORTS: [&str; 4] =
    ["wasi:clocks", "wasi:random", "wasi:filesystem", "wasi:sockets"];

/// The crate's wasm32-wasip2 release component `file_name` (under `CARGO_TARGET_DIR`, else
/// `<manifest_dir>/target`), unless the variable `override_env` names another file.
pub fn release_component(manifest_dir: &str, file_name: &str, override_env: &str) -> PathBuf {
    if let Ok(path) = std::env::var(override_env) {
        return PathBuf::from(path);
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(manifest_dir).join("target"));
    target.join("wasm32-wasip2/release").join(file_name)
}

/// Whether the component's bytes contain `name` (import names are plain strings in the binary).
pub fn names(component: &[u8], name: &str) -> bool {
    component.windows(name.len()).any(|window| window == name.as_bytes())
}
