//! The WebAssembly guest of a generation: [`export_guest!`] expands, in the generation crate,
//! to the `wit-bindgen` bindings of `wit/mapper.wit`, the type conversions between them and
//! `zcode_contract`, and the export of the generation's mapper. Only conversions live in the
//! expansion; the logic is in the plain modules.
//!
//! A macro rather than functions because the bindings are generated in, and belong to, the
//! crate that exports the component: each generation crate exports its own guest.

/// Exports a generation's mapper as the `zcode:mapper` component. Invoke once, in the
/// generation crate, for `wasm32` only (it needs `wit-bindgen` and `wit/` two levels up):
///
/// ```text
/// #[cfg(target_arch = "wasm32")]
/// zcode_host_common::export_guest! {
///     name: "zcode-task-v1",
///     contract: crate::contract::contract,
///     launch_plan: crate::contract::launch_plan,
///     auth_plan: crate::contract::auth_plan,
///     connection: crate::TaskV1Connection = crate::TaskV1Connection::new(),
///     session: crate::TaskV1Session = |init| crate::TaskV1Session::new(init),
/// }
/// ```
#[macro_export]
macro_rules! export_guest {
    (
        name: $name:literal,
        contract: $contract:path,
        launch_plan: $launch_plan:path,
        auth_plan: $auth_plan:path,
        connection: $connection:ty = $new_connection:expr,
        session: $session:ty = |$init:ident| $new_session:expr $(,)?
    ) => {
        mod guest {
            wit_bindgen::generate!({ world: "zcode-mapper", path: "../../wit" });

            use std::cell::RefCell;
            use std::sync::Once;

            use exports::zcode::mapper::mapper::{Guest, GuestConnection, GuestSession};
            use zcode::mapper::host::{LogLevel, log};
            use zcode::mapper::types as wit;
            use zcode_contract as native;

            /// Forwards panic messages to the host log (a panic then traps, failing only this
            /// instance).
            fn install_panic_hook() {
                static HOOK: Once = Once::new();
                HOOK.call_once(|| {
                    std::panic::set_hook(Box::new(|info| {
                        log(LogLevel::Error, &format!(concat!($name, " mapper panicked: {}"), info))
                    }));
                });
            }

            struct Component;

            impl Guest for Component {
                type Connection = Connection;
                type Session = Session;

                fn contract() -> wit::Contract {
                    install_panic_hook();
                    $contract().into()
                }

                fn launch_plan(
                    install: wit::VerifiedInstall,
                ) -> Result<wit::LaunchPlan, wit::MapperError> {
                    install_panic_hook();
                    $launch_plan(&install.into()).map(Into::into).map_err(Into::into)
                }

                fn auth_plan(
                    install: wit::VerifiedInstall,
                    command: wit::AuthCommand,
                ) -> Result<wit::LaunchPlan, wit::MapperError> {
                    install_panic_hook();
                    let command = match command {
                        wit::AuthCommand::Login => native::AuthCommand::Login,
                        wit::AuthCommand::Logout => native::AuthCommand::Logout,
                    };
                    $auth_plan(&install.into(), command).map(Into::into).map_err(Into::into)
                }
            }

            struct Connection(RefCell<$connection>);

            impl GuestConnection for Connection {
                fn new() -> Self {
                    install_panic_hook();
                    Self(RefCell::new($new_connection))
                }

                fn push(&self, bytes: Vec<u8>) -> Result<Vec<wit::Inbound>, wit::MapperError> {
                    inbound(self.0.borrow_mut().push(&bytes))
                }

                fn finish(&self) -> Result<Vec<wit::Inbound>, wit::MapperError> {
                    inbound(self.0.borrow_mut().finish())
                }

                fn start(
                    &self,
                    op_id: u64,
                    op: wit::ConnectionOp,
                    first_request_id: u64,
                ) -> wit::Step {
                    let op = match op {
                        wit::ConnectionOp::Setup => native::ConnectionOp::Setup,
                        wit::ConnectionOp::Probe(workspace) => {
                            native::ConnectionOp::Probe(workspace)
                        }
                        wit::ConnectionOp::ListSessions(params) => {
                            native::ConnectionOp::ListSessions(params)
                        }
                    };
                    self.0.borrow_mut().start(op_id, &op, first_request_id).into()
                }

                fn resume(
                    &self,
                    op_id: u64,
                    reply: wit::NativeReply,
                    first_request_id: u64,
                ) -> wit::Step {
                    self.0.borrow_mut().resume(op_id, &reply.into(), first_request_id).into()
                }
            }

            fn inbound(
                result: Result<Vec<native::Inbound>, native::MapperError>,
            ) -> Result<Vec<wit::Inbound>, wit::MapperError> {
                result.map(|items| items.into_iter().map(Into::into).collect()).map_err(Into::into)
            }

            struct Session(RefCell<$session>);

            impl GuestSession for Session {
                fn new(init: wit::SessionInit) -> Self {
                    install_panic_hook();
                    let $init = &native::SessionInit {
                        workspace: init.workspace,
                        client: native::ClientFeatures {
                            plan_operations: init.client.plan_operations,
                            form_elicitation: init.client.form_elicitation,
                        },
                    };
                    Self(RefCell::new($new_session))
                }

                fn start(
                    &self,
                    op_id: u64,
                    op: wit::SessionOp,
                    first_request_id: u64,
                ) -> wit::Step {
                    self.0.borrow_mut().start(op_id, &op.into(), first_request_id).into()
                }

                fn resume(
                    &self,
                    op_id: u64,
                    reply: wit::NativeReply,
                    first_request_id: u64,
                ) -> wit::Step {
                    self.0.borrow_mut().resume(op_id, &reply.into(), first_request_id).into()
                }

                fn map_event(&self, payload: String) -> Result<Vec<wit::Action>, wit::MapperError> {
                    self.0
                        .borrow_mut()
                        .map_event(&payload)
                        .map(|actions| actions.into_iter().map(Into::into).collect())
                        .map_err(Into::into)
                }
            }

            export!(Component);

            // ----- conversions ------------------------------------------------------------------

            impl From<native::Contract> for wit::Contract {
                fn from(c: native::Contract) -> Self {
                    Self {
                        protocol_id: c.protocol_id,
                        description: c.description,
                        layouts: c.layouts.into_iter().map(Into::into).collect(),
                        metadata: c.metadata,
                        metadata_platform_key: c.metadata_platform_key,
                        metadata_entry_key: c.metadata_entry_key,
                        artifacts: c.artifacts.into_iter().map(Into::into).collect(),
                        cli_version_probe: wit::VersionProbe {
                            args: c.cli_version_probe.args,
                            env: c.cli_version_probe.env,
                        },
                        credentials_file: c.credentials_file,
                    }
                }
            }

            impl From<native::Layout> for wit::Layout {
                fn from(l: native::Layout) -> Self {
                    let os = match l.os {
                        native::Os::Macos => wit::Os::Macos,
                        native::Os::Linux => wit::Os::Linux,
                        native::Os::Windows => wit::Os::Windows,
                    };
                    Self {
                        os,
                        executable: l.executable,
                        cli_entry: l.cli_entry,
                        metadata: l.metadata,
                        host_archive: l.host_archive,
                    }
                }
            }

            impl From<native::Artifact> for wit::Artifact {
                fn from(a: native::Artifact) -> Self {
                    Self {
                        id: a.id,
                        app_version: a.app_version,
                        cli_version: a.cli_version,
                        cli_sha256: a.cli_sha256,
                        files: a
                            .files
                            .into_iter()
                            .map(|f| wit::FileCheck {
                                role: f.role,
                                path: f.path,
                                sha256: f.sha256,
                                required_exports: f.required_exports,
                            })
                            .collect(),
                        simulated: a.simulated,
                    }
                }
            }

            impl From<wit::VerifiedInstall> for native::VerifiedInstall {
                fn from(i: wit::VerifiedInstall) -> Self {
                    Self {
                        install_root: i.install_root,
                        executable: i.executable,
                        cli_entry: i.cli_entry,
                        host_archive: i.host_archive,
                        artifact_id: i.artifact_id,
                        app_version: i.app_version,
                        cli_version: i.cli_version,
                        files: i.files,
                    }
                }
            }

            impl From<native::LaunchPlan> for wit::LaunchPlan {
                fn from(p: native::LaunchPlan) -> Self {
                    Self {
                        program: p.program,
                        args: p.args,
                        env: p.env,
                        cwd: p.cwd,
                        stdin_preamble: p.stdin_preamble,
                        needs_handshake: p.needs_handshake,
                    }
                }
            }

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

            impl From<native::NativeReply> for wit::NativeReply {
                fn from(r: native::NativeReply) -> Self {
                    let body = match r.body {
                        native::ReplyBody::Ok(json) => wit::ReplyBody::Ok(json),
                        native::ReplyBody::Error(e) => wit::ReplyBody::Error(e.into()),
                        native::ReplyBody::Lost(reason) => wit::ReplyBody::Lost(reason),
                    };
                    Self { id: r.id, body }
                }
            }

            impl From<wit::NativeReply> for native::NativeReply {
                fn from(r: wit::NativeReply) -> Self {
                    let body = match r.body {
                        wit::ReplyBody::Ok(json) => native::ReplyBody::Ok(json),
                        wit::ReplyBody::Error(e) => native::ReplyBody::Error(e.into()),
                        wit::ReplyBody::Lost(reason) => native::ReplyBody::Lost(reason),
                    };
                    Self { id: r.id, body }
                }
            }

            impl From<native::Inbound> for wit::Inbound {
                fn from(i: native::Inbound) -> Self {
                    match i {
                        native::Inbound::Reply(reply) => Self::Reply(reply.into()),
                        native::Inbound::Event(e) => {
                            Self::Event(wit::RoutedEvent { route: e.route, payload: e.payload })
                        }
                        native::Inbound::Write(bytes) => Self::Write(bytes),
                        native::Inbound::Ready => Self::Ready,
                        native::Inbound::Ignored(reason) => Self::Ignored(reason),
                    }
                }
            }

            impl From<native::Step> for wit::Step {
                fn from(step: native::Step) -> Self {
                    match step {
                        native::Step::Wait(o) => Self::Wait(wit::Outgoing {
                            routes_added: o.routes_added,
                            routes_removed: o.routes_removed,
                            requests: o
                                .requests
                                .into_iter()
                                .map(|r| wit::NativeRequest {
                                    id: r.id,
                                    bytes: r.bytes,
                                    label: r.label,
                                    timeout_ms: r.timeout_ms,
                                })
                                .collect(),
                        }),
                        native::Step::Done(result) => Self::Done(
                            result
                                .map(|r| wit::OpResult { response: r.response, updates: r.updates })
                                .map_err(Into::into),
                        ),
                    }
                }
            }

            impl From<wit::SessionOp> for native::SessionOp {
                fn from(op: wit::SessionOp) -> Self {
                    match op {
                        wit::SessionOp::Create(p) => Self::Create(p),
                        wit::SessionOp::Load(p) => Self::Load(p),
                        wit::SessionOp::Resume(p) => Self::Resume(p),
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
                            native::Terminal::Stop(reason) => wit::Terminal::Stop(match reason {
                                native::StopReason::EndTurn => wit::StopReason::EndTurn,
                                native::StopReason::MaxTokens => wit::StopReason::MaxTokens,
                                native::StopReason::MaxTurnRequests => {
                                    wit::StopReason::MaxTurnRequests
                                }
                                native::StopReason::Refusal => wit::StopReason::Refusal,
                                native::StopReason::Cancelled => wit::StopReason::Cancelled,
                            }),
                            native::Terminal::Failed(e) => wit::Terminal::Failed(e.into()),
                            native::Terminal::Broken(e) => wit::Terminal::Broken(e.into()),
                        }),
                        native::Action::Ignore(why) => Self::Ignore(why),
                    }
                }
            }
        }
    };
}
