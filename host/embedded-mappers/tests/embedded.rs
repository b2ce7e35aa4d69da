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
fn the_newest_generation_is_listed_first() {
    let (name, bytes) = zcode_embedded_mappers::EMBEDDED[0];
    assert_eq!(name, "zcode-task-v1");
    assert_eq!(bytes, zcode_embedded_mappers::ZCODE_TASK_V1);
}
