//! Turning a mapper's launch plan into a command, refusing anything but the verified executable.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;
use zcode_contract::{LaunchPlan, VerifiedInstall};

use crate::error::BridgeError;

/// The executable to run: `plan.program` joined to the install root must resolve (after
/// following symlinks) to exactly the verified executable. The verified path is what gets
/// spawned, so a later change of what `program` points at cannot swap the binary.
pub fn verified_program(
    plan: &LaunchPlan,
    install: &VerifiedInstall,
) -> Result<PathBuf, BridgeError> {
    let refused = || BridgeError::ProgramRefused {
        program: plan.program.clone(),
        executable: install.executable.clone(),
    };
    let program = Path::new(&plan.program);
    if plan.program.is_empty() || program.is_absolute() {
        return Err(refused());
    }
    let resolved =
        Path::new(&install.install_root).join(program).canonicalize().map_err(|_| refused())?;
    let executable = Path::new(&install.executable).canonicalize().map_err(|_| refused())?;
    if resolved == executable { Ok(executable) } else { Err(refused()) }
}

/// The command for `program` as the plan describes it: args, the plan's env on top of the
/// inherited one, the plan's working directory, all three stdio streams piped, and (unix) a
/// process group of its own so the whole tree can be signalled at once.
pub(crate) fn command(program: &Path, plan: &LaunchPlan) -> Result<Command, BridgeError> {
    if !Path::new(&plan.cwd).is_absolute() {
        return Err(BridgeError::InvalidPlan(format!(
            "working directory `{}` is not absolute",
            plan.cwd
        )));
    }
    let mut command = Command::new(program);
    command
        .args(&plan.args)
        .envs(plan.env.iter().map(|(key, value)| (key, value)))
        .current_dir(&plan.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    command.process_group(0);
    // Without process groups the child handle is the only way to kill it (see docs).
    #[cfg(not(unix))]
    command.kill_on_drop(true);
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(program: &str) -> LaunchPlan {
        LaunchPlan {
            program: program.into(),
            args: vec![],
            env: vec![],
            cwd: "/".into(),
            stdin_preamble: vec![],
            needs_handshake: false,
        }
    }

    /// `/bin/sh` exists on every unix test machine; whatever it links to is the "executable".
    fn install() -> VerifiedInstall {
        let executable = Path::new("/bin/sh").canonicalize().unwrap();
        VerifiedInstall {
            install_root: "/".into(),
            executable: executable.to_string_lossy().into_owned(),
            cli_entry: String::new(),
            host_archive: String::new(),
            artifact_id: String::new(),
            app_version: String::new(),
            cli_version: String::new(),
            files: vec![],
        }
    }

    #[cfg(unix)]
    #[test]
    fn accepts_a_relative_path_that_resolves_to_the_executable() {
        let install = install();
        let program = verified_program(&plan("bin/sh"), &install).unwrap();
        assert_eq!(program, Path::new(&install.executable));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_other_programs_absolute_paths_and_missing_files() {
        let install = install();
        for program in ["bin/ls", "/bin/sh", "", "bin/does-not-exist", "bin/../bin/true"] {
            let error = verified_program(&plan(program), &install).unwrap_err();
            assert!(matches!(error, BridgeError::ProgramRefused { .. }), "{program}: {error}");
        }
    }

    #[test]
    fn refuses_a_relative_working_directory() {
        let mut plan = plan("bin/sh");
        plan.cwd = "relative".into();
        assert!(matches!(command(Path::new("/bin/sh"), &plan), Err(BridgeError::InvalidPlan(_))));
    }
}
