//! How many bytes of strings and byte lists a mapper call returned, for the output limit.

use wasmtime::component::ResourceAny;
use zcode_contract::{
    Action, Artifact, Contract, FileCheck, Inbound, Interaction, InteractionRequest, LaunchPlan,
    Layout, MapperError, NativeReply, NativeRequest, OpResult, Outgoing, PermissionRequest,
    ReplyBody, RoutedEvent, Step, Terminal, VersionProbe,
};

/// Total bytes of the strings and lists in a value returned by a mapper.
pub(crate) trait OutputSize {
    fn output_size(&self) -> usize;
}

impl OutputSize for String {
    fn output_size(&self) -> usize {
        self.len()
    }
}

impl OutputSize for u8 {
    fn output_size(&self) -> usize {
        1
    }
}

impl OutputSize for ResourceAny {
    fn output_size(&self) -> usize {
        0
    }
}

impl<T: OutputSize> OutputSize for Vec<T> {
    fn output_size(&self) -> usize {
        self.iter().map(OutputSize::output_size).sum()
    }
}

impl<T: OutputSize> OutputSize for Option<T> {
    fn output_size(&self) -> usize {
        self.as_ref().map_or(0, OutputSize::output_size)
    }
}

impl<T: OutputSize, E: OutputSize> OutputSize for Result<T, E> {
    fn output_size(&self) -> usize {
        match self {
            Ok(value) => value.output_size(),
            Err(error) => error.output_size(),
        }
    }
}

impl<A: OutputSize, B: OutputSize> OutputSize for (A, B) {
    fn output_size(&self) -> usize {
        self.0.output_size() + self.1.output_size()
    }
}

/// Sums the listed fields of a struct.
macro_rules! fields_size {
    ($type:ty: $($field:ident),+) => {
        impl OutputSize for $type {
            fn output_size(&self) -> usize {
                0 $(+ self.$field.output_size())+
            }
        }
    };
}

fields_size!(Layout: executable, cli_entry, metadata, host_archive);
fields_size!(FileCheck: role, path, sha256, required_exports);
fields_size!(Artifact: id, app_version, cli_version, cli_sha256, files);
fields_size!(VersionProbe: args, env);
fields_size!(Contract: protocol_id, description, layouts, metadata, metadata_platform_key,
    metadata_entry_key, artifacts, cli_version_probe, credentials_file);
fields_size!(LaunchPlan: program, args, env, cwd, stdin_preamble);
fields_size!(MapperError: message, data);
fields_size!(NativeRequest: bytes, label);
fields_size!(NativeReply: body);
fields_size!(RoutedEvent: route, payload);
fields_size!(Outgoing: routes_added, routes_removed, requests);
fields_size!(OpResult: response, updates);
fields_size!(Interaction: key, request);
fields_size!(PermissionRequest: request, deny_option);

impl OutputSize for ReplyBody {
    fn output_size(&self) -> usize {
        match self {
            ReplyBody::Ok(text) | ReplyBody::Lost(text) => text.output_size(),
            ReplyBody::Error(error) => error.output_size(),
        }
    }
}

impl OutputSize for Inbound {
    fn output_size(&self) -> usize {
        match self {
            Inbound::Reply(reply) => reply.output_size(),
            Inbound::Event(event) => event.output_size(),
            Inbound::Write(bytes) => bytes.output_size(),
            Inbound::Ready => 0,
            Inbound::Ignored(reason) => reason.output_size(),
        }
    }
}

impl OutputSize for Step {
    fn output_size(&self) -> usize {
        match self {
            Step::Wait(outgoing) => outgoing.output_size(),
            Step::Done(outcome) => outcome.output_size(),
        }
    }
}

impl OutputSize for Action {
    fn output_size(&self) -> usize {
        match self {
            Action::Update(text) | Action::Ignore(text) => text.output_size(),
            Action::Interaction(interaction) => interaction.output_size(),
            Action::Terminal(terminal) => terminal.output_size(),
        }
    }
}

impl OutputSize for InteractionRequest {
    fn output_size(&self) -> usize {
        match self {
            InteractionRequest::Permission(request) => request.output_size(),
            InteractionRequest::Elicitation(text) | InteractionRequest::Headless(text) => {
                text.output_size()
            }
        }
    }
}

impl OutputSize for Terminal {
    fn output_size(&self) -> usize {
        match self {
            Terminal::Stop(_) => 0,
            Terminal::Failed(error) | Terminal::Broken(error) => error.output_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zcode_contract::ErrorKind;

    #[test]
    fn counts_every_string_and_byte_list() {
        let step = Step::Wait(Outgoing {
            routes_added: vec!["ab".into()],
            routes_removed: vec!["c".into()],
            requests: vec![NativeRequest {
                id: 1,
                bytes: vec![0; 10],
                label: "xyz".into(),
                timeout_ms: 5,
            }],
        });
        assert_eq!(step.output_size(), 2 + 1 + 10 + 3);

        let actions = vec![
            Action::Update("12345".into()),
            Action::Terminal(Terminal::Broken(MapperError {
                kind: ErrorKind::Protocol,
                message: "1234".into(),
                data: Some("12".into()),
            })),
        ];
        assert_eq!(actions.output_size(), 5 + 4 + 2);
    }
}
