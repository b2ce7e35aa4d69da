/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/zcode_mapper_sdk-c29ecc05c503a9c0.d: /work/main/mappers/sdk/src/lib.rs /work/main/mappers/sdk/src/component_check.rs /work/main/mappers/sdk/src/guest.rs /work/main/mappers/sdk/src/ids.rs /work/main/mappers/sdk/src/json.rs /work/main/mappers/sdk/src/log.rs /work/main/mappers/sdk/src/mapping.rs /work/main/mappers/sdk/src/media.rs /work/main/mappers/sdk/src/native.rs /work/main/mappers/sdk/src/ops.rs /work/main/mappers/sdk/src/time.rs /work/main/mappers/sdk/src/uri.rs /work/main/wit/mapper.wit

/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/libzcode_mapper_sdk-c29ecc05c503a9c0.rlib: /work/main/mappers/sdk/src/lib.rs /work/main/mappers/sdk/src/component_check.rs /work/main/mappers/sdk/src/guest.rs /work/main/mappers/sdk/src/ids.rs /work/main/mappers/sdk/src/json.rs /work/main/mappers/sdk/src/log.rs /work/main/mappers/sdk/src/mapping.rs /work/main/mappers/sdk/src/media.rs /work/main/mappers/sdk/src/native.rs /work/main/mappers/sdk/src/ops.rs /work/main/mappers/sdk/src/time.rs /work/main/mappers/sdk/src/uri.rs /work/main/wit/mapper.wit

/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/libzcode_mapper_sdk-c29ecc05c503a9c0.rmeta: /work/main/mappers/sdk/src/lib.rs /work/main/mappers/sdk/src/component_check.rs /work/main/mappers/sdk/src/guest.rs /work/main/mappers/sdk/src/ids.rs /work/main/mappers/sdk/src/json.rs /work/main/mappers/sdk/src/log.rs /work/main/mappers/sdk/src/mapping.rs /work/main/mappers/sdk/src/media.rs /work/main/mappers/sdk/src/native.rs /work/main/mappers/sdk/src/ops.rs /work/main/mappers/sdk/src/time.rs /work/main/mappers/sdk/src/uri.rs /work/main/wit/mapper.wit

/work/main/mappers/sdk/src/lib.rs:
/work/main/mappers/sdk/src/component_check.rs:
/work/main/mappers/sdk/src/guest.rs:
/work/main/mappers/sdk/src/ids.rs:
/work/main/mappers/sdk/src/json.rs:
/work/main/mappers/sdk/src/log.rs:
/work/main/mappers/sdk/src/mapping.rs:
/work/main/mappers/sdk/src/media.rs:
/work/main/mappers/sdk/src/native.rs:
/work/main/mappers/sdk/src/ops.rs:
/work/main/mappers/sdk/src/time.rs:
/work/main/mappers/sdk/src/uri.rs:
/work/main/wit/mapper.wit:
