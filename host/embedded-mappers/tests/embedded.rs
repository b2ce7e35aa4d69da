//! The embedded components are real mapper components that the runtime accepts.

use zcode_contract::{Contract, Mapper};
use zcode_mapper_runtime::{CacheOutcome, MapperRuntime, RuntimeConfig};

/// Magic number and version of a WebAssembly component (a core module has `01 00 00 00`).
const COMPONENT_HEADER: &[u8] = b"\0asm\x0d\x00\x01\x00";

/// Each component loads (compiled here) and names its protocol. The build precompiled it with
/// the settings of the engine that loads it: its artifact loads without the compiler (on a CPU
/// below x86-64-v2 it would not, by design) and is the same mapper.
#[test]
fn every_embedded_mapper_loads_compiled_and_precompiled_and_names_its_protocol() {
    assert!(!zcode_embedded_mappers::EMBEDDED.is_empty());
    let runtime = MapperRuntime::new(RuntimeConfig::default()).expect("engine");
    for (name, bytes) in zcode_embedded_mappers::EMBEDDED {
        assert!(bytes.starts_with(COMPONENT_HEADER), "{name} is not a component");
        let artifact = zcode_embedded_mappers::precompiled(name)
            .unwrap_or_else(|| panic!("{name} has no precompiled artifact"));
        // SAFETY: the artifact this crate's build script wrote and embeds.
        let mapper = unsafe { runtime.load_embedded(name, bytes, Some(artifact)) }
            .unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(mapper.cache_outcome(), &CacheOutcome::Embedded, "{name}");
        assert_eq!(mapper.contract().protocol_id, *name);
        let compiled = runtime.load_bytes(name, bytes).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(compiled.cache_outcome(), &CacheOutcome::Disabled);
        assert_eq!(mapper.contract(), compiled.contract(), "{name}");
        let json = zcode_embedded_mappers::contract_json(name).expect("a contract");
        let read: Contract = serde_json::from_str(json).expect("the contract parses");
        assert_eq!(&read, mapper.contract(), "{name}: the contract read at build time");
    }
    let names: Vec<&str> = zcode_embedded_mappers::PRECOMPILED.iter().map(|(n, _)| *n).collect();
    let embedded: Vec<&str> = zcode_embedded_mappers::EMBEDDED.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, embedded);
}

#[test]
fn every_mapper_the_project_builds_is_embedded_newest_generation_first() {
    let names: Vec<&str> = zcode_embedded_mappers::EMBEDDED.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["zcode-services-v4", "zcode-app-server", "zcode-task-v2", "zcode-task-v1"]);
    assert_eq!(
        zcode_embedded_mappers::get("zcode-task-v1"),
        Some(zcode_embedded_mappers::ZCODE_TASK_V1)
    );
    assert_eq!(zcode_embedded_mappers::get("zcode-host-3.12"), None);
}

#[test]
fn examples_are_built_but_not_embedded() {
    assert_eq!(zcode_embedded_mappers::get("echo-v1"), None);
    let echo = zcode_embedded_mappers::example("echo-v1").expect("the echo example is built");
    let bytes = std::fs::read(echo).unwrap();
    assert!(bytes.starts_with(COMPONENT_HEADER));
}
