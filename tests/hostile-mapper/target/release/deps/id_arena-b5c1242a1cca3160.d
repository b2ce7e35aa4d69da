/work/main/tests/hostile-mapper/target/release/deps/id_arena-b5c1242a1cca3160.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/id-arena-2.3.0/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libid_arena-b5c1242a1cca3160.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/id-arena-2.3.0/src/lib.rs

/work/main/tests/hostile-mapper/target/release/deps/libid_arena-b5c1242a1cca3160.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/id-arena-2.3.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/id-arena-2.3.0/src/lib.rs:
