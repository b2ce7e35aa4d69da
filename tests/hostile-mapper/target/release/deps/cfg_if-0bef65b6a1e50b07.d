/work/main/tests/hostile-mapper/target/release/deps/cfg_if-0bef65b6a1e50b07.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libcfg_if-0bef65b6a1e50b07.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libcfg_if-0bef65b6a1e50b07.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs:
