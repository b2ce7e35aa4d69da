//! Shared test fixtures: a stand-in runner, a contract pinning the simulator's files, fake
//! installs in temporary directories, and an asar writer.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;
use zcode_contract::{Artifact, Contract, FileCheck, Layout, Os, Platform, VersionProbe};
use zcode_discovery::{
    ContractOutcome, GateRule, HashCache, Inspection, Inspector, MapperContract,
};
use zcode_fake_install::{
    CLI_ENTRY, FakeInstall, HOST_INDEX, HOST_INDEX_PATH, HOST_RPC_CHUNK, HOST_RPC_CHUNK_PATH,
    METADATA_FIELDS, METADATA_PLATFORM_KEY, Runner, Variant, layout_paths,
};

pub const APP_VERSION: &str = "3.11.2";
pub const CLI_VERSION: &str = "0.16.5";
pub const ARTIFACT_ID: &str = "sim-3.11.2";

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A stand-in for the simulator: answers `<cli-entry> version` with the CLI version (or
/// `ZCODE_SIM_CLI_VERSION`), and fails loudly when invoked any other way, so the tests also
/// check how the probe runs it (args, env, cwd).
pub fn write_runner(dir: &Path) -> Runner {
    let path = dir.join("runner.sh");
    let script = format!(
        r#"#!/bin/sh
[ "$1" = --install-root ] || {{ echo "no --install-root" >&2; exit 90; }}
root=$2; shift 2
[ "$1" = -- ] || {{ echo "no --" >&2; exit 91; }}
shift
[ "$ELECTRON_RUN_AS_NODE" = 1 ] || {{ echo "probe env missing" >&2; exit 92; }}
[ "$(pwd -P)" = "$root" ] || {{ echo "cwd is not the root" >&2; exit 93; }}
[ "$2" = version ] && [ -f "$1" ] || {{ echo "unexpected args: $*" >&2; exit 94; }}
echo "ZCode CLI ${{ZCODE_SIM_CLI_VERSION:-{CLI_VERSION}}} (simulated)"
"#
    );
    std::fs::write(&path, script).unwrap();
    make_executable(&path);
    Runner { program: path, args: Vec::new() }
}

pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn layout(os: Os) -> Layout {
    let paths = layout_paths(os);
    Layout {
        os,
        executable: paths.executable.into(),
        cli_entry: paths.cli_entry.into(),
        metadata: paths.metadata.into(),
        host_archive: paths.host_archive.into(),
    }
}

/// A contract whose one artifact pins the simulator's fixture files.
pub fn contract() -> Contract {
    Contract {
        protocol_id: "zcode-task-v1".into(),
        description: "test contract".into(),
        layouts: vec![layout(Os::Macos), layout(Os::Linux), layout(Os::Windows)],
        metadata: METADATA_FIELDS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        metadata_platform_key: METADATA_PLATFORM_KEY.into(),
        metadata_entry_key: "entry".into(),
        artifacts: vec![artifact(ARTIFACT_ID)],
        cli_version_probe: VersionProbe {
            args: vec!["{cli-entry}".into(), "version".into()],
            env: vec![("ELECTRON_RUN_AS_NODE".into(), "1".into())],
        },
        credentials_file: ".zcode/v2/credentials.json".into(),
    }
}

pub fn artifact(id: &str) -> Artifact {
    Artifact {
        id: id.into(),
        app_version: APP_VERSION.into(),
        cli_version: CLI_VERSION.into(),
        cli_sha256: sha256(CLI_ENTRY),
        files: vec![
            FileCheck {
                role: "host-index".into(),
                path: HOST_INDEX_PATH.into(),
                sha256: sha256(HOST_INDEX),
                required_exports: Vec::new(),
            },
            FileCheck {
                role: "host-rpc".into(),
                path: HOST_RPC_CHUNK_PATH.into(),
                sha256: sha256(HOST_RPC_CHUNK),
                // Whatever the fixture exports today: the exports rule itself is tested
                // with files whose content the test controls.
                required_exports: zcode_discovery::exported_names(
                    std::str::from_utf8(HOST_RPC_CHUNK).unwrap(),
                )
                .into_iter()
                .collect(),
            },
        ],
        simulated: true,
    }
}

/// A temporary directory holding a runner and a fake install (`root`).
pub struct Fixture {
    pub dir: TempDir,
    pub root: PathBuf,
    pub platform: Platform,
    pub cache: HashCache,
}

impl Fixture {
    /// A fake install for this process's platform.
    pub fn new(variant: Variant) -> Self {
        Self::for_platform(Platform::current(), variant)
    }

    pub fn for_platform(platform: Platform, variant: Variant) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let runner = write_runner(dir.path());
        let root = FakeInstall::builder(dir.path().join("ZCode"))
            .os(platform.os.unwrap())
            .platform_tag(platform.tag())
            .app_version(APP_VERSION)
            .runner(runner)
            .variant(variant)
            .build()
            .unwrap();
        Self { dir, root, platform, cache: HashCache::new() }
    }

    pub fn inspector(&self) -> Inspector<'_> {
        Inspector {
            platform: &self.platform,
            cache: &self.cache,
            probe_timeout: Inspector::DEFAULT_PROBE_TIMEOUT,
        }
    }

    pub fn inspect(&self, contracts: &[(&str, &Contract)]) -> Inspection {
        let mappers: Vec<MapperContract> = contracts.iter().map(|&c| c.into()).collect();
        self.inspector().inspect(&self.root, &mappers)
    }

    /// Path of a layout entry (`/`-separated) under the root.
    pub fn path(&self, relative: &str) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(relative.split('/'));
        path
    }
}

/// The contract-level or single-artifact refusal of the first verdict.
pub fn refusal(inspection: &Inspection) -> (GateRule, String) {
    let verdict = &inspection.verdicts[0];
    match &verdict.outcome {
        ContractOutcome::Refused(r) => (r.rule, r.reason.clone()),
        ContractOutcome::Compared(artifacts) => {
            let r = artifacts[0].result.as_ref().expect_err("the artifact was accepted");
            (r.rule, r.reason.clone())
        }
    }
}

/// Writes an asar archive holding `packed` files; `unpacked` files are only listed in the
/// header (their bytes belong under `<archive>.unpacked/`).
pub fn asar_bytes(packed: &[(&str, &[u8])], unpacked: &[(&str, usize)]) -> Vec<u8> {
    let mut root = Map::new();
    let mut data = Vec::new();
    let mut insert = |path: &str, node: Value| {
        let mut dir = &mut root;
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            let entry = dir.entry(part.to_string()).or_insert_with(|| json!({"files": {}}));
            dir = entry["files"].as_object_mut().unwrap();
        }
        dir.insert(parts[parts.len() - 1].to_string(), node);
    };
    for (path, bytes) in packed {
        insert(path, json!({"size": bytes.len(), "offset": data.len().to_string()}));
        data.extend_from_slice(bytes);
    }
    for (path, size) in unpacked {
        insert(path, json!({"size": size, "unpacked": true}));
    }
    let header = serde_json::to_vec(&json!({ "files": root })).unwrap();
    let padded = header.len().div_ceil(4) * 4;
    let payload = 4 + padded;
    let mut out = Vec::new();
    out.extend_from_slice(&4u32.to_le_bytes());
    out.extend_from_slice(&((4 + payload) as u32).to_le_bytes());
    out.extend_from_slice(&(payload as u32).to_le_bytes());
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    out.resize(out.len() + padded - header.len(), 0);
    out.extend_from_slice(&data);
    out
}
