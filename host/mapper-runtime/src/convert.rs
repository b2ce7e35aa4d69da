//! Conversions between the WIT values of `zcode:mapper@0.4.0` and the plain `zcode_contract`
//! types. Values going into a mapper are converted from references (the core keeps its own
//! copy), except a session's input batch, which the core hands over; values coming out are
//! moved.

use zcode_contract as core;

use crate::bindings::zcode::mapper::types as wit;

// ----- out of the mapper ----------------------------------------------------------------------

impl From<wit::Os> for core::Os {
    fn from(os: wit::Os) -> Self {
        match os {
            wit::Os::Macos => core::Os::Macos,
            wit::Os::Linux => core::Os::Linux,
            wit::Os::Windows => core::Os::Windows,
        }
    }
}

impl From<wit::LayoutKind> for core::LayoutKind {
    fn from(kind: wit::LayoutKind) -> Self {
        match kind {
            wit::LayoutKind::Desktop => core::LayoutKind::Desktop,
            wit::LayoutKind::Runtime => core::LayoutKind::Runtime,
        }
    }
}

impl From<wit::Layout> for core::Layout {
    fn from(layout: wit::Layout) -> Self {
        match layout {
            wit::Layout::Desktop(d) => core::Layout::Desktop(core::DesktopLayout {
                os: d.os.into(),
                executable: d.executable,
                cli_entry: d.cli_entry,
                metadata: d.metadata,
                metadata_pairs: d.metadata_pairs,
                metadata_platform_key: d.metadata_platform_key,
                metadata_entry_key: d.metadata_entry_key,
                host_archive: d.host_archive,
            }),
            wit::Layout::Runtime(r) => core::Layout::Runtime(core::RuntimeLayout {
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

impl From<wit::FilePin> for core::FilePin {
    fn from(f: wit::FilePin) -> Self {
        core::FilePin {
            role: f.role,
            path: f.path,
            sha256: f.sha256,
            required_exports: f.required_exports,
        }
    }
}

impl From<wit::Release> for core::Release {
    fn from(r: wit::Release) -> Self {
        core::Release {
            id: r.id,
            kind: r.kind.into(),
            app_version: r.app_version,
            cli_version: r.cli_version,
            files: convert_all(r.files),
            identity: r.identity,
            simulated: r.simulated,
            data_files: r
                .data_files
                .into_iter()
                .map(|d| core::DataFile { role: d.role, path: d.path })
                .collect(),
        }
    }
}

impl From<wit::JsonFact> for core::JsonFact {
    fn from(f: wit::JsonFact) -> Self {
        core::JsonFact { file: f.file, pointer: f.pointer }
    }
}

impl From<wit::FactSource> for core::FactSource {
    fn from(f: wit::FactSource) -> Self {
        let kind = match f.kind {
            wit::FactKind::InstallJson(json) => core::FactKind::InstallJson(json.into()),
            wit::FactKind::InstallPath(role) => core::FactKind::InstallPath(role),
            wit::FactKind::UserJson(json) => core::FactKind::UserJson(json.into()),
            wit::FactKind::CredentialPresence(p) => {
                core::FactKind::CredentialPresence(core::PresenceFact {
                    source: p.source,
                    args: p.args,
                })
            }
        };
        core::FactSource { name: f.name, kind }
    }
}

fn facts(facts: &[(String, core::FactValue)]) -> Vec<(String, wit::FactValue)> {
    facts
        .iter()
        .map(|(name, value)| {
            let value = match value {
                core::FactValue::Json(json) => wit::FactValue::Json(json.clone()),
                core::FactValue::Presence(presence) => wit::FactValue::Presence(match presence {
                    core::Presence::Present => wit::Presence::Present,
                    core::Presence::Absent => wit::Presence::Absent,
                    core::Presence::Unreadable(why) => wit::Presence::Unreadable(why.clone()),
                }),
            };
            (name.clone(), value)
        })
        .collect()
}

impl From<wit::VersionProbe> for core::VersionProbe {
    fn from(p: wit::VersionProbe) -> Self {
        core::VersionProbe { args: p.args, env: p.env }
    }
}

impl From<wit::CredentialEncoding> for core::CredentialEncoding {
    fn from(encoding: wit::CredentialEncoding) -> Self {
        match encoding {
            wit::CredentialEncoding::Plain => core::CredentialEncoding::Plain,
            wit::CredentialEncoding::AesGcm(form) => {
                core::CredentialEncoding::AesGcm(core::AesGcmEncoding {
                    prefix: form.prefix,
                    key_env: form.key_env,
                    fallback_seed: form.fallback_seed,
                })
            }
            wit::CredentialEncoding::Unreadable(prefix) => {
                core::CredentialEncoding::Unreadable(prefix)
            }
        }
    }
}

impl From<wit::CredentialLookup> for core::CredentialLookup {
    fn from(l: wit::CredentialLookup) -> Self {
        core::CredentialLookup { name: l.name, key: l.key, field: l.field }
    }
}

impl From<wit::CredentialSource> for core::CredentialSource {
    fn from(s: wit::CredentialSource) -> Self {
        core::CredentialSource {
            name: s.name,
            file: s.file,
            key: s.key,
            lookups: convert_all(s.lookups),
            encodings: convert_all(s.encodings),
        }
    }
}

impl From<wit::Contract> for core::Contract {
    fn from(c: wit::Contract) -> Self {
        core::Contract {
            protocol_id: c.protocol_id,
            description: c.description,
            layouts: convert_all(c.layouts),
            releases: convert_all(c.releases),
            cli_version_probe: c.cli_version_probe.into(),
            credentials_file: c.credentials_file,
            credential_sources: convert_all(c.credential_sources),
            offers: c.offers,
            facts: convert_all(c.facts),
        }
    }
}

impl From<wit::LaunchPlan> for core::LaunchPlan {
    fn from(p: wit::LaunchPlan) -> Self {
        core::LaunchPlan {
            args: p.args,
            env: p.env,
            env_remove: p.env_remove,
            cwd: p.cwd,
            stdin_preamble: p.stdin_preamble,
            needs_handshake: p.needs_handshake,
        }
    }
}

impl From<wit::ErrorKind> for core::ErrorKind {
    fn from(kind: wit::ErrorKind) -> Self {
        match kind {
            wit::ErrorKind::InvalidParams => core::ErrorKind::InvalidParams,
            wit::ErrorKind::AuthRequired => core::ErrorKind::AuthRequired,
            wit::ErrorKind::NotFound => core::ErrorKind::NotFound,
            wit::ErrorKind::Unsupported => core::ErrorKind::Unsupported,
            wit::ErrorKind::Protocol => core::ErrorKind::Protocol,
            wit::ErrorKind::Native => core::ErrorKind::Native,
            wit::ErrorKind::Internal => core::ErrorKind::Internal,
        }
    }
}

impl From<wit::MapperError> for core::MapperError {
    fn from(e: wit::MapperError) -> Self {
        core::MapperError { kind: e.kind.into(), message: e.message, data: e.data }
    }
}

impl From<wit::NativeData> for core::NativeData {
    fn from(data: wit::NativeData) -> Self {
        match data {
            wit::NativeData::Text(text) => core::NativeData::Text(text),
            wit::NativeData::Binary(bytes) => core::NativeData::Binary(bytes),
        }
    }
}

impl From<wit::NativeRequest> for core::NativeRequest {
    fn from(r: wit::NativeRequest) -> Self {
        core::NativeRequest { id: r.id, bytes: r.bytes, label: r.label, timeout_ms: r.timeout_ms }
    }
}

impl From<wit::SecretFill> for core::SecretFill {
    fn from(s: wit::SecretFill) -> Self {
        core::SecretFill {
            placeholder: s.placeholder,
            source: s.source,
            args: s.args,
            fallback: s.fallback,
        }
    }
}

impl From<wit::NativeWrite> for core::NativeWrite {
    fn from(w: wit::NativeWrite) -> Self {
        core::NativeWrite { bytes: w.bytes, label: w.label, secret: w.secret.map(Into::into) }
    }
}

impl From<wit::ReplyBody> for core::ReplyBody {
    fn from(body: wit::ReplyBody) -> Self {
        match body {
            wit::ReplyBody::Ok(data) => core::ReplyBody::Ok(data.into()),
            wit::ReplyBody::Error(e) => core::ReplyBody::Error(e.into()),
            wit::ReplyBody::Lost(why) => core::ReplyBody::Lost(why),
        }
    }
}

impl From<wit::NativeReply> for core::NativeReply {
    fn from(r: wit::NativeReply) -> Self {
        core::NativeReply { id: r.id, body: r.body.into() }
    }
}

impl From<wit::Inbound> for core::Inbound {
    fn from(inbound: wit::Inbound) -> Self {
        match inbound {
            wit::Inbound::Reply(reply) => core::Inbound::Reply(reply.into()),
            wit::Inbound::Event(e) => core::Inbound::Event(core::RoutedEvent {
                route: e.route,
                payload: e.payload.into(),
            }),
            wit::Inbound::Write(write) => core::Inbound::Write(write.into()),
            wit::Inbound::Ready => core::Inbound::Ready,
            wit::Inbound::Ignored(reason) => core::Inbound::Ignored(reason),
        }
    }
}

impl From<wit::Outgoing> for core::Outgoing {
    fn from(o: wit::Outgoing) -> Self {
        core::Outgoing {
            updates: o.updates,
            routes_added: o.routes_added,
            routes_removed: o.routes_removed,
            writes: convert_all(o.writes),
            requests: convert_all(o.requests),
        }
    }
}

impl From<wit::Step> for core::Step {
    fn from(step: wit::Step) -> Self {
        match step {
            wit::Step::Wait(outgoing) => core::Step::Wait(outgoing.into()),
            wit::Step::Done(outcome) => core::Step::Done(
                outcome
                    .map(|r| core::OpResult { response: r.response, updates: r.updates })
                    .map_err(Into::into),
            ),
        }
    }
}

impl From<wit::StopReason> for core::StopReason {
    fn from(reason: wit::StopReason) -> Self {
        match reason {
            wit::StopReason::EndTurn => core::StopReason::EndTurn,
            wit::StopReason::MaxTokens => core::StopReason::MaxTokens,
            wit::StopReason::MaxTurnRequests => core::StopReason::MaxTurnRequests,
            wit::StopReason::Refusal => core::StopReason::Refusal,
            wit::StopReason::Cancelled => core::StopReason::Cancelled,
        }
    }
}

impl From<wit::Terminal> for core::Terminal {
    fn from(terminal: wit::Terminal) -> Self {
        match terminal {
            wit::Terminal::Stop(reason) => core::Terminal::Stop(reason.into()),
            wit::Terminal::Failed(e) => core::Terminal::Failed(e.into()),
            wit::Terminal::Broken(e) => core::Terminal::Broken(e.into()),
        }
    }
}

impl From<wit::InteractionRequest> for core::InteractionRequest {
    fn from(request: wit::InteractionRequest) -> Self {
        match request {
            wit::InteractionRequest::Permission(p) => {
                core::InteractionRequest::Permission(core::PermissionRequest {
                    request: p.request,
                    deny_option: p.deny_option,
                })
            }
            wit::InteractionRequest::Elicitation(form) => {
                core::InteractionRequest::Elicitation(form)
            }
            wit::InteractionRequest::Headless(what) => core::InteractionRequest::Headless(what),
        }
    }
}

impl From<wit::Action> for core::Action {
    fn from(action: wit::Action) -> Self {
        match action {
            wit::Action::Update(update) => core::Action::Update(update),
            wit::Action::Interaction(i) => core::Action::Interaction(core::Interaction {
                key: i.key,
                request: i.request.into(),
            }),
            wit::Action::Terminal(t) => core::Action::Terminal(t.into()),
            wit::Action::Ignore(name) => core::Action::Ignore(name),
        }
    }
}

impl From<wit::Effects> for core::Effects {
    fn from(e: wit::Effects) -> Self {
        core::Effects {
            actions: convert_all(e.actions),
            writes: convert_all(e.writes),
            requests: e.requests,
        }
    }
}

pub(crate) fn convert_all<W, C: From<W>>(values: Vec<W>) -> Vec<C> {
    values.into_iter().map(C::from).collect()
}

// ----- into the mapper ------------------------------------------------------------------------

impl From<core::LayoutKind> for wit::LayoutKind {
    fn from(kind: core::LayoutKind) -> Self {
        match kind {
            core::LayoutKind::Desktop => wit::LayoutKind::Desktop,
            core::LayoutKind::Runtime => wit::LayoutKind::Runtime,
        }
    }
}

impl From<&core::VerifiedInstall> for wit::VerifiedInstall {
    fn from(i: &core::VerifiedInstall) -> Self {
        wit::VerifiedInstall {
            install_root: i.install_root.clone(),
            kind: i.kind.into(),
            executable: i.executable.clone(),
            cli_entry: i.cli_entry.clone(),
            host_archive: i.host_archive.clone(),
            release_id: i.release_id.clone(),
            app_version: i.app_version.clone(),
            cli_version: i.cli_version.clone(),
            files: i.files.clone(),
            unpinned: i.unpinned.clone(),
            home: i.home.clone(),
            facts: facts(&i.facts),
        }
    }
}

impl From<core::AuthCommand> for wit::AuthCommand {
    fn from(command: core::AuthCommand) -> Self {
        match command {
            core::AuthCommand::Login => wit::AuthCommand::Login,
            core::AuthCommand::Logout => wit::AuthCommand::Logout,
        }
    }
}

impl From<core::ErrorKind> for wit::ErrorKind {
    fn from(kind: core::ErrorKind) -> Self {
        match kind {
            core::ErrorKind::InvalidParams => wit::ErrorKind::InvalidParams,
            core::ErrorKind::AuthRequired => wit::ErrorKind::AuthRequired,
            core::ErrorKind::NotFound => wit::ErrorKind::NotFound,
            core::ErrorKind::Unsupported => wit::ErrorKind::Unsupported,
            core::ErrorKind::Protocol => wit::ErrorKind::Protocol,
            core::ErrorKind::Native => wit::ErrorKind::Native,
            core::ErrorKind::Internal => wit::ErrorKind::Internal,
        }
    }
}

impl From<&core::MapperError> for wit::MapperError {
    fn from(e: &core::MapperError) -> Self {
        wit::MapperError { kind: e.kind.into(), message: e.message.clone(), data: e.data.clone() }
    }
}

impl From<&core::NativeData> for wit::NativeData {
    fn from(data: &core::NativeData) -> Self {
        data.clone().into()
    }
}

impl From<core::NativeData> for wit::NativeData {
    fn from(data: core::NativeData) -> Self {
        match data {
            core::NativeData::Text(text) => wit::NativeData::Text(text),
            core::NativeData::Binary(bytes) => wit::NativeData::Binary(bytes),
        }
    }
}

impl From<&core::NativeReply> for wit::NativeReply {
    fn from(r: &core::NativeReply) -> Self {
        r.clone().into()
    }
}

impl From<core::NativeReply> for wit::NativeReply {
    fn from(r: core::NativeReply) -> Self {
        let body = match r.body {
            core::ReplyBody::Ok(data) => wit::ReplyBody::Ok(data.into()),
            core::ReplyBody::Error(e) => wit::ReplyBody::Error((&e).into()),
            core::ReplyBody::Lost(why) => wit::ReplyBody::Lost(why),
        };
        wit::NativeReply { id: r.id, body }
    }
}

/// Moved: the core hands a batch over ([`zcode_contract::MapperSession::map`]), and an event's
/// text (up to a 1.4 MB fragment on the Services Server) is not copied before it is lowered.
impl From<core::SessionInput> for wit::SessionInput {
    fn from(input: core::SessionInput) -> Self {
        match input {
            core::SessionInput::Event(data) => wit::SessionInput::Event(data.into()),
            core::SessionInput::Reply(reply) => wit::SessionInput::Reply(reply.into()),
        }
    }
}

impl From<&core::SessionInit> for wit::SessionInit {
    fn from(init: &core::SessionInit) -> Self {
        wit::SessionInit {
            workspace: init.workspace.clone(),
            client: wit::ClientFeatures {
                plan_operations: init.client.plan_operations,
                form_elicitation: init.client.form_elicitation,
            },
            facts: facts(&init.facts),
        }
    }
}

impl From<&core::ConnectionOp> for wit::ConnectionOp {
    fn from(op: &core::ConnectionOp) -> Self {
        match op {
            core::ConnectionOp::Setup => wit::ConnectionOp::Setup,
            core::ConnectionOp::Probe(probe) => wit::ConnectionOp::Probe(wit::ProbeRequest {
                workspace: probe.workspace.clone(),
                facts: facts(&probe.facts),
            }),
            core::ConnectionOp::ListSessions(params) => {
                wit::ConnectionOp::ListSessions(params.clone())
            }
        }
    }
}

impl From<&core::SessionOp> for wit::SessionOp {
    fn from(op: &core::SessionOp) -> Self {
        match op {
            core::SessionOp::Create(p) => wit::SessionOp::Create(p.clone()),
            core::SessionOp::Load(p) => wit::SessionOp::Load(p.clone()),
            core::SessionOp::Resume(p) => wit::SessionOp::Resume(p.clone()),
            core::SessionOp::Fork(p) => wit::SessionOp::Fork(p.clone()),
            core::SessionOp::Prompt(p) => wit::SessionOp::Prompt(p.clone()),
            core::SessionOp::Cancel => wit::SessionOp::Cancel,
            core::SessionOp::FinishTurn => wit::SessionOp::FinishTurn,
            core::SessionOp::SetMode(p) => wit::SessionOp::SetMode(p.clone()),
            core::SessionOp::SetConfigOption(p) => wit::SessionOp::SetConfigOption(p.clone()),
            core::SessionOp::Answer(answer) => wit::SessionOp::Answer(answer.into()),
            core::SessionOp::Close => wit::SessionOp::Close,
        }
    }
}

impl From<&core::InteractionAnswer> for wit::InteractionAnswer {
    fn from(answer: &core::InteractionAnswer) -> Self {
        let outcome = match &answer.outcome {
            core::InteractionOutcome::Selected(option) => {
                wit::InteractionOutcome::Selected(option.clone())
            }
            core::InteractionOutcome::Elicited(response) => {
                wit::InteractionOutcome::Elicited(response.clone())
            }
            core::InteractionOutcome::Unavailable(why) => {
                wit::InteractionOutcome::Unavailable(why.clone())
            }
        };
        wit::InteractionAnswer { key: answer.key.clone(), outcome }
    }
}
