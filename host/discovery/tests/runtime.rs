//! The gate on standalone runtimes: a runtime folder with its Node, a runtime directory given
//! with a Node, the Paseo managed folder; Nodes verified by running them.

mod support;

use std::ffi::OsString;
use std::path::Path;

use support::*;
use zcode_contract::{LayoutKind, Os, Platform};
use zcode_discovery::{
    GateRule, InstallTarget, NODE_ENV, NodeSource, RecordedRegistry, Search, select,
};
use zcode_fake_install::{
    FAKE_ELECTRON_VERSION, FakeInstall, FakeLayout, OLD_NODE_VERSION, PASEO_RUNTIMES, RUNTIME_DIR,
    RUNTIME_SERVER_PATH, Variant,
};

fn explicit(path: &Path) -> InstallTarget {
    let node = zcode_discovery::resolve_explicit_node(Some(path), &no_env).unwrap();
    InstallTarget { explicit_node: Some(node), ..InstallTarget::default() }
}

#[test]
fn a_runtime_folder_with_its_node_is_accepted() {
    let fixture = Fixture::runtime(Variant::Good);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let selected = select(&inspection).unwrap();
    let install = &selected.install;
    let root = fixture.root.to_str().unwrap();
    assert_eq!(install.kind, LayoutKind::Runtime);
    assert_eq!(install.executable, format!("{root}/node"), "the folder's own Node");
    assert_eq!(install.cli_entry, format!("{root}/zcode/agent/zcode.cjs"));
    assert_eq!(install.host_archive, format!("{root}/zcode"), "the runtime directory");
    assert_eq!(install.release_id, RUNTIME_RELEASE_ID);
    assert_eq!(install.app_version, RUNTIME_APP_VERSION);
    assert_eq!(install.cli_version, CLI_VERSION);
    assert_eq!(
        install.files,
        [
            ("server".to_string(), format!("{root}/zcode/{RUNTIME_SERVER_PATH}")),
            ("agent".to_string(), format!("{root}/zcode/agent/zcode.cjs")),
        ]
    );
    let nodes = &inspection.verdicts[0].findings.nodes;
    assert_eq!(nodes.len(), 1);
    assert_eq!(
        (nodes[0].source, nodes[0].version.as_deref()),
        (NodeSource::Install, Some("24.21.0"))
    );
    assert!(nodes[0].accepted && nodes[0].electron.is_none());
}

#[test]
fn a_runtime_directory_given_with_a_node_is_accepted() {
    let fixture = Fixture::runtime(Variant::Good);
    // The runtime directory itself, and the Node elsewhere.
    let node = fixture.dir.path().join("bin-node");
    std::fs::rename(fixture.path("node"), &node).unwrap();
    let runtime_dir = fixture.path(RUNTIME_DIR);
    let target = InstallTarget { root: runtime_dir.clone(), ..explicit(&node) };
    // The launcher runs the runner for the folder it was built in; the probe's cwd is the
    // runtime directory, which the stand-in runner checks. Rebuild the Node for that root.
    let script = std::fs::read_to_string(&node)
        .unwrap()
        .replace(&format!("'{}'", fixture.root.display()), &format!("'{}'", runtime_dir.display()));
    std::fs::write(&node, script).unwrap();
    let inspection = fixture.inspect_target(&target, &[("test:a", &contract())]);
    let selected = select(&inspection).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(selected.install.executable, node.canonicalize().unwrap().to_str().unwrap());
    assert_eq!(selected.install.install_root, runtime_dir.to_str().unwrap());
    assert_eq!(selected.install.host_archive, runtime_dir.to_str().unwrap());
    assert_eq!(inspection.verdicts[0].findings.nodes[0].source, NodeSource::Flag);
}

#[test]
fn a_node_that_is_too_old_is_refused_saying_what_is_needed() {
    let fixture = Fixture::runtime(Variant::NodeTooOld);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Node);
    assert!(reason.starts_with("Node 22 found, 24 needed"), "{reason}");
    assert!(
        reason.contains(&format!("is v{OLD_NODE_VERSION}")) && reason.contains(MIN_NODE),
        "{reason}"
    );
    let node = &inspection.verdicts[0].findings.nodes[0];
    assert_eq!(node.version.as_deref(), Some(OLD_NODE_VERSION));
    assert!(!node.accepted);
}

#[test]
fn an_electron_app_is_never_taken_for_a_node() {
    let fixture = Fixture::runtime(Variant::ElectronNode);
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Node);
    assert!(reason.contains(&format!("is Electron {FAKE_ELECTRON_VERSION}")), "{reason}");

    // Nor is a desktop install's executable, named as the Node of a runtime.
    let desktop = Fixture::new(Variant::Good);
    let runtime = Fixture::runtime(Variant::Good);
    let target = InstallTarget { root: runtime.root.clone(), ..explicit(&desktop.path("zcode")) };
    let (rule, reason) = refusal(&runtime.inspect_target(&target, &[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Node);
    assert!(reason.contains("is Electron"), "{reason}");
}

#[test]
fn a_named_node_is_the_only_one_tried() {
    let fixture = Fixture::runtime(Variant::Good);
    let old = Fixture::runtime(Variant::NodeTooOld);
    let target = InstallTarget { root: fixture.root.clone(), ..explicit(&old.path("node")) };
    let inspection = fixture.inspect_target(&target, &[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Node);
    assert!(reason.contains("Node 22 found"), "the folder's good Node is not used: {reason}");
    assert_eq!(inspection.verdicts[0].findings.nodes.len(), 1);

    // A named Node that cannot be used refuses the runtime, saying why.
    let env = |name: &str| (name == NODE_ENV).then(|| OsString::from("node"));
    let bad = zcode_discovery::resolve_explicit_node(None, &env).unwrap();
    let target = InstallTarget { explicit_node: Some(bad), ..fixture.target() };
    let (rule, reason) = refusal(&fixture.inspect_target(&target, &[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Node);
    assert!(reason.contains(NODE_ENV) && reason.contains("absolute"), "{reason}");
}

#[test]
fn without_any_node_the_refusal_says_how_to_name_one() {
    let fixture = Fixture::runtime(Variant::Good);
    std::fs::remove_file(fixture.path("node")).unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Node);
    assert!(reason.contains("no Node to run the runtime"), "{reason}");
    assert!(reason.contains("--zcode-node") && reason.contains(MIN_NODE), "{reason}");
}

#[test]
fn the_package_file_must_name_the_runtime() {
    let fixture = Fixture::runtime(Variant::Good);
    let package = fixture.path("zcode/package.json");
    std::fs::write(&package, r#"{"name":"something-else","version":"3.14.3"}"#).unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Metadata);
    assert!(reason.contains("`name` is \"something-else\", expected `zcode-runtime`"), "{reason}");
    std::fs::write(&package, r#"{"version":"3.14.3"}"#).unwrap();
    let (_, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert!(reason.contains("lacks `name`"), "{reason}");
}

#[test]
fn a_tampered_or_missing_server_is_refused() {
    let fixture = Fixture::runtime(Variant::TamperedHostHash);
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::HostFiles);
    assert!(
        reason.contains(RUNTIME_SERVER_PATH) && reason.contains("hash does not match"),
        "{reason}"
    );
    let fixture = Fixture::runtime(Variant::MissingFile);
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::HostFiles);
    assert!(reason.contains(RUNTIME_SERVER_PATH) && reason.contains("missing"), "{reason}");
}

#[test]
fn a_folder_that_is_neither_layout_is_refused_by_layout() {
    let fixture = Fixture::runtime(Variant::Good);
    std::fs::remove_dir_all(fixture.path(RUNTIME_DIR)).unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Layout);
    assert!(
        reason.contains("neither a desktop app") && reason.contains("zcode/package.json"),
        "{reason}"
    );
    // A contract that drives only runtimes says what it lacks.
    let mut runtime_only = contract();
    runtime_only.layouts.retain(|l| l.kind() == LayoutKind::Runtime);
    runtime_only.releases.retain(|r| r.kind == LayoutKind::Runtime);
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &runtime_only)]));
    assert_eq!(rule, GateRule::Paths);
    assert!(reason.contains("no runtime directory"), "{reason}");
}

#[test]
fn a_desktop_release_is_not_compared_with_a_runtime() {
    // Same versions on both sides: only the runtime release is judged for a runtime folder.
    let fixture = Fixture::runtime(Variant::Good);
    let mut contract = contract();
    contract.releases[0].app_version = RUNTIME_APP_VERSION.into();
    let inspection = fixture.inspect(&[("test:a", &contract)]);
    let zcode_discovery::ContractOutcome::Compared(releases) = &inspection.verdicts[0].outcome
    else {
        panic!("refused: {:?}", inspection.verdicts[0].outcome)
    };
    let ids: Vec<&str> = releases.iter().map(|r| r.release_id.as_str()).collect();
    assert_eq!(ids, [RUNTIME_RELEASE_ID]);
}

#[test]
fn a_paseo_managed_runtime_runs_on_the_managed_node() {
    let data = tempfile::tempdir().unwrap();
    let platform = Platform::current();
    let runner = write_runner(data.path());
    let built = FakeInstall::builder(data.path().join(PASEO_RUNTIMES))
        .os(platform.os.unwrap_or(Os::Linux))
        .platform_tag(platform.tag())
        .app_version(RUNTIME_APP_VERSION)
        .layout(FakeLayout::PaseoManaged)
        .runner(runner)
        .build_install()
        .unwrap();
    let fixture = Fixture::runtime(Variant::Good); // for its inspector and cache
    let registry = RecordedRegistry::default();
    let env = |name: &str| (name == "XDG_DATA_HOME").then(|| data.path().as_os_str().to_owned());
    let home = data.path().join("home");
    let search = Search {
        install_flag: Some(&built.root),
        node_flag: None,
        env: &env,
        home: Some(&home),
        registry: &registry,
    };
    let discovery = fixture.discover(&search, &[("test:a", &contract())]);
    let selected = discovery.selected().unwrap_or_else(|| panic!("{:?}", discovery.selection));
    assert_eq!(selected.install.install_root, built.install_root.to_str().unwrap());
    assert_eq!(selected.install.executable, built.node.as_ref().unwrap().to_str().unwrap());
    assert_eq!(selected.install.home, home.to_str().unwrap());
    let nodes = &discovery.inspection.as_ref().unwrap().verdicts[0].findings.nodes;
    assert_eq!(nodes[0].source, NodeSource::Managed);
}
