//! The component export: the `wit-bindgen` bindings of `wit/mapper.wit` (world
//! `zcode-mapper`), the WIT ↔ `zcode_contract` conversions, and [`Component`], which exports any
//! [`Definition`] through them. A mapper crate only writes `zcode_mapper_sdk::export_mapper!`.
//!
//! Compiled natively too (imports are unreachable stubs there; nothing calls them), so the
//! conversions are type-checked and tested without a wasm build.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Once;

use zcode_contract as native;

use crate::{Connection as _, Definition, SessionMachine as _};

/// The generated bindings. `export!` (used by [`export_mapper!`](crate::export_mapper)) belongs
/// to them.
#[allow(clippy::all, missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "zcode-mapper",
        path: "../../wit",
        pub_export_macro: true,
        default_bindings_module: "zcode_mapper_sdk::guest::bindings",
    });
}

use bindings::exports::zcode::mapper::mapper::{Guest, GuestConnection, GuestSession};
use bindings::zcode::mapper::types as wit;

/// Exports a [`Definition`] as the `zcode:mapper` component. Invoke once, in the mapper crate
/// (it does nothing outside wasm32):
///
/// ```text
/// zcode_mapper_sdk::export_mapper!(crate::Echo);
/// ```
#[macro_export]
macro_rules! export_mapper {
    ($definition:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type ZcodeMapperComponent = $crate::guest::Component<$definition>;
            $crate::guest::bindings::export!(
                ZcodeMapperComponent with_types_in $crate::guest::bindings
            );
        };
    };
}

/// The component of definition `D`.
pub struct Component<D>(PhantomData<D>);

/// Sends panic messages to the core's log (a panic then traps, failing only this instance).
fn install_panic_hook<D: Definition>() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            crate::log::log(
                crate::log::Level::Error,
                &format!("{} mapper panicked: {info}", D::NAME),
            )
        }));
    });
}

impl<D: Definition> Guest for Component<D> {
    type Connection = GuestConnectionOf<D>;
    type Session = GuestSessionOf<D>;

    fn contract() -> wit::Contract {
        install_panic_hook::<D>();
        D::contract().into()
    }

    fn launch_plan(install: wit::VerifiedInstall) -> Result<wit::LaunchPlan, wit::MapperError> {
        install_panic_hook::<D>();
        D::launch_plan(&install.into()).map(Into::into).map_err(Into::into)
    }

    fn auth_plan(
        install: wit::VerifiedInstall,
        command: wit::AuthCommand,
    ) -> Result<wit::LaunchPlan, wit::MapperError> {
        install_panic_hook::<D>();
        let command = match command {
            wit::AuthCommand::Login => native::AuthCommand::Login,
            wit::AuthCommand::Logout => native::AuthCommand::Logout,
        };
        D::auth_plan(&install.into(), command).map(Into::into).map_err(Into::into)
    }
}

pub struct GuestConnectionOf<D: Definition>(RefCell<D::Connection>);

impl<D: Definition> GuestConnection for GuestConnectionOf<D> {
    fn new() -> Self {
        install_panic_hook::<D>();
        Self(RefCell::new(D::connection()))
    }

    fn push(&self, bytes: Vec<u8>) -> Result<Vec<wit::Inbound>, wit::MapperError> {
        inbound(self.0.borrow_mut().push(&bytes))
    }

    fn finish(&self) -> Result<Vec<wit::Inbound>, wit::MapperError> {
        inbound(self.0.borrow_mut().finish())
    }

    fn start(&self, op_id: u64, op: wit::ConnectionOp, first_request_id: u64) -> wit::Step {
        self.0.borrow_mut().start(op_id, &op.into(), first_request_id).into()
    }

    fn resume(
        &self,
        op_id: u64,
        reply: Option<wit::NativeReply>,
        first_request_id: u64,
    ) -> wit::Step {
        let reply = reply.map(native::NativeReply::from);
        self.0.borrow_mut().resume(op_id, reply.as_ref(), first_request_id).into()
    }

    fn identity(&self) -> Option<String> {
        self.0.borrow().identity()
    }
}

fn inbound(
    result: Result<Vec<native::Inbound>, native::MapperError>,
) -> Result<Vec<wit::Inbound>, wit::MapperError> {
    result.map(|items| items.into_iter().map(Into::into).collect()).map_err(Into::into)
}

pub struct GuestSessionOf<D: Definition>(RefCell<D::Session>);

impl<D: Definition> GuestSession for GuestSessionOf<D> {
    fn new(init: wit::SessionInit) -> Self {
        install_panic_hook::<D>();
        Self(RefCell::new(D::session(&init.into())))
    }

    fn start(&self, op_id: u64, op: wit::SessionOp, first_request_id: u64) -> wit::Step {
        self.0.borrow_mut().start(op_id, &op.into(), first_request_id).into()
    }

    fn resume(
        &self,
        op_id: u64,
        reply: Option<wit::NativeReply>,
        first_request_id: u64,
    ) -> wit::Step {
        let reply = reply.map(native::NativeReply::from);
        self.0.borrow_mut().resume(op_id, reply.as_ref(), first_request_id).into()
    }

    fn map(&self, inputs: Vec<wit::SessionInput>) -> wit::Effects {
        let inputs: Vec<native::SessionInput> = inputs.into_iter().map(Into::into).collect();
        self.0.borrow_mut().map(&inputs).into()
    }

    fn issue(&self, first_request_id: u64) -> wit::Outgoing {
        self.0.borrow_mut().issue(first_request_id).into()
    }
}

// ----- contract and install ------------------------------------------------------------------

impl From<native::Contract> for wit::Contract {
    fn from(c: native::Contract) -> Self {
        Self {
            protocol_id: c.protocol_id,
            description: c.description,
            layouts: c.layouts.into_iter().map(Into::into).collect(),
            releases: c.releases.into_iter().map(Into::into).collect(),
            cli_version_probe: wit::VersionProbe {
                args: c.cli_version_probe.args,
                env: c.cli_version_probe.env,
            },
            credentials_file: c.credentials_file,
            credential_sources: c.credential_sources.into_iter().map(Into::into).collect(),
            offers: c.offers,
            facts: c.facts.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<native::FactSource> for wit::FactSource {
    fn from(f: native::FactSource) -> Self {
        let json = |j: native::JsonFact| wit::JsonFact { file: j.file, pointer: j.pointer };
        let kind = match f.kind {
            native::FactKind::InstallJson(j) => wit::FactKind::InstallJson(json(j)),
            native::FactKind::InstallPath(role) => wit::FactKind::InstallPath(role),
            native::FactKind::UserJson(j) => wit::FactKind::UserJson(json(j)),
            native::FactKind::CredentialPresence(p) => {
                wit::FactKind::CredentialPresence(wit::PresenceFact {
                    source: p.source,
                    args: p.args,
                })
            }
        };
        Self { name: f.name, kind }
    }
}

fn facts(facts: Vec<(String, wit::FactValue)>) -> native::Facts {
    facts
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                wit::FactValue::Json(json) => native::FactValue::Json(json),
                wit::FactValue::Presence(presence) => native::FactValue::Presence(match presence {
                    wit::Presence::Present => native::Presence::Present,
                    wit::Presence::Absent => native::Presence::Absent,
                    wit::Presence::Unreadable(why) => native::Presence::Unreadable(why),
                }),
            };
            (name, value)
        })
        .collect()
}

impl From<native::Os> for wit::Os {
    fn from(os: native::Os) -> Self {
        match os {
            native::Os::Macos => Self::Macos,
            native::Os::Linux => Self::Linux,
            native::Os::Windows => Self::Windows,
        }
    }
}

impl From<native::LayoutKind> for wit::LayoutKind {
    fn from(kind: native::LayoutKind) -> Self {
        match kind {
            native::LayoutKind::Desktop => Self::Desktop,
            native::LayoutKind::Runtime => Self::Runtime,
        }
    }
}

impl From<wit::LayoutKind> for native::LayoutKind {
    fn from(kind: wit::LayoutKind) -> Self {
        match kind {
            wit::LayoutKind::Desktop => Self::Desktop,
            wit::LayoutKind::Runtime => Self::Runtime,
        }
    }
}

impl From<native::Layout> for wit::Layout {
    fn from(layout: native::Layout) -> Self {
        match layout {
            native::Layout::Desktop(d) => Self::Desktop(wit::DesktopLayout {
                os: d.os.into(),
                executable: d.executable,
                cli_entry: d.cli_entry,
                metadata: d.metadata,
                metadata_pairs: d.metadata_pairs,
                metadata_platform_key: d.metadata_platform_key,
                metadata_entry_key: d.metadata_entry_key,
                host_archive: d.host_archive,
            }),
            native::Layout::Runtime(r) => Self::Runtime(wit::RuntimeLayout {
                runtime_dir: r.runtime_dir,
                package_file: r.package_file,
                package_pairs: r.package_pairs,
                cli_entry: r.cli_entry,
                node_candidates: r.node_candidates,
                min_node_version: r.min_node_version,
            }),
        }
    }
}

impl From<native::Release> for wit::Release {
    fn from(r: native::Release) -> Self {
        Self {
            id: r.id,
            kind: r.kind.into(),
            app_version: r.app_version,
            cli_version: r.cli_version,
            files: r
                .files
                .into_iter()
                .map(|f| wit::FilePin {
                    role: f.role,
                    path: f.path,
                    sha256: f.sha256,
                    required_exports: f.required_exports,
                })
                .collect(),
            identity: r.identity,
            simulated: r.simulated,
            data_files: r
                .data_files
                .into_iter()
                .map(|d| wit::DataFile { role: d.role, path: d.path })
                .collect(),
        }
    }
}

impl From<native::CredentialSource> for wit::CredentialSource {
    fn from(s: native::CredentialSource) -> Self {
        Self {
            name: s.name,
            file: s.file,
            key: s.key,
            lookups: s
                .lookups
                .into_iter()
                .map(|l| wit::CredentialLookup { name: l.name, key: l.key, field: l.field })
                .collect(),
            encodings: s
                .encodings
                .into_iter()
                .map(|e| match e {
                    native::CredentialEncoding::Plain => wit::CredentialEncoding::Plain,
                    native::CredentialEncoding::AesGcm(form) => {
                        wit::CredentialEncoding::AesGcm(wit::AesGcmEncoding {
                            prefix: form.prefix,
                            key_env: form.key_env,
                            fallback_seed: form.fallback_seed,
                        })
                    }
                    native::CredentialEncoding::Unreadable(prefix) => {
                        wit::CredentialEncoding::Unreadable(prefix)
                    }
                })
                .collect(),
        }
    }
}

impl From<wit::VerifiedInstall> for native::VerifiedInstall {
    fn from(i: wit::VerifiedInstall) -> Self {
        Self {
            install_root: i.install_root,
            kind: i.kind.into(),
            executable: i.executable,
            cli_entry: i.cli_entry,
            host_archive: i.host_archive,
            release_id: i.release_id,
            app_version: i.app_version,
            cli_version: i.cli_version,
            files: i.files,
            unpinned: i.unpinned,
            home: i.home,
            facts: facts(i.facts),
        }
    }
}

impl From<native::LaunchPlan> for wit::LaunchPlan {
    fn from(p: native::LaunchPlan) -> Self {
        Self {
            args: p.args,
            env: p.env,
            env_remove: p.env_remove,
            cwd: p.cwd,
            stdin_preamble: p.stdin_preamble,
            needs_handshake: p.needs_handshake,
        }
    }
}

// ----- errors --------------------------------------------------------------------------------

impl From<native::ErrorKind> for wit::ErrorKind {
    fn from(kind: native::ErrorKind) -> Self {
        match kind {
            native::ErrorKind::InvalidParams => Self::InvalidParams,
            native::ErrorKind::AuthRequired => Self::AuthRequired,
            native::ErrorKind::NotFound => Self::NotFound,
            native::ErrorKind::Unsupported => Self::Unsupported,
            native::ErrorKind::Protocol => Self::Protocol,
            native::ErrorKind::Native => Self::Native,
            native::ErrorKind::Internal => Self::Internal,
        }
    }
}

impl From<wit::ErrorKind> for native::ErrorKind {
    fn from(kind: wit::ErrorKind) -> Self {
        match kind {
            wit::ErrorKind::InvalidParams => Self::InvalidParams,
            wit::ErrorKind::AuthRequired => Self::AuthRequired,
            wit::ErrorKind::NotFound => Self::NotFound,
            wit::ErrorKind::Unsupported => Self::Unsupported,
            wit::ErrorKind::Protocol => Self::Protocol,
            wit::ErrorKind::Native => Self::Native,
            wit::ErrorKind::Internal => Self::Internal,
        }
    }
}

impl From<native::MapperError> for wit::MapperError {
    fn from(e: native::MapperError) -> Self {
        Self { kind: e.kind.into(), message: e.message, data: e.data }
    }
}

impl From<wit::MapperError> for native::MapperError {
    fn from(e: wit::MapperError) -> Self {
        Self { kind: e.kind.into(), message: e.message, data: e.data }
    }
}

// ----- native traffic ------------------------------------------------------------------------

impl From<native::NativeData> for wit::NativeData {
    fn from(data: native::NativeData) -> Self {
        match data {
            native::NativeData::Text(text) => Self::Text(text),
            native::NativeData::Binary(bytes) => Self::Binary(bytes),
        }
    }
}

impl From<wit::NativeData> for native::NativeData {
    fn from(data: wit::NativeData) -> Self {
        match data {
            wit::NativeData::Text(text) => Self::Text(text),
            wit::NativeData::Binary(bytes) => Self::Binary(bytes),
        }
    }
}

impl From<native::NativeReply> for wit::NativeReply {
    fn from(r: native::NativeReply) -> Self {
        let body = match r.body {
            native::ReplyBody::Ok(data) => wit::ReplyBody::Ok(data.into()),
            native::ReplyBody::Error(e) => wit::ReplyBody::Error(e.into()),
            native::ReplyBody::Lost(reason) => wit::ReplyBody::Lost(reason),
        };
        Self { id: r.id, body }
    }
}

impl From<wit::NativeReply> for native::NativeReply {
    fn from(r: wit::NativeReply) -> Self {
        let body = match r.body {
            wit::ReplyBody::Ok(data) => native::ReplyBody::Ok(data.into()),
            wit::ReplyBody::Error(e) => native::ReplyBody::Error(e.into()),
            wit::ReplyBody::Lost(reason) => native::ReplyBody::Lost(reason),
        };
        Self { id: r.id, body }
    }
}

impl From<native::NativeRequest> for wit::NativeRequest {
    fn from(r: native::NativeRequest) -> Self {
        Self { id: r.id, bytes: r.bytes, label: r.label, timeout_ms: r.timeout_ms }
    }
}

impl From<native::NativeWrite> for wit::NativeWrite {
    fn from(w: native::NativeWrite) -> Self {
        Self {
            bytes: w.bytes,
            label: w.label,
            secret: w.secret.map(|s| wit::SecretFill {
                placeholder: s.placeholder,
                source: s.source,
                args: s.args,
                fallback: s.fallback,
            }),
        }
    }
}

impl From<native::Inbound> for wit::Inbound {
    fn from(i: native::Inbound) -> Self {
        match i {
            native::Inbound::Reply(reply) => Self::Reply(reply.into()),
            native::Inbound::Event(e) => {
                Self::Event(wit::RoutedEvent { route: e.route, payload: e.payload.into() })
            }
            native::Inbound::Write(write) => Self::Write(write.into()),
            native::Inbound::Ready => Self::Ready,
            native::Inbound::Ignored(reason) => Self::Ignored(reason),
        }
    }
}

// ----- operations ----------------------------------------------------------------------------

impl From<native::Outgoing> for wit::Outgoing {
    fn from(o: native::Outgoing) -> Self {
        Self {
            updates: o.updates,
            routes_added: o.routes_added,
            routes_removed: o.routes_removed,
            writes: o.writes.into_iter().map(Into::into).collect(),
            requests: o.requests.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<native::Step> for wit::Step {
    fn from(step: native::Step) -> Self {
        match step {
            native::Step::Wait(outgoing) => Self::Wait(outgoing.into()),
            native::Step::Done(result) => Self::Done(
                result
                    .map(|r| wit::OpResult { response: r.response, updates: r.updates })
                    .map_err(Into::into),
            ),
        }
    }
}

impl From<wit::ConnectionOp> for native::ConnectionOp {
    fn from(op: wit::ConnectionOp) -> Self {
        match op {
            wit::ConnectionOp::Setup => Self::Setup,
            wit::ConnectionOp::Probe(probe) => Self::Probe(native::ProbeRequest {
                workspace: probe.workspace,
                facts: facts(probe.facts),
            }),
            wit::ConnectionOp::ListSessions(params) => Self::ListSessions(params),
        }
    }
}

impl From<wit::SessionInit> for native::SessionInit {
    fn from(init: wit::SessionInit) -> Self {
        Self {
            workspace: init.workspace,
            client: native::ClientFeatures {
                plan_operations: init.client.plan_operations,
                form_elicitation: init.client.form_elicitation,
            },
            facts: facts(init.facts),
        }
    }
}

impl From<wit::SessionOp> for native::SessionOp {
    fn from(op: wit::SessionOp) -> Self {
        match op {
            wit::SessionOp::Create(p) => Self::Create(p),
            wit::SessionOp::Load(p) => Self::Load(p),
            wit::SessionOp::Resume(p) => Self::Resume(p),
            wit::SessionOp::Fork(p) => Self::Fork(p),
            wit::SessionOp::Prompt(p) => Self::Prompt(p),
            wit::SessionOp::Cancel => Self::Cancel,
            wit::SessionOp::FinishTurn => Self::FinishTurn,
            wit::SessionOp::SetMode(p) => Self::SetMode(p),
            wit::SessionOp::SetConfigOption(p) => Self::SetConfigOption(p),
            wit::SessionOp::Answer(a) => Self::Answer(native::InteractionAnswer {
                key: a.key,
                outcome: match a.outcome {
                    wit::InteractionOutcome::Selected(id) => {
                        native::InteractionOutcome::Selected(id)
                    }
                    wit::InteractionOutcome::Elicited(json) => {
                        native::InteractionOutcome::Elicited(json)
                    }
                    wit::InteractionOutcome::Unavailable(why) => {
                        native::InteractionOutcome::Unavailable(why)
                    }
                },
            }),
            wit::SessionOp::Close => Self::Close,
        }
    }
}

// ----- session input and effects -------------------------------------------------------------

impl From<wit::SessionInput> for native::SessionInput {
    fn from(input: wit::SessionInput) -> Self {
        match input {
            wit::SessionInput::Event(data) => Self::Event(data.into()),
            wit::SessionInput::Reply(reply) => Self::Reply(reply.into()),
        }
    }
}

impl From<native::Effects> for wit::Effects {
    fn from(e: native::Effects) -> Self {
        Self {
            actions: e.actions.into_iter().map(Into::into).collect(),
            writes: e.writes.into_iter().map(Into::into).collect(),
            requests: e.requests,
        }
    }
}

impl From<native::StopReason> for wit::StopReason {
    fn from(reason: native::StopReason) -> Self {
        match reason {
            native::StopReason::EndTurn => Self::EndTurn,
            native::StopReason::MaxTokens => Self::MaxTokens,
            native::StopReason::MaxTurnRequests => Self::MaxTurnRequests,
            native::StopReason::Refusal => Self::Refusal,
            native::StopReason::Cancelled => Self::Cancelled,
        }
    }
}

impl From<native::Action> for wit::Action {
    fn from(action: native::Action) -> Self {
        match action {
            native::Action::Update(json) => Self::Update(json),
            native::Action::Interaction(i) => Self::Interaction(wit::Interaction {
                key: i.key,
                request: match i.request {
                    native::InteractionRequest::Permission(p) => {
                        wit::InteractionRequest::Permission(wit::PermissionRequest {
                            request: p.request,
                            deny_option: p.deny_option,
                        })
                    }
                    native::InteractionRequest::Elicitation(json) => {
                        wit::InteractionRequest::Elicitation(json)
                    }
                    native::InteractionRequest::Headless(why) => {
                        wit::InteractionRequest::Headless(why)
                    }
                },
            }),
            native::Action::Terminal(t) => Self::Terminal(match t {
                native::Terminal::Stop(reason) => wit::Terminal::Stop(reason.into()),
                native::Terminal::Failed(e) => wit::Terminal::Failed(e.into()),
                native::Terminal::Broken(e) => wit::Terminal::Broken(e.into()),
            }),
            native::Action::Ignore(why) => Self::Ignore(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_and_errors_cross_both_ways_unchanged() {
        let replies = [
            native::NativeReply { id: 1, body: native::ReplyBody::Ok("{}".into()) },
            native::NativeReply {
                id: 2,
                body: native::ReplyBody::Ok(native::NativeData::Binary(vec![0, 255])),
            },
            native::NativeReply {
                id: 3,
                body: native::ReplyBody::Error(native::MapperError {
                    kind: native::ErrorKind::Native,
                    message: "boom".into(),
                    data: Some("{\"nativeCode\":1}".into()),
                }),
            },
            native::NativeReply { id: 4, body: native::ReplyBody::Lost("closed".into()) },
        ];
        for reply in replies {
            let crossed: wit::NativeReply = reply.clone().into();
            assert_eq!(native::NativeReply::from(crossed), reply);
        }
    }

    #[test]
    fn writes_keep_their_secret_fill() {
        let write = native::NativeWrite {
            bytes: b"{\"token\":\"@T@\"}".to_vec(),
            label: "auth".into(),
            secret: Some(native::SecretFill {
                placeholder: "@T@".into(),
                source: "token".into(),
                args: vec![("user".into(), "u".into())],
                fallback: b"{}".to_vec(),
            }),
        };
        let wit::NativeWrite { bytes, label, secret } = write.into();
        assert_eq!((bytes.as_slice(), label.as_str()), (&b"{\"token\":\"@T@\"}"[..], "auth"));
        let secret = secret.unwrap();
        assert_eq!((secret.placeholder.as_str(), secret.source.as_str()), ("@T@", "token"));
        assert_eq!(secret.args, [("user".to_string(), "u".to_string())]);
    }

    #[test]
    fn layouts_and_releases_keep_every_field() {
        let runtime = native::Layout::Runtime(native::RuntimeLayout {
            runtime_dir: ".".into(),
            package_file: "package.json".into(),
            package_pairs: vec![("name".into(), "x".into())],
            cli_entry: "server.mjs".into(),
            node_candidates: vec!["bin/node".into()],
            min_node_version: "20.0.0".into(),
        });
        match wit::Layout::from(runtime) {
            wit::Layout::Runtime(r) => {
                assert_eq!(r.package_pairs, [("name".to_string(), "x".to_string())]);
                assert_eq!(
                    (r.cli_entry.as_str(), r.min_node_version.as_str()),
                    ("server.mjs", "20.0.0")
                );
                assert_eq!(r.node_candidates, ["bin/node"]);
            }
            wit::Layout::Desktop(_) => panic!("runtime became desktop"),
        }
        let release = native::Release {
            data_files: Default::default(),
            id: "r".into(),
            kind: native::LayoutKind::Runtime,
            app_version: "1.0.0".into(),
            cli_version: "1.0.0".into(),
            files: vec![native::FilePin {
                role: "cli".into(),
                path: "server.mjs".into(),
                sha256: None,
                required_exports: vec![],
            }],
            identity: Some("echo/1".into()),
            simulated: false,
        };
        let crossed = wit::Release::from(release);
        assert_eq!(crossed.files[0].sha256, None);
        assert_eq!(crossed.identity.as_deref(), Some("echo/1"));
        assert!(matches!(crossed.kind, wit::LayoutKind::Runtime));
    }
}
