//! Shared test fixtures: a stand-in runner, a contract pinning the simulator's files (desktop
//! and runtime), fake installs in temporary directories, and an asar writer.

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;
use zcode_contract::{
    Contract, DesktopLayout, FilePin, Layout, LayoutKind, Os, Platform, Release, RuntimeLayout,
    VersionProbe,
};
use zcode_discovery::{
    ContractOutcome, Discovery, GateRule, HashCache, Inspection, Inspector, InstallTarget,
    MapperContract, RecordedRegistry, Search,
};
use zcode_fake_install::{
    BuiltInstall, CLI_ENTRY, FakeInstall, FakeInstallBuilder, FakeLayout, HOST_INDEX,
    HOST_INDEX_PATH, HOST_RPC_CHUNK, HOST_RPC_CHUNK_PATH, METADATA_FIELDS, METADATA_PLATFORM_KEY,
    RUNTIME_AGENT_PATH, RUNTIME_DIR, RUNTIME_PACKAGE, RUNTIME_PACKAGE_NAME, RUNTIME_SERVER,
    RUNTIME_SERVER_PATH, Runner, Variant, layout_paths,
};

pub const APP_VERSION: &str = "3.11.2";
pub const RUNTIME_APP_VERSION: &str = "3.14.3";
pub const CLI_VERSION: &str = "0.16.5";
pub const RELEASE_ID: &str = "sim-3.11.2";
pub const RUNTIME_RELEASE_ID: &str = "sim-runtime-3.14.3";
pub const MIN_NODE: &str = "24.14.0";

/// Release paths of the desktop host files (relative to `resources`, through the archive).
pub fn desktop_path(inner: &str) -> String {
    format!("app.asar/{inner}")
}

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

fn desktop_layout(os: Os) -> Layout {
    let paths = layout_paths(os);
    Layout::Desktop(DesktopLayout {
        os,
        executable: paths.executable.into(),
        cli_entry: paths.cli_entry.into(),
        metadata: paths.metadata.into(),
        metadata_pairs: METADATA_FIELDS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        metadata_platform_key: METADATA_PLATFORM_KEY.into(),
        metadata_entry_key: "entry".into(),
        host_archive: paths.host_archive.into(),
    })
}

pub fn runtime_layout() -> RuntimeLayout {
    RuntimeLayout {
        runtime_dir: RUNTIME_DIR.into(),
        package_file: RUNTIME_PACKAGE.into(),
        package_pairs: vec![("name".into(), RUNTIME_PACKAGE_NAME.into())],
        cli_entry: RUNTIME_AGENT_PATH.into(),
        node_candidates: vec!["node".into(), "node.exe".into(), "bin/node".into()],
        min_node_version: MIN_NODE.into(),
    }
}

/// A contract whose releases pin the simulator's fixture files: desktop 3.11.2 and runtime
/// 3.14.3.
pub fn contract() -> Contract {
    Contract {
        facts: Default::default(),
        protocol_id: "zcode-task-v1".into(),
        description: "test contract".into(),
        layouts: vec![
            desktop_layout(Os::Macos),
            desktop_layout(Os::Linux),
            desktop_layout(Os::Windows),
            Layout::Runtime(runtime_layout()),
        ],
        releases: vec![release(RELEASE_ID), runtime_release(RUNTIME_RELEASE_ID)],
        cli_version_probe: VersionProbe {
            args: vec!["{cli-entry}".into(), "version".into()],
            env: vec![("ELECTRON_RUN_AS_NODE".into(), "1".into())],
        },
        credentials_file: ".zcode/v2/credentials.json".into(),
        credential_sources: Vec::new(),
        offers: Vec::new(),
    }
}

/// A contract with only the desktop layouts and release.
pub fn desktop_contract() -> Contract {
    let mut contract = contract();
    contract.layouts.retain(|l| l.kind() == LayoutKind::Desktop);
    contract.releases.retain(|r| r.kind == LayoutKind::Desktop);
    contract
}

fn pin(role: &str, path: &str, bytes: &[u8]) -> FilePin {
    FilePin {
        role: role.into(),
        path: path.into(),
        sha256: Some(sha256(bytes)),
        required_exports: Vec::new(),
    }
}

pub fn release(id: &str) -> Release {
    let mut rpc = pin("host-rpc", &desktop_path(HOST_RPC_CHUNK_PATH), HOST_RPC_CHUNK);
    // Whatever the fixture exports today: the exports rule itself is tested with files whose
    // content the test controls.
    rpc.required_exports =
        zcode_discovery::exported_names(std::str::from_utf8(HOST_RPC_CHUNK).unwrap())
            .into_iter()
            .collect();
    Release {
        data_files: Default::default(),
        id: id.into(),
        kind: LayoutKind::Desktop,
        app_version: APP_VERSION.into(),
        cli_version: CLI_VERSION.into(),
        files: vec![
            pin("host-index", &desktop_path(HOST_INDEX_PATH), HOST_INDEX),
            rpc,
            pin("cli", "glm/zcode.cjs", CLI_ENTRY),
        ],
        identity: None,
        simulated: true,
    }
}

pub fn runtime_release(id: &str) -> Release {
    Release {
        data_files: Default::default(),
        id: id.into(),
        kind: LayoutKind::Runtime,
        app_version: RUNTIME_APP_VERSION.into(),
        cli_version: CLI_VERSION.into(),
        files: vec![
            pin("server", RUNTIME_SERVER_PATH, RUNTIME_SERVER),
            pin("agent", RUNTIME_AGENT_PATH, CLI_ENTRY),
        ],
        identity: None,
        simulated: true,
    }
}

/// `release` with no pins (a real release known only by versions and identity).
pub fn unpinned(mut release: Release, identity: &str) -> Release {
    for file in &mut release.files {
        file.sha256 = None;
    }
    release.identity = Some(identity.into());
    release.simulated = false;
    release
}

/// A temporary directory holding a runner and a fake install (`root`).
pub struct Fixture {
    pub dir: TempDir,
    pub root: PathBuf,
    pub built: BuiltInstall,
    pub platform: Platform,
    pub cache: HashCache,
}

impl Fixture {
    /// A fake desktop install for this process's platform.
    pub fn new(variant: Variant) -> Self {
        Self::for_platform(Platform::current(), variant)
    }

    pub fn for_platform(platform: Platform, variant: Variant) -> Self {
        Self::build(platform, |b| b.variant(variant))
    }

    /// A standalone runtime folder (`zcode/` and a `node`) at app version 3.14.3.
    pub fn runtime(variant: Variant) -> Self {
        Self::build(Platform::current(), |b| {
            b.layout(FakeLayout::Runtime).app_version(RUNTIME_APP_VERSION).variant(variant)
        })
    }

    /// A fake install for `platform`, laid out in `<dir>/ZCode` as `configure` says.
    pub fn build(
        platform: Platform,
        configure: impl FnOnce(FakeInstallBuilder) -> FakeInstallBuilder,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let runner = write_runner(dir.path());
        let builder = FakeInstall::builder(dir.path().join("ZCode"))
            .os(platform.os.unwrap())
            .platform_tag(platform.tag())
            .app_version(APP_VERSION)
            .runner(runner);
        let built = configure(builder).build_install().unwrap();
        Self { dir, root: built.install_root.clone(), built, platform, cache: HashCache::new() }
    }

    pub fn inspector(&self) -> Inspector<'_> {
        Inspector {
            platform: &self.platform,
            cache: &self.cache,
            probe_timeout: Inspector::DEFAULT_PROBE_TIMEOUT,
        }
    }

    pub fn target(&self) -> InstallTarget {
        InstallTarget::root(&self.root)
    }

    pub fn inspect(&self, contracts: &[(&str, &Contract)]) -> Inspection {
        self.inspect_target(&self.target(), contracts)
    }

    pub fn inspect_target(
        &self,
        target: &InstallTarget,
        contracts: &[(&str, &Contract)],
    ) -> Inspection {
        let mappers: Vec<MapperContract> = contracts.iter().map(|&c| c.into()).collect();
        self.inspector().inspect(target, &mappers)
    }

    /// Discovery with `search` settings on this fixture's platform.
    pub fn discover(&self, search: &Search<'_>, contracts: &[(&str, &Contract)]) -> Discovery {
        let mappers: Vec<MapperContract> = contracts.iter().map(|&c| c.into()).collect();
        Discovery::run(search, &self.inspector(), &mappers)
    }

    /// Path of a layout entry (`/`-separated) under the root.
    pub fn path(&self, relative: &str) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(relative.split('/'));
        path
    }
}

pub fn no_env(_: &str) -> Option<OsString> {
    None
}

pub fn no_registry() -> RecordedRegistry {
    RecordedRegistry::default()
}

/// A search pointed at `install` (and `node`), with no environment and no home.
pub fn search_for<'a>(
    install: Option<&'a Path>,
    node: Option<&'a Path>,
    registry: &'a RecordedRegistry,
) -> Search<'a> {
    Search { install_flag: install, node_flag: node, env: &no_env, home: None, registry }
}

/// The contract-level or single-release refusal of the first verdict.
pub fn refusal(inspection: &Inspection) -> (GateRule, String) {
    let verdict = &inspection.verdicts[0];
    match &verdict.outcome {
        ContractOutcome::Refused(r) => (r.rule, r.reason.clone()),
        ContractOutcome::Compared(releases) => {
            let r = releases[0].result.as_ref().expect_err("the release was accepted");
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
