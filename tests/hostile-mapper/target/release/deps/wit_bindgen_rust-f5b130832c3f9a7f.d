/work/main/tests/hostile-mapper/target/release/deps/wit_bindgen_rust-f5b130832c3f9a7f.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/bindgen.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/interface.rs

/work/main/tests/hostile-mapper/target/release/deps/libwit_bindgen_rust-f5b130832c3f9a7f.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/bindgen.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/interface.rs

/work/main/tests/hostile-mapper/target/release/deps/libwit_bindgen_rust-f5b130832c3f9a7f.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/bindgen.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/interface.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/bindgen.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-0.63.0/src/interface.rs:

# env-dep:CARGO_PKG_NAME=wit-bindgen-rust
# env-dep:CARGO_PKG_VERSION=0.63.0
