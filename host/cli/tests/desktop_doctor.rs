//! `doctor` on fake Desktop 3.14+ installs of every layout (macOS `.app`, Linux `/opt/ZCode`,
//! an extracted AppImage, Windows x64 and arm64), seen from a process of that platform: the
//! app-server mapper is selected, a fake install pinned by the simulator's files takes its
//! simulated release, one whose Agent differs takes the real release (unpinned, verified by
//! identity), a fake 3.19.1 takes its real release unpinned, and a fake 3.19.0 is refused with a
//! message naming the newest known release.
//!
//! The embedded mappers' contracts come from this binary (`mapper info embedded --json`); the
//! installs from `simulator install`; discovery and the report are the library's, run for the
//! install's platform (the files are platform-neutral stand-ins, the version probe runs here).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::*;
use zcode_contract::{Contract, Platform};
use zcode_discovery::{
    Discovery, DoctorReport, HashCache, Inspector, MapperContract, RecordedRegistry, Search,
};

/// Every embedded mapper's (source, contract), as the binary reports them.
fn embedded_contracts() -> Vec<(String, Contract)> {
    let output = Command::new(agent_binary())
        .args(["mapper", "info", "embedded", "--json"])
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp mapper info");
    assert!(output.status.success(), "mapper info: {output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(|doc| {
            let doc = doc.expect("one JSON document per mapper");
            let source = doc["source"].as_str().unwrap().to_string();
            (source, serde_json::from_value(doc["contract"].clone()).expect("a contract"))
        })
        .collect()
}

/// `zcode-acp simulator install <dir> …`: a fake install whose runtime is this binary's
/// simulator. Returns its root.
fn fake_install(env: &TestEnv, name: &str, args: &[&str]) -> PathBuf {
    let output = Command::new(agent_binary())
        .args(["simulator", "install"])
        .arg(env.path().join(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run zcode-acp simulator install");
    assert!(output.status.success(), "simulator install {args:?}: {output:?}");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().lines().next().unwrap().trim())
}

/// The doctor report (JSON) of the install at `root` for a process on `platform`.
fn doctor(
    env: &TestEnv,
    root: &Path,
    platform: &Platform,
    contracts: &[(String, Contract)],
) -> Value {
    let cache = HashCache::new();
    let inspector =
        Inspector { platform, cache: &cache, probe_timeout: Inspector::DEFAULT_PROBE_TIMEOUT };
    let home = env.path().join("home");
    let no_env = |_: &str| None;
    let registry = RecordedRegistry(Vec::new());
    let search = Search {
        install_flag: Some(root),
        node_flag: None,
        env: &no_env,
        home: Some(&home),
        registry: &registry,
    };
    let mappers: Vec<MapperContract> =
        contracts.iter().map(|(source, contract)| MapperContract { source, contract }).collect();
    let discovery = Discovery::run(&search, &inspector, &mappers);
    serde_json::from_str(&DoctorReport::new(&discovery, Some(&home), None).to_json()).unwrap()
}

/// The release the suite plays when it is a Desktop one, else the generation's main release.
fn release() -> &'static str {
    if generation() == Generation::AppServer { generation::app_version() } else { "3.18.2" }
}

const LAYOUTS: [(&str, &str, &str, &str, &str); 5] = [
    ("macos", "darwin-arm64", "desktop", "macos", "aarch64"),
    ("linux", "linux-x64", "desktop", "linux", "x86_64"),
    ("linux", "linux-x64", "appimage", "linux", "x86_64"),
    ("windows", "win32-x64", "desktop", "windows", "x86_64"),
    ("windows", "win32-arm64", "desktop", "windows", "aarch64"),
];

#[test]
fn every_desktop_layout_selects_the_app_server_mapper_and_its_simulated_release() {
    let env = TestEnv::new();
    let contracts = embedded_contracts();
    let version = release();
    for (os, tag, layout, rust_os, arch) in LAYOUTS {
        let name = format!("{tag}-{layout}");
        let root = fake_install(
            &env,
            &name,
            &["--os", os, "--platform", tag, "--layout", layout, "--app-version", version],
        );
        let report = doctor(&env, &root, &Platform::from_rust(rust_os, arch), &contracts);
        let selected = &report["selectedMapper"];
        assert_eq!(selected["source"], "embedded:zcode-app-server", "{name}: {report:#}");
        assert_eq!(selected["releaseId"], format!("zcode-desktop-sim-{version}"), "{name}");
        assert_eq!(selected["pinning"], "pinned", "{name}");
        assert_eq!(selected["simulated"], true, "{name}");
        assert_eq!(report["metadataPlatform"], tag, "{name}");
        assert_eq!(report["appVersion"], version, "{name}");
        // The real releases it knows are listed, and say what they leave unpinned.
        let app_server = report["mappers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["source"] == "embedded:zcode-app-server")
            .unwrap();
        let real = app_server["releases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == format!("zcode-desktop-{version}"))
            .expect("the real release is listed");
        assert_eq!(real["pinned"], version == "3.14.5", "{name}: {real}");
    }
}

#[test]
fn an_agent_that_is_not_the_simulators_takes_the_real_release_unpinned() {
    let env = TestEnv::new();
    let contracts = embedded_contracts();
    let version = release();
    if !skip_unless(
        "an_agent_that_is_not_the_simulators_takes_the_real_release_unpinned",
        version != "3.14.5",
        "3.14.5's zcode.cjs is pinned: a changed one is refused, not taken unpinned",
    ) {
        return;
    }
    let root =
        fake_install(&env, "modified", &["--app-version", version, "--variant", "modified-cli"]);
    let report = doctor(&env, &root, &Platform::current(), &contracts);
    let selected = &report["selectedMapper"];
    assert_eq!(selected["releaseId"], format!("zcode-desktop-{version}"), "{report:#}");
    assert_eq!(selected["pinning"], "unpinned");
    assert_eq!(selected["unpinnedRoles"], serde_json::json!(["cli"]));
    assert_eq!(selected["identity"], "zcode-protocol/1 capabilities:independentPlanState");
    assert_eq!(selected["simulated"], false);

    // The text report says it too, and a session still starts: the host is verified by the
    // identity it reports at setup.
    let output = Command::new(agent_binary())
        .args(["--zcode-install", root.to_str().unwrap(), "doctor"])
        .env("HOME", env.path().join("home"))
        .env("XDG_CACHE_HOME", env.path().join("cache"))
        .env("ZCODE_SIM_STATE", env.sim_state())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("unpinned: cli"), "{text}");
    assert!(text.contains("smoke: passed"), "{text}");
}

/// Desktop 3.19.1 (public as a package of its official AppImage, gentoo-zh
/// `dev-util/zcode-bin-3.19.1`) is a real release the mapper knows: an install that says 3.19.1
/// and whose Agent is not the simulator's takes it unpinned, checked by the identity at setup.
#[test]
fn a_fake_3_19_1_takes_its_real_release_unpinned() {
    let env = TestEnv::new();
    let contracts = embedded_contracts();
    let root =
        fake_install(&env, "3.19.1", &["--app-version", "3.19.1", "--variant", "modified-cli"]);
    let report = doctor(&env, &root, &Platform::current(), &contracts);
    assert_eq!(report["appVersion"], "3.19.1", "{report:#}");
    let selected = &report["selectedMapper"];
    assert_eq!(selected["source"], "embedded:zcode-app-server", "{report:#}");
    assert_eq!(selected["releaseId"], "zcode-desktop-3.19.1", "{report:#}");
    assert_eq!(selected["pinning"], "unpinned");
    assert_eq!(selected["unpinnedRoles"], serde_json::json!(["cli"]));
    assert_eq!(selected["identity"], "zcode-protocol/1 capabilities:independentPlanState");
    assert_eq!(selected["simulated"], false);
}

#[test]
fn a_fake_3_19_0_is_refused_naming_the_newest_known_release() {
    let env = TestEnv::new();
    let contracts = embedded_contracts();
    let root =
        fake_install(&env, "newer", &["--app-version", release(), "--variant", "newer-version"]);
    let report = doctor(&env, &root, &Platform::current(), &contracts);
    assert_eq!(report["appVersion"], "3.19.0");
    assert!(report["selectedMapper"].is_null(), "{report:#}");
    // Below 4.0.0, so not "newer": a version no release names, refused all the same.
    assert_eq!(report["versionStanding"], "unknown");
    assert_eq!(report["newestKnownRelease"], "4.0.0");
    let error = report["selectionError"].as_str().unwrap_or_default();
    assert!(
        error.contains("ZCode desktop 3.19.0 is not a release the installed mappers know")
            && error.contains("newest: 4.0.0"),
        "{error}"
    );
}
