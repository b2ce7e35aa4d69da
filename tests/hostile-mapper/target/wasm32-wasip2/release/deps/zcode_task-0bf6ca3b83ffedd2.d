/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/zcode_task-0bf6ca3b83ffedd2.d: /work/main/mappers/zcode-task/src/lib.rs /work/main/mappers/zcode-task/src/bridge.rs /work/main/mappers/zcode-task/src/connection.rs /work/main/mappers/zcode-task/src/envelope.rs /work/main/mappers/zcode-task/src/events.rs /work/main/mappers/zcode-task/src/history.rs /work/main/mappers/zcode-task/src/install.rs /work/main/mappers/zcode-task/src/interactions/mod.rs /work/main/mappers/zcode-task/src/interactions/headers.rs /work/main/mappers/zcode-task/src/interactions/permission.rs /work/main/mappers/zcode-task/src/interactions/plan.rs /work/main/mappers/zcode-task/src/interactions/questions.rs /work/main/mappers/zcode-task/src/launch.rs /work/main/mappers/zcode-task/src/ops.rs /work/main/mappers/zcode-task/src/plan.rs /work/main/mappers/zcode-task/src/prompt.rs /work/main/mappers/zcode-task/src/session.rs /work/main/mappers/zcode-task/src/settings.rs /work/main/mappers/zcode-task/src/state.rs /work/main/mappers/zcode-task/src/tools.rs /work/main/mappers/zcode-task/src/../bridge/core.js

/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/libzcode_task-0bf6ca3b83ffedd2.rlib: /work/main/mappers/zcode-task/src/lib.rs /work/main/mappers/zcode-task/src/bridge.rs /work/main/mappers/zcode-task/src/connection.rs /work/main/mappers/zcode-task/src/envelope.rs /work/main/mappers/zcode-task/src/events.rs /work/main/mappers/zcode-task/src/history.rs /work/main/mappers/zcode-task/src/install.rs /work/main/mappers/zcode-task/src/interactions/mod.rs /work/main/mappers/zcode-task/src/interactions/headers.rs /work/main/mappers/zcode-task/src/interactions/permission.rs /work/main/mappers/zcode-task/src/interactions/plan.rs /work/main/mappers/zcode-task/src/interactions/questions.rs /work/main/mappers/zcode-task/src/launch.rs /work/main/mappers/zcode-task/src/ops.rs /work/main/mappers/zcode-task/src/plan.rs /work/main/mappers/zcode-task/src/prompt.rs /work/main/mappers/zcode-task/src/session.rs /work/main/mappers/zcode-task/src/settings.rs /work/main/mappers/zcode-task/src/state.rs /work/main/mappers/zcode-task/src/tools.rs /work/main/mappers/zcode-task/src/../bridge/core.js

/work/main/tests/hostile-mapper/target/wasm32-wasip2/release/deps/libzcode_task-0bf6ca3b83ffedd2.rmeta: /work/main/mappers/zcode-task/src/lib.rs /work/main/mappers/zcode-task/src/bridge.rs /work/main/mappers/zcode-task/src/connection.rs /work/main/mappers/zcode-task/src/envelope.rs /work/main/mappers/zcode-task/src/events.rs /work/main/mappers/zcode-task/src/history.rs /work/main/mappers/zcode-task/src/install.rs /work/main/mappers/zcode-task/src/interactions/mod.rs /work/main/mappers/zcode-task/src/interactions/headers.rs /work/main/mappers/zcode-task/src/interactions/permission.rs /work/main/mappers/zcode-task/src/interactions/plan.rs /work/main/mappers/zcode-task/src/interactions/questions.rs /work/main/mappers/zcode-task/src/launch.rs /work/main/mappers/zcode-task/src/ops.rs /work/main/mappers/zcode-task/src/plan.rs /work/main/mappers/zcode-task/src/prompt.rs /work/main/mappers/zcode-task/src/session.rs /work/main/mappers/zcode-task/src/settings.rs /work/main/mappers/zcode-task/src/state.rs /work/main/mappers/zcode-task/src/tools.rs /work/main/mappers/zcode-task/src/../bridge/core.js

/work/main/mappers/zcode-task/src/lib.rs:
/work/main/mappers/zcode-task/src/bridge.rs:
/work/main/mappers/zcode-task/src/connection.rs:
/work/main/mappers/zcode-task/src/envelope.rs:
/work/main/mappers/zcode-task/src/events.rs:
/work/main/mappers/zcode-task/src/history.rs:
/work/main/mappers/zcode-task/src/install.rs:
/work/main/mappers/zcode-task/src/interactions/mod.rs:
/work/main/mappers/zcode-task/src/interactions/headers.rs:
/work/main/mappers/zcode-task/src/interactions/permission.rs:
/work/main/mappers/zcode-task/src/interactions/plan.rs:
/work/main/mappers/zcode-task/src/interactions/questions.rs:
/work/main/mappers/zcode-task/src/launch.rs:
/work/main/mappers/zcode-task/src/ops.rs:
/work/main/mappers/zcode-task/src/plan.rs:
/work/main/mappers/zcode-task/src/prompt.rs:
/work/main/mappers/zcode-task/src/session.rs:
/work/main/mappers/zcode-task/src/settings.rs:
/work/main/mappers/zcode-task/src/state.rs:
/work/main/mappers/zcode-task/src/tools.rs:
/work/main/mappers/zcode-task/src/../bridge/core.js:
