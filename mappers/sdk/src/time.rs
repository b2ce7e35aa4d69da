//! Times the mapper reads from native data (a guest has no clock).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_epoch_milliseconds_as_iso8601() {
        assert_eq!(iso8601_from_epoch_ms(0.0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_from_epoch_ms(1_757_000_000_000.0).unwrap(), "2025-09-04T15:33:20.000Z");
        assert_eq!(iso8601_from_epoch_ms(951_782_400_123.9).unwrap(), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601_from_epoch_ms(-1.0).unwrap(), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso8601_from_epoch_ms(f64::NAN), None);
        assert_eq!(iso8601_from_epoch_ms(1e300), None);
    }
}
