//! The bridge envelope, the allowlist, start-up checks, shutdown and the runtime's CLI commands.

mod common;

use common::{Install, Sim, outcome};
use serde_json::{Value, json};

fn raw_response(sim: &mut Sim, line: &str) -> Value {
    sim.send_line(line.as_bytes());
    sim.next_frame().json().clone()
}

#[test]
fn answers_invalid_json_with_a_null_id_parse_error() {
    let install = Install::new();
    let mut sim = install.spawn();
    assert_eq!(
        raw_response(&mut sim, "{not json"),
        json!({"id": null, "error": {"code": -32700, "message": "Invalid JSON"}})
    );
    sim.send_line(
        b"{\"id\":1,\"method\":\"__unsubscribe\",\"params\":{\"subscriptionId\":\"\xff\"}}trailing",
    );
    assert_eq!(sim.next_frame().json()["error"]["code"], -32700);
}

#[test]
fn ignores_lines_without_a_usable_id() {
    let install = Install::new();
    let mut sim = install.spawn();
    for line in [
        "",
        "   ",
        "\r",
        "{\"method\":\"__call\"}",
        "{\"id\":1.5,\"method\":\"x\"}",
        "{\"id\":null,\"method\":\"x\"}",
        "{\"id\":{},\"method\":\"x\"}",
        "[1,2]",
        "42",
    ] {
        sim.send_line(line.as_bytes());
    }
    // The first frame is the answer to this marker, so nothing above was answered.
    let marker = raw_response(
        &mut sim,
        "{\"id\":\"marker\",\"method\":\"__unsubscribe\",\"params\":{\"subscriptionId\":\"x\"}}\r",
    );
    assert_eq!(marker, json!({"id": "marker", "result": {"unsubscribed": true}}));
}

#[test]
fn rejects_unknown_bridge_methods_and_services() {
    let install = Install::new();
    let mut sim = install.spawn();
    let id = sim.request("__bogus", json!({}));
    assert_eq!(outcome(&sim.response(id)), Err("Unsupported bridge method: __bogus".into()));
    sim.send(&json!({"id": 99, "params": {}}));
    assert_eq!(outcome(&sim.response(99)), Err("Unsupported bridge method: undefined".into()));
    assert_eq!(
        sim.call("usage", "getEntitlementSnapshot", json!({})),
        Err("Unsupported bridge service: usage".into())
    );
    let id = sim.request("__call", json!({"method": "initialize"}));
    assert_eq!(outcome(&sim.response(id)), Err("Unsupported bridge service: undefined".into()));
}

#[test]
fn enforces_the_native_method_allowlist() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    for (service, method) in [
        ("agent", "readWorkspacePresentation"),
        ("agent", "stopGeneration"),
        ("agent", "onDynamicSessionEvent"),
        ("task", "initialize"),
        ("task", "stopSession"),
    ] {
        assert_eq!(
            sim.call(service, method, json!({"workspacePath": ws})),
            Err(format!("Unsupported native bridge method: {service}:{method}"))
        );
    }
    // Every allowlisted method reaches the host (errors here come from the host, not the bridge).
    for method in
        ["readSessionMessages", "readSessionEvents", "disposeWorkspace", "getTaskTokenUsage"]
    {
        let answer = sim.call("agent", method, json!({"workspacePath": ws, "sessionId": "nope"}));
        assert!(
            !matches!(&answer, Err(message) if message.starts_with("Unsupported")),
            "{method}: {answer:?}"
        );
    }
    assert_eq!(
        sim.call("task", "stopGeneration", json!({"workspacePath": ws, "taskId": "nope"})),
        Err("Session not found: nope".into())
    );
}

#[test]
fn writes_null_for_methods_without_a_result() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, _) = common::open_session(&mut sim, &ws);
    let id = sim.request_call(
        "agent",
        "closeSession",
        json!({"workspacePath": ws, "sessionId": session}),
    );
    assert_eq!(sim.response(id), json!({"id": id, "result": null}));
    let id = sim.request_call("agent", "disposeWorkspace", json!({"workspacePath": ws}));
    assert_eq!(sim.response(id), json!({"id": id, "result": null}));
}

#[test]
fn validates_subscriptions() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    let (session, subscription) = common::open_session(&mut sim, &ws);
    let target = json!({"workspacePath": ws, "sessionId": session, "deliveryKind": "desktop-continuous", "includeSnapshot": true});
    for bad in [
        json!({"target": target}),
        json!({"subscriptionId": "", "target": target}),
        json!({"subscriptionId": 7, "target": target}),
    ] {
        let id = sim.request("__subscribe", bad);
        assert_eq!(outcome(&sim.response(id)), Err("Invalid subscription id".into()));
    }
    let id = sim.request("__subscribe", json!({"subscriptionId": subscription, "target": target}));
    assert_eq!(outcome(&sim.response(id)), Err("Duplicate subscription id".into()));
    let id = sim.request(
        "__subscribe",
        json!({"subscriptionId": "other", "target": {"workspacePath": ws, "sessionId": "missing", "includeSnapshot": true}}),
    );
    assert_eq!(outcome(&sim.response(id)), Err("Session not found: missing".into()));
    let id = sim.request("__unsubscribe", json!({"subscriptionId": "never-existed"}));
    assert_eq!(outcome(&sim.response(id)), Ok(json!({"unsubscribed": true})));
    // After unsubscribing, the id may be reused.
    let id = sim.request("__unsubscribe", json!({"subscriptionId": subscription}));
    assert_eq!(outcome(&sim.response(id)), Ok(json!({"unsubscribed": true})));
    let id = sim.request("__subscribe", json!({"subscriptionId": subscription, "target": target}));
    assert_eq!(outcome(&sim.response(id)), Ok(json!({"subscribed": true})));
}

#[test]
fn a_late_call_does_not_block_the_next_one() {
    let install = Install::new();
    // The first listSessions is answered only after 60 s; the hang guard is 30 s.
    let mut sim = install.spawn_with(&[("ZCODE_SIM_FAULT", "late@listSessions=60000")]);
    let ws = install.ws();
    let slow = sim.request_call(
        "agent",
        "listSessions",
        json!({"workspacePath": ws, "includeArchived": false}),
    );
    let fast = sim.request_call("agent", "initialize", json!({"workspacePath": ws}));
    let first = sim.next_frame().json().clone();
    assert_eq!(first["id"], fast, "the later request is answered first");
    assert_eq!(first["result"]["available"], true);
    let again = sim.call("agent", "listSessions", json!({"workspacePath": ws}));
    assert_eq!(again, Ok(json!([])));
    let _ = slow;
}

#[test]
fn exits_cleanly_when_stdin_closes() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    common::open_session(&mut sim, &ws);
    // A request without a trailing newline is still served at end of input.
    sim.send_line(b"");
    let unterminated = format!(
        "{{\"id\":\"last\",\"method\":\"__call\",\"params\":{{\"service\":\"agent\",\"method\":\"initialize\",\"params\":{{\"workspacePath\":\"{ws}\"}}}}}}"
    );
    sim.send_raw(unterminated.as_bytes());
    sim.close_stdin();
    let frames = sim.drain();
    assert_eq!(frames.last().unwrap().json()["id"], "last");
    assert!(sim.wait().success());
}

#[cfg(unix)]
#[test]
fn exits_on_sigterm() {
    let install = Install::new();
    let mut sim = install.spawn();
    let ws = install.ws();
    sim.agent("initialize", json!({"workspacePath": ws}));
    let status = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(sim.pid().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(sim.wait().success(), "SIGTERM ends the bridge with status 0 like its shutdown path");
}

#[test]
fn refuses_to_start_without_the_bridge_environment() {
    let install = Install::new();
    for missing in [
        "ZCODE_ACP_HOST_INDEX",
        "ZCODE_ACP_HOST_RPC_MODULE",
        "ZCODE_ACP_HOST_ARTIFACT",
        "ZCODE_ACP_HOST_PROTOCOL",
    ] {
        let mut command = install.command(&["-e", "script"]);
        command.env_remove(missing);
        let output = command.stdin(std::process::Stdio::null()).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{missing}");
        assert!(
            String::from_utf8_lossy(&output.stderr)
                .contains("Missing ZCode host artifact or protocol")
        );
        assert!(output.stdout.is_empty());
    }
    let output = install.run(&["-e", "script"], &[("ZCODE_ACP_HOST_PROTOCOL", "{nope")]);
    assert_eq!(output.status.code(), Some(1));
    let output = install.run(&["-e", "script"], &[("ZCODE_ACP_HOST_INDEX", "/nowhere/index.js")]);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Cannot find module '/nowhere/index.js'")
    );
    let output = install.run(&["-e", "script"], &[("ELECTRON_RUN_AS_NODE", "0")]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("ELECTRON_RUN_AS_NODE=1"));
}

#[test]
fn rejects_unknown_runtime_arguments_and_app_versions() {
    let install = Install::new();
    let output = install.run(&["--inspect"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!output.stderr.is_empty());
    let output = install.run(&[&install.cli_entry(), "tui"], &[]);
    assert_eq!(output.status.code(), Some(2));
    // 3.14+ are app-server profiles now; 3.13.0 was never simulated.
    let future = Install::with_version("3.13.0");
    let output = future.run(&[&future.cli_entry(), "version"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no simulator profile for ZCode 3.13.0")
    );
    let runner = std::process::Command::new(env!("CARGO_BIN_EXE_zcode-sim"))
        .arg("version")
        .output()
        .unwrap();
    assert_eq!(runner.status.code(), Some(2));
}

#[test]
fn cli_prints_version_and_doctor() {
    let install = Install::new();
    let output = install.run(&[&install.cli_entry(), "version"], &[]);
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap().trim(), "0.16.5");
    let output = install.run(&[&install.cli_entry(), "doctor", "--json"], &[]);
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["version"], "0.16.5");
    assert_eq!(report["runtime"], "electron-node");
    assert_eq!(report["authentication"], "missing");
    assert_eq!(report["platform"], zcode_sim::platform());
}

#[test]
fn cli_login_writes_private_credentials_and_logout_removes_them() {
    let install = Install::new();
    let sim_home = install.home.join("sim-home");
    let home = sim_home.to_str().unwrap();
    let output =
        install.run(&[&install.cli_entry(), "login", "--no-browser"], &[("ZCODE_SIM_HOME", home)]);
    assert!(output.status.success());
    assert!(String::from_utf8(output.stdout).unwrap().contains("https://sim.invalid/login?code="));
    let credentials = sim_home.join(".zcode/v2/credentials.json");
    let metadata = std::fs::metadata(&credentials).unwrap();
    assert!(metadata.len() > 0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    }
    assert!(!install.home.join(".zcode").exists(), "ZCODE_SIM_HOME wins over HOME");
    let doctor =
        install.run(&[&install.cli_entry(), "doctor", "--json"], &[("ZCODE_SIM_HOME", home)]);
    assert_eq!(
        serde_json::from_slice::<Value>(&doctor.stdout).unwrap()["authentication"],
        "present"
    );
    let output = install.run(&[&install.cli_entry(), "logout"], &[("ZCODE_SIM_HOME", home)]);
    assert!(output.status.success());
    assert!(!credentials.exists());
    // Without ZCODE_SIM_HOME the credentials go under HOME.
    let output = install.run(&[&install.cli_entry(), "login"], &[]);
    assert!(output.status.success());
    assert!(install.home.join(".zcode/v2/credentials.json").is_file());
}
