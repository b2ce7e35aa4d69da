//! Artifacts precompiled ahead of time (`precompile`, what the build does for the embedded
//! mappers) and loaded with `load_embedded`: used when wasmtime accepts them, else the
//! component is compiled (through the cache when there is one), with a debug log, never a
//! failure.

mod support;

use std::sync::{Arc, Mutex};

use support::{hostile, map_one, runtime, runtime_with, session, updates};
use zcode_mapper_runtime::{CacheOutcome, RuntimeConfig, WasmMapper, precompile};

/// This machine's Rust target, close enough for wasmtime (it compares architecture and OS).
fn this_target() -> String {
    let os = match std::env::consts::OS {
        "macos" => "apple-darwin",
        "windows" => "pc-windows-msvc",
        _ => "unknown-linux-gnu",
    };
    format!("{}-{os}", std::env::consts::ARCH)
}

/// A target of this architecture (the only one this build's Cranelift compiles for) and
/// another OS.
fn foreign_target() -> (String, &'static str) {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "windows" => (format!("{arch}-unknown-linux-gnu"), "linux"),
        _ => (format!("{arch}-pc-windows-msvc"), "windows"),
    }
}

/// `bytes` for the rest of the test run, as `load_embedded` wants an artifact.
fn leaked(bytes: Vec<u8>) -> &'static [u8] {
    bytes.leak()
}

/// A copy of `bytes` starting on a page, as the binary embeds its artifacts.
fn page_aligned(bytes: &[u8]) -> &'static [u8] {
    let layout = std::alloc::Layout::from_size_align(bytes.len(), 4096).unwrap();
    // SAFETY: a non-empty layout; the memory is filled before it is read, and leaked.
    unsafe {
        let memory = std::alloc::alloc(layout);
        assert!(!memory.is_null());
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), memory, bytes.len());
        std::slice::from_raw_parts(memory, bytes.len())
    }
}

fn works(mapper: &WasmMapper) {
    assert_eq!(map_one(session(mapper).as_mut(), "echo:x"), Ok(updates(&["x"])));
}

#[test]
fn an_artifact_for_this_machine_is_loaded_without_compiling_or_caching() {
    let artifact =
        precompile(&RuntimeConfig::default(), &this_target(), hostile()).expect("precompile");
    // Copied: a heap allocation this size does not start on a page.
    let artifact = leaked(artifact);
    assert!(!artifact.as_ptr().addr().is_multiple_of(4096));
    let cache = tempfile::tempdir().unwrap();
    let runtime = runtime_with(RuntimeConfig {
        cache_dir: Some(cache.path().to_path_buf()),
        ..RuntimeConfig::default()
    });
    // SAFETY (here and below): artifacts `precompile` just wrote in this test.
    let mapper = unsafe { runtime.load_embedded("hostile", hostile(), Some(artifact)) }.unwrap();
    assert_eq!(mapper.cache_outcome(), &CacheOutcome::Embedded);
    works(&mapper);
    // The sandbox is the engine's, not the artifact's: fuel still stops a loop.
    let fault = map_one(session(&mapper).as_mut(), "spin").unwrap_err();
    assert!(fault.0.contains("all fuel consumed"), "{fault}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "nothing was compiled");
}

/// An artifact that starts on a page runs where it lies on x86-64 Linux: its code pages are
/// made executable in place, it maps as a copy does, the sandbox still meters it, and its bytes
/// stay readable and unchanged. Elsewhere it is copied.
#[test]
fn a_page_aligned_artifact_runs_in_place() {
    let built =
        precompile(&RuntimeConfig::default(), &this_target(), hostile()).expect("precompile");
    let artifact = page_aligned(&built);
    let runtime = runtime();
    // SAFETY: an artifact `precompile` just wrote, in leaked memory nothing else uses.
    let mapper = unsafe { runtime.load_embedded("hostile", hostile(), Some(artifact)) }.unwrap();
    let expected = if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        CacheOutcome::EmbeddedInPlace
    } else {
        CacheOutcome::Embedded
    };
    assert_eq!(mapper.cache_outcome(), &expected);
    works(&mapper);
    let fault = map_one(session(&mapper).as_mut(), "spin").unwrap_err();
    assert!(fault.0.contains("all fuel consumed"), "{fault}");
    // Loaded again, by this runtime and while the first is in use, it is the same code; by
    // another runtime (wasmtime registers code by address, once per process), it is copied.
    let again = unsafe { runtime.load_embedded("hostile", hostile(), Some(artifact)) }.unwrap();
    assert_eq!(again.cache_outcome(), &expected);
    works(&again);
    let other = support::runtime();
    let copied = unsafe { other.load_embedded("hostile", hostile(), Some(artifact)) }.unwrap();
    assert_eq!(copied.cache_outcome(), &CacheOutcome::Embedded);
    works(&copied);
    drop((mapper, again, copied, runtime, other));
    assert_eq!(artifact, &built[..]);
}

#[test]
fn an_artifact_wasmtime_refuses_falls_back_to_compiling_with_a_debug_log() {
    let (foreign, foreign_os) = foreign_target();
    let artifact = precompile(&RuntimeConfig::default(), &foreign, hostile()).expect("precompile");
    let artifact = page_aligned(&artifact);
    let lines = Arc::new(Mutex::new(Vec::<u8>::new()));
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let lines = lines.clone();
            move || CaptureWriter(lines.clone())
        })
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    let cache = tempfile::tempdir().unwrap();
    let cached = runtime_with(RuntimeConfig {
        cache_dir: Some(cache.path().to_path_buf()),
        ..RuntimeConfig::default()
    });
    tracing::subscriber::with_default(subscriber, || {
        // Compiled and stored in the cache, then taken from it.
        let mapper = unsafe { cached.load_embedded("hostile", hostile(), Some(artifact)) }.unwrap();
        assert_eq!(mapper.cache_outcome(), &CacheOutcome::Miss);
        works(&mapper);
        let mapper = unsafe { cached.load_embedded("hostile", hostile(), Some(artifact)) }.unwrap();
        assert_eq!(mapper.cache_outcome(), &CacheOutcome::Hit);
        works(&mapper);
        // Bytes that are no artifact at all, and no artifact: compiled.
        let plain = runtime();
        // Not even an ELF file: refused by wasmtime's header check before any of it is used.
        let garbage = b"not an artifact";
        let mapper = unsafe { plain.load_embedded("hostile", hostile(), Some(garbage)) }.unwrap();
        assert_eq!(mapper.cache_outcome(), &CacheOutcome::Disabled);
        works(&mapper);
        let mapper = unsafe { plain.load_embedded("hostile", hostile(), None) }.unwrap();
        assert_eq!(mapper.cache_outcome(), &CacheOutcome::Disabled);
    });
    let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
    let refused: Vec<&str> =
        text.lines().filter(|line| line.contains("does not fit this engine")).collect();
    assert_eq!(refused.len(), 3, "two foreign artifacts and the garbage: {text}");
    assert!(refused.iter().all(|line| line.contains("DEBUG")), "{text}");
    let reason = format!("compiled for operating system '{foreign_os}'");
    assert!(refused[0].contains(&reason), "{text}");
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
