//! `fake-install <dir> [--os linux|macos|windows] [--platform TAG] [--app-version V]
//! [--layout desktop|appimage|runtime|paseo] [--variant NAME] --runner PROG [ARGS…]`

use std::path::PathBuf;
use std::process::ExitCode;

use zcode_contract::Os;

use crate::builder::{FakeInstall, FakeLayout};
use crate::launcher::Runner;
use crate::variant::Variant;

const USAGE: &str = "usage: fake-install <dir> [--os linux|macos|windows] [--platform TAG] \
[--app-version V] [--layout desktop|appimage|runtime|paseo] [--variant NAME] --runner PROG [ARGS...]
  Lays out a fake ZCode install in <dir> (absent or empty) and prints the canonical path to
  point zcode-acp at (for `paseo`, <dir> is the managed runtimes folder and the path printed is
  its runtime entry); a runtime's Node follows on a second line as `node <path>`.
  --runner takes the rest of the command line: the program (and its arguments) that the
  fake executable hands every invocation to.";

/// Runs the command with `args` (everything after the command name). Prints the install
/// root on success; errors go to stderr (exit 2 for usage errors, 1 for failures).
pub fn main_with_args<I, S>(args: I) -> ExitCode
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let args: Vec<String> = args.into_iter().map(Into::into).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") && !args.iter().any(|a| a == "--runner") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("fake-install: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut builder = FakeInstall::builder(&options.dir)
        .os(options.os)
        .runner(options.runner)
        .layout(options.layout)
        .variant(options.variant);
    if let Some(tag) = options.platform_tag {
        builder = builder.platform_tag(tag);
    }
    if let Some(version) = options.app_version {
        builder = builder.app_version(version);
    }
    match builder.build_install() {
        Ok(built) => {
            println!("{}", built.install_root.display());
            if let Some(node) = built.node {
                println!("node {}", node.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("fake-install: {error}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Debug)]
struct Options {
    dir: PathBuf,
    os: Os,
    platform_tag: Option<String>,
    app_version: Option<String>,
    layout: FakeLayout,
    variant: Variant,
    runner: Runner,
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut dir = None;
    let mut os = zcode_contract::Platform::current().os.unwrap_or(Os::Linux);
    let mut platform_tag = None;
    let mut app_version = None;
    let mut variant = Variant::Good;
    let mut layout = FakeLayout::Desktop;
    let mut runner = None;

    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--os" => os = parse_os(&value("--os")?)?,
            "--platform" => platform_tag = Some(value("--platform")?),
            "--app-version" => app_version = Some(value("--app-version")?),
            "--variant" => variant = value("--variant")?.parse()?,
            "--layout" => layout = value("--layout")?.parse()?,
            "--runner" => {
                let program = value("--runner")?;
                runner = Some(Runner { program: program.into(), args: args.by_ref().collect() });
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ if dir.is_some() => return Err(format!("unexpected argument {arg}")),
            _ => dir = Some(PathBuf::from(arg)),
        }
    }
    Ok(Options {
        dir: dir.ok_or("missing <dir>")?,
        os,
        platform_tag,
        app_version,
        layout,
        variant,
        runner: runner.ok_or("missing --runner PROG")?,
    })
}

fn parse_os(name: &str) -> Result<Os, String> {
    match name {
        "linux" => Ok(Os::Linux),
        "macos" => Ok(Os::Macos),
        "windows" => Ok(Os::Windows),
        other => Err(format!("unknown OS `{other}` (expected linux, macos or windows)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn runner_takes_the_rest_of_the_line() {
        let options = parse(strings(&[
            "/tmp/x",
            "--os",
            "windows",
            "--variant",
            "missing-file",
            "--layout",
            "runtime",
            "--runner",
            "sim",
            "host",
            "--os",
            "linux",
        ]))
        .unwrap();
        assert_eq!(options.os, Os::Windows);
        assert_eq!(options.variant, Variant::MissingFile);
        assert_eq!(options.layout, FakeLayout::Runtime);
        assert_eq!(options.runner.program, PathBuf::from("sim"));
        assert_eq!(options.runner.args, strings(&["host", "--os", "linux"]));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse(strings(&["/tmp/x"])).unwrap_err().contains("--runner"));
        assert!(parse(strings(&["--runner", "sim"])).unwrap_err().contains("<dir>"));
        assert!(parse(strings(&["/x", "--os", "beos"])).unwrap_err().contains("unknown OS"));
        assert!(parse(strings(&["/x", "--variant", "odd"])).unwrap_err().contains("good"));
        assert!(parse(strings(&["/x", "/y"])).unwrap_err().contains("unexpected"));
        assert!(parse(strings(&["/x", "--layout", "msi"])).unwrap_err().contains("paseo"));
    }
}
