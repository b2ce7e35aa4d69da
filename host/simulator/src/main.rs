//! `zcode-sim --install-root <root> -- <argv...>`: the simulated ZCode runtime child.

fn main() -> std::process::ExitCode {
    zcode_sim::run_runner(std::env::args_os().skip(1))
}
