//! How many bytes of strings and byte lists a value holds: what a call hands a mapper (its CPU
//! budget grows with it) and what a call returns (the output limit counts it).

use wasmtime::component::ResourceAny;
use zcode_contract::{
    Action, ClientFeatures, ConnectionOp, Contract, CredentialEncoding, CredentialLookup,
    CredentialSource, DataFile, DesktopLayout, Effects, ErrorKind, FactKind, FactSource, FactValue,
    FilePin, Inbound, Interaction, InteractionAnswer, InteractionOutcome, InteractionRequest,
    JsonFact, LaunchPlan, Layout, LayoutKind, MapperError, NativeData, NativeReply, NativeRequest,
    NativeWrite, OpResult, Os, Outgoing, PermissionRequest, Presence, PresenceFact, ProbeRequest,
    Release, ReplyBody, RoutedEvent, RuntimeLayout, SecretFill, SessionInit, SessionInput,
    SessionOp, Step, StopReason, Terminal, VerifiedInstall, VersionProbe,
};

/// Total bytes of the strings and byte lists in a value. Every string and byte list counts,
/// labels and reasons included: the output limit must see everything a call returns.
pub(crate) trait ByteSize {
    fn byte_size(&self) -> usize;
}

impl ByteSize for String {
    fn byte_size(&self) -> usize {
        self.len()
    }
}

impl ByteSize for u8 {
    fn byte_size(&self) -> usize {
        1
    }
}

impl<T: ByteSize> ByteSize for [T] {
    fn byte_size(&self) -> usize {
        self.iter().map(ByteSize::byte_size).sum()
    }
}

impl<T: ByteSize> ByteSize for Vec<T> {
    fn byte_size(&self) -> usize {
        self.as_slice().byte_size()
    }
}

impl<T: ByteSize> ByteSize for Option<T> {
    fn byte_size(&self) -> usize {
        self.as_ref().map_or(0, ByteSize::byte_size)
    }
}

impl<T: ByteSize + ?Sized> ByteSize for &T {
    fn byte_size(&self) -> usize {
        (**self).byte_size()
    }
}

impl<T: ByteSize, E: ByteSize> ByteSize for Result<T, E> {
    fn byte_size(&self) -> usize {
        match self {
            Ok(value) => value.byte_size(),
            Err(error) => error.byte_size(),
        }
    }
}

impl<A: ByteSize, B: ByteSize> ByteSize for (A, B) {
    fn byte_size(&self) -> usize {
        self.0.byte_size() + self.1.byte_size()
    }
}

/// Values without strings or byte lists.
macro_rules! no_bytes {
    ($($type:ty),+) => {
        $(impl ByteSize for $type {
            fn byte_size(&self) -> usize {
                0
            }
        })+
    };
}

no_bytes!(ResourceAny, bool, u32, u64, Os, LayoutKind, ErrorKind, StopReason, ClientFeatures);

impl ByteSize for CredentialEncoding {
    fn byte_size(&self) -> usize {
        match self {
            CredentialEncoding::Plain => 0,
            CredentialEncoding::AesGcm(form) => {
                form.prefix.byte_size() + form.key_env.byte_size() + form.fallback_seed.byte_size()
            }
            CredentialEncoding::Unreadable(prefix) => prefix.byte_size(),
        }
    }
}

/// Sums the listed fields of a struct.
macro_rules! fields_size {
    ($type:ty: $($field:ident),+) => {
        impl ByteSize for $type {
            fn byte_size(&self) -> usize {
                0 $(+ self.$field.byte_size())+
            }
        }
    };
}

fields_size!(DesktopLayout: executable, cli_entry, metadata, metadata_pairs,
    metadata_platform_key, metadata_entry_key, host_archive);
fields_size!(RuntimeLayout: runtime_dir, package_file, package_pairs, cli_entry,
    node_candidates, min_node_version);
fields_size!(FilePin: role, path, sha256, required_exports);
fields_size!(Release: id, app_version, cli_version, files, identity, data_files);
fields_size!(DataFile: role, path);
fields_size!(FactSource: name, kind);
fields_size!(JsonFact: file, pointer);
fields_size!(PresenceFact: source, args);
fields_size!(VersionProbe: args, env);
fields_size!(CredentialSource: name, file, key, lookups, encodings);
fields_size!(CredentialLookup: name, key, field);
fields_size!(Contract: protocol_id, description, layouts, releases, cli_version_probe,
    credentials_file, credential_sources, offers, facts);
fields_size!(VerifiedInstall: install_root, executable, cli_entry, host_archive, release_id,
    app_version, cli_version, files, unpinned, home, facts);
fields_size!(LaunchPlan: args, env, env_remove, cwd, stdin_preamble);
fields_size!(MapperError: message, data);
fields_size!(NativeRequest: bytes, label);
fields_size!(NativeWrite: bytes, label, secret);
fields_size!(SecretFill: placeholder, source, args, fallback);
fields_size!(NativeReply: body);
fields_size!(RoutedEvent: route, payload);
fields_size!(Outgoing: updates, routes_added, routes_removed, writes, requests);
fields_size!(OpResult: response, updates);
fields_size!(Effects: actions, writes);
fields_size!(Interaction: key, request);
fields_size!(PermissionRequest: request, deny_option);
fields_size!(SessionInit: workspace, facts);
fields_size!(ProbeRequest: workspace, facts);

impl ByteSize for FactKind {
    fn byte_size(&self) -> usize {
        match self {
            FactKind::InstallJson(json) | FactKind::UserJson(json) => json.byte_size(),
            FactKind::InstallPath(role) => role.byte_size(),
            FactKind::CredentialPresence(presence) => presence.byte_size(),
        }
    }
}

impl ByteSize for FactValue {
    fn byte_size(&self) -> usize {
        match self {
            FactValue::Json(json) => json.byte_size(),
            FactValue::Presence(Presence::Unreadable(why)) => why.byte_size(),
            FactValue::Presence(_) => 0,
        }
    }
}
fields_size!(InteractionAnswer: key, outcome);

impl ByteSize for Layout {
    fn byte_size(&self) -> usize {
        match self {
            Layout::Desktop(desktop) => desktop.byte_size(),
            Layout::Runtime(runtime) => runtime.byte_size(),
        }
    }
}

impl ByteSize for NativeData {
    fn byte_size(&self) -> usize {
        self.len()
    }
}

impl ByteSize for ReplyBody {
    fn byte_size(&self) -> usize {
        match self {
            ReplyBody::Ok(data) => data.byte_size(),
            ReplyBody::Error(error) => error.byte_size(),
            ReplyBody::Lost(reason) => reason.byte_size(),
        }
    }
}

impl ByteSize for Inbound {
    fn byte_size(&self) -> usize {
        match self {
            Inbound::Reply(reply) => reply.byte_size(),
            Inbound::Event(event) => event.byte_size(),
            Inbound::Write(write) => write.byte_size(),
            Inbound::Ready => 0,
            Inbound::Ignored(reason) => reason.byte_size(),
        }
    }
}

impl ByteSize for Step {
    fn byte_size(&self) -> usize {
        match self {
            Step::Wait(outgoing) => outgoing.byte_size(),
            Step::Done(outcome) => outcome.byte_size(),
        }
    }
}

impl ByteSize for Action {
    fn byte_size(&self) -> usize {
        match self {
            Action::Update(text) | Action::Ignore(text) => text.byte_size(),
            Action::Interaction(interaction) => interaction.byte_size(),
            Action::Terminal(terminal) => terminal.byte_size(),
        }
    }
}

impl ByteSize for InteractionRequest {
    fn byte_size(&self) -> usize {
        match self {
            InteractionRequest::Permission(request) => request.byte_size(),
            InteractionRequest::Elicitation(text) | InteractionRequest::Headless(text) => {
                text.byte_size()
            }
        }
    }
}

impl ByteSize for Terminal {
    fn byte_size(&self) -> usize {
        match self {
            Terminal::Stop(_) => 0,
            Terminal::Failed(error) | Terminal::Broken(error) => error.byte_size(),
        }
    }
}

impl ByteSize for SessionInput {
    fn byte_size(&self) -> usize {
        match self {
            SessionInput::Event(data) => data.byte_size(),
            SessionInput::Reply(reply) => reply.byte_size(),
        }
    }
}

impl ByteSize for ConnectionOp {
    fn byte_size(&self) -> usize {
        match self {
            ConnectionOp::Setup => 0,
            ConnectionOp::Probe(probe) => probe.byte_size(),
            ConnectionOp::ListSessions(text) => text.byte_size(),
        }
    }
}

impl ByteSize for SessionOp {
    fn byte_size(&self) -> usize {
        match self {
            SessionOp::Create(params)
            | SessionOp::Load(params)
            | SessionOp::Resume(params)
            | SessionOp::Fork(params)
            | SessionOp::Prompt(params)
            | SessionOp::SetMode(params)
            | SessionOp::SetConfigOption(params) => params.byte_size(),
            SessionOp::Answer(answer) => answer.byte_size(),
            SessionOp::Cancel | SessionOp::FinishTurn | SessionOp::Close => 0,
        }
    }
}

impl ByteSize for InteractionOutcome {
    fn byte_size(&self) -> usize {
        match self {
            InteractionOutcome::Selected(text)
            | InteractionOutcome::Elicited(text)
            | InteractionOutcome::Unavailable(text) => text.byte_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_string_and_byte_list() {
        let write = NativeWrite {
            bytes: vec![0; 4],
            label: "ack".into(),
            secret: Some(SecretFill {
                placeholder: "@@".into(),
                source: "key".into(),
                args: vec![("a".into(), "bc".into())],
                fallback: vec![1; 5],
            }),
        };
        assert_eq!(write.byte_size(), 4 + 3 + 2 + 3 + 3 + 5);
        let step = Step::Wait(Outgoing {
            updates: vec!["{}".into()],
            routes_added: vec!["ab".into()],
            routes_removed: vec!["c".into()],
            writes: vec![write],
            requests: vec![NativeRequest {
                id: 1,
                bytes: vec![0; 10],
                label: "xyz".into(),
                timeout_ms: 5,
            }],
        });
        assert_eq!(step.byte_size(), 2 + 2 + 1 + 20 + 10 + 3);

        let effects = Effects {
            actions: vec![
                Action::Update("12345".into()),
                Action::Terminal(Terminal::Broken(MapperError {
                    kind: ErrorKind::Protocol,
                    message: "1234".into(),
                    data: Some("12".into()),
                })),
            ],
            writes: vec![NativeWrite::new("l", vec![9; 7])],
            requests: 3,
        };
        assert_eq!(effects.byte_size(), 5 + 4 + 2 + 1 + 7);
        assert_eq!(Some("identity".to_string()).byte_size(), 8);
    }

    #[test]
    fn counts_what_goes_in() {
        let inputs = [
            SessionInput::Event(NativeData::Binary(vec![0; 6])),
            SessionInput::Reply(NativeReply { id: 1, body: ReplyBody::Lost("gone".into()) }),
        ];
        assert_eq!(inputs.byte_size(), 6 + 4);
        assert_eq!(SessionOp::Prompt("{\"p\":1}".into()).byte_size(), 7);
        assert_eq!(SessionOp::Cancel.byte_size(), 0);
        assert_eq!(b"abc"[..].byte_size(), 3);
    }
}
