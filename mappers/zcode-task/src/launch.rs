//! How a task-protocol host is started: ZCode's Electron executable run as Node with the bridge
//! script as `-e`, cwd the install root, and the environment the script reads — the host files
//! the core verified, the release descriptor (whose hashes the script checks again before it
//! imports anything) and the protocol descriptor (service channels and the task operations the
//! script allowlists).

use serde_json::{Map, Value, json};
use zcode_mapper_sdk::contract::{LaunchPlan, MapperError, VerifiedInstall};

use crate::bridge;
use crate::install::{HOST_INDEX_PATH, HOST_INDEX_ROLE, HOST_RPC_ROLE, HostRelease, file_for_role};

/// What a generation's bridge is started with, besides the verified release.
pub struct Bridge<'a> {
    pub protocol_id: &'a str,
    /// The generation's release file (`bridge/release.js`), put in front of the core.
    pub release_script: &'a str,
    /// `serviceChannels`: bridge service name → host channel.
    pub service_channels: &'a [(&'a str, &'a str)],
    /// Further variables of the generation.
    pub env: Vec<(String, String)>,
}

/// `ZCODE_ACP_HOST_ARTIFACT`: the identity of the files the bridge imports.
pub fn release_descriptor(release: &HostRelease, protocol_id: &str) -> Value {
    let [protocol, client, service] = release.rpc_exports;
    json!({
        "id": release.id,
        "appVersion": release.app_version,
        "cliVersion": release.cli_version,
        "cliSha256": release.cli,
        "protocolId": protocol_id,
        "hostIndexRelativePath": HOST_INDEX_PATH,
        "hostRpcModuleRelativePath": release.rpc_path,
        "hostIndexSha256": release.index,
        "hostRpcModuleSha256": release.rpc,
        "rpcExports": {"protocol": protocol, "client": client, "service": service},
    })
}

/// `ZCODE_ACP_HOST_PROTOCOL`: service channels and the task operations the bridge allowlists
/// (the agent methods are fixed in the script itself).
pub fn protocol_descriptor(protocol_id: &str, service_channels: &[(&str, &str)]) -> Value {
    let operation =
        |method: &str| json!({"method": method, "service": "task", "sessionParameter": "taskId"});
    let channels: Map<String, Value> =
        service_channels.iter().map(|(name, channel)| (name.to_string(), json!(channel))).collect();
    json!({
        "id": protocol_id,
        "serviceChannels": channels,
        "operations": {
            "cancelGeneration": operation("stopGeneration"),
            "respondStructuredInput": operation("respondElicitation"),
            "respondPermission": operation("respondPermission"),
        },
    })
}

pub fn plan(
    install: &VerifiedInstall,
    release: &HostRelease,
    bridge: Bridge<'_>,
) -> Result<LaunchPlan, MapperError> {
    let mut env = vec![
        ("ELECTRON_RUN_AS_NODE".to_string(), "1".to_string()),
        ("ZCODE_ACP_HOST_INDEX".to_string(), file_for_role(install, HOST_INDEX_ROLE)?.to_string()),
        (
            "ZCODE_ACP_HOST_RPC_MODULE".to_string(),
            file_for_role(install, HOST_RPC_ROLE)?.to_string(),
        ),
        (
            "ZCODE_ACP_HOST_ARTIFACT".to_string(),
            release_descriptor(release, bridge.protocol_id).to_string(),
        ),
        (
            "ZCODE_ACP_HOST_PROTOCOL".to_string(),
            protocol_descriptor(bridge.protocol_id, bridge.service_channels).to_string(),
        ),
    ];
    env.extend(bridge.env);
    Ok(LaunchPlan {
        args: vec!["-e".to_string(), bridge::script(bridge.release_script)],
        env,
        cwd: install.install_root.clone(),
        ..LaunchPlan::default()
    })
}
