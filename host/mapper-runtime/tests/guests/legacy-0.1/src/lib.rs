//! The smallest mapper of the old contract, `zcode:mapper@0.1.0`: it loads nowhere but in a
//! 0.1 core, which is the point (see `tests/loading.rs`).

wit_bindgen::generate!({ world: "zcode-mapper", path: "../../fixtures/wit-0.1" });

use exports::zcode::mapper::mapper::{Guest, GuestConnection, GuestSession};
use zcode::mapper::types::*;

struct Legacy;

impl Guest for Legacy {
    type Connection = LegacyConnection;
    type Session = LegacySession;

    fn contract() -> Contract {
        Contract {
            protocol_id: "legacy-0.1".into(),
            description: "built for zcode:mapper@0.1.0".into(),
            layouts: vec![],
            metadata: vec![],
            metadata_platform_key: String::new(),
            metadata_entry_key: String::new(),
            artifacts: vec![],
            cli_version_probe: VersionProbe { args: vec![], env: vec![] },
            credentials_file: String::new(),
        }
    }

    fn launch_plan(_: VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        Err(unsupported())
    }

    fn auth_plan(_: VerifiedInstall, _: AuthCommand) -> Result<LaunchPlan, MapperError> {
        Err(unsupported())
    }
}

struct LegacyConnection;

impl GuestConnection for LegacyConnection {
    fn new() -> Self {
        LegacyConnection
    }

    fn push(&self, _: Vec<u8>) -> Result<Vec<Inbound>, MapperError> {
        Ok(vec![])
    }

    fn finish(&self) -> Result<Vec<Inbound>, MapperError> {
        Ok(vec![])
    }

    fn start(&self, _: u64, _: ConnectionOp, _: u64) -> Step {
        Step::Done(Err(unsupported()))
    }

    fn resume(&self, _: u64, _: NativeReply, _: u64) -> Step {
        Step::Done(Err(unsupported()))
    }
}

struct LegacySession;

impl GuestSession for LegacySession {
    fn new(_: SessionInit) -> Self {
        LegacySession
    }

    fn start(&self, _: u64, _: SessionOp, _: u64) -> Step {
        Step::Done(Err(unsupported()))
    }

    fn resume(&self, _: u64, _: NativeReply, _: u64) -> Step {
        Step::Done(Err(unsupported()))
    }

    fn map_event(&self, _: String) -> Result<Vec<Action>, MapperError> {
        Ok(vec![])
    }
}

fn unsupported() -> MapperError {
    MapperError { kind: ErrorKind::Unsupported, message: "a 0.1 test mapper".into(), data: None }
}

export!(Legacy);
