//! The bridge's launch environment: the four `ZCODE_ACP_HOST_*` variables the bridge script
//! reads before doing anything (reference §2.2), and for 3.12.3 the built-in provider config
//! (`ZCODE_ACP_HOST_PROVIDER_CONFIG`) the host needs in `init-local`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::task::profile::Profile;

pub const MISSING: &str = "Missing ZCode host artifact or protocol";
pub const MISSING_PROVIDER_CONFIG: &str =
    "Missing ZCode built-in provider config (ZCODE_ACP_HOST_PROVIDER_CONFIG)";
const MODEL_SELECTION_SERVICE: &str = "modelSelection";

/// What the bridge needs from its environment.
#[derive(Debug)]
pub struct BridgeEnv {
    /// Service name (`agent`, `task`) → host channel name (`zcode-agent`, `zcode-task`).
    pub service_channels: BTreeMap<String, String>,
    /// `(service, method)` pairs named by the protocol descriptor's operations.
    pub operations: Vec<(String, String)>,
}

impl BridgeEnv {
    /// Reads the environment like the bridge script of `profile`'s release: every variable
    /// must be present, the descriptors must be JSON, and the host files must exist to be
    /// imported.
    pub fn from_env(profile: &Profile) -> Result<BridgeEnv, String> {
        let read = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let (Some(index), Some(rpc), Some(artifact), Some(protocol)) = (
            read("ZCODE_ACP_HOST_INDEX"),
            read("ZCODE_ACP_HOST_RPC_MODULE"),
            read("ZCODE_ACP_HOST_ARTIFACT"),
            read("ZCODE_ACP_HOST_PROTOCOL"),
        ) else {
            return Err(MISSING.to_owned());
        };
        serde_json::from_str::<Value>(&artifact)
            .map_err(|error| format!("ZCODE_ACP_HOST_ARTIFACT is not JSON: {error}"))?;
        let protocol: Value = serde_json::from_str(&protocol)
            .map_err(|error| format!("ZCODE_ACP_HOST_PROTOCOL is not JSON: {error}"))?;
        let (service_channels, operations) = parse_protocol(&protocol)?;
        let needs_model_selection = !profile.bridge_model_selection_methods.is_empty();
        if needs_model_selection && !service_channels.contains_key(MODEL_SELECTION_SERVICE) {
            return Err("Invalid ZCode host protocol: serviceChannels must map service names \
                        (including agent and modelSelection) to channels"
                .to_owned());
        }
        if profile.needs_provider_config {
            check_provider_config(read("ZCODE_ACP_HOST_PROVIDER_CONFIG"))?;
        }
        for path in [&index, &rpc] {
            if !std::path::Path::new(path).is_file() {
                return Err(format!("Cannot find module '{path}'"));
            }
        }
        Ok(BridgeEnv { service_channels, operations })
    }
}

/// The bridge checks that the provider config is a file; the host, which reads it at
/// `init-local`, cannot start without a JSON object in it.
fn check_provider_config(path: Option<String>) -> Result<(), String> {
    let path = path.ok_or(MISSING_PROVIDER_CONFIG)?;
    if !std::path::Path::new(&path).is_file() {
        return Err(format!("ZCode built-in provider config is not a file: {path}"));
    }
    let text = std::fs::read_to_string(&path).map_err(|error| {
        format!("ZCode host worker failed: cannot read the built-in provider config: {error}")
    })?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(_)) => Ok(()),
        _ => Err("ZCode host worker failed: the built-in provider config is not a JSON object"
            .to_owned()),
    }
}

type Protocol = (BTreeMap<String, String>, Vec<(String, String)>);

/// `{serviceChannels: {name: channel}, operations: {op: {method, service, ...}}}`.
pub fn parse_protocol(protocol: &Value) -> Result<Protocol, String> {
    let channels = protocol
        .get("serviceChannels")
        .and_then(Value::as_object)
        .ok_or("ZCODE_ACP_HOST_PROTOCOL has no serviceChannels object")?;
    let mut service_channels = BTreeMap::new();
    for (service, channel) in channels {
        let channel = channel.as_str().ok_or("serviceChannels values must be strings")?;
        service_channels.insert(service.clone(), channel.to_owned());
    }
    let operations = protocol
        .get("operations")
        .and_then(Value::as_object)
        .ok_or("ZCODE_ACP_HOST_PROTOCOL has no operations object")?
        .values()
        .map(|operation| {
            let field = |key: &str| operation.get(key).and_then(Value::as_str).map(str::to_owned);
            match (field("service"), field("method")) {
                (Some(service), Some(method)) => Ok((service, method)),
                _ => Err("each protocol operation needs string service and method".to_owned()),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((service_channels, operations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_channels_and_operations() {
        let (channels, operations) = parse_protocol(&json!({
            "id": "zcode-task-v1",
            "serviceChannels": {"agent": "zcode-agent", "task": "zcode-task"},
            "operations": {"cancelGeneration": {"method": "stopGeneration", "service": "task", "sessionParameter": "taskId"}},
        }))
        .unwrap();
        assert_eq!(channels["task"], "zcode-task");
        assert_eq!(operations, vec![("task".to_owned(), "stopGeneration".to_owned())]);
    }

    #[test]
    fn rejects_descriptors_without_channels_or_operations() {
        assert!(parse_protocol(&json!({"operations": {}})).is_err());
        assert!(parse_protocol(&json!({"serviceChannels": {}})).is_err());
        assert!(
            parse_protocol(&json!({"serviceChannels": {}, "operations": {"x": {"method": 1}}}))
                .is_err()
        );
    }
}
