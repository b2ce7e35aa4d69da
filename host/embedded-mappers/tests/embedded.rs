//! The embedded components: every mapper of the mappers workspace, in order, and the examples
//! apart (`host/precompiled-mappers` checks that the runtime accepts each).

/// Magic number and version of a WebAssembly component (a core module has `01 00 00 00`).
const COMPONENT_HEADER: &[u8] = b"\0asm\x0d\x00\x01\x00";

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
