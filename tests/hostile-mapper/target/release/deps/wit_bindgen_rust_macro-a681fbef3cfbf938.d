/work/main/tests/hostile-mapper/target/release/deps/wit_bindgen_rust_macro-a681fbef3cfbf938.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-macro-0.63.0/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libwit_bindgen_rust_macro-a681fbef3cfbf938.so: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-macro-0.63.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wit-bindgen-rust-macro-0.63.0/src/lib.rs:

# env-dep:DEBUG_OUTPUT_DIR=/work/main/tests/hostile-mapper/target/release/build/wit-bindgen-rust-macro-0a24e0e1381ded7a/out
