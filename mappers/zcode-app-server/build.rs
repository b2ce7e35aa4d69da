//! Pins the simulated releases: hashes the simulator's fixture files a fake Desktop install
//! carries (`glm/zcode.cjs`, `config/provider/zcode-builtin.json`) at build time, so the
//! contract always matches the files in the tree (their hashes are written down nowhere).

#[path = "../zcode-task/build/simulator_hashes.rs"]
mod simulator_hashes;

fn main() {
    simulator_hashes::write_simulator_hashes();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../zcode-task/build/simulator_hashes.rs");
}
