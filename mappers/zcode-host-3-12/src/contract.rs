//! Which installs this mapper drives (ZCode 3.12.3 with CLI 0.16.5: the simulator's files, and
//! any real artifact listed in [`REAL_ARTIFACTS`]), and how their host service, login and
//! logout are started.
//!
//! The launch differs from 3.11.2 in two ways: the bridge allowlists the `model-selection`
//! service, and the host needs the path of the built-in provider config that ZCode bundles next
//! to its host archive (`<resources>/config/provider/zcode-builtin.json`), which the bridge
//! passes on in `init-local`.

use serde_json::{Value, json};
use zcode_contract::{
    Artifact, AuthCommand, Contract, FileCheck, LaunchPlan, MapperError, VerifiedInstall,
};
use zcode_host_common::install::{
    self, CREDENTIALS_FILE, HOST_INDEX_PATH, HOST_INDEX_ROLE, HOST_RPC_ROLE, METADATA,
    METADATA_ENTRY_KEY, METADATA_PLATFORM_KEY, cli_version_probe, file_for_role, pairs,
    relative_executable,
};
use zcode_host_common::json::internal;
use zcode_host_common::text::join_path;

mod simulator {
    include!(concat!(env!("OUT_DIR"), "/simulator_hashes.rs"));
}

pub const PROTOCOL_ID: &str = "zcode-host-3.12";
pub const SIMULATED_ARTIFACT_ID: &str = "zcode-sim-3.12.3";

const APP_VERSION: &str = "3.12.3";
const CLI_VERSION: &str = "0.16.5";
/// The built-in provider config, relative to the directory that holds the host archive.
pub const PROVIDER_CONFIG_PATH: &str = "config/provider/zcode-builtin.json";

/// The script the host executable runs (`-e`): it starts the host worker and speaks NDJSON.
pub const BRIDGE_SCRIPT: &str = include_str!("../bridge/bridge.js");

/// One exact set of files: the RPC module's path and export names are part of it, because
/// ZCode's bundler names and minifies them anew in every build.
pub struct ArtifactFiles {
    pub id: &'static str,
    pub cli: &'static str,
    pub index: &'static str,
    pub rpc_path: &'static str,
    pub rpc: &'static str,
    /// Export names of the message-port protocol, the channel client and the service factory.
    pub rpc_exports: [&'static str; 3],
    pub simulated: bool,
}

/// Real ZCode 3.12.3 artifacts this mapper has been verified against. Empty: no public source
/// gives the RPC module's path and export names of a 3.12.3 build, and an artifact is never
/// guessed. `docs/mapper-zcode-host-3-12.md` ("Adding the real artifact") says how a user
/// with a real install fills in an entry from `zcode-acp doctor --json`.
pub const REAL_ARTIFACTS: &[ArtifactFiles] = &[];

const SIMULATED: ArtifactFiles = ArtifactFiles {
    id: SIMULATED_ARTIFACT_ID,
    cli: simulator::SIM_CLI_SHA256,
    index: simulator::SIM_HOST_INDEX_SHA256,
    rpc_path: "out/host/chunk-KGXW6KHC.js",
    rpc: simulator::SIM_HOST_RPC_MODULE_SHA256,
    rpc_exports: ["g", "i", "j"],
    simulated: true,
};

fn artifacts() -> impl Iterator<Item = &'static ArtifactFiles> {
    REAL_ARTIFACTS.iter().chain([&SIMULATED])
}

fn artifact(files: &ArtifactFiles) -> Artifact {
    Artifact {
        id: files.id.to_string(),
        app_version: APP_VERSION.to_string(),
        cli_version: CLI_VERSION.to_string(),
        cli_sha256: files.cli.to_string(),
        files: vec![
            FileCheck {
                role: HOST_INDEX_ROLE.to_string(),
                path: HOST_INDEX_PATH.to_string(),
                sha256: files.index.to_string(),
                required_exports: Vec::new(),
            },
            FileCheck {
                role: HOST_RPC_ROLE.to_string(),
                path: files.rpc_path.to_string(),
                sha256: files.rpc.to_string(),
                required_exports: files.rpc_exports.iter().map(|name| name.to_string()).collect(),
            },
        ],
        simulated: files.simulated,
    }
}

pub fn contract() -> Contract {
    Contract {
        protocol_id: PROTOCOL_ID.to_string(),
        description: "ZCode 3.12.3 (CLI 0.16.5) host service: Electron run as Node, NDJSON \
                      bridge, zcode-agent, zcode-task and model-selection channels, plan as an \
                      independent flag"
            .to_string(),
        layouts: install::layouts(),
        metadata: pairs(&METADATA),
        metadata_platform_key: METADATA_PLATFORM_KEY.to_string(),
        metadata_entry_key: METADATA_ENTRY_KEY.to_string(),
        artifacts: artifacts().map(artifact).collect(),
        cli_version_probe: cli_version_probe(),
        credentials_file: CREDENTIALS_FILE.to_string(),
    }
}

/// `ZCODE_ACP_HOST_ARTIFACT`: the file identity of the selected artifact.
fn artifact_descriptor(files: &ArtifactFiles) -> Value {
    let [protocol, client, service] = files.rpc_exports;
    json!({
        "id": files.id,
        "appVersion": APP_VERSION,
        "cliVersion": CLI_VERSION,
        "cliSha256": files.cli,
        "protocolId": PROTOCOL_ID,
        "hostIndexRelativePath": HOST_INDEX_PATH,
        "hostRpcModuleRelativePath": files.rpc_path,
        "hostIndexSha256": files.index,
        "hostRpcModuleSha256": files.rpc,
        "rpcExports": {"protocol": protocol, "client": client, "service": service},
    })
}

/// `ZCODE_ACP_HOST_PROTOCOL`: service channels and the task operations the bridge allowlists.
/// (The agent and model-selection methods are fixed in the bridge script itself.)
fn protocol_descriptor() -> Value {
    let operation =
        |method: &str| json!({"method": method, "service": "task", "sessionParameter": "taskId"});
    json!({
        "id": PROTOCOL_ID,
        "serviceChannels": {
            "agent": "zcode-agent",
            "task": "zcode-task",
            "modelSelection": "model-selection",
        },
        "operations": {
            "cancelGeneration": operation("stopGeneration"),
            "respondStructuredInput": operation("respondElicitation"),
            "respondPermission": operation("respondPermission"),
        },
    })
}

/// The provider config ZCode bundles beside its host archive: `<resources>/config/provider/
/// zcode-builtin.json` (the core does not check it; the bridge refuses to start without it).
fn provider_config(install: &VerifiedInstall) -> Result<String, MapperError> {
    let archive = install.host_archive.trim_end_matches(['/', '\\']);
    let resources = archive
        .rfind(['/', '\\'])
        .map(|slash| &archive[..slash])
        .filter(|resources| !resources.is_empty())
        .ok_or_else(|| internal("The verified host archive has no parent directory"))?;
    let windows_style = resources.contains('\\') && !resources.contains('/');
    let relative = if windows_style {
        PROVIDER_CONFIG_PATH.replace('/', "\\")
    } else {
        PROVIDER_CONFIG_PATH.to_string()
    };
    Ok(join_path(resources, &relative))
}

pub fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
    let files = artifacts().find(|files| files.id == install.artifact_id).ok_or_else(|| {
        internal(format!("Artifact {} is not part of this mapper's contract", install.artifact_id))
    })?;
    let env = vec![
        ("ELECTRON_RUN_AS_NODE".to_string(), "1".to_string()),
        ("ZCODE_ACP_HOST_INDEX".to_string(), file_for_role(install, HOST_INDEX_ROLE)?.to_string()),
        (
            "ZCODE_ACP_HOST_RPC_MODULE".to_string(),
            file_for_role(install, HOST_RPC_ROLE)?.to_string(),
        ),
        ("ZCODE_ACP_HOST_ARTIFACT".to_string(), artifact_descriptor(files).to_string()),
        ("ZCODE_ACP_HOST_PROTOCOL".to_string(), protocol_descriptor().to_string()),
        ("ZCODE_ACP_HOST_PROVIDER_CONFIG".to_string(), provider_config(install)?),
    ];
    Ok(LaunchPlan {
        program: relative_executable(install)?,
        args: vec!["-e".to_string(), BRIDGE_SCRIPT.to_string()],
        env,
        cwd: install.install_root.clone(),
        stdin_preamble: Vec::new(),
        needs_handshake: false,
    })
}

pub fn auth_plan(
    install: &VerifiedInstall,
    command: AuthCommand,
) -> Result<LaunchPlan, MapperError> {
    install::auth_plan(install, command)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use zcode_contract::Os;

    use super::*;

    fn install(root: &str, archive: &str) -> VerifiedInstall {
        VerifiedInstall {
            install_root: root.to_string(),
            executable: format!("{root}/zcode"),
            cli_entry: format!("{root}/resources/glm/zcode.cjs"),
            host_archive: archive.to_string(),
            artifact_id: SIMULATED_ARTIFACT_ID.to_string(),
            app_version: "3.12.3".to_string(),
            cli_version: "0.16.5".to_string(),
            files: vec![
                ("host-index".to_string(), format!("{archive}/out/host/index.js")),
                ("host-rpc-module".to_string(), format!("{archive}/out/host/chunk-KGXW6KHC.js")),
            ],
        }
    }

    fn sha256_hex(path: &Path) -> String {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(path).unwrap();
        Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn accepts_zcode_3_12_3_with_cli_0_16_5_only() {
        let contract = contract();
        assert_eq!(contract.protocol_id, "zcode-host-3.12");
        assert_eq!(contract.artifacts.len(), 1, "only the simulator artifact is shipped");
        let simulated = &contract.artifacts[0];
        assert_eq!(simulated.id, "zcode-sim-3.12.3");
        assert!(simulated.simulated);
        assert_eq!(
            (simulated.app_version.as_str(), simulated.cli_version.as_str()),
            ("3.12.3", "0.16.5")
        );
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fake-zcode-host");
        assert_eq!(simulated.cli_sha256, sha256_hex(&fixtures.join("zcode.cjs")));
        assert_eq!(simulated.files[0].sha256, sha256_hex(&fixtures.join("out/host/index.js")));
        assert_eq!(simulated.files[1].role, "host-rpc-module");
        assert_eq!(
            simulated.files[1].sha256,
            sha256_hex(&fixtures.join("out/host/chunk-KGXW6KHC.js"))
        );
        assert_eq!(simulated.files[1].required_exports, ["g", "i", "j"]);
        let linux = contract.layout(Os::Linux).unwrap();
        assert_eq!(
            (linux.executable.as_str(), linux.host_archive.as_str()),
            ("zcode", "resources/app.asar")
        );
        assert_eq!(contract.cli_version_probe.args, ["{cli-entry}", "version"]);
    }

    #[test]
    fn launches_the_3_12_bridge_with_the_provider_config() {
        let plan = launch_plan(&install("/opt/ZCode", "/opt/ZCode/resources/app.asar")).unwrap();
        assert_eq!(plan.program, "zcode");
        assert_eq!(plan.args, ["-e", BRIDGE_SCRIPT]);
        assert!(BRIDGE_SCRIPT.contains("zcodeBuiltinProviderConfigFilePath"));
        let env: HashMap<_, _> = plan.env.iter().cloned().collect();
        assert_eq!(
            env["ZCODE_ACP_HOST_PROVIDER_CONFIG"],
            "/opt/ZCode/resources/config/provider/zcode-builtin.json"
        );
        let protocol: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_PROTOCOL"]).unwrap();
        assert_eq!(
            protocol["serviceChannels"],
            json!({"agent": "zcode-agent", "task": "zcode-task", "modelSelection": "model-selection"})
        );
        assert_eq!(protocol["operations"]["cancelGeneration"]["method"], "stopGeneration");
        let artifact: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_ARTIFACT"]).unwrap();
        assert_eq!(artifact["id"], "zcode-sim-3.12.3");
        assert_eq!(artifact["protocolId"], "zcode-host-3.12");
        assert_eq!(artifact["hostIndexSha256"], simulator::SIM_HOST_INDEX_SHA256);

        let mac = install(
            "/Applications/ZCode.app",
            "/Applications/ZCode.app/Contents/Resources/app.asar",
        );
        let env: HashMap<_, _> = launch_plan(&mac).unwrap().env.into_iter().collect();
        assert_eq!(
            env["ZCODE_ACP_HOST_PROVIDER_CONFIG"],
            "/Applications/ZCode.app/Contents/Resources/config/provider/zcode-builtin.json"
        );
        let windows = install("C:\\ZCode", "C:\\ZCode\\resources\\app.asar");
        let env: HashMap<_, _> = launch_plan(&windows).unwrap().env.into_iter().collect();
        assert_eq!(
            env["ZCODE_ACP_HOST_PROVIDER_CONFIG"],
            "C:\\ZCode\\resources\\config\\provider\\zcode-builtin.json"
        );
    }

    #[test]
    fn refuses_artifacts_of_other_releases() {
        let mut other = install("/opt/ZCode", "/opt/ZCode/resources/app.asar");
        other.artifact_id = "zcode-sim-3.11.2".to_string();
        assert_eq!(
            launch_plan(&other).unwrap_err().message,
            "Artifact zcode-sim-3.11.2 is not part of this mapper's contract"
        );
    }

    #[test]
    fn runs_zcode_login_and_logout() {
        let plan =
            auth_plan(&install("/opt/ZCode", "/opt/ZCode/resources/app.asar"), AuthCommand::Login)
                .unwrap();
        assert_eq!(plan.args, ["/opt/ZCode/resources/glm/zcode.cjs", "login", "--no-browser"]);
        assert_eq!(plan.env, pairs(&[("ELECTRON_RUN_AS_NODE", "1")]));
    }
}
