//! The `model-selection` channel (3.12.3): the model catalogue and the resolution of a
//! selection, `getView({selection?})`. Its raw result holds provider credentials; the bridge
//! projects it before anything leaves (see `bridge::projection`).

use serde_json::Value;

use super::params::Params;
use super::{Host, agent};
use crate::common::catalog;

pub fn call(host: &Host, method: &str, params: &Params) -> Result<Value, String> {
    match method {
        "getView" => get_view(host, params),
        other => Err(format!("Method not found: {other}")),
    }
}

/// The preferred selection is the last one used in the workspace, if a workspace is named.
fn get_view(host: &Host, params: &Params) -> Result<Value, String> {
    let selection = params.get("selection");
    if selection.is_some_and(|selection| !selection.is_object()) {
        return Err("getView: `selection` must be an object".into());
    }
    let preferred = match params.optional_string("workspacePath")? {
        Some(workspace) => agent::selected_defaults(host, workspace),
        None => {
            let model = catalog::default_selected_model();
            (model, model.default_level().to_owned())
        }
    };
    let (model, level) = preferred;
    Ok(catalog::model_selection_view(host.options.signed_out, (model, &level), selection))
}
