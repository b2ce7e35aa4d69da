//! Builds the mapper guests with a nested cargo and puts their components in `OUT_DIR`, where
//! `src/lib.rs` embeds them. No `.wasm` is checked in: the embedded bytes always match the
//! mapper sources of this tree.

#[path = "guest_build.rs"]
mod guest_build;

use std::path::{Path, PathBuf};

/// (name, crate directory relative to the workspace root) of every embedded mapper.
const MAPPERS: &[(&str, &str)] = &[("zcode-task-v1", "mappers/zcode-task-v1")];

/// Inputs outside the mapper crates that they read at build time: the WIT contract, the
/// contract crate they depend on, the library the desktop-host generations share, and the
/// simulator fixture whose hashes a contract pins.
const SHARED_INPUTS: &[&str] =
    &["wit", "host/contract", "mappers/zcode-host-common", "tests/fixtures/fake-zcode-host"];

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    let workspace = manifest_dir.join("../..");
    let out_dir = PathBuf::from(env("OUT_DIR")?);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=guest_build.rs");
    println!("cargo:rerun-if-env-changed=ZCODE_ACP_MAPPER_TARGET_DIR");
    for input in SHARED_INPUTS {
        rerun_if_changed(&workspace.join(input));
    }

    let target_dir = match std::env::var_os("ZCODE_ACP_MAPPER_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => guest_build::nested_target_dir(&out_dir),
    };
    for (name, dir) in MAPPERS {
        let crate_dir = workspace.join(dir);
        for input in ["src", "Cargo.toml", "Cargo.lock", "build.rs", "bridge"] {
            rerun_if_changed(&crate_dir.join(input));
        }
        let manifest = crate_dir.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(format!("the mapper {name} has no {}", manifest.display()));
        }
        let build = guest_build::GuestBuild {
            cargo: std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
            manifest: &manifest,
            target_dir: &target_dir,
            features: &[],
        };
        let component = build.run()?;
        let embedded = out_dir.join(format!("{name}.wasm"));
        std::fs::copy(&component, &embedded)
            .map_err(|e| format!("cannot copy {}: {e}", component.display()))?;
    }
    Ok(())
}

fn rerun_if_changed(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set (not run by cargo?)"))
}
