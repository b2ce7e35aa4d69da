//! Every component the mappers workspace builds passes the component check: it imports the
//! core's log and no capability the sandbox withholds (the runtime would refuse it at load).
//!
//! Needs the release components, so it runs on request:
//! `cargo build --manifest-path mappers/Cargo.toml --target wasm32-wasip2 --release` then
//! `cargo test --manifest-path mappers/Cargo.toml -p zcode-mapper-sdk --test components -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// (package name, component file) of each member that builds a component (`cdylib`).
fn components() -> Vec<(String, PathBuf)> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1", "--manifest-path"])
        .arg(&workspace)
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let release = Path::new(metadata["target_directory"].as_str().expect("target dir"))
        .join("wasm32-wasip2/release");
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().expect("packages") {
        for target in package["targets"].as_array().expect("targets") {
            if target["crate_types"].as_array().is_some_and(|t| t.iter().any(|t| t == "cdylib")) {
                let lib = target["name"].as_str().expect("target name").replace('-', "_");
                let name = package["name"].as_str().expect("package name").to_string();
                found.push((name, release.join(format!("{lib}.wasm"))));
            }
        }
    }
    found
}

#[test]
#[ignore = "needs the wasm32-wasip2 release build; run with --ignored"]
fn every_component_imports_only_the_log() {
    let components = components();
    assert!(components.len() >= 3, "expected every mapper, found {components:?}");
    for (name, path) in components {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{name}: {}: {e} (build the workspace for wasm32-wasip2 --release)",
                path.display()
            )
        });
        if let Err(problem) = zcode_mapper_sdk::component_check::check(&bytes) {
            panic!("{name} ({}): {problem}", path.display());
        }
        println!(
            "{name}: {} bytes, imports the log and nothing the sandbox withholds",
            bytes.len()
        );
    }
}
