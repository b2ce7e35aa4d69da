//! A misbehaving mapper fails only the instance it runs in, with a clear fault, within its
//! limits; the process, other sessions of the same mapper and fresh sessions carry on.

mod support;

use std::sync::{Arc, Mutex, OnceLock};

use support::{init, load_hostile, map_one, runtime, runtime_with, session, updates, within_bound};
use zcode_contract::{ErrorKind, Inbound, LayoutKind, Mapper, NativeWrite, VerifiedInstall};
use zcode_mapper_runtime::{FuelBudget, LoadFailure, RuntimeConfig, WasmMapper};

/// One loaded hostile mapper for the tests that use the default limits.
fn mapper() -> Arc<WasmMapper> {
    static MAPPER: OnceLock<Arc<WasmMapper>> = OnceLock::new();
    MAPPER.get_or_init(|| load_hostile(&runtime())).clone()
}

/// Maps `behaviour` in one session while a second session of the same mapper is mid-stream;
/// returns the fault message after checking the isolation guarantees.
fn fault_in_one_session(mapper: Arc<WasmMapper>, behaviour: &'static str) -> String {
    within_bound(move || {
        let mut victim = session(&mapper);
        let mut bystander = session(&mapper);
        assert_eq!(map_one(bystander.as_mut(), "count"), Ok(updates(&["1"])));

        let fault =
            map_one(victim.as_mut(), behaviour).expect_err("the misbehaviour must fail the call");

        let refused =
            map_one(victim.as_mut(), "echo:again").expect_err("a failed instance is not reused");
        assert!(refused.0.contains("failed earlier"), "{refused}");
        assert!(refused.0.contains(&fault.0), "the refusal names the first failure: {refused}");
        let kept = map_one(bystander.as_mut(), "count");
        assert_eq!(kept, Ok(updates(&["2"])), "the bystander kept its state");
        assert_eq!(map_one(session(&mapper).as_mut(), "echo:fresh"), Ok(updates(&["fresh"])));
        fault.0
    })
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let fault = fault_in_one_session(mapper(), "spin");
    assert!(fault.starts_with("mapper trapped: all fuel consumed (CPU limit of "), "{fault}");
    assert!(fault.ends_with(" for this call)"), "{fault}");
}

#[test]
fn the_fuel_budget_is_configurable() {
    let fuel = FuelBudget { base: 1_000_000, per_byte: 0, per_input: 0 };
    let mapper = load_hostile(&runtime_with(RuntimeConfig { fuel, ..RuntimeConfig::default() }));
    let fault = fault_in_one_session(mapper, "spin");
    assert_eq!(fault, "mapper trapped: all fuel consumed (CPU limit of 1000000 for this call)");
}

#[test]
fn growing_memory_past_the_cap_fails() {
    let fault = fault_in_one_session(mapper(), "grow");
    assert!(fault.starts_with("memory limit of 64.0 MiB for this call exceeded"), "{fault}");
}

#[test]
fn the_memory_cap_is_configurable() {
    let memory = zcode_mapper_runtime::SizeBudget { base: 16 << 20, per_byte: 8 };
    let config = RuntimeConfig { memory, ..RuntimeConfig::default() };
    let mapper = load_hostile(&runtime_with(config));
    let fault = fault_in_one_session(mapper, "grow");
    assert!(fault.starts_with("memory limit of 16.0 MiB for this call exceeded"), "{fault}");
}

#[test]
fn a_100_mb_result_cannot_even_be_built() {
    let fault = fault_in_one_session(mapper(), "huge-string");
    assert!(fault.starts_with("memory limit of 64.0 MiB for this call exceeded"), "{fault}");
}

#[test]
fn output_over_the_output_limit_is_refused() {
    let output = zcode_mapper_runtime::SizeBudget { base: 1 << 20, per_byte: 4 };
    let config = RuntimeConfig { output, ..RuntimeConfig::default() };
    let mapper = load_hostile(&runtime_with(config));
    within_bound({
        let mapper = mapper.clone();
        move || {
            let mapped = map_one(session(&mapper).as_mut(), "string:1000");
            assert_eq!(mapped, Ok(updates(&["x".repeat(1000).as_str()])));
        }
    });
    let fault = fault_in_one_session(mapper, "string:2000000");
    assert_eq!(
        fault,
        "mapper returned 2000000 bytes in one call, over the output limit of 1.0 MiB for this call"
    );
}

#[test]
fn a_panic_traps() {
    let fault = fault_in_one_session(mapper(), "panic");
    assert_eq!(
        fault,
        "mapper trapped: wasm `unreachable` executed (a panic or abort in the mapper)"
    );
}

#[test]
fn reading_the_environment_traps() {
    let fault = fault_in_one_session(mapper(), "env");
    assert!(fault.starts_with("mapper trapped: unknown import: `wasi:cli/environment"), "{fault}");
}

#[test]
fn printing_traps() {
    let fault = fault_in_one_session(mapper(), "print");
    assert!(fault.starts_with("mapper trapped: unknown import: `wasi:cli/"), "{fault}");
}

#[test]
fn a_panic_in_the_session_constructor_fails_only_that_session() {
    let mapper = mapper();
    within_bound(move || {
        let fault = mapper.session(&init("panic")).err().expect("the constructor trapped");
        assert!(fault.0.contains("wasm `unreachable` executed"), "{fault}");
        assert_eq!(map_one(session(&mapper).as_mut(), "echo:ok"), Ok(updates(&["ok"])));
    });
}

#[test]
fn a_connection_fault_fails_the_transport_and_later_calls() {
    let mapper = mapper();
    within_bound(move || {
        let mut connection = mapper.connection().expect("connection");
        let error = connection.push(b"spin").expect_err("spinning fails the push");
        assert_eq!(error.kind, ErrorKind::Internal);
        assert!(error.message.contains("all fuel consumed"), "{error:?}");
        let refused = connection.finish().expect_err("a failed instance is not reused");
        assert!(refused.message.contains("failed earlier"), "{refused:?}");
        let mut fresh = mapper.connection().expect("connection");
        let echoed = Inbound::Write(NativeWrite::new("echo", b"abc".to_vec()));
        assert_eq!(fresh.push(b"abc"), Ok(vec![echoed]));
    });
}

#[test]
fn launch_plans_run_in_fresh_instances() {
    let mapper = mapper();
    within_bound(move || {
        let mut install = sample_install();
        install.release_id = "panic".into();
        let error = mapper.launch_plan(&install).expect_err("the mapper panicked");
        assert_eq!(error.kind, ErrorKind::Internal);
        assert!(error.message.contains("wasm `unreachable` executed"), "{error:?}");
        install.release_id = "hostile-1".into();
        assert!(mapper.launch_plan(&install).is_ok(), "the next call gets a fresh instance");
    });
}

#[test]
fn sessions_on_other_threads_keep_working_while_one_spins() {
    let mapper = mapper();
    within_bound(move || {
        let spinner = {
            let mapper = mapper.clone();
            std::thread::spawn(move || map_one(session(&mapper).as_mut(), "spin"))
        };
        let mut worker = session(&mapper);
        for n in 1..=200 {
            assert_eq!(map_one(worker.as_mut(), "count"), Ok(updates(&[n.to_string().as_str()])));
        }
        let fault = spinner.join().expect("the spinning thread survives").unwrap_err();
        assert!(fault.0.contains("all fuel consumed"), "{fault}");
    });
}

#[test]
fn mapper_logs_are_bounded_in_size_and_number() {
    let lines = Arc::new(Mutex::new(Vec::<u8>::new()));
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let lines = lines.clone();
            move || CaptureWriter(lines.clone())
        })
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let mapper = mapper();
    within_bound(move || {
        tracing::subscriber::with_default(subscriber, || {
            let mut flooder = session(&mapper);
            assert_eq!(map_one(flooder.as_mut(), "log-flood"), Ok(updates(&[""])));
            let fine = map_one(flooder.as_mut(), "echo:still fine");
            assert_eq!(fine, Ok(updates(&["still fine"])));
        })
    });
    let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
    let forwarded = text.lines().filter(|line| line.contains("yyyy")).count();
    assert_eq!(forwarded, 200, "at most 200 lines per call");
    assert!(text.contains("800 more mapper log lines dropped"), "{text:.300}");
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 2048 + 300, "lines are truncated, longest {longest}");
    assert!(text.contains("(2952 bytes truncated)"));
}

struct CaptureWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CaptureWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_mapper_importing_files_sockets_or_clocks_is_refused_at_load() {
    let err = runtime()
        .load_bytes("hostile+capabilities", support::hostile_with_capabilities())
        .err()
        .expect("refused");
    let LoadFailure::ForbiddenImports(refused) = &err.failure else {
        panic!("wrong failure: {err}");
    };
    for family in ["wasi:filesystem/", "wasi:sockets/", "wasi:clocks/"] {
        assert!(refused.iter().any(|name| name.starts_with(family)), "{family} in {refused:?}");
    }
    assert!(refused.iter().all(|name| !name.starts_with("wasi:cli/")), "{refused:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("cannot load mapper hostile+capabilities: it imports"),
        "{message}"
    );
    assert!(message.contains("wasi:filesystem/preopens@"), "{message}");
}

fn sample_install() -> VerifiedInstall {
    VerifiedInstall {
        facts: Default::default(),
        install_root: "/opt/zcode".into(),
        kind: LayoutKind::Runtime,
        executable: "/opt/zcode/bin/node".into(),
        cli_entry: "/opt/zcode/cli.js".into(),
        host_archive: "/opt/zcode".into(),
        release_id: "hostile-1".into(),
        app_version: "1.0.0".into(),
        cli_version: "1.0.0".into(),
        files: vec![("host-index".into(), "/opt/zcode/host/index.js".into())],
        unpinned: vec![],
        home: "/home/user".into(),
    }
}
