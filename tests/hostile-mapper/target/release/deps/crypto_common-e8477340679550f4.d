/work/main/tests/hostile-mapper/target/release/deps/crypto_common-e8477340679550f4.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crypto-common-0.1.7/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libcrypto_common-e8477340679550f4.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crypto-common-0.1.7/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libcrypto_common-e8477340679550f4.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crypto-common-0.1.7/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/crypto-common-0.1.7/src/lib.rs:
