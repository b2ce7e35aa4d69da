//! The core must not know ZCode's private protocol: method, event, channel and service names
//! belong to mappers. This scans the core crates' sources (not the simulator, which plays ZCode,
//! and not fake-install, which lays out ZCode's files) for names from ZCode's host protocols.

use std::path::{Path, PathBuf};

/// Names that only a mapper may know (3.11 host service, bridge envelope, later generations).
const ZCODE_NAMES: &[&str] = &[
    "createSession",
    "resumeSession",
    "listSessions",
    "readSession",
    "closeSession",
    "sendPrompt",
    "stopGeneration",
    "respondPermission",
    "respondElicitation",
    "respondProviderRuntimeHeaders",
    "getTaskTokenUsage",
    "setThoughtLevel",
    "setModel",
    "onDynamicSessionEvent",
    "readWorkspaceState",
    "readWorkspacePresentation",
    "disposeWorkspace",
    "__call",
    "__subscribe",
    "__unsubscribe",
    "model.streaming",
    "tool.updated",
    "turn.completed",
    "turn.failed",
    "session.event",
    "permission.request",
    "userInput.request",
    "providerRuntimeHeaders",
    "desktop-continuous",
    "zcode-agent",
    "zcode-task\"",
    "model-selection",
    "sendConversationCommandV4",
    // The app-server generation (Desktop 3.14 and later).
    "session/create",
    "session/send",
    "session/subscribe",
    "v4/command",
    "v4/conversation",
    "interaction/request",
    "requestRuntimePreferences",
    "updateAccountConfig",
    "\"app-server\"",
    // The Services Server generation (the standalone runtime).
    "zcode-hello",
    "helloConversationV4",
    "subscribeConversationV4",
    "onDynamicConversationFrame",
    "conversationRowsRangeV4",
    "ZCODE_SERVICE_AUTHORITY_MODE",
    "zcode-server.cjs",
    // ZCode's credential store.
    "ZCODE_CREDENTIAL_SECRET",
    "zcodejwttoken",
    "ELECTRON_RUN_AS_NODE",
    "init-local",
    "taskId",
];

const CORE_CRATES: &[&str] = &[
    "contract",
    "credentials",
    "mapper-trust",
    "recorder",
    "discovery",
    "mapper-runtime",
    "embedded-mappers",
    "bridge",
    "coordinator",
    "acp-server",
    "cli",
];

#[test]
fn core_sources_name_no_zcode_method_or_event() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut scanned = 0;
    let mut hits = Vec::new();
    for krate in CORE_CRATES {
        let mut files = Vec::new();
        rust_files(&host.join(krate).join("src"), &mut files);
        files.push(host.join(krate).join("build.rs"));
        for file in files.into_iter().filter(|f| f.is_file()) {
            let text = std::fs::read_to_string(&file).unwrap();
            scanned += 1;
            for name in ZCODE_NAMES {
                for (number, line) in text.lines().enumerate() {
                    if line.contains(name) {
                        hits.push(format!("{}:{}: {name}", file.display(), number + 1));
                    }
                }
            }
        }
    }
    assert!(scanned > 30, "expected to scan the core's sources, scanned {scanned} files");
    assert!(
        hits.is_empty(),
        "ZCode names in the core (they belong in a mapper):\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_scan_would_see_a_zcode_name() {
    // Guards the test above against scanning nothing useful: the mapper does name them.
    let mapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mappers/zcode-task/src");
    let mut files = Vec::new();
    rust_files(&mapper, &mut files);
    let all: String = files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    assert!(all.contains("stopGeneration") && all.contains("sendPrompt"));
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
