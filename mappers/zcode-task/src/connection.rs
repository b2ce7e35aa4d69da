//! One host process: framing of its stdout and the connection-level operations (setup, the
//! doctor probe, session listing). Listing checks that a model provider is configured first;
//! how depends on the generation ([`ProviderCheck`]).

use serde_json::{Value, json};
use zcode_contract::{ConnectionOp, ErrorKind, Inbound, MapperError, NativeReply, Outgoing, Step};
use zcode_mapper_sdk::json::{Fields, internal, invalid_params, parse};
use zcode_mapper_sdk::ops::{Pending, done};

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

enum Stage {
    Probe,
    ListInitialize { workspace: String, offset: usize },
    ListProviders { workspace: String, offset: usize },
    List { offset: usize },
}

/// The connection resource of generation `P`.
pub struct Connection<P: ProviderCheck> {
    providers: P,
    framer: Framer,
    pending: Pending<Stage>,
}

impl<P: ProviderCheck + Default> Default for Connection<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: ProviderCheck + Default> Connection<P> {
    pub fn new() -> Self {
        Self { providers: P::default(), framer: Framer::default(), pending: Pending::default() }
    }
}

impl<P: ProviderCheck> Connection<P> {
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.framer.push(bytes)
    }

    pub fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        self.framer.finish()
    }

    pub fn start(&mut self, op_id: u64, op: &ConnectionOp, first_request_id: u64) -> Step {
        if let Err(problem) = self.pending.check_new(op_id) {
            return Step::Done(Err(problem));
        }
        match op {
            ConnectionOp::Setup => done(&json!({}), Vec::new()),
            ConnectionOp::Probe(workspace) => {
                self.send(op_id, first_request_id, Stage::Probe, ops::initialize(workspace))
            }
            ConnectionOp::ListSessions(params) => match list_params(params) {
                Ok((workspace, offset)) => {
                    let outbound = ops::initialize(&workspace);
                    self.send(
                        op_id,
                        first_request_id,
                        Stage::ListInitialize { workspace, offset },
                        outbound,
                    )
                }
                Err(problem) => Step::Done(Err(problem)),
            },
        }
    }

    pub fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Step {
        let next = self.pending.resume(op_id, reply).and_then(|resumed| {
            let Some((reply, label)) = resumed.reply else {
                return Err(internal(format!("Operation {op_id} sent no request")));
            };
            let result = ops::reply_value(reply, &label)?;
            self.advance(op_id, first_request_id, resumed.stage, result)
        });
        next.unwrap_or_else(|problem| Step::Done(Err(problem)))
    }

    fn advance(
        &mut self,
        op_id: u64,
        first_request_id: u64,
        stage: Stage,
        result: Value,
    ) -> Result<Step, MapperError> {
        Ok(match stage {
            Stage::Probe => {
                ops::check_initialized(&result)?;
                done(&result, Vec::new())
            }
            Stage::ListInitialize { workspace, offset } => {
                ops::check_initialized(&result)?;
                let outbound = self.providers.request(&workspace);
                let stage = Stage::ListProviders { workspace, offset };
                self.send(op_id, first_request_id, stage, outbound)
            }
            Stage::ListProviders { workspace, offset } => {
                self.providers.check(&result)?;
                let outbound = ops::list_sessions(&workspace);
                self.send(op_id, first_request_id, Stage::List { offset }, outbound)
            }
            Stage::List { offset } => done(&page(ops::session_infos(&result)?, offset), Vec::new()),
        })
    }

    fn send(&mut self, op_id: u64, request_id: u64, stage: Stage, outbound: Outbound) -> Step {
        let outgoing =
            Outgoing { requests: vec![outbound.into_request(request_id)], ..Outgoing::default() };
        self.pending.wait(op_id, stage, outgoing)
    }
}

/// `session/list` params: the (canonical) workspace and the page offset from the cursor.
fn list_params(params: &str) -> Result<(String, usize), MapperError> {
    let params = parse(params, ErrorKind::InvalidParams, "session/list params")?;
    let fields = Fields::acp(&params, "session/list params")?;
    let workspace = match fields.opt_str("cwd")? {
        Some(cwd) if !cwd.is_empty() => cwd.to_string(),
        _ => return Err(invalid_params("ZCode requires cwd when listing sessions")),
    };
    let offset = match fields.opt_str("cursor")? {
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
