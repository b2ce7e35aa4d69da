//! The simulator's module layers (`docs/simulator.md`, "Code layout"): `common/` imports none
//! of the generations, `v4/` only `common/`, and the three generations (`task/`, `app_server/`,
//! `services/`) never each other. Inside the app-server, the method families and the turn
//! runner do not import each other and `server.rs` imports none of them, so nothing of it forms
//! a circle again. A new edge against the layers fails here before it shapes the code.

use std::path::{Path, PathBuf};

const TOP: [&str; 5] = ["common", "v4", "task", "app_server", "services"];

/// Which top-level folders each may use.
fn allowed(folder: &str) -> &'static [&'static str] {
    match folder {
        "common" => &["common"],
        "v4" => &["common", "v4"],
        "task" => &["common", "task"],
        "app_server" => &["common", "v4", "app_server"],
        "services" => &["common", "v4", "services"],
        other => panic!("unknown folder {other}"),
    }
}

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// The code of a file before its test module, without comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let code = text.split("\n#[cfg(test)]").next().unwrap();
    code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The top-level folders `crate::<folder>` paths of `text` name.
fn crate_folders(text: &str) -> Vec<&'static str> {
    TOP.iter().copied().filter(|folder| text.contains(&format!("crate::{folder}::"))).collect()
}

#[test]
fn generations_use_only_what_lies_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for folder in TOP {
        let mut files = Vec::new();
        sources(&src.join(folder), &mut files);
        assert!(!files.is_empty(), "{folder}/ has sources");
        for file in files {
            let text = code(&file);
            for used in crate_folders(&text) {
                if !allowed(folder).contains(&used) {
                    violations.push(format!("{} uses crate::{used}", file.display()));
                }
            }
        }
    }
    assert!(violations.is_empty(), "imports against the layers: {violations:#?}");
}

#[test]
fn the_app_server_families_and_turns_do_not_import_each_other() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app_server");
    // Each module, and the sibling modules it must not name.
    let rules: [(&str, &[&str]); 5] = [
        ("server.rs", &["stdio", "legacy", "v4", "v4_commands", "turn"]),
        ("legacy.rs", &["stdio", "v4", "v4_commands", "turn"]),
        ("v4.rs", &["stdio", "legacy", "turn"]),
        ("v4_commands.rs", &["stdio", "legacy", "v4", "turn"]),
        ("turn", &["stdio", "legacy", "v4", "v4_commands"]),
    ];
    let mut violations = Vec::new();
    for (module, forbidden) in rules {
        let path = dir.join(module);
        let mut files = Vec::new();
        if path.is_dir() {
            sources(&path, &mut files)
        } else {
            files.push(path)
        }
        for file in files {
            let text = code(&file);
            for name in forbidden {
                let named = [format!("super::{name}"), format!("super::super::{name}")].iter().any(
                    |path| {
                        text.match_indices(path.as_str()).any(|(at, _)| {
                            let next = text[at + path.len()..].chars().next();
                            !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        })
                    },
                ) || text.lines().any(|line| {
                    line.trim_start().starts_with("use super::{")
                        && line.split(['{', '}', ',', ' ']).any(|item| item == *name)
                });
                if named {
                    violations.push(format!("{} names {name}", file.display()));
                }
            }
        }
    }
    assert!(violations.is_empty(), "app-server modules against their layers: {violations:#?}");
}
