/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/hostile_dropin_mapper.d: src/lib.rs src/../../../mappers/zcode-task-v2/src/catalogue.rs src/../../../mappers/zcode-task-v2/src/contract.rs src/../../../mappers/zcode-task-v2/src/generation.rs src/../../../mappers/zcode-task-v2/src/providers.rs src/hostile.rs /work/main/tests/hostile-mapper/target/wasm32-wasip2/release/build/hostile-dropin-mapper-405e1f76e6ead2e8/out/simulator_hashes.rs src/../../../mappers/zcode-task-v2/src/../bridge/release.js

/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/hostile_dropin_mapper.wasm: src/lib.rs src/../../../mappers/zcode-task-v2/src/catalogue.rs src/../../../mappers/zcode-task-v2/src/contract.rs src/../../../mappers/zcode-task-v2/src/generation.rs src/../../../mappers/zcode-task-v2/src/providers.rs src/hostile.rs /work/main/tests/hostile-mapper/target/wasm32-wasip2/release/build/hostile-dropin-mapper-405e1f76e6ead2e8/out/simulator_hashes.rs src/../../../mappers/zcode-task-v2/src/../bridge/release.js

src/lib.rs:
src/../../../mappers/zcode-task-v2/src/catalogue.rs:
src/../../../mappers/zcode-task-v2/src/contract.rs:
src/../../../mappers/zcode-task-v2/src/generation.rs:
src/../../../mappers/zcode-task-v2/src/providers.rs:
src/hostile.rs:
/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/build/hostile-dropin-mapper-405e1f76e6ead2e8/out/simulator_hashes.rs:
src/../../../mappers/zcode-task-v2/src/../bridge/release.js:

# env-dep:OUT_DIR=/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/build/hostile-dropin-mapper-405e1f76e6ead2e8/out
