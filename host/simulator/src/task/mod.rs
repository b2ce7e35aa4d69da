//! The task protocol generation: ZCode 3.11.2 and 3.12.3 desktop installs, whose runtime child
//! runs the bundled CLI or the host bridge (`-e <script>`). The simulated bridge script
//! endpoint (`bridge_script/`) speaks the bridge's NDJSON envelope to the simulated desktop
//! host service (`host_service/`), whose turns (`turn/`) play the shared scenarios.

pub mod bridge_script;
pub mod cli;
pub mod fault;
pub mod host_service;
pub mod profile;
pub mod turn;
