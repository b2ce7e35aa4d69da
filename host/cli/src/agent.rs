//! The default command: serve ACP on stdin/stdout (the version is chosen per connection).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use zcode_acp_server::{ServerConfig, serve, stdio};
use zcode_coordinator::CoordinatorConfig;

use crate::Target;
use crate::account::ZcodeAccount;
use crate::heap;
use crate::launcher::{Launcher, SessionHosts};

/// `cancel_grace`: how long a cancelled turn may take to end (`--cancel-grace`).
pub fn run(target: Target, cancel_grace: Duration) -> ExitCode {
    heap::keep_freed_pages();
    let launcher = match Launcher::new(target) {
        Ok(launcher) => launcher,
        Err(error) => {
            eprintln!("zcode-acp: {error}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("zcode-acp: cannot start: {error}");
            return ExitCode::FAILURE;
        }
    };
    let (transport, stdout, flow) = stdio::transport();
    let result = runtime.block_on(async {
        // SIGTERM/SIGINT/SIGHUP: take the host's process group down with us.
        if let Err(error) = zcode_bridge::install_signal_cleanup() {
            tracing::warn!(target: "zcode_acp", %error, "signal cleanup not installed");
        }
        let config = ServerConfig {
            version: env!("CARGO_PKG_VERSION").to_string(),
            coordinator: CoordinatorConfig { cancel_grace, ..CoordinatorConfig::default() },
            flow: Some(flow),
        };
        let hosts = Arc::new(SessionHosts(launcher.clone()));
        let account = Arc::new(ZcodeAccount(launcher));
        // On a worker, not on this thread's `block_on`: the connection's tasks then wake one
        // another inside the runtime instead of through a futex each time.
        let connection = tokio::spawn(serve(transport, hosts, account, config));
        connection
            .await
            .unwrap_or_else(|panic| Err(agent_client_protocol::Error::into_internal_error(panic)))
    });
    // The last frames (the answers to shutdown) must reach stdout before the process exits.
    stdout.finish(Duration::from_secs(5));
    // Blocking work still running (a first mapper compile) must not hold the exit.
    runtime.shutdown_timeout(Duration::from_millis(500));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(target: "zcode_acp", code = error.code.value(), message = %error.message, "connection failed");
            ExitCode::FAILURE
        }
    }
}
