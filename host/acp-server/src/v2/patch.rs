//! Git patch text for a v1 diff (`path`, `oldText`, `newText`), the form ACP v2 renders.
//!
//! ACP v2's `git_patch` is Git's `--patch` format with absolute paths and no `a/`/`b/`
//! prefixes. The patch here is one hunk: the lines the two texts share at their start and end
//! are left out (up to three lines of context), the rest is shown removed and added. That is
//! exact for any edit and minimal for the common one-region edit, and costs one pass over
//! both texts (no diff search).

const CONTEXT: usize = 3;

/// The patch turning `old` (absent: the file is new) into `new` at `path`, or `None` when the
/// texts are equal.
pub fn git_patch(path: &str, old: Option<&str>, new: &str) -> Option<String> {
    if old == Some(new) {
        return None;
    }
    let quoted = quote_path(path);
    let mut text = format!("diff --git {quoted} {quoted}\n");
    match old {
        None => text.push_str(&format!("new file mode 100644\n--- /dev/null\n+++ {quoted}\n")),
        Some(_) => text.push_str(&format!("--- {quoted}\n+++ {quoted}\n")),
    }
    let old_lines = lines(old.unwrap_or(""));
    let new_lines = lines(new);
    let common_start = old_lines.iter().zip(&new_lines).take_while(|(a, b)| a == b).count();
    let rest = old_lines.len().min(new_lines.len()) - common_start;
    let common_end = old_lines
        .iter()
        .rev()
        .zip(new_lines.iter().rev())
        .take(rest)
        .take_while(|(a, b)| a == b)
        .count();
    let before = common_start.min(CONTEXT);
    let after = common_end.min(CONTEXT);
    let start = common_start - before;
    let old_end = old_lines.len() - common_end + after;
    let new_end = new_lines.len() - common_end + after;
    text.push_str(&format!(
        "@@ -{} +{} @@\n",
        range(start, old_end - start),
        range(start, new_end - start)
    ));
    for line in &old_lines[start..common_start] {
        push_line(&mut text, ' ', line);
    }
    for line in &old_lines[common_start..old_lines.len() - common_end] {
        push_line(&mut text, '-', line);
    }
    for line in &new_lines[common_start..new_lines.len() - common_end] {
        push_line(&mut text, '+', line);
    }
    for line in &new_lines[new_lines.len() - common_end..new_end] {
        push_line(&mut text, ' ', line);
    }
    Some(text)
}

/// A line with its terminator (`None` for a last line without one).
#[derive(PartialEq)]
struct Line<'a> {
    text: &'a str,
    terminated: bool,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    let mut lines: Vec<Line<'_>> = text
        .split_inclusive('\n')
        .map(|l| Line { text: l.trim_end_matches('\n'), terminated: l.ends_with('\n') })
        .collect();
    if lines.last().is_some_and(|l| l.text.is_empty() && !l.terminated) {
        lines.pop();
    }
    lines
}

fn push_line(text: &mut String, marker: char, line: &Line<'_>) {
    text.push(marker);
    text.push_str(line.text);
    text.push('\n');
    if !line.terminated {
        text.push_str("\\ No newline at end of file\n");
    }
}

/// Git's hunk range: `start,count` (1-based), with the start of an empty range one before.
fn range(start: usize, count: usize) -> String {
    match count {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{count}", start + 1),
    }
}

/// A path as Git writes it: in double quotes with C escapes when it holds a quote, a
/// backslash, a control character or a non-ASCII byte (`core.quotePath`), else as it is.
fn quote_path(path: &str) -> String {
    let plain = path.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if plain {
        return path.to_string();
    }
    let mut quoted = String::from("\"");
    for byte in path.bytes() {
        match byte {
            b'"' => quoted.push_str("\\\""),
            b'\\' => quoted.push_str("\\\\"),
            b'\n' => quoted.push_str("\\n"),
            b'\t' => quoted.push_str("\\t"),
            0x20..0x7f => quoted.push(byte as char),
            _ => quoted.push_str(&format!("\\{byte:03o}")),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_all_added() {
        let patch = git_patch("/w/a.txt", None, "one\ntwo\n").unwrap();
        assert_eq!(
            patch,
            "diff --git /w/a.txt /w/a.txt\nnew file mode 100644\n--- /dev/null\n+++ /w/a.txt\n\
             @@ -0,0 +1,2 @@\n+one\n+two\n"
        );
    }

    #[test]
    fn an_edit_in_the_middle_keeps_three_lines_of_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
        let patch = git_patch("/w/n", Some(old), new).unwrap();
        assert_eq!(
            patch,
            "diff --git /w/n /w/n\n--- /w/n\n+++ /w/n\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn a_missing_last_newline_is_marked_and_equal_texts_have_no_patch() {
        let patch = git_patch("/w/x", Some("a\nb"), "a\nc").unwrap();
        assert!(
            patch.ends_with("@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"),
            "{patch}"
        );
        assert_eq!(git_patch("/w/x", Some("same\n"), "same\n"), None);
        let emptied = git_patch("/w/x", Some("gone\n"), "").unwrap();
        assert!(emptied.ends_with("@@ -1 +0,0 @@\n-gone\n"), "{emptied}");
    }

    #[test]
    fn unusual_paths_are_quoted_like_git() {
        assert_eq!(quote_path("/w/plain name.rs"), "/w/plain name.rs");
        assert_eq!(quote_path("/w/\"q\"\\é"), "\"/w/\\\"q\\\"\\\\\\303\\251\"");
    }
}
