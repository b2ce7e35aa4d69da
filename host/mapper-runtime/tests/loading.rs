//! Loading: the WIT version gate (real components of 0.1 and 0.2), bad input, and the
//! precompiled cache (hits, and entries that must not be trusted).

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use support::{hostile, legacy_0_1, map_one, runtime, runtime_with, session, updates};
use zcode_contract::Mapper;
use zcode_mapper_runtime::{
    CacheOutcome, LoadFailure, MapperRuntime, RuntimeConfig, WasmMapper, WitAge,
};

fn replace_all(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "same length keeps the binary's sizes valid");
    let mut out = bytes.to_vec();
    let mut replaced = 0;
    let mut at = 0;
    while let Some(found) = out[at..].windows(from.len()).position(|w| w == from) {
        let start = at + found;
        out[start..start + to.len()].copy_from_slice(to);
        at = start + to.len();
        replaced += 1;
    }
    assert!(replaced > 0, "pattern not found");
    out
}

#[test]
fn a_mapper_built_for_wit_0_1_is_refused_saying_so() {
    let err = runtime().load_bytes("old.wasm", legacy_0_1()).err().expect("refused");
    assert!(matches!(&err.failure, LoadFailure::WitVersion { age: WitAge::Older, .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot load mapper old.wasm: it speaks WIT zcode:mapper@0.1.0, but this core \
             speaks {}: rebuild the mapper against this core's wit/mapper.wit",
            zcode_contract::WIT_PACKAGE
        )
    );
}

/// The hostile guest with every interface name of its package (it exports `mapper` and
/// imports `types` and `logging`) at another version.
fn with_wit_version(version: &[u8; 5]) -> Vec<u8> {
    let mut bytes = hostile().to_vec();
    for interface in [&b"mapper"[..], b"types", b"logging"] {
        let name = |v: &[u8]| [b"zcode:mapper/", interface, b"@", v].concat();
        bytes = replace_all(&bytes, &name(b"0.4.0"), &name(version));
    }
    bytes
}

#[test]
fn a_mapper_built_for_a_later_wit_is_refused_saying_so() {
    let err = runtime().load_bytes("new.wasm", &with_wit_version(b"0.5.0")).err().expect("refused");
    assert_eq!(
        err.to_string(),
        "cannot load mapper new.wasm: it speaks WIT zcode:mapper@0.5.0, but this core speaks \
         zcode:mapper@0.4.0: the mapper needs a newer zcode-acp"
    );
}

#[test]
fn a_compatible_patch_version_loads() {
    let mapper = runtime().load_bytes("patch.wasm", &with_wit_version(b"0.4.9")).expect("0.4.9");
    assert_eq!(map_one(session(&mapper).as_mut(), "echo:ok"), Ok(updates(&["ok"])));
}

#[test]
fn a_component_that_is_not_a_mapper_is_refused_saying_so() {
    // The smallest valid component: the preamble of a component binary, nothing in it.
    let empty = b"\0asm\x0d\x00\x01\x00";
    let err = runtime().load_bytes("empty.wasm", empty).err().expect("refused");
    assert!(matches!(err.failure, LoadFailure::NotAMapper(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "cannot load mapper empty.wasm: it does not export the zcode:mapper/mapper interface \
         (it exports nothing)"
    );
}

#[test]
fn bytes_that_are_not_a_component_are_refused() {
    let err = runtime().load_bytes("junk", b"not wasm at all").err().expect("refused");
    assert!(matches!(err.failure, LoadFailure::Invalid(_)), "{err}");
    assert!(err.to_string().starts_with("cannot load mapper junk: not a valid WebAssembly"));
}

#[test]
fn a_missing_file_is_reported_with_its_path() {
    let err = runtime().load_file(Path::new("/nonexistent/m.wasm")).err().expect("refused");
    assert!(matches!(err.failure, LoadFailure::Read(_)), "{err}");
    assert!(err.to_string().starts_with("cannot load mapper /nonexistent/m.wasm: cannot read"));
}

#[test]
fn load_file_names_the_mapper_by_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.wasm");
    fs::write(&path, hostile()).unwrap();
    let mapper = runtime().load_file(&path).expect("load");
    assert_eq!(mapper.source(), path.display().to_string());
    assert_eq!(mapper.contract().protocol_id, "hostile-test");
    assert_eq!(mapper.cache_outcome(), &CacheOutcome::Disabled);
}

// ----- the precompiled cache -------------------------------------------------------------------

fn cached_runtime(dir: &Path) -> MapperRuntime {
    runtime_with(RuntimeConfig { cache_dir: Some(dir.to_path_buf()), ..RuntimeConfig::default() })
}

fn load(dir: &Path) -> std::sync::Arc<WasmMapper> {
    let mapper = cached_runtime(dir).load_bytes("hostile", hostile()).expect("load");
    // Whatever the cache did, the mapper works.
    assert_eq!(map_one(session(&mapper).as_mut(), "echo:x"), Ok(updates(&["x"])));
    mapper
}

/// A fresh cache directory holding a valid entry for the hostile guest. The entry is compiled
/// once per test binary and copied (compiling takes seconds in a debug build).
fn seeded_cache() -> tempfile::TempDir {
    static SEED: OnceLock<tempfile::TempDir> = OnceLock::new();
    let seed = SEED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).cache_outcome(), &CacheOutcome::Miss);
        dir
    });
    let dir = tempfile::tempdir().unwrap();
    for file in fs::read_dir(seed.path()).unwrap() {
        let file = file.unwrap();
        fs::copy(file.path(), dir.path().join(file.file_name())).unwrap();
    }
    dir
}

/// The single entry's (artifact, sidecar) paths.
fn entry(dir: &Path) -> (PathBuf, PathBuf) {
    let mut artifacts: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(artifacts.len(), 1, "one entry: {artifacts:?}");
    let artifact = artifacts.remove(0);
    let sidecar = artifact.with_extension("meta");
    assert!(sidecar.is_file());
    (artifact, sidecar)
}

fn assert_replaced(outcome: &CacheOutcome, reason: &str) {
    match outcome {
        CacheOutcome::Replaced(why) => assert!(why.contains(reason), "{why}"),
        other => panic!("expected a replaced entry ({reason}), got {other:?}"),
    }
}

#[test]
fn the_second_load_of_the_same_bytes_hits_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("nested/mappers");
    assert_eq!(load(&cache).cache_outcome(), &CacheOutcome::Miss);
    assert_eq!(load(&cache).cache_outcome(), &CacheOutcome::Hit);

    let (artifact, sidecar) = entry(&cache);
    let stem = artifact.file_stem().unwrap().to_str().unwrap();
    assert_eq!(stem.len(), 64, "the key is a SHA-256");
    let meta = fs::read_to_string(&sidecar).unwrap();
    assert!(meta.contains(&format!("key {stem}\n")), "{meta}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&artifact), 0o600);
        assert_eq!(mode(&sidecar), 0o600);
        assert_eq!(mode(&cache), 0o700);
    }
    let leftovers: Vec<_> = fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn other_bytes_get_another_entry() {
    let dir = seeded_cache();
    let other = replace_all(hostile(), b"hostile-test", b"hostile-TEST");
    let mapper = cached_runtime(dir.path()).load_bytes("other", &other).expect("load");
    assert_eq!(mapper.cache_outcome(), &CacheOutcome::Miss);
    assert_eq!(mapper.contract().protocol_id, "hostile-TEST");
}

#[test]
fn a_corrupt_artifact_is_ignored_and_rebuilt() {
    let dir = seeded_cache();
    let (artifact, _) = entry(dir.path());
    let mut bytes = fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&artifact, bytes).unwrap();

    assert_replaced(load(dir.path()).cache_outcome(), "the sidecar does not match the artifact");
    assert_eq!(load(dir.path()).cache_outcome(), &CacheOutcome::Hit, "the rebuilt entry is used");
}

#[test]
fn a_truncated_artifact_is_ignored_and_rebuilt() {
    let dir = seeded_cache();
    let (artifact, _) = entry(dir.path());
    let bytes = fs::read(&artifact).unwrap();
    fs::write(&artifact, &bytes[..bytes.len() / 3]).unwrap();

    assert_replaced(load(dir.path()).cache_outcome(), "the sidecar does not match the artifact");
    assert_eq!(load(dir.path()).cache_outcome(), &CacheOutcome::Hit);
}

#[test]
fn an_entry_with_a_stale_key_is_ignored() {
    let dir = seeded_cache();
    let (artifact, sidecar) = entry(dir.path());
    let stem = artifact.file_stem().unwrap().to_str().unwrap().to_string();
    let meta = fs::read_to_string(&sidecar).unwrap();
    fs::write(&sidecar, meta.replace(&stem, &"0".repeat(64))).unwrap();

    assert_replaced(load(dir.path()).cache_outcome(), "the sidecar does not match the artifact");
    assert_eq!(load(dir.path()).cache_outcome(), &CacheOutcome::Hit);
}

#[test]
fn an_artifact_without_its_sidecar_is_ignored() {
    let dir = seeded_cache();
    let (_, sidecar) = entry(dir.path());
    fs::remove_file(sidecar).unwrap();

    assert_replaced(load(dir.path()).cache_outcome(), "cannot read the sidecar");
    assert_eq!(load(dir.path()).cache_outcome(), &CacheOutcome::Hit);
}

#[test]
fn an_artifact_wasmtime_refuses_is_ignored_even_with_a_matching_sidecar() {
    let dir = seeded_cache();
    let (artifact, sidecar) = entry(dir.path());
    // Consistent sidecar, but the bytes are not a precompiled component.
    let junk = b"\x7fELF this is not a wasmtime artifact".to_vec();
    let meta = fs::read_to_string(&sidecar).unwrap();
    let digest: String = Sha256::digest(&junk).iter().map(|b| format!("{b:02x}")).collect();
    let meta: String = meta
        .lines()
        .map(|line| match line.split_once(' ') {
            Some(("artifact-len", _)) => format!("artifact-len {}\n", junk.len()),
            Some(("artifact-sha256", _)) => format!("artifact-sha256 {digest}\n"),
            _ => format!("{line}\n"),
        })
        .collect();
    fs::write(&artifact, &junk).unwrap();
    fs::write(&sidecar, meta).unwrap();

    assert_replaced(load(dir.path()).cache_outcome(), "wasmtime refused the artifact");
    assert_eq!(load(dir.path()).cache_outcome(), &CacheOutcome::Hit);
}

#[test]
fn an_unwritable_cache_only_costs_compilation() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("file-not-dir");
    fs::write(&blocked, b"").unwrap();
    assert_eq!(load(&blocked).cache_outcome(), &CacheOutcome::Miss);
    assert_eq!(load(&blocked).cache_outcome(), &CacheOutcome::Miss);
}
