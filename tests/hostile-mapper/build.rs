//! Pins the simulator artifact exactly as the ZCode 3.12.3 mapper does (its contract module is
//! compiled into this crate and includes the generated hashes).

#[path = "../../mappers/zcode-host-common/build/simulator_hashes.rs"]
mod simulator_hashes;

fn main() {
    simulator_hashes::write_simulator_hashes();
    println!("cargo:rerun-if-changed=build.rs");
}
