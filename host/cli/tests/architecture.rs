//! The layers of `docs/architecture.md`, as dependencies between the workspace's crates: each
//! crate may depend only on the crates below it. A new edge that points up or sideways (the
//! coordinator reaching for the mapper runtime, the bridge for the coordinator, the ACP server
//! for the bridge) fails here before it shapes the code.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// For each library crate of the core, the workspace crates it may depend on (normal
/// dependencies). The binary (`zcode-acp`) and the benchmarks compose everything; the simulator
/// plays ZCode and depends on nothing of the core.
const ALLOWED: &[(&str, &[&str])] = &[
    ("zcode-contract", &[]),
    ("zcode-credentials", &["zcode-contract"]),
    ("zcode-bridge", &["zcode-contract", "zcode-credentials"]),
    ("zcode-coordinator", &["zcode-bridge", "zcode-contract"]),
    ("zcode-acp-server", &["zcode-coordinator", "zcode-contract"]),
    ("zcode-discovery", &["zcode-contract"]),
    ("zcode-mapper-runtime", &["zcode-contract"]),
    ("zcode-mapper-trust", &[]),
    ("zcode-embedded-mappers", &[]),
    ("zcode-precompiled-mappers", &["zcode-embedded-mappers"]),
    ("zcode-golden", &["zcode-contract"]),
    ("zcode-recorder", &["zcode-contract", "zcode-golden"]),
    ("zcode-fake-install", &["zcode-contract"]),
    ("zcode-sim", &[]),
];

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let members: Vec<&str> = packages.iter().map(|p| p["name"].as_str().unwrap()).collect();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();

    let mut violations = Vec::new();
    let mut checked = 0;
    for package in packages {
        let name = package["name"].as_str().unwrap();
        let Some(allowed) = allowed.get(name) else { continue };
        checked += 1;
        for dependency in package["dependencies"].as_array().unwrap() {
            let dependency_name = dependency["name"].as_str().unwrap();
            let normal = dependency["kind"].is_null();
            if normal && members.contains(&dependency_name) && !allowed.contains(&dependency_name) {
                violations.push(format!("{name} -> {dependency_name}"));
            }
        }
    }
    assert_eq!(checked, ALLOWED.len(), "every layered crate is a workspace member: {members:?}");
    assert!(violations.is_empty(), "dependencies against the layers: {violations:?}");
}
