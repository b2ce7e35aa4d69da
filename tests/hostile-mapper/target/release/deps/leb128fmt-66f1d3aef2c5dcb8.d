/work/main/tests/hostile-mapper/target/release/deps/leb128fmt-66f1d3aef2c5dcb8.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/leb128fmt-0.1.0/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libleb128fmt-66f1d3aef2c5dcb8.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/leb128fmt-0.1.0/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libleb128fmt-66f1d3aef2c5dcb8.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/leb128fmt-0.1.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/leb128fmt-0.1.0/src/lib.rs:
