//! Pure text helpers: timestamps, deterministic ids and an incremental text fingerprint.
//! The mapper has no clock or randomness: times and ids come from native data.

/// ISO 8601 (UTC, millisecond precision) of a Unix epoch time in milliseconds.
pub fn iso8601_from_epoch_ms(epoch_ms: f64) -> Option<String> {
    if !epoch_ms.is_finite() || epoch_ms.abs() > 8.64e15 {
        return None;
    }
    let ms = epoch_ms.floor() as i64;
    let days = ms.div_euclid(86_400_000);
    let ms_of_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (hours, minutes) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60);
    let (seconds, millis) = (ms_of_day / 1000 % 60, ms_of_day % 1000);
    Some(format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z"))
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), after Howard Hinnant's
/// `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over bytes, continuing from `state`: appending text extends a fingerprint without
/// keeping the text.
pub fn fnv(state: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(state, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME))
}

/// The fingerprint of the empty text.
pub const FNV_EMPTY: u64 = FNV_OFFSET;

/// A UUID-shaped id (version 8, RFC 9562 variant) derived from `parts`. Deterministic by
/// design: the sandbox has no randomness, and callers mix in native data so ids differ between
/// runs.
pub fn derived_uuid(parts: &[&str]) -> String {
    // Two FNV-1a lanes with different offsets give 128 bits; uniqueness, not secrecy, matters.
    let mut lanes = [FNV_OFFSET, 0x6c62_272e_07bb_0142_u64];
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0xff)) {
            for lane in &mut lanes {
                *lane ^= u64::from(byte);
                *lane = lane.wrapping_mul(FNV_PRIME);
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
    fn formats_epoch_milliseconds_as_iso8601() {
        assert_eq!(iso8601_from_epoch_ms(0.0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_from_epoch_ms(1_757_000_000_000.0).unwrap(), "2025-09-04T15:33:20.000Z");
        assert_eq!(iso8601_from_epoch_ms(951_782_400_123.9).unwrap(), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601_from_epoch_ms(f64::NAN), None);
    }

    #[test]
    fn fingerprints_extend_with_appended_text() {
        let whole = fnv(FNV_EMPTY, b"hello world");
        assert_eq!(fnv(fnv(FNV_EMPTY, b"hello "), b"world"), whole);
        assert_ne!(fnv(FNV_EMPTY, b"hello"), whole);
    }

    #[test]
    fn derives_stable_distinct_uuids() {
        let a = derived_uuid(&["x", "1"]);
        assert_eq!(a, derived_uuid(&["x", "1"]));
        assert_ne!(a, derived_uuid(&["x", "2"]));
        assert_ne!(derived_uuid(&["ab", ""]), derived_uuid(&["a", "b"]));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8");
    }
}
