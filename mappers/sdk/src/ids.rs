//! Ids derived from what the mapper knows (a guest has no randomness): deterministic by
//! design, so the caller mixes in native data that differs between runs.

/// A UUID-shaped id (version 8, RFC 9562 variant) derived from `parts`. Deterministic by
/// design: the sandbox has no randomness, and the caller mixes in native data so ids differ
/// between runs.
pub fn derived_uuid(parts: &[&str]) -> String {
    // Two FNV-1a lanes with different offsets give 128 bits; uniqueness, not secrecy, matters.
    let mut lanes = [0xcbf2_9ce4_8422_2325_u64, 0x6c62_272e_07bb_0142_u64];
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0xff)) {
            for lane in &mut lanes {
                *lane ^= u64::from(byte);
                *lane = lane.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        lanes[1] = lanes[1].rotate_left(29) ^ lanes[0];
    }
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&lanes[0].to_be_bytes());
    bytes[8..].copy_from_slice(&lanes[1].to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_stable_distinct_uuids() {
        let a = derived_uuid(&["s", "1"]);
        assert_eq!(a, derived_uuid(&["s", "1"]));
        assert_ne!(a, derived_uuid(&["s", "2"]));
        assert_ne!(derived_uuid(&["s1", ""]), derived_uuid(&["s", "1"]));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
    }
}
