//! Medians and spread of repeated measurements.

/// Median and range of one measured quantity over the rounds of a run.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Self {
        assert!(!values.is_empty(), "nothing was measured");
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let middle = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[middle]
        } else {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        };
        Self { median, min: sorted[0], max: sorted[sorted.len() - 1] }
    }

    /// `median (min–max)` with `decimals` digits after the point.
    pub fn show(&self, decimals: usize) -> String {
        format!(
            "{} ({}–{})",
            fixed(self.median, decimals),
            fixed(self.min, decimals),
            fixed(self.max, decimals)
        )
    }
}

/// A number with thousands separators (`1 234 567.8`), for tables.
pub fn fixed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole.to_string(), format!(".{fraction}")),
        None => (text.clone(), String::new()),
    };
    let (sign, digits) = match whole.strip_prefix('-') {
        Some(digits) => ("-", digits.to_string()),
        None => ("", whole),
    };
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{sign}{grouped}{fraction}")
}

/// A markdown table.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", headers.join(" | "));
    let rules: Vec<&str> =
        headers.iter().enumerate().map(|(i, _)| if i == 0 { "---" } else { "---:" }).collect();
    out.push_str(&format!("| {} |\n", rules.join(" | ")));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}
