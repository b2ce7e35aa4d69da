//! Which installs this mapper drives — standalone ZCode runtime folders whose `zcode/` holds
//! the stdio Services Server — and how the Server, login and logout are started.
//!
//! Facts (sources in `docs/mapper-zcode-services-v4.md`, "Releases" and "Launch"): the
//! runtime directory `zcode/` holds `package.json` `{"name":"zcode-runtime","version"}`,
//! `server/remote/zcode-server.cjs` (the Services Server), `agent/zcode.cjs` (the Agent / CLI)
//! and `agent/provider/zcode-builtin.json`; it runs on plain Node ≥ 24.14.0. No public source
//! gives the SHA-256 of a file inside a runtime archive (only of whole archives), so every real
//! release is unpinned and identified by the version its Server reports in its hello.

use zcode_contract::{
    AuthCommand, Contract, FORK_METHOD, FilePin, LaunchPlan, Layout, LayoutKind, MapperError,
    Release, RuntimeLayout, VerifiedInstall, VersionProbe,
};

use zcode_mapper_sdk::json::internal;

mod simulator {
    include!(concat!(env!("OUT_DIR"), "/simulator_hashes.rs"));
}

pub const PROTOCOL_ID: &str = "zcode-services-v4";
/// The simulated releases' ids: this prefix and the app version (`zcode-services-sim-4.0.0`).
pub const SIMULATED_RELEASE_PREFIX: &str = "zcode-services-sim-";

pub const RUNTIME_DIR: &str = "zcode";
pub const PACKAGE_FILE: &str = "package.json";
pub const PACKAGE_NAME: &str = "zcode-runtime";
pub const CLI_ENTRY: &str = "agent/zcode.cjs";
pub const SERVER_ROLE: &str = "server";
pub const SERVER_PATH: &str = "server/remote/zcode-server.cjs";
pub const AGENT_ROLE: &str = "agent";
pub const PROVIDER_TABLE_ROLE: &str = "provider-table";
pub const PROVIDER_TABLE_PATH: &str = "agent/provider/zcode-builtin.json";
/// The lowest Node the Paseo plugin accepts (`MINIMUM_NODE_VERSION`); ZCode 3.15.1's
/// `apps/zcode-cli` pins the same.
pub const MIN_NODE: &str = "24.14.0";
/// The CLI's credentials file, relative to the user's home (presence only).
pub const CREDENTIALS_FILE: &str = ".zcode/v2/credentials.json";

/// A runtime release: the Server (= app) version its hello reports and the Agent version
/// `agent/zcode.cjs --version` prints.
struct RuntimeRelease {
    id: &'static str,
    app_version: &'static str,
    cli_version: &'static str,
}

/// The runtime archives of zcode-releases.md §1, §2.6 (`zcode-runtime-v<version>-paseo.1`).
/// 4.0.0's bundled Agent version is not public: 0.18.0 is **assumed**, the same version the
/// simulator's `runtime-4.0.0` profile and the app-server mapper's `zcode-desktop-4.0.0` assume.
/// A 4.0.0 runtime whose Agent prints anything else is refused, never guessed.
const RELEASES: [RuntimeRelease; 4] = [
    RuntimeRelease { id: "zcode-runtime-3.14.3", app_version: "3.14.3", cli_version: "0.16.9" },
    RuntimeRelease { id: "zcode-runtime-3.16.2", app_version: "3.16.2", cli_version: "0.17.0" },
    RuntimeRelease { id: "zcode-runtime-3.17.2", app_version: "3.17.2", cli_version: "0.17.1" },
    RuntimeRelease { id: "zcode-runtime-4.0.0", app_version: "4.0.0", cli_version: "0.18.0" },
];

fn pin(role: &str, path: &str, sha256: Option<&str>) -> FilePin {
    FilePin {
        role: role.to_string(),
        path: path.to_string(),
        sha256: sha256.map(str::to_string),
        required_exports: Vec::new(),
    }
}

fn real(release: &RuntimeRelease) -> Release {
    Release {
        data_files: Default::default(),
        id: release.id.to_string(),
        kind: LayoutKind::Runtime,
        app_version: release.app_version.to_string(),
        cli_version: release.cli_version.to_string(),
        files: vec![
            pin(SERVER_ROLE, SERVER_PATH, None),
            pin(AGENT_ROLE, CLI_ENTRY, None),
            pin(PROVIDER_TABLE_ROLE, PROVIDER_TABLE_PATH, None),
        ],
        identity: Some(release.app_version.to_string()),
        simulated: false,
    }
}

/// The simulator's runtime playing `release`: the same versions, the files a fake runtime
/// install lays out (`host/fake-install`), pinned, and the version its hello reports. Pinned,
/// it wins over the real release of the same versions, which is known only by its identity.
fn simulated(release: &RuntimeRelease) -> Release {
    Release {
        data_files: Default::default(),
        id: format!("{SIMULATED_RELEASE_PREFIX}{}", release.app_version),
        kind: LayoutKind::Runtime,
        app_version: release.app_version.to_string(),
        cli_version: release.cli_version.to_string(),
        files: vec![
            pin(SERVER_ROLE, SERVER_PATH, Some(simulator::SIM_SERVER_SHA256)),
            pin(AGENT_ROLE, CLI_ENTRY, Some(simulator::SIM_AGENT_SHA256)),
            pin(
                PROVIDER_TABLE_ROLE,
                PROVIDER_TABLE_PATH,
                Some(simulator::SIM_PROVIDER_TABLE_SHA256),
            ),
        ],
        identity: Some(release.app_version.to_string()),
        simulated: true,
    }
}

pub fn layout() -> RuntimeLayout {
    RuntimeLayout {
        runtime_dir: RUNTIME_DIR.to_string(),
        package_file: PACKAGE_FILE.to_string(),
        package_pairs: vec![("name".to_string(), PACKAGE_NAME.to_string())],
        cli_entry: CLI_ENTRY.to_string(),
        node_candidates: vec!["node".to_string(), "node.exe".to_string(), "bin/node".to_string()],
        min_node_version: MIN_NODE.to_string(),
    }
}

pub fn contract() -> Contract {
    Contract {
        facts: Default::default(),
        protocol_id: PROTOCOL_ID.to_string(),
        description: "ZCode stdio Services Server (runtime archives 3.14.3 to 4.0.0) on plain \
                      Node: JSON hello, VS Code-style binary IPC, one V4 conversation state"
            .to_string(),
        layouts: vec![Layout::Runtime(layout())],
        releases: RELEASES.iter().map(real).chain(RELEASES.iter().map(simulated)).collect(),
        // `node agent/zcode.cjs --version` prints the Agent version (V4S §2.1).
        cli_version_probe: VersionProbe {
            args: vec!["{cli-entry}".to_string(), "--version".to_string()],
            env: Vec::new(),
        },
        credentials_file: CREDENTIALS_FILE.to_string(),
        credential_sources: Vec::new(),
        // V4 `forkAssistant` (every release this mapper accepts speaks V4 commands).
        offers: vec![FORK_METHOD.to_string()],
    }
}

fn file<'a>(install: &'a VerifiedInstall, role: &str) -> Result<&'a str, MapperError> {
    install.file(role).ok_or_else(|| internal(format!("The verified install has no `{role}` file")))
}

fn check_release(install: &VerifiedInstall) -> Result<(), MapperError> {
    if install.kind != LayoutKind::Runtime {
        return Err(internal("This mapper drives standalone runtimes only"));
    }
    let known = |r: &RuntimeRelease| {
        r.id == install.release_id
            || install.release_id.strip_prefix(SIMULATED_RELEASE_PREFIX) == Some(r.app_version)
    };
    if !RELEASES.iter().any(known) {
        return Err(internal(format!(
            "Release {} is not part of this mapper's contract",
            install.release_id
        )));
    }
    Ok(())
}

/// `node <runtime>/server/remote/zcode-server.cjs`, with the environment that selects the
/// standalone authority and tells the Server how to start the Agent: the same verified Node
/// running `agent/zcode.cjs app-server --stdio` (ZCode 3.15.1
/// `zcodeAgentProcessManager.ts`, `resolveDefaultZCodeAgentCommand`: the JSON arguments replace
/// the default `["app-server","--stdio"]`; the Agent's cwd is each call's workspace).
pub fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
    check_release(install)?;
    let server = file(install, SERVER_ROLE)?;
    let agent = file(install, AGENT_ROLE)?;
    let agent_args = serde_json::json!([agent, "app-server", "--stdio"]).to_string();
    let env = vec![
        ("ZCODE_SERVICE_AUTHORITY_MODE".to_string(), "standalone-server".to_string()),
        ("ZCODE_AGENT_SERVER_COMMAND".to_string(), install.executable.clone()),
        ("ZCODE_AGENT_SERVER_ARGS_JSON".to_string(), agent_args),
        // ZCode's own kill switch for Computer Use, whose desktop helper a headless Server
        // cannot run (Paseo plugin ADR 19).
        ("ZCODE_CUA_PRODUCT_HELPER".to_string(), "0".to_string()),
    ];
    Ok(LaunchPlan {
        args: vec![server.to_string()],
        env,
        // An inherited Electron switch would not matter to plain Node, but a launch names only
        // what it means; an inherited Agent cwd would pin every workspace's Agent to one folder.
        env_remove: vec!["ELECTRON_RUN_AS_NODE".to_string(), "ZCODE_AGENT_SERVER_CWD".to_string()],
        cwd: install.host_archive.clone(),
        stdin_preamble: Vec::new(),
        needs_handshake: true,
    })
}

/// ZCode's own interactive login (`login --no-browser`) or logout, run by the runtime's CLI
/// with the verified Node, as the desktop generations run it.
pub fn auth_plan(
    install: &VerifiedInstall,
    command: AuthCommand,
) -> Result<LaunchPlan, MapperError> {
    check_release(install)?;
    let mut args = vec![install.cli_entry.clone()];
    match command {
        AuthCommand::Login => args.extend(["login".to_string(), "--no-browser".to_string()]),
        AuthCommand::Logout => args.push("logout".to_string()),
    }
    Ok(LaunchPlan {
        args,
        env: Vec::new(),
        env_remove: vec!["ELECTRON_RUN_AS_NODE".to_string()],
        cwd: install.host_archive.clone(),
        stdin_preamble: Vec::new(),
        needs_handshake: false,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;

    fn install(release: &str) -> VerifiedInstall {
        let runtime = "/opt/rt/zcode".to_string();
        VerifiedInstall {
            facts: Default::default(),
            install_root: "/opt/rt".into(),
            kind: LayoutKind::Runtime,
            executable: "/opt/rt/node".into(),
            cli_entry: format!("{runtime}/agent/zcode.cjs"),
            host_archive: runtime.clone(),
            release_id: release.into(),
            app_version: "3.14.3".into(),
            cli_version: "0.16.9".into(),
            files: vec![
                ("server".into(), format!("{runtime}/server/remote/zcode-server.cjs")),
                ("agent".into(), format!("{runtime}/agent/zcode.cjs")),
                ("provider-table".into(), format!("{runtime}/agent/provider/zcode-builtin.json")),
            ],
            unpinned: vec!["server".into(), "agent".into(), "provider-table".into()],
            home: "/home/u".into(),
        }
    }

    fn sha256_hex(path: &Path) -> String {
        use sha2::{Digest, Sha256};
        Sha256::digest(std::fs::read(path).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn lists_the_runtime_releases_unpinned_with_their_identity() {
        let contract = contract();
        assert_eq!(contract.protocol_id, "zcode-services-v4");
        let ids: Vec<_> = contract.releases.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "zcode-runtime-3.14.3",
                "zcode-runtime-3.16.2",
                "zcode-runtime-3.17.2",
                "zcode-runtime-4.0.0",
                "zcode-services-sim-3.14.3",
                "zcode-services-sim-3.16.2",
                "zcode-services-sim-3.17.2",
                "zcode-services-sim-4.0.0",
            ]
        );
        for release in &contract.releases {
            assert_eq!(release.identity.as_deref(), Some(release.app_version.as_str()));
            assert_eq!(release.kind, LayoutKind::Runtime);
            assert_eq!(release.pinned(), release.simulated, "{}", release.id);
        }
        let versions = |simulated: bool| -> Vec<_> {
            let releases = contract.releases.iter().filter(|r| r.simulated == simulated);
            releases.map(|r| (r.app_version.as_str(), r.cli_version.as_str())).collect()
        };
        let expected =
            [("3.14.3", "0.16.9"), ("3.16.2", "0.17.0"), ("3.17.2", "0.17.1"), ("4.0.0", "0.18.0")];
        assert_eq!(versions(false), expected);
        assert_eq!(versions(true), expected, "the simulator plays each release's versions");
        // The pins are those of the files `host/fake-install` writes for a runtime install.
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let expected = [
            "fake-zcode-runtime/server/remote/zcode-server.cjs",
            "fake-zcode-host/zcode.cjs",
            "fake-zcode-host-3.12/config/provider/zcode-builtin.json",
        ];
        for simulated in contract.releases.iter().filter(|r| r.simulated) {
            for (file, fixture) in simulated.files.iter().zip(expected) {
                assert_eq!(
                    file.sha256.as_deref(),
                    Some(sha256_hex(&fixtures.join(fixture)).as_str()),
                    "{fixture}"
                );
            }
        }
        let layout = contract.runtime_layout().unwrap();
        assert_eq!(
            (layout.runtime_dir.as_str(), layout.cli_entry.as_str()),
            ("zcode", "agent/zcode.cjs")
        );
        assert_eq!(layout.package_pairs, [("name".to_string(), "zcode-runtime".to_string())]);
        assert_eq!(layout.min_node_version, "24.14.0");
        assert_eq!(contract.cli_version_probe.args, ["{cli-entry}", "--version"]);
        assert_eq!(contract.credentials_file, ".zcode/v2/credentials.json");
    }

    #[test]
    fn launches_the_services_server_in_standalone_mode() {
        let plan = launch_plan(&install("zcode-runtime-3.14.3")).unwrap();
        assert_eq!(plan.args, ["/opt/rt/zcode/server/remote/zcode-server.cjs"]);
        let env: HashMap<_, _> = plan.env.iter().cloned().collect();
        assert_eq!(env["ZCODE_SERVICE_AUTHORITY_MODE"], "standalone-server");
        assert_eq!(env["ZCODE_AGENT_SERVER_COMMAND"], "/opt/rt/node");
        assert_eq!(
            serde_json::from_str::<Vec<String>>(&env["ZCODE_AGENT_SERVER_ARGS_JSON"]).unwrap(),
            ["/opt/rt/zcode/agent/zcode.cjs", "app-server", "--stdio"]
        );
        assert_eq!(env["ZCODE_CUA_PRODUCT_HELPER"], "0");
        assert!(plan.env_remove.contains(&"ZCODE_AGENT_SERVER_CWD".to_string()));
        assert!(plan.needs_handshake && plan.stdin_preamble.is_empty());
        assert_eq!(plan.cwd, "/opt/rt/zcode");
    }

    #[test]
    fn refuses_installs_of_other_releases_or_layouts() {
        for unknown in ["zcode-runtime-9.9.9", "zcode-services-sim-9.9.9", "zcode-sim-3.14.3"] {
            assert_eq!(
                launch_plan(&install(unknown)).unwrap_err().message,
                format!("Release {unknown} is not part of this mapper's contract")
            );
        }
        let mut desktop = install("zcode-runtime-3.14.3");
        desktop.kind = LayoutKind::Desktop;
        assert!(launch_plan(&desktop).is_err());
        let mut missing = install("zcode-runtime-3.14.3");
        missing.files.retain(|(role, _)| role != "server");
        assert_eq!(
            launch_plan(&missing).unwrap_err().message,
            "The verified install has no `server` file"
        );
    }

    #[test]
    fn runs_the_runtimes_cli_for_login_and_logout() {
        let login = auth_plan(&install("zcode-services-sim-4.0.0"), AuthCommand::Login).unwrap();
        assert_eq!(login.args, ["/opt/rt/zcode/agent/zcode.cjs", "login", "--no-browser"]);
        let logout = auth_plan(&install("zcode-runtime-3.17.2"), AuthCommand::Logout).unwrap();
        assert_eq!(logout.args, ["/opt/rt/zcode/agent/zcode.cjs", "logout"]);
        assert!(!login.needs_handshake);
    }
}
