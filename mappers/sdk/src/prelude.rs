//! What most mapper files use, in one import: `use zcode_mapper_sdk::prelude::*;`. The
//! contract's values and errors (with the types of `Mapper::contract` and `launch_plan`), JSON
//! readers, the step machine, the ACP readers and update builders, and `serde_json`'s `Value`
//! and `json!`. The traits a mapper implements are named where they are implemented (`impl
//! zcode_mapper_sdk::Session for ...`), so a mapper's own `Session` or `Connection` type never
//! meets them here.

pub use serde_json::{Value, json};

pub use crate::acp::params::{ConfigChange, ListParams, OpenKind, SessionParams};
pub use crate::acp::prompt::Block;
pub use crate::acp::update;
pub use crate::contract::{
    Action, ConnectionOp, Contract, ErrorKind, Inbound, InteractionAnswer, InteractionOutcome,
    LaunchPlan, MapperError, NativeData, NativeReply, NativeRequest, NativeWrite, Outgoing,
    ReplyBody, RoutedEvent, SecretFill, SessionInit, Step, StopReason, Terminal, VerifiedInstall,
};
pub use crate::json::{Fields, error, internal, invalid_params, parse, protocol};
pub use crate::mapping::{Mapped, Request};
pub use crate::ops::{Next, Pending, Reply, reply_json, reply_value, sends};
