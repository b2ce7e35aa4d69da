//! The embedded components are real mapper components that the runtime accepts, and their
//! artifacts and contracts are the ones it makes of them.

use zcode_contract::{Contract, Mapper};
use zcode_mapper_runtime::{CacheOutcome, MapperRuntime, RuntimeConfig};
use zcode_precompiled_mappers::{PRECOMPILED, contract_json, precompiled};

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
        let artifact =
            precompiled(name).unwrap_or_else(|| panic!("{name} has no precompiled artifact"));
        assert!(artifact.as_ptr().addr().is_multiple_of(4096), "{name} starts on a page");
        // SAFETY: the artifact this crate's build script wrote and embeds.
        let mapper = unsafe { runtime.load_embedded(name, bytes, Some(artifact)) }
            .unwrap_or_else(|err| panic!("{err}"));
        // Where it can, the binary runs the artifact where it lies, without a copy.
        let expected = if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            CacheOutcome::EmbeddedInPlace
        } else {
            CacheOutcome::Embedded
        };
        assert_eq!(mapper.cache_outcome(), &expected, "{name}");
        assert_eq!(mapper.contract().protocol_id, *name);
        let compiled = runtime.load_bytes(name, bytes).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(compiled.cache_outcome(), &CacheOutcome::Disabled);
        assert_eq!(mapper.contract(), compiled.contract(), "{name}");
        let json = contract_json(name).expect("a contract");
        let read: Contract = serde_json::from_str(json).expect("the contract parses");
        assert_eq!(&read, mapper.contract(), "{name}: the contract read at build time");
    }
    let names: Vec<&str> = PRECOMPILED.iter().map(|(n, _)| *n).collect();
    let embedded: Vec<&str> = zcode_embedded_mappers::EMBEDDED.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, embedded);
}
