//! The fake install's executables: shell scripts that hand every invocation to a runner.
//!
//! Asked what they are, they answer themselves, as the real programs would and without the
//! runner: `--version` prints the Node version, and `-p process.versions.electron` prints
//! `undefined` for a Node and the Electron version for an Electron app (discovery asks both
//! before it trusts a Node).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::variant::FAKE_ELECTRON_VERSION;

/// Environment variable the launcher sets to make the runner report another CLI version.
/// The simulator honours it when it answers `<cli-entry> version`.
pub const SIM_CLI_VERSION_ENV: &str = "ZCODE_SIM_CLI_VERSION";
/// The Node version an Electron executable run as Node reports (Electron 33 ships Node 20.18).
pub const FAKE_ELECTRON_NODE_VERSION: &str = "20.18.3";
/// The arguments that ask a Node for its version.
pub const NODE_VERSION_ARGS: [&str; 1] = ["--version"];
/// The arguments that ask a Node whether it is Electron.
pub const ELECTRON_CHECK_ARGS: [&str; 2] = ["-p", "process.versions.electron"];

/// The program that really runs when the fake executable is started (the simulator).
/// It is invoked as `<program> <args…> --install-root <root> -- <executable's own args…>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runner {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// What a fake executable is when asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Identity<'a> {
    /// An Electron app (the desktop executable).
    Electron,
    /// A plain Node of this version.
    Node(&'a str),
}

/// The launcher script text.
pub(crate) fn launcher_script(
    runner: &Runner,
    root: &Path,
    cli_version: Option<&str>,
    identity: Identity<'_>,
) -> Vec<u8> {
    let mut script =
        b"#!/bin/sh\n# Fake ZCode executable: hands every invocation to the runner.\n".to_vec();
    let (node_version, electron) = match identity {
        Identity::Electron => (FAKE_ELECTRON_NODE_VERSION, FAKE_ELECTRON_VERSION),
        Identity::Node(version) => (version, "undefined"),
    };
    let [version_flag] = NODE_VERSION_ARGS;
    let [print_flag, electron_expr] = ELECTRON_CHECK_ARGS;
    script.extend(
        format!(
            "if [ \"$#\" = 1 ] && [ \"$1\" = {version_flag} ]; then echo v{node_version}; exit 0; fi\n\
             if [ \"$#\" = 2 ] && [ \"$1\" = {print_flag} ] && [ \"$2\" = {electron_expr} ]; then \
             echo {electron}; exit 0; fi\n"
        )
        .into_bytes(),
    );
    if let Some(version) = cli_version {
        script.extend_from_slice(SIM_CLI_VERSION_ENV.as_bytes());
        script.push(b'=');
        script.extend(sh_quote(version.as_ref()));
        script.extend_from_slice(b"\nexport ");
        script.extend_from_slice(SIM_CLI_VERSION_ENV.as_bytes());
        script.push(b'\n');
    }
    script.extend_from_slice(b"exec ");
    script.extend(sh_quote(runner.program.as_os_str()));
    for arg in &runner.args {
        script.push(b' ');
        script.extend(sh_quote(arg.as_ref()));
    }
    script.extend_from_slice(b" --install-root ");
    script.extend(sh_quote(root.as_os_str()));
    script.extend_from_slice(b" -- \"$@\"\n");
    script
}

/// Single-quotes a word for `sh`: inside single quotes nothing is special except the quote
/// itself, which is closed, escaped and reopened.
fn sh_quote(word: &OsStr) -> Vec<u8> {
    let bytes = os_bytes(word);
    let mut quoted = Vec::with_capacity(bytes.len() + 2);
    quoted.push(b'\'');
    for &byte in bytes.iter() {
        if byte == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(byte);
        }
    }
    quoted.push(b'\'');
    quoted
}

#[cfg(unix)]
fn os_bytes(word: &OsStr) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(word.as_bytes())
}

#[cfg(not(unix))]
fn os_bytes(word: &OsStr) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(word.to_string_lossy().into_owned().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_paths_with_spaces_and_quotes() {
        let runner = Runner { program: PathBuf::from("/bin/it's sim"), args: vec!["run".into()] };
        let script =
            launcher_script(&runner, Path::new("/tmp/Z Code"), Some("1.2.3"), Identity::Electron);
        let text = String::from_utf8(script).unwrap();
        assert!(text.starts_with("#!/bin/sh\n"));
        assert!(text.contains("ZCODE_SIM_CLI_VERSION='1.2.3'\nexport ZCODE_SIM_CLI_VERSION\n"));
        assert!(
            text.ends_with(
                "exec '/bin/it'\\''s sim' 'run' --install-root '/tmp/Z Code' -- \"$@\"\n"
            ),
            "{text}"
        );
    }
}
