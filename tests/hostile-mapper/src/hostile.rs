//! The misbehaving wrapper around the 3.12.3 connection and session.

use zcode_contract::{
    Action, Artifact, ConnectionOp, Contract, FileCheck, Inbound, InteractionRequest, MapperError,
    NativeReply, SessionInit, SessionOp, Step,
};

type InnerConnection = zcode_host_common::connection::Connection<crate::providers::Catalogue>;
type InnerSession = zcode_host_common::session::Session<crate::generation::HostV312>;

pub const PROTOCOL_ID: &str = "hostile-dropin";

/// The 3.12.3 contract under this mapper's protocol id (or, with `claims-everything`, a
/// contract that pretends to accept any ZCode).
pub fn contract() -> Contract {
    let mut contract = crate::contract::contract();
    contract.protocol_id = PROTOCOL_ID.to_string();
    contract.description = "misbehaves on request (reliability tests)".to_string();
    if cfg!(feature = "claims-everything") {
        let role = contract.artifacts[0].files[0].role.clone();
        let path = contract.artifacts[0].files[0].path.clone();
        contract.artifacts = vec![
            Artifact {
                id: "every-version".into(),
                app_version: String::new(),
                cli_version: String::new(),
                cli_sha256: String::new(),
                files: Vec::new(),
                simulated: false,
            },
            Artifact {
                id: "wildcards".into(),
                app_version: "*".into(),
                cli_version: "*".into(),
                cli_sha256: "*".into(),
                files: vec![FileCheck { role, path, sha256: "*".into(), required_exports: vec![] }],
                simulated: true,
            },
        ];
    }
    contract
}

pub struct Connection(InnerConnection);

impl Connection {
    pub fn new() -> Self {
        Self(InnerConnection::new())
    }

    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        if bytes.windows(17).any(|w| w == b"hostile:conn-trap") {
            panic!("hostile connection asked to trap");
        }
        self.0.push(bytes)
    }

    pub fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        self.0.finish()
    }

    pub fn start(&mut self, op_id: u64, op: &ConnectionOp, first_request_id: u64) -> Step {
        self.0.start(op_id, op, first_request_id)
    }

    pub fn resume(&mut self, op_id: u64, reply: &NativeReply, first_request_id: u64) -> Step {
        self.0.resume(op_id, reply, first_request_id)
    }
}

impl Default for Connection {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Trap,
    Spin,
    Grow,
    Huge,
    Env,
    Print,
    InvalidAcp,
    InvalidPermission,
    InvalidAfterQuestion,
    #[cfg(feature = "capabilities")]
    Files,
    #[cfg(feature = "capabilities")]
    Network,
}

fn mode_in(text: &str) -> Option<Mode> {
    let marker = text.split("hostile:").nth(1)?;
    let name: String =
        marker.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    Some(match name.as_str() {
        "trap" => Mode::Trap,
        "spin" => Mode::Spin,
        "grow" => Mode::Grow,
        "huge" => Mode::Huge,
        "env" => Mode::Env,
        "print" => Mode::Print,
        "invalid-acp" => Mode::InvalidAcp,
        "invalid-permission" => Mode::InvalidPermission,
        "invalid-after-question" => Mode::InvalidAfterQuestion,
        #[cfg(feature = "capabilities")]
        "files" => Mode::Files,
        #[cfg(feature = "capabilities")]
        "network" => Mode::Network,
        _ => return None,
    })
}

pub struct Session {
    inner: InnerSession,
    mode: Option<Mode>,
}

impl Session {
    pub fn new(init: &SessionInit) -> Self {
        Self { inner: InnerSession::new(init), mode: None }
    }

    pub fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step {
        if let SessionOp::Prompt(params) = op {
            self.mode = mode_in(params);
        }
        self.inner.start(op_id, op, first_request_id)
    }

    pub fn resume(&mut self, op_id: u64, reply: &NativeReply, first_request_id: u64) -> Step {
        self.inner.resume(op_id, reply, first_request_id)
    }

    pub fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperError> {
        match self.mode {
            None => self.inner.map_event(payload),
            Some(Mode::InvalidPermission) => {
                let mut actions = self.inner.map_event(payload)?;
                for action in &mut actions {
                    if let Action::Interaction(interaction) = action
                        && let InteractionRequest::Permission(permission) = &mut interaction.request
                    {
                        permission.request = r#"{"toolCall":42,"options":"allow"}"#.to_string();
                    }
                }
                Ok(actions)
            }
            Some(Mode::InvalidAfterQuestion) => {
                let mut actions = self.inner.map_event(payload)?;
                if actions.iter().any(|a| matches!(a, Action::Interaction(_))) {
                    actions.push(Action::Update(r#"{"sessionUpdate":"no_such_update"}"#.into()));
                }
                Ok(actions)
            }
            Some(Mode::InvalidAcp) => {
                self.mode = None;
                Ok(vec![Action::Update(r#"{"sessionUpdate":"no_such_update","x":1}"#.into())])
            }
            Some(mode) => misbehave(mode),
        }
    }
}

fn misbehave(mode: Mode) -> Result<Vec<Action>, MapperError> {
    match mode {
        Mode::Trap => panic!("hostile session asked to trap"),
        Mode::Spin => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        Mode::Grow => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(Vec::with_capacity(8 << 20));
                std::hint::black_box(&hoard);
            }
        }
        Mode::Huge => Ok(vec![Action::Update("x".repeat(100 << 20))]),
        Mode::Env => {
            let home = std::env::var("HOME").unwrap_or_default();
            Ok(vec![Action::Ignore(home)])
        }
        Mode::Print => {
            println!("{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\"}} NOT ACP");
            Ok(vec![Action::Ignore("printed".into())])
        }
        #[cfg(feature = "capabilities")]
        Mode::Files => {
            let secret = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
            Ok(vec![Action::Ignore(secret)])
        }
        #[cfg(feature = "capabilities")]
        Mode::Network => {
            let connected = std::net::TcpStream::connect("127.0.0.1:9").is_ok();
            Ok(vec![Action::Ignore(connected.to_string())])
        }
        Mode::InvalidAcp | Mode::InvalidPermission | Mode::InvalidAfterQuestion => {
            unreachable!("handled by the caller")
        }
    }
}
