//! The zcode-acp mapper SDK: what every mapper needs, whatever native protocol it maps. The SDK
//! owns the ACP side and the mechanics; a mapper speaks its host's protocol only.
//!
//! A mapper crate implements [`Mapper`] (its contract and launch plan; the rest defaults) with
//! a [`Link`] (framing and connection operations) and a [`Session`] (session operations and
//! events), then registers it once:
//!
//! ```text
//! zcode_mapper_sdk::register_mapper!(pub struct EchoMapper(crate::Echo), source: "native:echo-v1");
//! ```
//!
//! (doc comments on the struct may go first), which exports it as the `zcode:mapper@0.4.0`
//! component (wasm32 only, [`export_mapper!`]) and declares the same logic natively as a
//! `contract::Mapper` ([`native_mapper!`]) for tests, golden traces, benchmarks and fuzzing. A
//! mapper that drives the contract itself (a session that maps whole batches) implements
//! [`Definition`], [`Connection`] and [`SessionMachine`].
//!
//! The ACP side ([`acp`]): typed readers of session parameters, prompt blocks, modes and config
//! changes; builders of every session update, written as JSON text; the prompt turn;
//! permission options; questions as a form and the answer decoded; plan approval and todo lists.
//!
//! The mechanics: operations as step machines, started with their parameters read and resumed
//! with checked replies ([`Linked`], [`Mapping`], [`ops`]); batch mapping, where an input that
//! fails becomes a `terminal(broken)` action and mapping goes on, and requests a session makes
//! while mapping, issued with the ids the core hands out and their replies routed back by tag
//! ([`mapping`]); framers for lines and length-prefixed frames ([`framing`]); long strings of a
//! long line elided as it arrives, keeping what checks them ([`elide`]); a large event handed
//! from the connection to its session in pieces as it arrives ([`pieces`]); numbered events
//! recovered in order ([`sequence`]); writes carrying a credential the core fills in
//! ([`secret`]); strict JSON readers ([`json`]); JSON as `JSON.stringify` writes it, read
//! without serde for the events that come by the thousand ([`compact`]); contract values ([`install`]); how a tool
//! call looks ([`tool_view`]); and helpers for a sandbox without clock or randomness
//! ([`time`], [`ids`], [`uri`], [`media`]). The contract's types are re-exported as
//! [`contract`], so a mapper depends on this crate only; [`prelude`] imports what most mapper
//! files use. Test support: [`acp_check`] (feature `acp-check`), `heap_count` (feature
//! `heap-count`), `compact::edit` (feature `json-edits`) and [`component_check`].
//!
//! Everything here runs without clock, randomness, filesystem or environment, like the guests:
//! hence `BTreeMap` (std's `HashMap` seeds its hasher from `wasi:random`).

pub mod acp;
pub mod compact;
pub mod component_check;
pub mod elide;
pub mod framing;
pub mod guest;
pub mod ids;
pub mod install;
pub mod joined;
pub mod json;
pub mod link;
pub mod log;
pub mod mapping;
pub mod media;
pub mod memcmp;
pub mod native;
pub mod ops;
pub mod pieces;
pub mod prelude;
pub mod secret;
pub mod sequence;
pub mod text;
pub mod time;
pub mod tool_view;
pub mod uri;

#[cfg(any(test, feature = "acp-check"))]
pub mod acp_check;
#[cfg(feature = "heap-count")]
pub mod heap_count;

/// The plan proposal and todo list views (moved to [`acp::plan`]).
pub use acp::plan;
pub use zcode_contract as contract;

use zcode_contract::{
    AuthCommand, ConnectionOp, Contract, Effects, ErrorKind, Inbound, InteractionAnswer,
    LaunchPlan, MapperError, NativeData, NativeReply, Outgoing, SessionInit, SessionInput,
    SessionOp, Step, VerifiedInstall,
};

use acp::params::{ConfigChange, ListParams, SessionParams};
use acp::prompt::Block;
pub use link::Linked;
pub use mapping::{Mapped, Mapping, Request};
pub use ops::Next;

/// Every guest allocates per event, in its linear memory: talc does it faster there than
/// wasi-libc's dlmalloc (a mapped event took 7 % less CPU, issue 27's eighteenth session in
/// `docs/performance.md`). Native builds keep the system allocator.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// A mapper, as most mappers are written: its contract and launch plan, a [`Link`] made with
/// `Default` (driven by [`Linked`]), and a per-event [`Session`] made from the session's init
/// (driven by [`Mapping`]).
/// Every `Mapper` is a [`Definition`]; register it with [`register_mapper!`].
pub trait Mapper: 'static {
    /// Protocol id, for logs (a panic message names it).
    const NAME: &'static str;
    type Connection: Link + Default;
    type Session: Session;

    /// Identity and compatibility contract (pure; the core caches it).
    fn contract() -> Contract;
    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError>;
    /// The host's own login or logout. Default: the host has none.
    fn auth_plan(
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        no_login(Self::NAME, install, command)
    }
}

/// The `auth_plan` of a host without a login of its own: `unsupported`.
pub fn no_login(
    name: &str,
    _install: &VerifiedInstall,
    _command: AuthCommand,
) -> Result<LaunchPlan, MapperError> {
    Err(MapperError::new(ErrorKind::Unsupported, format!("The {name} host has no login")))
}

impl<M: Mapper> Definition for M {
    const NAME: &'static str = M::NAME;
    type Connection = Linked<M::Connection>;
    type Session = Mapping<M::Session>;

    fn contract() -> Contract {
        M::contract()
    }

    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        M::launch_plan(install)
    }

    fn auth_plan(
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        M::auth_plan(install, command)
    }

    fn connection() -> Linked<M::Connection> {
        Linked::new(M::Connection::default())
    }

    fn session(init: &SessionInit) -> Mapping<M::Session> {
        Mapping::new(M::Session::new(init))
    }
}

/// Exports a [`Definition`] as the component and declares it natively, in one go:
/// [`export_mapper!`] and [`native_mapper!`] together.
#[macro_export]
macro_rules! register_mapper {
    (
        $(#[$meta:meta])*
        $vis:vis struct $mapper:ident($definition:ty), source: $source:literal $(;)?
    ) => {
        $crate::export_mapper!($definition);
        $crate::native_mapper! {
            $(#[$meta])*
            $vis struct $mapper($definition), source: $source;
        }
    };
}

/// A mapper with every part explicit: what it accepts, how it starts the host, and the state it
/// keeps, with a session that may map whole batches ([`SessionMachine`]). Most mappers
/// implement [`Mapper`] instead, which is one.
pub trait Definition: 'static {
    /// Protocol id, for logs (a panic message names it).
    const NAME: &'static str;
    type Connection: Connection;
    /// A session's state machine: [`Mapping`] over a per-event [`Session`], or a type of the
    /// mapper's own that maps whole batches.
    type Session: SessionMachine;

    /// Identity and compatibility contract (pure; the core caches it).
    fn contract() -> Contract;
    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError>;
    /// The host's own login or logout. Default: the host has none.
    fn auth_plan(
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        no_login(Self::NAME, install, command)
    }
    fn connection() -> Self::Connection;
    fn session(init: &SessionInit) -> Self::Session;
}

/// Framing and connection-level operations of one host process.
pub trait Connection: 'static {
    /// Host output → what it means. An error fails the transport closed.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError>;
    /// End of host output.
    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError>;
    fn start(&mut self, op_id: u64, op: &ConnectionOp, first_request_id: u64) -> Step;
    /// `reply` is `None` after a step that awaited no reply.
    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step;
    /// What the host reported about itself at setup (compared with the release's `identity`).
    fn identity(&self) -> Option<String> {
        None
    }
}

/// One host process as most mappers write it: framing, and the connection operations one at
/// a time. [`Linked`] drives it as a [`Connection`]: it reads the ACP parameters, keeps each
/// waiting operation's stage and checks every resume against it. `id` is the id the
/// operation's first request must use.
pub trait Link: 'static {
    /// Where a waiting operation is.
    type Stage: 'static;

    /// Host output → what it means. An error fails the transport closed.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError>;
    /// End of host output.
    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError>;
    /// What the host reported about itself at setup (compared with the release's `identity`).
    fn identity(&self) -> Option<String> {
        None
    }

    /// Run once after the handshake. Default: nothing to do.
    fn setup(&mut self, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        let _ = id;
        Ok(Next::finished())
    }
    /// The doctor's health probe: can the host serve `workspace`?
    fn probe(&mut self, workspace: &str, id: u64) -> Result<Next<Self::Stage>, MapperError>;
    /// `session/list`. Default: the host cannot list sessions.
    fn list_sessions(
        &mut self,
        params: ListParams,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError> {
        let _ = (params, id);
        Err(MapperError::new(ErrorKind::Unsupported, "This host cannot list sessions"))
    }
    /// Continues an operation waiting in `stage` with the reply it waited for and that
    /// request's label (`None` after a step that waited for nothing).
    fn resume(
        &mut self,
        stage: Self::Stage,
        reply: ops::Reply,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError>;
}

/// One native session, as most mappers write it: an operation at a time, an event at a time.
/// [`Mapping`] drives it through the contract: it parses each ACP request into typed
/// parameters, keeps each waiting operation's stage ([`ops::Pending`]) and checks every resume
/// against it, maps batches input by input, and issues the requests mapping makes.
///
/// Operations return what they do next ([`Next`]): wait in a stage for what they sent, or finish.
/// `id` is the id the operation's first request must use (then `id + 1`, ...). The operations a
/// host may lack default to a clear refusal.
pub trait Session: 'static {
    /// What the session remembers about a request it makes while mapping, to know what the
    /// reply answers (`()` for a session that makes none).
    type Tag: 'static;
    /// Where a waiting operation is.
    type Stage: 'static;

    /// The state of a new session.
    fn new(init: &SessionInit) -> Self
    where
        Self: Sized;

    /// `session/new`, `session/load` or `session/resume` (`params.kind` says which).
    fn open(&mut self, params: SessionParams, id: u64) -> Result<Next<Self::Stage>, MapperError>;
    /// `session/fork` (`params.session_id` is the parent): makes the native fork and is done
    /// with `{"sessionId": <new>}`; the core then loads the new session with `open`. Default:
    /// this host cannot fork, and the contract offers no `session/fork` (the core refuses it
    /// before it gets here).
    fn fork(&mut self, params: SessionParams, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        let _ = (params, id);
        Err(MapperError::new(ErrorKind::Unsupported, "This ZCode release cannot fork sessions"))
    }
    /// `session/prompt`: done when the host took the input; the turn ends with a terminal.
    fn prompt(&mut self, prompt: Vec<Block>, id: u64) -> Result<Next<Self::Stage>, MapperError>;
    /// Asks the host to stop the running turn.
    fn cancel(&mut self, id: u64) -> Result<Next<Self::Stage>, MapperError>;
    /// After the turn's terminal: the final usage (an ACP `Usage`). Default: `{}`.
    fn finish_turn(&mut self, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        let _ = id;
        Ok(Next::finished())
    }
    /// `session/set_mode`. Default: the host has no modes.
    fn set_mode(&mut self, mode_id: String, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        let _ = (mode_id, id);
        Err(MapperError::new(ErrorKind::Unsupported, "This host has no session modes"))
    }
    /// `session/set_config_option`. Default: the host has no config options.
    fn set_config_option(
        &mut self,
        change: ConfigChange,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError> {
        let _ = id;
        Err(json::invalid_params(format!("Unknown config option: {}", change.config_id)))
    }
    /// The core's answer to an interaction the session raised. Default: it raised none.
    fn answer(
        &mut self,
        answer: &InteractionAnswer,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError> {
        let _ = id;
        Err(json::internal(format!("Unknown or already answered interaction: {}", answer.key)))
    }
    /// Unsubscribes and releases the native session.
    fn close(&mut self, id: u64) -> Result<Next<Self::Stage>, MapperError>;
    /// Continues an operation waiting in `stage` with the reply it waited for and that
    /// request's label (`None` after a step that waited for nothing).
    fn resume(
        &mut self,
        stage: Self::Stage,
        reply: ops::Reply,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError>;

    /// Maps one native event. An error is a broken stream ([`mapping`] turns it into a
    /// `terminal(broken)` action); nothing may be dropped silently.
    fn map_event(&mut self, event: &NativeData) -> Result<Mapped<Self::Tag>, MapperError>;
    /// Maps the reply to a request made by [`Session::map_event`] (or an earlier reply).
    fn map_reply(
        &mut self,
        tag: Self::Tag,
        reply: &NativeReply,
    ) -> Result<Mapped<Self::Tag>, MapperError> {
        let _ = tag;
        Err(json::internal(format!("Reply {} answers no request of this session", reply.id)))
    }
}

/// A session as the contract drives it: operations, and batches of input with the requests they
/// announce. [`Mapping`] is one for any per-event [`Session`] (most mappers want that: it turns
/// a failed input into a `terminal(broken)` action and routes replies by tag); a mapper that
/// must see a batch whole (to coalesce or reorder within it) implements this itself.
pub trait SessionMachine: 'static {
    fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step;
    /// `reply` is `None` after a step that awaited no reply.
    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step;
    /// Maps a batch in arrival order; input it cannot map is a `terminal(broken)` action.
    fn map(&mut self, inputs: &[SessionInput]) -> Effects;
    /// The requests the last `map` announced, exactly that many, with ids from
    /// `first_request_id`.
    fn issue(&mut self, first_request_id: u64) -> Outgoing;
}
