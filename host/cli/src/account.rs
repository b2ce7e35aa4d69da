//! Signing in and out with ZCode's own CLI, run under ZCode's runtime as the mapper says.

use std::process::{ExitCode, Stdio};
use std::sync::Arc;

use agent_client_protocol::BoxFuture;
use zcode_acp_server::Account;
use zcode_contract::AuthCommand;
use zcode_coordinator::{CoordinatorError, FailureKind};
use zcode_discovery::{Authentication, authentication_presence};

use crate::Target;
use crate::launcher::Launcher;

pub struct ZcodeAccount(pub Arc<Launcher>);

impl Account for ZcodeAccount {
    fn signed_in(&self) -> BoxFuture<'static, Result<bool, CoordinatorError>> {
        let launcher = self.0.clone();
        Box::pin(async move {
            let selected = launcher.select().await?;
            let mapper = launcher
                .mapper(&selected)
                .map_err(|e| CoordinatorError::failed(FailureKind::Mappers, e))?;
            let home = dirs::home_dir();
            let presence =
                authentication_presence(home.as_deref(), &mapper.contract().credentials_file);
            Ok(presence == Authentication::Present)
        })
    }

    fn logout(&self) -> BoxFuture<'static, Result<(), CoordinatorError>> {
        let launcher = self.0.clone();
        Box::pin(async move {
            let status = tokio::task::spawn_blocking(move || {
                // Logout needs no terminal; its output must not reach our stdout (ACP frames).
                run_auth(&launcher, AuthCommand::Logout, Stdio::null(), Stdio::null())
            })
            .await
            .map_err(|e| CoordinatorError::failed(FailureKind::Logout, e.to_string()))??;
            if status.success() {
                Ok(())
            } else {
                Err(CoordinatorError::failed(
                    FailureKind::Logout,
                    format!("ZCode logout failed ({status})"),
                ))
            }
        })
    }
}

/// `zcode-acp login` / `logout`: ZCode's own command, interactive, on this terminal.
pub fn run_command(target: &Target, command: AuthCommand) -> ExitCode {
    let result = Launcher::new(target.clone())
        .map_err(CoordinatorError::InvalidParams)
        .and_then(|launcher| run_auth(&launcher, command, Stdio::inherit(), Stdio::inherit()));
    match result {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            eprintln!("zcode-acp: ZCode {command:?} failed ({status})");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("zcode-acp: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the mapper's auth plan for the verified install and waits for it (blocking).
fn run_auth(
    launcher: &Arc<Launcher>,
    command: AuthCommand,
    stdout: Stdio,
    stderr: Stdio,
) -> Result<std::process::ExitStatus, CoordinatorError> {
    let discovery =
        launcher.discover().map_err(|e| CoordinatorError::failed(FailureKind::Mappers, e))?;
    let selected = crate::launcher::selected_or_error(discovery)?;
    let mapper = launcher
        .mapper(&selected)
        .map_err(|e| CoordinatorError::failed(FailureKind::Mappers, e))?;
    let plan = mapper.auth_plan(&selected.install, command)?;
    let program = zcode_bridge::verified_executable(&selected.install)
        .map_err(|e| CoordinatorError::failed(FailureKind::Auth, e.to_string()))?;
    let mut login = std::process::Command::new(program);
    for name in &plan.env_remove {
        login.env_remove(name);
    }
    login
        .args(&plan.args)
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&plan.cwd)
        .stdin(Stdio::inherit())
        .stdout(stdout)
        .stderr(stderr)
        .status()
        .map_err(|e| CoordinatorError::failed(FailureKind::Auth, format!("cannot run ZCode: {e}")))
}
