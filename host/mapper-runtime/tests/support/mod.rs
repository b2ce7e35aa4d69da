//! Shared by the integration tests: builds the test guests once per test binary, and guards
//! calls against hanging.

#![allow(dead_code)] // each test binary uses a different part

#[path = "../../../embedded-mappers/guest_build.rs"]
mod guest_build;

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use zcode_contract::{
    ClientFeatures, Effects, Mapper, MapperFault, MapperSession, NativeData, SessionInit,
    SessionInput,
};
use zcode_mapper_runtime::{MapperRuntime, RuntimeConfig, WasmMapper};

/// The hostile guest as a component (see `tests/guests/hostile`).
pub fn hostile() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| build_guest("hostile", &[]))
}

/// The hostile guest built with code that imports WASI filesystem, sockets and clocks.
pub fn hostile_with_capabilities() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| build_guest("hostile", &["capabilities"]))
}

/// The well-behaved guest that exercises every shape (see `tests/guests/conformance`).
pub fn conformance() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| build_guest("conformance", &[]))
}

/// A mapper built against the old WIT, `zcode:mapper@0.1.0` (see `tests/guests/legacy-0.1`).
pub fn legacy_0_1() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| build_guest("legacy-0.1", &[]))
}

fn build_guest(name: &str, features: &[&str]) -> Vec<u8> {
    let manifest =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/guests").join(name).join("Cargo.toml");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guests");
    let build = guest_build::GuestBuild {
        cargo: std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into()),
        manifest: &manifest,
        target_dir: &target_dir,
        features,
    };
    let component = build.run().unwrap_or_else(|message| panic!("{message}"));
    std::fs::read(&component).expect("read the built guest")
}

pub fn runtime() -> MapperRuntime {
    runtime_with(RuntimeConfig::default())
}

pub fn runtime_with(config: RuntimeConfig) -> MapperRuntime {
    MapperRuntime::new(config).expect("engine")
}

pub fn load_hostile(runtime: &MapperRuntime) -> Arc<WasmMapper> {
    runtime.load_bytes("hostile", hostile()).expect("load the hostile guest")
}

pub fn load_conformance(runtime: &MapperRuntime) -> Arc<WasmMapper> {
    runtime.load_bytes("conformance", conformance()).expect("load the conformance guest")
}

pub fn init(workspace: &str) -> SessionInit {
    SessionInit {
        facts: Default::default(),
        workspace: workspace.to_string(),
        client: ClientFeatures { plan_operations: true, form_elicitation: false },
    }
}

pub fn session(mapper: &WasmMapper) -> Box<dyn MapperSession> {
    mapper.session(&init("/work/space")).expect("new session")
}

/// A text event.
pub fn event(text: &str) -> SessionInput {
    SessionInput::Event(NativeData::Text(text.to_string()))
}

/// Maps one text event.
pub fn map_one(session: &mut dyn MapperSession, text: &str) -> Result<Effects, MapperFault> {
    session.map(vec![event(text)])
}

/// Effects with just these updates.
pub fn updates(texts: &[&str]) -> Effects {
    Effects::from_actions(
        texts.iter().map(|text| zcode_contract::Action::Update(text.to_string())).collect(),
    )
}

/// Runs `f` on another thread and fails the test if it does not return within a generous
/// bound. Only a hang guard: a misbehaving mapper must be stopped by its limits long before.
pub fn within_bound<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = done.send(f());
    });
    match result.recv_timeout(Duration::from_secs(120)) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the worker returned without sending"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the call did not return: hang"),
    }
}
