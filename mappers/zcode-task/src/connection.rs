//! One host process: framing of its stdout and the connection-level operations (setup, the
//! doctor probe, session listing). Listing checks that a model provider is configured first;
//! how depends on the generation ([`ProviderCheck`]).

use serde_json::{Value, json};
use zcode_mapper_sdk::Link;
use zcode_mapper_sdk::acp::params::ListParams;
use zcode_mapper_sdk::contract::{Inbound, MapperError, NativeReply};
use zcode_mapper_sdk::json::{internal, invalid_params};
use zcode_mapper_sdk::ops::Next;

use crate::envelope::Framer;
use crate::ops::{self, Outbound};

/// How a generation checks, before listing sessions, that a model provider is configured.
pub trait ProviderCheck {
    /// The request whose result tells.
    fn request(&self, workspace: &str) -> Outbound;
    /// Ok when a provider is configured; `auth-required` when not.
    fn check(&self, result: &Value) -> Result<(), MapperError>;
}

/// Sessions per `session/list` page.
pub const PAGE_SIZE: usize = 50;
const CURSOR_PREFIX: &str = "zcode-sessions-from-";

pub enum Stage {
    Probe,
    ListInitialize { workspace: String, offset: usize },
    ListProviders { workspace: String, offset: usize },
    List { offset: usize },
}

/// The connection resource of generation `P`.
#[derive(Default)]
pub struct Connection<P: ProviderCheck> {
    providers: P,
    framer: Framer,
}

impl<P: ProviderCheck + 'static> Link for Connection<P> {
    type Stage = Stage;

    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.framer.push(bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        self.framer.finish()
    }

    fn probe(&mut self, workspace: &str, id: u64) -> Result<Next<Stage>, MapperError> {
        Ok(ops::initialize(workspace).send(Stage::Probe, id))
    }

    fn list_sessions(&mut self, params: ListParams, id: u64) -> Result<Next<Stage>, MapperError> {
        let (workspace, offset) = list_params(params)?;
        Ok(ops::initialize(&workspace).send(Stage::ListInitialize { workspace, offset }, id))
    }

    fn resume(
        &mut self,
        stage: Stage,
        reply: Option<(&NativeReply, &str)>,
        id: u64,
    ) -> Result<Next<Stage>, MapperError> {
        let (reply, label) =
            reply.ok_or_else(|| internal("A connection operation sent no request"))?;
        let result = ops::reply_value(reply, label)?;
        Ok(match stage {
            Stage::Probe => {
                ops::check_initialized(&result)?;
                Next::done(&result)
            }
            Stage::ListInitialize { workspace, offset } => {
                ops::check_initialized(&result)?;
                let outbound = self.providers.request(&workspace);
                outbound.send(Stage::ListProviders { workspace, offset }, id)
            }
            Stage::ListProviders { workspace, offset } => {
                self.providers.check(&result)?;
                ops::list_sessions(&workspace).send(Stage::List { offset }, id)
            }
            Stage::List { offset } => Next::done(&page(ops::session_infos(&result)?, offset)),
        })
    }
}

/// `session/list` params: the (canonical) workspace and the page offset from the cursor.
fn list_params(params: ListParams) -> Result<(String, usize), MapperError> {
    let workspace = match params.cwd {
        Some(cwd) if !cwd.is_empty() => cwd,
        _ => return Err(invalid_params("ZCode requires cwd when listing sessions")),
    };
    let offset = match params.cursor.as_deref() {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|offset| offset.parse::<usize>().ok())
            .filter(|offset| *offset > 0 && offset.is_multiple_of(PAGE_SIZE))
            .ok_or_else(|| invalid_params(format!("Unknown session list cursor: {cursor}")))?,
    };
    Ok((workspace, offset))
}

/// One page of sessions, with a cursor when more follow.
fn page(sessions: Vec<Value>, offset: usize) -> Value {
    let total = sessions.len();
    let page: Vec<Value> = sessions.into_iter().skip(offset).take(PAGE_SIZE).collect();
    let mut response = json!({"sessions": page});
    if offset + PAGE_SIZE < total {
        response["nextCursor"] = json!(format!("{CURSOR_PREFIX}{}", offset + PAGE_SIZE));
    }
    response
}
