//! Turning a mapper's launch plan into a command, refusing anything but the verified executable.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;
use zcode_contract::{LaunchPlan, VerifiedInstall};

use crate::error::BridgeError;

/// The executable to run: exactly the one discovery verified, resolved now (after following
/// symlinks) so that what runs is what was checked. A mapper cannot name another program.
pub fn verified_executable(install: &VerifiedInstall) -> Result<PathBuf, BridgeError> {
    let refused = |why: &str| BridgeError::ExecutableMissing {
        executable: install.executable.clone(),
        why: why.to_string(),
    };
    let path = Path::new(&install.executable);
    if !path.is_absolute() {
        return Err(refused("the path is not absolute"));
    }
    let resolved = path.canonicalize().map_err(|error| refused(&error.to_string()))?;
    if !resolved.is_file() {
        return Err(refused("it is not a file"));
    }
    Ok(resolved)
}

/// The command for `program` as the plan describes it: args, the plan's env on top of the
/// inherited one (less what it removes), the plan's working directory, all three stdio streams piped, and (unix) a
/// process group of its own so the whole tree can be signalled at once.
pub(crate) fn command(program: &Path, plan: &LaunchPlan) -> Result<Command, BridgeError> {
    if !Path::new(&plan.cwd).is_absolute() {
        return Err(BridgeError::InvalidPlan(format!(
            "working directory `{}` is not absolute",
            plan.cwd
        )));
    }
    // Checked here because the OS reports a missing working directory as a missing program
    // (ENOENT from the spawn), which would blame the verified executable. Desktop mappers run
    // the host in the user's home folder, which a container may name without creating.
    if !Path::new(&plan.cwd).is_dir() {
        return Err(BridgeError::InvalidPlan(format!(
            "working directory `{}` does not exist (for a Desktop install, it is the home \
             folder: is $HOME right?)",
            plan.cwd
        )));
    }
    let mut command = Command::new(program);
    for name in &plan.env_remove {
        command.env_remove(name);
    }
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

    fn plan() -> LaunchPlan {
        LaunchPlan { cwd: "/".into(), ..LaunchPlan::default() }
    }

    fn install(executable: &str) -> VerifiedInstall {
        VerifiedInstall {
            facts: Default::default(),
            install_root: "/".into(),
            kind: zcode_contract::LayoutKind::Desktop,
            executable: executable.into(),
            cli_entry: String::new(),
            host_archive: String::new(),
            release_id: String::new(),
            app_version: String::new(),
            cli_version: String::new(),
            files: vec![],
            unpinned: vec![],
            home: "/".into(),
        }
    }

    #[cfg(unix)]
    #[test]
    fn runs_the_verified_executable_resolved() {
        let resolved = verified_executable(&install("/bin/sh")).unwrap();
        assert_eq!(resolved, Path::new("/bin/sh").canonicalize().unwrap());
    }

    #[test]
    fn refuses_relative_missing_and_non_file_executables() {
        for executable in ["bin/sh", "/does/not/exist", "/", ""] {
            let error = verified_executable(&install(executable)).unwrap_err();
            assert!(
                matches!(error, BridgeError::ExecutableMissing { .. }),
                "{executable}: {error}"
            );
        }
    }

    #[test]
    fn refuses_a_relative_working_directory() {
        let mut plan = plan();
        plan.cwd = "relative".into();
        assert!(matches!(command(Path::new("/bin/sh"), &plan), Err(BridgeError::InvalidPlan(_))));
    }

    #[test]
    fn names_a_missing_working_directory_instead_of_blaming_the_program() {
        let mut plan = plan();
        plan.cwd = "/does/not/exist".into();
        let error = command(Path::new("/bin/sh"), &plan).unwrap_err();
        assert!(error.to_string().contains("working directory `/does/not/exist` does not exist"));
    }
}
