/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/zcode_contract-4be28773c5bddbb8.d: /work/main/host/contract/src/lib.rs /work/main/host/contract/src/error.rs /work/main/host/contract/src/install.rs /work/main/host/contract/src/mapper.rs /work/main/host/contract/src/native.rs /work/main/host/contract/src/ops.rs /work/main/host/contract/src/platform.rs /work/main/host/contract/src/session.rs

/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/libzcode_contract-4be28773c5bddbb8.rlib: /work/main/host/contract/src/lib.rs /work/main/host/contract/src/error.rs /work/main/host/contract/src/install.rs /work/main/host/contract/src/mapper.rs /work/main/host/contract/src/native.rs /work/main/host/contract/src/ops.rs /work/main/host/contract/src/platform.rs /work/main/host/contract/src/session.rs

/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/libzcode_contract-4be28773c5bddbb8.rmeta: /work/main/host/contract/src/lib.rs /work/main/host/contract/src/error.rs /work/main/host/contract/src/install.rs /work/main/host/contract/src/mapper.rs /work/main/host/contract/src/native.rs /work/main/host/contract/src/ops.rs /work/main/host/contract/src/platform.rs /work/main/host/contract/src/session.rs

/work/main/host/contract/src/lib.rs:
/work/main/host/contract/src/error.rs:
/work/main/host/contract/src/install.rs:
/work/main/host/contract/src/mapper.rs:
/work/main/host/contract/src/native.rs:
/work/main/host/contract/src/ops.rs:
/work/main/host/contract/src/platform.rs:
/work/main/host/contract/src/session.rs:
