//! A mapper that misbehaves on request, for the runtime's sandbox tests.
//!
//! Behaviour is chosen by the input so that one component covers every case:
//! - `map` batches, by the text of their first event: `echo:<text>`, `count`, `spin`, `grow`,
//!   `panic`, `env`, `print`, `huge-string`, `string:<bytes>`, `log-flood`, `announce:<n>`
//!   (then `issue` hands out `n` requests correctly), `announce-more` and `announce-bad-ids`
//!   (then `issue` breaks the contract), `error` (a broken stream) and, with the
//!   `capabilities` feature, `fs`, `net`, `clock`. Later inputs of the batch only add bytes.
//! - session `prompt` params: `ids:<n>`, `ids-out-of-order`, `ids-wrong-start`, `spin`.
//! - a session whose workspace is `panic` panics in its constructor.
//! - connection `push` bytes: `spin`, `error`, anything else is written back.
//! - `launch-plan` / `auth-plan` with release id `panic` or `error` misbehave accordingly.

use std::cell::Cell;

wit_bindgen::generate!({ world: "zcode-mapper", path: "../../../../../wit" });

use exports::zcode::mapper::mapper::{Guest, GuestConnection, GuestSession};
use zcode::mapper::logging::{Level, log};
use zcode::mapper::types::*;

struct Hostile;

impl Guest for Hostile {
    type Connection = HostileConnection;
    type Session = HostileSession;

    fn contract() -> Contract {
        install_panic_hook();
        Contract {
            protocol_id: "hostile-test".into(),
            description: "misbehaves on request".into(),
            layouts: vec![],
            releases: vec![],
            cli_version_probe: VersionProbe { args: vec![], env: vec![] },
            credentials_file: ".hostile/creds".into(),
            credential_sources: vec![],
            offers: vec![],
            facts: vec![],
        }
    }

    fn launch_plan(install: VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        install_panic_hook();
        misbehave_on_release(&install)?;
        Ok(plan(install, "serve"))
    }

    fn auth_plan(
        install: VerifiedInstall,
        _command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        install_panic_hook();
        misbehave_on_release(&install)?;
        Ok(plan(install, "login"))
    }
}

fn plan(install: VerifiedInstall, verb: &str) -> LaunchPlan {
    LaunchPlan {
        args: vec![install.cli_entry, verb.into()],
        env: vec![],
        env_remove: vec![],
        cwd: install.install_root,
        stdin_preamble: vec![],
        needs_handshake: false,
    }
}

fn misbehave_on_release(install: &VerifiedInstall) -> Result<(), MapperError> {
    match install.release_id.as_str() {
        "panic" => panic!("asked to panic"),
        "error" => Err(error(ErrorKind::Unsupported, "asked to fail")),
        _ => Ok(()),
    }
}

// ----- connection ------------------------------------------------------------------------------

struct HostileConnection;

impl GuestConnection for HostileConnection {
    fn new() -> Self {
        install_panic_hook();
        HostileConnection
    }

    fn push(&self, bytes: Vec<u8>) -> Result<Vec<Inbound>, MapperError> {
        match bytes.as_slice() {
            b"spin" => spin(),
            b"error" => Err(error(ErrorKind::Protocol, "bad frame")),
            _ => {
                Ok(vec![Inbound::Write(NativeWrite { bytes, label: "echo".into(), secret: None })])
            }
        }
    }

    fn finish(&self) -> Result<Vec<Inbound>, MapperError> {
        Ok(vec![])
    }

    fn start(&self, _op_id: u64, op: ConnectionOp, first_request_id: u64) -> Step {
        match op {
            ConnectionOp::Probe(what) if what.workspace == "spin" => spin(),
            ConnectionOp::Probe(what) if what.workspace == "ids-out-of-order" => {
                out_of_order_step(first_request_id)
            }
            _ => done("{}"),
        }
    }

    fn resume(&self, _op_id: u64, _reply: Option<NativeReply>, _first_request_id: u64) -> Step {
        done("{}")
    }

    fn identity(&self) -> Option<String> {
        None
    }
}

// ----- session ---------------------------------------------------------------------------------

struct HostileSession {
    events: Cell<u64>,
    /// What the next `issue` does: how many requests, and whether their ids are wrong.
    pending: Cell<(u32, bool)>,
}

impl GuestSession for HostileSession {
    fn new(init: SessionInit) -> Self {
        install_panic_hook();
        if init.workspace == "panic" {
            panic!("asked to panic in the constructor");
        }
        HostileSession { events: Cell::new(0), pending: Cell::new((0, false)) }
    }

    fn start(&self, _op_id: u64, op: SessionOp, first_request_id: u64) -> Step {
        let SessionOp::Prompt(params) = op else { return done("{}") };
        if let Some(n) = params.strip_prefix("ids:") {
            return Step::Wait(requests(first_request_id, n.parse().unwrap_or(1)));
        }
        match params.as_str() {
            "ids-out-of-order" => out_of_order_step(first_request_id),
            "ids-wrong-start" => Step::Wait(requests(first_request_id + 5, 1)),
            "spin" => spin(),
            _ => done("{}"),
        }
    }

    fn resume(&self, _op_id: u64, _reply: Option<NativeReply>, _first_request_id: u64) -> Step {
        done("{}")
    }

    fn map(&self, inputs: Vec<SessionInput>) -> Effects {
        self.events.set(self.events.get() + 1);
        let behaviour = match inputs.first() {
            Some(SessionInput::Event(NativeData::Text(text))) => text.as_str(),
            _ => "",
        };
        if let Some(text) = behaviour.strip_prefix("echo:") {
            return update(text.to_string());
        }
        if let Some(n) = behaviour.strip_prefix("string:") {
            return update("x".repeat(n.parse().unwrap_or(0)));
        }
        if let Some(n) = behaviour.strip_prefix("announce:") {
            return self.announce(n.parse().unwrap_or(1), false, false);
        }
        match behaviour {
            "count" => update(self.events.get().to_string()),
            "announce-more" => self.announce(1, true, false),
            "announce-bad-ids" => self.announce(1, false, true),
            "error" => Effects {
                actions: vec![Action::Terminal(Terminal::Broken(error(
                    ErrorKind::Protocol,
                    "unknown native event",
                )))],
                writes: vec![],
                requests: 0,
            },
            "spin" => spin(),
            "grow" => grow(),
            "panic" => panic!("asked to panic"),
            "env" => update(std::env::var("HOME").unwrap_or_default()),
            "print" => {
                println!("hello from the mapper");
                update(String::new())
            }
            "huge-string" => update("x".repeat(100_000_000)),
            "log-flood" => {
                let line = "y".repeat(5000);
                for _ in 0..1000 {
                    log(Level::Info, &line);
                }
                update(String::new())
            }
            #[cfg(feature = "capabilities")]
            "fs" | "net" | "clock" => update(capabilities::use_one(behaviour)),
            _ => update("unknown test behaviour".into()),
        }
    }

    fn issue(&self, first_request_id: u64) -> Outgoing {
        let (count, wrong_ids) = self.pending.replace((0, false));
        let first = if wrong_ids { first_request_id + 1 } else { first_request_id };
        requests(first, u64::from(count))
    }
}

impl HostileSession {
    /// Announces `announced` requests; `issue` hands out one more when `more`.
    fn announce(&self, announced: u32, more: bool, wrong_ids: bool) -> Effects {
        self.pending.set((announced + u32::from(more), wrong_ids));
        Effects { actions: vec![], writes: vec![], requests: announced }
    }
}

// ----- behaviours ------------------------------------------------------------------------------

fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// Reserves linear memory in 4 MiB steps, never giving it back.
fn grow() -> ! {
    let mut kept: Vec<Vec<u8>> = Vec::new();
    loop {
        kept.push(Vec::with_capacity(4 << 20));
        std::hint::black_box(&kept);
    }
}

fn update(text: String) -> Effects {
    Effects { actions: vec![Action::Update(text)], writes: vec![], requests: 0 }
}

fn requests(first_request_id: u64, count: u64) -> Outgoing {
    let requests = (0..count)
        .map(|i| NativeRequest {
            id: first_request_id + i,
            bytes: format!("request {i}\n").into_bytes(),
            label: format!("req-{i}"),
            timeout_ms: 1000,
        })
        .collect();
    Outgoing {
        updates: vec![],
        routes_added: vec![],
        routes_removed: vec![],
        writes: vec![],
        requests,
    }
}

fn out_of_order_step(first_request_id: u64) -> Step {
    let mut outgoing = requests(first_request_id, 2);
    outgoing.requests.swap(0, 1);
    Step::Wait(outgoing)
}

fn done(response: &str) -> Step {
    Step::Done(Ok(OpResult { response: response.into(), updates: vec![] }))
}

fn error(kind: ErrorKind, message: &str) -> MapperError {
    MapperError { kind, message: message.into(), data: None }
}

/// Sends panic messages to the host log: with `panic = "abort"` the trap itself carries none.
fn install_panic_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        std::panic::set_hook(Box::new(|info| log(Level::Error, &info.to_string())));
    });
}

#[cfg(feature = "capabilities")]
mod capabilities {
    /// Code that needs WASI filesystem, sockets and clocks; its mere presence adds those imports.
    pub fn use_one(what: &str) -> String {
        let found = match what {
            "fs" => std::fs::read("/etc/hostname").map(|b| b.len().to_string()),
            "net" => std::net::TcpStream::connect("127.0.0.1:9").map(|_| "connected".into()),
            _ => Ok(format!("{:?}", std::time::SystemTime::now())),
        };
        found.unwrap_or_else(|e| e.to_string())
    }
}

export!(Hostile);
