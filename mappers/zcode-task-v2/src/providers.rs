//! How a ZCode 3.12.3 connection tells, before listing sessions, that a model provider is
//! configured: the catalogue has at least one model.

use serde_json::Value;
use zcode_mapper_sdk::contract::MapperError;
use zcode_task::connection::ProviderCheck;
use zcode_task::ops::Outbound;

use crate::catalogue::{self, View};

#[derive(Clone, Copy, Debug, Default)]
pub struct Catalogue;

impl ProviderCheck for Catalogue {
    fn request(&self, _workspace: &str) -> Outbound {
        catalogue::get_view(None)
    }

    fn check(&self, result: &Value) -> Result<(), MapperError> {
        View::parse(result)?.require_models()
    }
}
