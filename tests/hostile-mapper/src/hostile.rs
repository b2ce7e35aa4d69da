//! The misbehaving wrapper around the 3.12.3 connection and session.

use zcode_contract::{
    Action, Contract, FilePin, Inbound, InteractionAnswer, InteractionRequest, LayoutKind,
    MapperError, NativeData, NativeReply, Release, SessionInit,
};
use zcode_mapper_sdk::acp::params::{ConfigChange, ListParams, SessionParams};
use zcode_mapper_sdk::acp::prompt::Block;
use zcode_mapper_sdk::{Link, Mapped, Next, Session as SdkSession};

type InnerConnection = zcode_task::connection::Connection<crate::providers::Catalogue>;
type InnerSession = zcode_task::session::Session<crate::generation::TaskV2>;
type Tag = <InnerSession as SdkSession>::Tag;
type Stage = <InnerSession as SdkSession>::Stage;
type LinkStage = <InnerConnection as Link>::Stage;

pub const PROTOCOL_ID: &str = "hostile-dropin";

/// The 3.12.3 contract under this mapper's protocol id (or, with `claims-everything`, releases
/// that pretend to accept any ZCode).
pub fn contract() -> Contract {
    let mut contract = crate::contract::contract();
    contract.protocol_id = PROTOCOL_ID.to_string();
    contract.description = "misbehaves on request (reliability tests)".to_string();
    if cfg!(feature = "claims-everything") {
        let pinned = &contract.releases[0].files[0];
        let (role, path) = (pinned.role.clone(), pinned.path.clone());
        let file = |sha256: Option<&str>| FilePin {
            role: role.clone(),
            path: path.clone(),
            sha256: sha256.map(str::to_string),
            required_exports: vec![],
        };
        let release = |id: &str, version: &str, files: Vec<FilePin>, simulated: bool| Release {
            id: id.into(),
            kind: LayoutKind::Desktop,
            app_version: version.into(),
            cli_version: version.into(),
            files,
            identity: None,
            simulated,
            data_files: vec![],
        };
        contract.releases = vec![
            release("every-version", "", vec![], false),
            release("wildcards", "*", vec![file(Some("*"))], true),
            // Unpinned without an identity to check instead: nothing would verify the host.
            release("unpinned", "*", vec![file(None)], false),
        ];
    }
    contract
}

#[derive(Default)]
pub struct Connection(InnerConnection);

// The inner types may have inherent methods of the same names: the trait's are called by path.
impl Link for Connection {
    type Stage = LinkStage;

    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        if bytes.windows(17).any(|w| w == b"hostile:conn-trap") {
            panic!("hostile connection asked to trap");
        }
        Link::push(&mut self.0, bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        Link::finish(&mut self.0)
    }

    fn identity(&self) -> Option<String> {
        Link::identity(&self.0)
    }

    fn setup(&mut self, id: u64) -> Result<Next<LinkStage>, MapperError> {
        Link::setup(&mut self.0, id)
    }

    fn probe(&mut self, workspace: &str, id: u64) -> Result<Next<LinkStage>, MapperError> {
        Link::probe(&mut self.0, workspace, id)
    }

    fn list_sessions(
        &mut self,
        params: ListParams,
        id: u64,
    ) -> Result<Next<LinkStage>, MapperError> {
        Link::list_sessions(&mut self.0, params, id)
    }

    fn resume(
        &mut self,
        stage: LinkStage,
        reply: Option<(&NativeReply, &str)>,
        id: u64,
    ) -> Result<Next<LinkStage>, MapperError> {
        Link::resume(&mut self.0, stage, reply, id)
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

impl SdkSession for Session {
    type Tag = Tag;
    type Stage = Stage;

    fn new(init: &SessionInit) -> Self {
        Self { inner: SdkSession::new(init), mode: None }
    }

    fn open(&mut self, params: SessionParams, id: u64) -> Result<Next<Stage>, MapperError> {
        SdkSession::open(&mut self.inner, params, id)
    }

    fn prompt(&mut self, prompt: Vec<Block>, id: u64) -> Result<Next<Stage>, MapperError> {
        self.mode = prompt.iter().find_map(|block| match block {
            Block::Text(text) => mode_in(text),
            _ => None,
        });
        SdkSession::prompt(&mut self.inner, prompt, id)
    }

    fn cancel(&mut self, id: u64) -> Result<Next<Stage>, MapperError> {
        SdkSession::cancel(&mut self.inner, id)
    }

    fn finish_turn(&mut self, id: u64) -> Result<Next<Stage>, MapperError> {
        SdkSession::finish_turn(&mut self.inner, id)
    }

    fn set_mode(&mut self, mode_id: String, id: u64) -> Result<Next<Stage>, MapperError> {
        SdkSession::set_mode(&mut self.inner, mode_id, id)
    }

    fn set_config_option(
        &mut self,
        change: ConfigChange,
        id: u64,
    ) -> Result<Next<Stage>, MapperError> {
        SdkSession::set_config_option(&mut self.inner, change, id)
    }

    fn answer(&mut self, answer: &InteractionAnswer, id: u64) -> Result<Next<Stage>, MapperError> {
        SdkSession::answer(&mut self.inner, answer, id)
    }

    fn close(&mut self, id: u64) -> Result<Next<Stage>, MapperError> {
        SdkSession::close(&mut self.inner, id)
    }

    fn resume(
        &mut self,
        stage: Stage,
        reply: Option<(&NativeReply, &str)>,
        id: u64,
    ) -> Result<Next<Stage>, MapperError> {
        SdkSession::resume(&mut self.inner, stage, reply, id)
    }

    fn map_event(&mut self, event: &NativeData) -> Result<Mapped<Tag>, MapperError> {
        match self.mode {
            None => SdkSession::map_event(&mut self.inner, event),
            Some(Mode::InvalidPermission) => {
                let mut mapped = SdkSession::map_event(&mut self.inner, event)?;
                for action in &mut mapped.actions {
                    if let Action::Interaction(interaction) = action
                        && let InteractionRequest::Permission(permission) = &mut interaction.request
                    {
                        permission.request = r#"{"toolCall":42,"options":"allow"}"#.to_string();
                    }
                }
                Ok(mapped)
            }
            Some(Mode::InvalidAfterQuestion) => {
                let mut mapped = SdkSession::map_event(&mut self.inner, event)?;
                if mapped.actions.iter().any(|a| matches!(a, Action::Interaction(_))) {
                    let invalid = r#"{"sessionUpdate":"no_such_update"}"#;
                    mapped.actions.push(Action::Update(invalid.into()));
                }
                Ok(mapped)
            }
            Some(Mode::InvalidAcp) => {
                self.mode = None;
                let invalid = r#"{"sessionUpdate":"no_such_update","x":1}"#;
                Ok(Mapped::action(Action::Update(invalid.into())))
            }
            Some(mode) => misbehave(mode),
        }
    }

    fn map_reply(&mut self, tag: Tag, reply: &NativeReply) -> Result<Mapped<Tag>, MapperError> {
        SdkSession::map_reply(&mut self.inner, tag, reply)
    }
}

fn misbehave(mode: Mode) -> Result<Mapped<Tag>, MapperError> {
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
        Mode::Huge => Ok(Mapped::action(Action::Update("x".repeat(100 << 20)))),
        Mode::Env => {
            let home = std::env::var("HOME").unwrap_or_default();
            Ok(Mapped::action(Action::Ignore(home)))
        }
        Mode::Print => {
            println!("{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\"}} NOT ACP");
            Ok(Mapped::action(Action::Ignore("printed".into())))
        }
        #[cfg(feature = "capabilities")]
        Mode::Files => {
            let secret = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
            Ok(Mapped::action(Action::Ignore(secret)))
        }
        #[cfg(feature = "capabilities")]
        Mode::Network => {
            let connected = std::net::TcpStream::connect("127.0.0.1:9").is_ok();
            Ok(Mapped::action(Action::Ignore(connected.to_string())))
        }
        Mode::InvalidAcp | Mode::InvalidPermission | Mode::InvalidAfterQuestion => {
            unreachable!("handled by the caller")
        }
    }
}
