//! `readWorkspaceState`: how ZCode 3.11.2 tells whether a model provider is configured.

use serde_json::{Value, json};
use zcode_mapper_sdk::contract::{ErrorKind, MapperError};
use zcode_mapper_sdk::json::{Fields, error};
use zcode_task::connection::ProviderCheck;
use zcode_task::envelope::Service;
use zcode_task::ops::{Outbound, validation_failed};

pub fn read(workspace: &str) -> Outbound {
    Outbound::long_call(Service::AGENT, "readWorkspaceState", json!({"workspacePath": workspace}))
}

/// `readWorkspaceState`: at least one model provider must be configured.
pub fn check(result: &Value) -> Result<(), MapperError> {
    let fields = Fields::native(result, "readWorkspaceState result")
        .map_err(|e| validation_failed("readWorkspaceState", &e))?;
    let providers = fields
        .opt_object("modelCatalog", "modelCatalog")
        .and_then(|catalog| catalog.map(|c| c.opt_array("providers")).transpose())
        .map_err(|e| validation_failed("readWorkspaceState", &e))?
        .flatten();
    match providers {
        Some(providers) if !providers.is_empty() => Ok(()),
        _ => Err(error(
            ErrorKind::AuthRequired,
            "No usable ZCode model provider is configured. Run zcode-acp login, then retry.",
        )),
    }
}

/// The connection's provider check before listing sessions.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkspaceState;

impl ProviderCheck for WorkspaceState {
    fn request(&self, workspace: &str) -> Outbound {
        read(workspace)
    }

    fn check(&self, result: &Value) -> Result<(), MapperError> {
        check(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requires_a_model_provider() {
        assert!(check(&json!({"modelCatalog": {"providers": [{}]}})).is_ok());
        for state in
            [json!({}), json!({"modelCatalog": {"providers": []}}), json!({"modelCatalog": {}})]
        {
            let error = check(&state).unwrap_err();
            assert_eq!(error.kind, ErrorKind::AuthRequired);
            assert_eq!(
                error.message,
                "No usable ZCode model provider is configured. Run zcode-acp login, then retry."
            );
        }
    }

    #[test]
    fn reads_the_workspace_state_with_the_long_timeout() {
        let request = read("/w").into_request(3);
        assert_eq!(
            (request.label.as_str(), request.timeout_ms),
            ("agent.readWorkspaceState", 60_000)
        );
    }
}
