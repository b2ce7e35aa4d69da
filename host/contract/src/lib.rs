//! The mapper contract as plain Rust.
//!
//! `wit/mapper.wit` is the contract between the core and a mapper. The mapper runtime turns the
//! WIT values into these types so that discovery, the host bridge and the session coordinator
//! never depend on wasmtime, and so that tests can drive them with hand-written mappers.
//! Field meanings are documented once, in the WIT file.

mod platform;

/// The golden-trace replayer (`docs/golden-traces.md`).
#[cfg(feature = "golden")]
pub mod golden;

pub use platform::{Os, Platform};

use serde::{Deserialize, Serialize};

// ----- identity and compatibility contract ---------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    pub os: Os,
    pub executable: String,
    pub cli_entry: String,
    pub metadata: String,
    pub host_archive: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCheck {
    pub role: String,
    pub path: String,
    pub sha256: String,
    pub required_exports: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub id: String,
    pub app_version: String,
    pub cli_version: String,
    pub cli_sha256: String,
    pub files: Vec<FileCheck>,
    pub simulated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionProbe {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    pub protocol_id: String,
    pub description: String,
    pub layouts: Vec<Layout>,
    pub metadata: Vec<(String, String)>,
    pub metadata_platform_key: String,
    pub metadata_entry_key: String,
    pub artifacts: Vec<Artifact>,
    pub cli_version_probe: VersionProbe,
    pub credentials_file: String,
}

impl Contract {
    pub fn layout(&self, os: Os) -> Option<&Layout> {
        self.layouts.iter().find(|l| l.os == os)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifiedInstall {
    pub install_root: String,
    pub executable: String,
    pub cli_entry: String,
    pub host_archive: String,
    pub artifact_id: String,
    pub app_version: String,
    pub cli_version: String,
    pub files: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchPlan {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: String,
    pub stdin_preamble: Vec<u8>,
    pub needs_handshake: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthCommand {
    Login,
    Logout,
}

// ----- errors --------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    InvalidParams,
    AuthRequired,
    NotFound,
    Unsupported,
    Protocol,
    Native,
    Internal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct MapperError {
    pub kind: ErrorKind,
    pub message: String,
    /// JSON object text with non-secret details.
    pub data: Option<String>,
}

impl MapperError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), data: None }
    }
}

// ----- native traffic ------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeRequest {
    pub id: u64,
    pub bytes: Vec<u8>,
    pub label: String,
    pub timeout_ms: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyBody {
    Ok(String),
    Error(MapperError),
    Lost(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeReply {
    pub id: u64,
    pub body: ReplyBody,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inbound {
    Reply(NativeReply),
    Event(RoutedEvent),
    Write(Vec<u8>),
    Ready,
    Ignored(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedEvent {
    pub route: String,
    pub payload: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    Wait(Outgoing),
    Done(Result<OpResult, MapperError>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    pub routes_added: Vec<String>,
    pub routes_removed: Vec<String>,
    pub requests: Vec<NativeRequest>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpResult {
    pub response: String,
    pub updates: Vec<String>,
}

// ----- operations ----------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientFeatures {
    pub plan_operations: bool,
    pub form_elicitation: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInit {
    pub workspace: String,
    pub client: ClientFeatures,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionOp {
    Setup,
    Probe(String),
    ListSessions(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionOp {
    Create(String),
    Load(String),
    Resume(String),
    Prompt(String),
    Cancel,
    FinishTurn,
    SetMode(String),
    SetConfigOption(String),
    Answer(InteractionAnswer),
    Close,
}

impl SessionOp {
    /// Name for logs; never includes parameters (they may hold user data).
    pub fn name(&self) -> &'static str {
        match self {
            SessionOp::Create(_) => "create",
            SessionOp::Load(_) => "load",
            SessionOp::Resume(_) => "resume",
            SessionOp::Prompt(_) => "prompt",
            SessionOp::Cancel => "cancel",
            SessionOp::FinishTurn => "finish-turn",
            SessionOp::SetMode(_) => "set-mode",
            SessionOp::SetConfigOption(_) => "set-config-option",
            SessionOp::Answer(_) => "answer",
            SessionOp::Close => "close",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractionAnswer {
    pub key: String,
    pub outcome: InteractionOutcome,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InteractionOutcome {
    Selected(String),
    Elicited(String),
    Unavailable(String),
}

// ----- actions -------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Update(String),
    Interaction(Interaction),
    Terminal(Terminal),
    Ignore(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interaction {
    pub key: String,
    pub request: InteractionRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InteractionRequest {
    Permission(PermissionRequest),
    Elicitation(String),
    Headless(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub request: String,
    pub deny_option: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Terminal {
    Stop(StopReason),
    Failed(MapperError),
    Broken(MapperError),
}

// ----- how the core drives a mapper ----------------------------------------------------------

/// One loaded mapper: its contract and factories for connection and session state.
/// Implemented by the WASM runtime (and by test doubles).
pub trait Mapper: Send + Sync {
    /// Where the mapper came from (embedded, or a file path), for reports.
    fn source(&self) -> &str;
    fn contract(&self) -> &Contract;
    fn launch_plan(&self, install: &VerifiedInstall) -> Result<LaunchPlan, MapperError>;
    fn auth_plan(
        &self,
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError>;
    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault>;
    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault>;
}

/// Framing and connection-level operations of one host process. An error from `push` or
/// `finish` (a framing error or a mapper fault) fails the transport closed.
pub trait MapperConnection: Send {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError>;
    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError>;
    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault>;
    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault>;
}

/// Mapping state of one native session. A `MapperFault` means the mapper itself failed (trap,
/// resource cap, invalid output): the session is unusable afterwards.
pub trait MapperSession: Send {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault>;
    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault>;
    /// A mapper-error returned by the guest arrives here as a `Terminal::Broken` action: for
    /// the coordinator an event the mapper cannot translate is a broken stream.
    fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperFault>;
}

/// The mapper itself failed: it trapped, hit a resource cap, or returned output the core
/// refuses. Whatever used that mapper instance is failed; the process carries on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("mapper failed: {0}")]
pub struct MapperFault(pub String);

impl From<MapperFault> for MapperError {
    fn from(fault: MapperFault) -> Self {
        MapperError::new(ErrorKind::Internal, fault.to_string())
    }
}
