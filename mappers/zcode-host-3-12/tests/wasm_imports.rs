//! The built component must not reach for capabilities the sandbox withholds: clocks,
//! randomness, the filesystem or sockets would trap (or be refused) at load time.
//!
//! Needs the release component, so it runs on request:
//! `cargo build --target wasm32-wasip2 --release && cargo test --test wasm_imports -- --ignored`
//! (`ZCODE_HOST_3_12_WASM` may name the component file instead).

use zcode_host_common::component_check::{FORBIDDEN_IMPORTS, names, release_component};

fn component_path() -> std::path::PathBuf {
    release_component(env!("CARGO_MANIFEST_DIR"), "zcode_host_3_12.wasm", "ZCODE_HOST_3_12_WASM")
}

#[test]
#[ignore = "needs the wasm32-wasip2 release build; run with --ignored"]
fn component_imports_no_clock_random_filesystem_or_socket() {
    let path = component_path();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (build it with cargo build --target wasm32-wasip2 --release)",
            path.display()
        )
    });
    assert!(bytes.starts_with(b"\0asm"), "{} is not WebAssembly", path.display());
    // Import names are plain strings in the binary; the host import proves the scan sees them.
    assert!(names(&bytes, "zcode:mapper/host"), "the component should import the host log");
    let found: Vec<&str> =
        FORBIDDEN_IMPORTS.into_iter().filter(|name| names(&bytes, name)).collect();
    assert!(found.is_empty(), "the component imports {found:?}");
}
