//! Line diffs of expected and actual results, as the replayer prints them.

use std::fmt::Write as _;

use serde_json::Value;

use crate::values::sorted;

/// A value as pretty-printed JSON with sorted keys.
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(&sorted(value)).unwrap_or_default()
}

/// A line diff (longest common subsequence): `  ` same, `- ` expected only, `+ ` actual only.
pub fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // lengths[i][j]: LCS length of a[i..] and b[j..].
    let mut lengths = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lengths[i][j] = if a[i] == b[j] {
                lengths[i + 1][j + 1] + 1
            } else {
                lengths[i + 1][j].max(lengths[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lengths[i + 1][j] >= lengths[i][j + 1]) {
            // Deletions before insertions: expected lines first, as diffs usually read.
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_lines_by_longest_common_subsequence() {
        assert_eq!(diff("a\nb\nc", "a\nx\nc"), "  a\n- b\n+ x\n  c\n");
        assert_eq!(diff("", "a"), "+ a\n");
        assert_eq!(diff("a\nb", "b"), "- a\n  b\n");
    }
}
