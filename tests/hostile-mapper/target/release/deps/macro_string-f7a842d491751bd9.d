/work/main/tests/hostile-mapper/target/release/deps/macro_string-f7a842d491751bd9.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/macro-string-0.3.0/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libmacro_string-f7a842d491751bd9.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/macro-string-0.3.0/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libmacro_string-f7a842d491751bd9.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/macro-string-0.3.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/macro-string-0.3.0/src/lib.rs:
