//! `model-selection`: the model catalogue and the resolution of a selection,
//! `getView({selection?})`. The raw view holds provider credentials (ZCode sends them; a client
//! must project them away), so the simulator puts a fake key there for tests to look for.

use serde_json::Value;

use super::{CallResult, RpcError};
use crate::common::catalog;
use crate::services::server::Server;

pub const METHODS: &[&str] = &["getView"];

pub fn call(server: &Server, method: &str, args: &[Option<Value>]) -> Option<CallResult> {
    match method {
        "getView" => Some(get_view(server, args)),
        _ => None,
    }
}

fn get_view(server: &Server, args: &[Option<Value>]) -> CallResult {
    let params = args.first().and_then(Option::as_ref);
    let selection = match params {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => params.get("selection").filter(|value| !value.is_null()),
        Some(_) => return Err(RpcError::new("getView: expected an object argument")),
    };
    if selection.is_some_and(|selection| !selection.is_object()) {
        return Err(RpcError::new("getView: `selection` must be an object"));
    }
    let model = catalog::default_selected_model();
    let preferred = (model, model.default_level());
    Ok(Some(catalog::model_selection_view(server.is_signed_out(), preferred, selection)))
}
