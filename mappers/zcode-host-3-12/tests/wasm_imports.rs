//! The built component must not reach for capabilities the sandbox withholds: clocks,
//! randomness, the filesystem or sockets would trap (or be refused) at load time.
//!
//! Needs the release component, so it runs on request:
//! `cargo build --target wasm32-wasip2 --release && cargo test --test wasm_imports -- --ignored`
//! (`ZCODE_HOST_3_12_WASM` may name the component file instead).

use std::path::PathBuf;

const FORBIDDEN: [&str; 4] = ["wasi:clocks", "wasi:random", "wasi:filesystem", "wasi:sockets"];

fn component_path() -> PathBuf {
    if let Ok(path) = std::env::var("ZCODE_HOST_3_12_WASM") {
        return PathBuf::from(path);
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("wasm32-wasip2/release/zcode_host_3_12.wasm")
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
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
    assert!(contains(&bytes, "zcode:mapper/host"), "the component should import the host log");
    let found: Vec<&str> = FORBIDDEN.into_iter().filter(|name| contains(&bytes, name)).collect();
    assert!(found.is_empty(), "the component imports {found:?}");
}
