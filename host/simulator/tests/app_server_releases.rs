//! Every app-server release: the bundled CLI's command line, the envelope, and the
//! differences between releases (3.15 deltas, CLI 0.17).

mod app_server_support;

use app_server_support::{Desktop, Frame, RELEASES, has_315, is_017};
use serde_json::{Value, json};

#[test]
fn the_cli_prints_its_version_as_the_real_one_does() {
    for (app, cli) in RELEASES {
        let desktop = Desktop::new(app);
        for flag in ["--version", "-v"] {
            let output = desktop.run(&[flag], &[]);
            assert!(output.status.success(), "{app} {flag}");
            assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{cli}\n"), "{app} {flag}");
        }
        // The subcommand is in the 3.14.0 copy of `run.ts` too (zzycxz/FreeCodeZ@c56e4414).
        let output = desktop.run(&["version"], &[]);
        assert!(output.status.success(), "{app} version");
        assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{cli}\n"), "{app}");
    }
}

#[test]
fn the_cli_takes_the_hosts_tool_disallow_list_on_every_release() {
    for (app, _) in RELEASES {
        let desktop = Desktop::new(app);
        let args = ["--version", "--disallowed-tools", "CronCreate CronList"];
        let output = desktop.run(&args, &[]);
        assert!(output.status.success(), "{app}: {output:?}");
        let bare = desktop.run(&["--version", "--disallowed-tools"], &[]);
        assert_eq!(bare.status.code(), Some(1), "{app}");
        let stderr = String::from_utf8_lossy(&bare.stderr);
        assert!(stderr.starts_with("--disallowed-tools requires at least one tool."), "{stderr}");
    }
}

#[test]
fn the_cli_refuses_unknown_commands_options_and_the_host_bridge() {
    let desktop = Desktop::new("3.17.2");
    let unknown = desktop.run(&["serve"], &[]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Usage: zcode"));
    let option = desktop.run(&["app-server", "--tcp"], &[]);
    assert_eq!(option.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&option.stderr).starts_with("Unknown option: --tcp"));
    let bridge = desktop.command(&["-e", "/* script */"]).output().unwrap();
    assert_eq!(bridge.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bridge.stderr).contains("app-server --stdio"));
    let doctor = desktop.run(&["doctor", "--json"], &[]);
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    assert_eq!(report["cli"]["version"], "0.17.1");
    let bare = desktop
        .command(&[&desktop.cli_entry(), "--version"])
        .env_remove("ELECTRON_RUN_AS_NODE")
        .output()
        .unwrap();
    assert_eq!(bare.status.code(), Some(1), "without ELECTRON_RUN_AS_NODE the app would start");
}

#[test]
fn every_release_serves_a_session_and_a_turn() {
    for (app, _) in RELEASES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        agent.prompt(&session, "sim:reply hi");
        let events = agent.turn_events(&session);
        let last = events.last().unwrap();
        assert_eq!(last["type"], "turn.completed", "{app}: {last}");
        assert_eq!(last["payload"]["response"], "hi", "{app}");
        let listed = agent.ok("session/list", json!({"workspace": desktop.ws()}));
        assert_eq!(listed["sessions"][0]["sessionId"], session.as_str(), "{app}");
        agent.close_stdin();
        assert!(agent.wait().success(), "{app}: the Agent exits 0 at end of input");
    }
}

#[test]
fn the_envelope_rejects_json_rpc_and_non_json_lines() {
    for (app, _) in RELEASES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        agent.send_line(b"   ");
        agent.send_line(b"{not json");
        let parse = agent.take(|value| value["id"] == "parse-error");
        assert_eq!(parse["error"], json!({"code": -32700, "message": "Parse error"}), "{app}");
        agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}));
        let invalid = agent.take(|value| value["id"] == "invalid-message");
        assert_eq!(invalid["error"]["code"], -32600, "{app}");
        assert_eq!(invalid["error"]["message"], "Invalid ZCode Protocol message");
        assert!(
            invalid["error"]["data"]["issues"].as_array().is_some_and(|issues| !issues.is_empty())
        );
        let missing = agent.err("session/nope", json!({}));
        assert_eq!(
            missing,
            json!({"code": -32601, "message": "Method not found: session/nope"}),
            "{app}"
        );
        // No response ever carries a `jsonrpc` member.
        assert!(agent.log.iter().all(|frame| frame.get("jsonrpc").is_none()), "{app}");
    }
}

#[test]
fn strict_params_answer_zod_issues_like_the_real_agent() {
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn();
    let session = agent.session(&desktop.ws(), json!({}));
    // The shape a live 3.12.3 Agent answered to a stray `runtimeModel` key.
    let error = agent.err(
        "session/setModel",
        json!({"sessionId": session, "model": {"providerId": "sim-local", "modelId": "sim-echo"},
               "runtimeModel": {}}),
    );
    assert_eq!(error["code"], -32602);
    assert_eq!(error["message"], "Invalid params — (root): Unrecognized key: \"runtimeModel\"");
    assert_eq!(error["data"]["name"], "ZodError");
    let issues: Value = serde_json::from_str(error["data"]["message"].as_str().unwrap()).unwrap();
    assert_eq!(issues[0]["code"], "unrecognized_keys");
    let nested = agent.err("session/create", json!({"workspace": {"workspacePath": "/w"}}));
    assert!(nested["message"].as_str().unwrap().contains("workspace.workspaceKey:"), "{nested}");
}

#[test]
fn releases_differ_where_the_sources_say() {
    for (app, _) in RELEASES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        // Storage start-up frames come before anything else (a live capture before 3.15.1
        // shows them too, so every profile writes them).
        let listed = agent.request("session/list", json!({}));
        let phases: Vec<String> = (0..5)
            .map(|_| {
                let Frame::Json(frame) = agent.next_frame() else { panic!("{app}: raw frame") };
                assert_eq!(frame["method"], "startup/storageState", "{app}");
                frame["params"]["phase"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(phases, ["checking", "checking", "checking", "committing", "ready"], "{app}");
        let Frame::Json(answer) = agent.next_frame() else { panic!("{app}: raw frame") };
        assert_eq!(answer["id"], listed, "{app}");
        let listing = agent.call("session/list", json!({"includeArchived": false}));
        if is_017(app) {
            assert_eq!(listing["error"]["code"], -32602, "{app}: 0.17 dropped includeArchived");
        } else {
            assert!(listing.get("result").is_some(), "{app}: {listing}");
        }
        let ids = agent.call("session/list", json!({"sessionIds": ["sess_x"]}));
        assert_eq!(ids.get("error").is_some(), !has_315(app), "{app}: sessionIds came with 3.15");
        let enhance = agent.err("prompt/enhance", json!({}));
        let expected = if has_315(app) { -32601 } else { -32603 };
        assert_eq!(enhance["code"], expected, "{app}: deleted from the 3.15 vocabulary");
        let capabilities = agent.ok("runtime/capabilities", json!({}));
        assert_eq!(capabilities, json!({"independentPlanState": true}), "{app}");
        let guarded =
            agent.call("session/create", json!({"workspace": desktop.ws(), "mode": "guarded"}));
        assert_eq!(
            guarded.get("result").is_some(),
            has_315(app),
            "{app}: guarded mode came with 3.15"
        );
        let push =
            desktop.account_push("account:t:1", &["account:bigmodel-individual-coding-plan"]);
        let pushed = agent.ok("provider/updateAccountConfig", push);
        assert_eq!(pushed["receivedRevision"].is_string(), has_315(app), "{app}: {pushed}");
        assert_eq!(pushed["status"], "received");
        let registry = agent.err("workspace/updateProviderRegistry", json!({}));
        assert_eq!(registry["code"], -32601, "{app}: gone since 3.12.3");
    }
}

#[test]
fn session_close_keeps_history_before_315_and_deletes_it_after() {
    for app in ["3.14.3", "3.15.3", "4.0.0"] {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        agent.prompt(&session, "sim:reply kept?");
        agent.turn_events(&session);
        assert_eq!(
            agent.ok("session/close", json!({"sessionId": session})),
            json!({"closed": true})
        );
        let inactive = agent.err("session/read", json!({"sessionId": session}));
        assert_eq!(inactive["code"], -32004, "{app}");
        assert_eq!(inactive["message"], format!("Session is not active: {session}"));
        let resumed =
            agent.call("session/resume", json!({"sessionId": session, "workspace": desktop.ws()}));
        if has_315(app) {
            assert_eq!(resumed["error"]["code"], -32004, "{app}: close deleted the session");
            assert_eq!(resumed["error"]["message"], format!("Session not found: {session}"));
        } else {
            assert_eq!(
                resumed["result"]["messages"].as_array().unwrap().len(),
                2,
                "{app}: {resumed}"
            );
        }
    }
}

#[test]
fn prepare_storage_names_the_database_and_waits_for_the_host() {
    for reuse in [false, true] {
        let desktop = Desktop::new("3.17.1");
        let mut agent = desktop.spawn_args(&["app-server", "--stdio", "--prepare-storage"], &[]);
        let Frame::Json(path) = agent.next_frame() else { panic!("raw frame") };
        assert_eq!(path["method"], "startup/storagePath");
        assert!(path["params"]["path"].as_str().unwrap().ends_with("db.sqlite"));
        agent.send(&json!({"method": "startup/storagePathReady", "reuse": reuse}));
        let mut methods = Vec::new();
        loop {
            let Frame::Json(frame) = agent.next_frame() else { panic!("raw frame") };
            let method = frame["method"].as_str().unwrap().to_owned();
            methods.push(method.clone());
            if method == "startup/storagePrepared" {
                break;
            }
        }
        let states = methods.iter().filter(|method| *method == "startup/storageState").count();
        assert_eq!(states, if reuse { 0 } else { 5 }, "reuse skips opening the storage");
        assert!(agent.wait().success(), "preparing the storage is all this mode does");
    }
    let desktop = Desktop::new("3.15.1");
    let mut agent = desktop.spawn_args(&["app-server", "--stdio", "--prepare-storage"], &[]);
    agent.notification("startup/storagePath");
    agent.send(&json!({"method": "session/list"}));
    let failed = agent.notification("startup/storageState");
    assert_eq!(failed["params"]["phase"], "failed");
    assert_eq!(agent.wait().code(), Some(1));
}
