//! What every simulated process does alike: its runtime, its end on SIGTERM / SIGINT, the
//! scenario settings it reads at start, and the platform names Node reports.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs `future` to its end on the runtime every simulated process uses.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(future)
}

/// SIGTERM / SIGINT (Ctrl-C elsewhere): the process ends like at end of input.
pub struct Shutdown {
    #[cfg(unix)]
    signals: (tokio::signal::unix::Signal, tokio::signal::unix::Signal),
}

impl Shutdown {
    pub fn install() -> Shutdown {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
            let interrupt = signal(SignalKind::interrupt()).expect("SIGINT handler");
            Shutdown { signals: (terminate, interrupt) }
        }
        #[cfg(not(unix))]
        Shutdown {}
    }

    pub async fn requested(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.signals.0.recv() => {},
            _ = self.signals.1.recv() => {},
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Hands stdin to `on_line` line by line until it ends or a signal comes. A `stalled`
/// process reads nothing and only waits for the signal.
pub async fn read_lines(
    reader: &mut tokio::io::BufReader<tokio::io::Stdin>,
    stalled: bool,
    mut on_line: impl FnMut(&[u8]),
) {
    use tokio::io::AsyncBufReadExt;
    let mut shutdown = Shutdown::install();
    let mut line = Vec::new();
    loop {
        line.clear();
        if stalled {
            shutdown.requested().await;
            break;
        }
        tokio::select! {
            read = reader.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => on_line(&line),
            },
            () = shutdown.requested() => break,
        }
    }
}

/// `ZCODE_SIM_SCENARIO` (one scenario file for every prompt) and `ZCODE_SIM_CHUNK_DELAY_MS`
/// (a pause between streamed chunks), as every generation reads them.
pub struct ScenarioOptions {
    pub scenario_file: Option<PathBuf>,
    pub chunk_delay: Option<Duration>,
}

impl ScenarioOptions {
    pub fn from_env() -> Result<ScenarioOptions, String> {
        let scenario_file = match std::env::var_os("ZCODE_SIM_SCENARIO") {
            Some(path) if Path::new(&path).is_absolute() => Some(path.into()),
            Some(path) => {
                let path = path.to_string_lossy();
                return Err(format!("ZCODE_SIM_SCENARIO must be absolute: {path}"));
            }
            None => None,
        };
        let chunk_delay = number("ZCODE_SIM_CHUNK_DELAY_MS")?.map(Duration::from_millis);
        Ok(ScenarioOptions { scenario_file, chunk_delay })
    }
}

/// The number in variable `name`, if it is set.
pub fn number(name: &str) -> Result<Option<u64>, String> {
    match std::env::var(name) {
        Ok(text) => {
            text.trim().parse().map(Some).map_err(|_| format!("{name} is not a number: {text}"))
        }
        Err(_) => Ok(None),
    }
}

/// The version a bundled CLI reports: its own, unless a fake install's launcher sets
/// `ZCODE_SIM_CLI_VERSION` (the wrong-version variant a compatibility gate must refuse).
pub fn cli_version(own: &str) -> String {
    std::env::var("ZCODE_SIM_CLI_VERSION").unwrap_or_else(|_| own.to_owned())
}

/// `process.platform`.
pub fn node_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// `process.arch`.
pub fn node_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    }
}

/// `<process.platform>-<process.arch>` as Node spells it.
pub fn platform() -> String {
    format!("{}-{}", node_platform(), node_arch())
}

/// Prints `message` on stderr and ends with `code`.
pub fn fail(code: u8, message: &str) -> std::process::ExitCode {
    eprintln!("{message}");
    std::process::ExitCode::from(code)
}
