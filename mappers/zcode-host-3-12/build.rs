//! Pins the simulator artifact: hashes the ZCode host simulator's fixture files at build time so
//! the contract always matches the files in the tree (they are not hard-coded anywhere).

#[path = "../zcode-host-common/build/simulator_hashes.rs"]
mod simulator_hashes;

fn main() {
    simulator_hashes::write_simulator_hashes();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../zcode-host-common/build/simulator_hashes.rs");
}
