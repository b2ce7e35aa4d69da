//! What a built mapper component must look like before the runtime would load it: a
//! WebAssembly component that imports the core's log and none of the capabilities the sandbox
//! withholds. `tests/components.rs` checks every component of the mappers workspace with it.

/// Import families the sandbox withholds (clocks, randomness, files, sockets).
pub const FORBIDDEN_IMPORTS: [&str; 4] =
    ["wasi:clocks", "wasi:random", "wasi:filesystem", "wasi:sockets"];

/// The import every mapper has: the core's log.
pub const LOGGING_IMPORT: &str = "zcode:mapper/logging@0.4.0";

/// The export the core instantiates.
pub const MAPPER_EXPORT: &str = "zcode:mapper/mapper@0.4.0";

/// Magic number and version of a WebAssembly component (a core module has `01 00 00 00`).
const COMPONENT_HEADER: &[u8] = b"\0asm\x0d\x00\x01\x00";

/// Whether the component's bytes contain `name` (import and export names are plain strings in
/// the binary).
pub fn names(component: &[u8], name: &str) -> bool {
    component.windows(name.len()).any(|window| window == name.as_bytes())
}

/// Checks a component's bytes; the error says what is wrong.
pub fn check(component: &[u8]) -> Result<(), String> {
    if !component.starts_with(COMPONENT_HEADER) {
        return Err("not a WebAssembly component".to_string());
    }
    // The log import proves the name scan sees imports at all.
    for name in [LOGGING_IMPORT, MAPPER_EXPORT] {
        if !names(component, name) {
            return Err(format!("does not name {name}"));
        }
    }
    let found: Vec<&str> =
        FORBIDDEN_IMPORTS.into_iter().filter(|name| names(component, name)).collect();
    if !found.is_empty() {
        return Err(format!("imports {}, which the sandbox withholds", found.join(", ")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(parts: &[&str]) -> Vec<u8> {
        let mut bytes = COMPONENT_HEADER.to_vec();
        for part in parts {
            bytes.extend_from_slice(part.as_bytes());
        }
        bytes
    }

    #[test]
    fn accepts_only_components_with_the_log_and_nothing_withheld() {
        assert_eq!(check(&component(&[LOGGING_IMPORT, MAPPER_EXPORT])), Ok(()));
        assert_eq!(check(b"\0asm\x01\x00\x00\x00").unwrap_err(), "not a WebAssembly component");
        assert_eq!(
            check(&component(&[MAPPER_EXPORT])).unwrap_err(),
            "does not name zcode:mapper/logging@0.4.0"
        );
        assert_eq!(
            check(&component(&[LOGGING_IMPORT, MAPPER_EXPORT, "wasi:random/random@0.3.0"]))
                .unwrap_err(),
            "imports wasi:random, which the sandbox withholds"
        );
    }
}
