//! The embedded components are real mapper components that the runtime accepts.

use zcode_contract::Mapper;
use zcode_mapper_runtime::{MapperRuntime, RuntimeConfig};

/// Magic number and version of a WebAssembly component (a core module has `01 00 00 00`).
const COMPONENT_HEADER: &[u8] = b"\0asm\x0d\x00\x01\x00";

#[test]
fn every_embedded_mapper_loads_and_names_its_protocol() {
    assert!(!zcode_embedded_mappers::EMBEDDED.is_empty());
    let runtime = MapperRuntime::new(RuntimeConfig::default()).expect("engine");
    for (name, bytes) in zcode_embedded_mappers::EMBEDDED {
        assert!(bytes.starts_with(COMPONENT_HEADER), "{name} is not a component");
        let mapper = runtime.load_bytes(name, bytes).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(mapper.contract().protocol_id, *name);
    }
}

#[test]
fn every_mapper_the_project_builds_is_embedded_newest_generation_first() {
    let names: Vec<&str> = zcode_embedded_mappers::EMBEDDED.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["zcode-task-v2", "zcode-task-v1", "echo-v1"]);
    assert_eq!(
        zcode_embedded_mappers::get("zcode-task-v1"),
        Some(zcode_embedded_mappers::ZCODE_TASK_V1)
    );
    assert_eq!(zcode_embedded_mappers::get("zcode-host-3.12"), None);
}
