//! Pins the simulator release exactly as the ZCode 3.12.3 mapper does (its contract module is
//! compiled into this crate and includes the generated hashes).

#[path = "../../mappers/zcode-task/build/simulator_hashes.rs"]
mod simulator_hashes;

fn main() {
    simulator_hashes::write_simulator_hashes();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../../mappers/zcode-task/build/simulator_hashes.rs");
}
