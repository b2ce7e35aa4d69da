/work/main/tests/hostile-mapper/target/release/deps/equivalent-24dc0d48d9551ee4.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libequivalent-24dc0d48d9551ee4.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libequivalent-24dc0d48d9551ee4.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs:
