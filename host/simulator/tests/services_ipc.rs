//! The runtime's process surface and the Services Server's transport: version probes, the
//! launch environment, the hello and its ack, `[200]`, binary framing split anywhere, channel
//! calls with positional arguments, errors, listens, disposal and cancellation.

mod services_support;

use serde_json::{Value, json};
use services_support::codec::{Val, frame, message};
use services_support::{Client, Runtime};

#[test]
fn version_probes_answer_as_the_runtime_does() {
    for profile in zcode_sim::RUNTIME_PROFILES {
        let runtime = Runtime::new(profile.server_version);
        let (status, stdout, _) = runtime.output(&["--version"], &[], &[]);
        assert!(status.success());
        assert_eq!(stdout.trim(), format!("v{}", profile.node_version));
        let major: u32 = stdout.trim()[1..].split('.').next().unwrap().parse().unwrap();
        assert!(major >= 24, "Node {stdout}");
        let (status, stdout, _) = runtime.output(&[&runtime.server_entry(), "--version"], &[], &[]);
        assert!(status.success());
        assert_eq!(stdout, format!("{}\n", profile.server_version));
        let (status, stdout, _) = runtime.output(&[&runtime.agent_entry(), "--version"], &[], &[]);
        assert!(status.success());
        assert_eq!(stdout.trim(), profile.agent_version);
    }
    let runtime = Runtime::new("3.14.3");
    let (_, stdout, _) = runtime.output(&["-e", "console.log(process.versions)"], &[], &[]);
    let identity: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(identity["node"], "24.21.0");
    assert!(identity.get("electron").is_none(), "plain Node has no Electron version");
    let (_, stdout, _) = runtime.output(
        &[&runtime.agent_entry(), "--version"],
        &[("ZCODE_SIM_CLI_VERSION", "0.1.0")],
        &[],
    );
    assert_eq!(stdout.trim(), "0.1.0");
}

#[test]
fn profiles_are_listed_and_chosen_by_the_package_version() {
    let names: Vec<&str> = zcode_sim::RUNTIME_PROFILES.iter().map(|profile| profile.name).collect();
    assert_eq!(names, ["runtime-3.14.3", "runtime-3.16.2", "runtime-3.17.2", "runtime-4.0.0"]);
    assert_eq!(zcode_sim::RuntimeProfile::named("runtime-4.0.0").unwrap().server_version, "4.0.0");
    let runtime = Runtime::new("3.15.1");
    let (status, _, stderr) = runtime.output(&["--version"], &[], &[]);
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("no simulator profile for zcode-runtime 3.15.1"), "{stderr}");
}

#[test]
fn refuses_to_start_without_the_launch_environment() {
    let runtime = Runtime::new("4.0.0");
    let entry = runtime.server_entry();
    for missing in [
        "ZCODE_SERVICE_AUTHORITY_MODE",
        "ZCODE_AGENT_SERVER_COMMAND",
        "ZCODE_AGENT_SERVER_ARGS_JSON",
    ] {
        let (status, stdout, stderr) = runtime.output(&[&entry], &[], &[missing]);
        assert_eq!(status.code(), Some(1), "{missing}");
        assert!(stderr.contains(missing), "{stderr}");
        assert!(stdout.is_empty(), "nothing on stdout, not even a hello: {stdout:?}");
    }
    let (status, _, stderr) =
        runtime.output(&[&entry], &[("ZCODE_SERVICE_AUTHORITY_MODE", "desktop-local")], &[]);
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("standalone-server"), "{stderr}");
    let (status, _, stderr) = runtime.output(
        &[&entry],
        &[("ZCODE_AGENT_SERVER_ARGS_JSON", "[\"/nope/zcode.cjs\"]")],
        &[],
    );
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("agent/zcode.cjs"), "{stderr}");
}

#[test]
fn the_hello_line_names_the_server_and_the_ack_opens_the_channel() {
    let runtime = Runtime::new("3.17.2");
    let server = runtime.spawn(&[]);
    let hello = server.hello.clone().unwrap();
    assert_eq!(hello["type"], "zcode-hello");
    assert_eq!(hello["version"], "3.17.2");
    assert!(hello["pid"].as_u64().unwrap() > 0);
    assert!(["linux", "darwin", "win32"].contains(&hello["platform"].as_str().unwrap()));
    assert!(hello["arch"].is_string());
    let mut server = server;
    // The ack and the first request arrive in one write, cut at every byte.
    let mut bytes =
        format!("{}\n", json!({"type": "zcode-hello-ack", "version": "9", "clientId": "split"}))
            .into_bytes();
    let call = message(
        vec![
            Val::Int(100),
            Val::Int(0),
            Val::Str("zcode-agent".into()),
            Val::Str("helloConversationV4".into()),
        ],
        &Val::List(vec![]),
    );
    bytes.extend(frame(&call));
    server.write_split(&bytes);
    let mut client = Client::new(server);
    client.wait_initialize();
    let hello = client.reply(0).ok();
    assert_eq!(hello["kind"], "hello");
    assert_eq!(hello["protocolVersion"], 3);
    assert_eq!(hello["clientMode"], "desktop-continuous");
    assert_eq!(hello["deliveryProfile"], "continuous");
    assert_eq!(hello["capabilities"]["independentPlanState"], true);
    assert!(hello["connectionId"].as_str().unwrap().starts_with("server-stdio-"));
}

#[test]
fn a_bad_hello_ack_ends_the_server() {
    let runtime = Runtime::new("3.14.3");
    for ack in [
        r#"{"type":"zcode-hello-ack","version":"1","clientId":""}"#,
        r#"{"type":"hello"}"#,
        "not json",
    ] {
        let mut server = runtime.spawn(&[]);
        server.write(format!("{ack}\n").as_bytes());
        let (status, stderr) = server.wait();
        assert_eq!(status.code(), Some(1), "{ack}");
        assert!(stderr.contains("fatal") && stderr.contains("hello-ack"), "{stderr}");
    }
}

#[test]
fn calls_take_positional_arguments_and_fail_as_the_channel_server_does() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[]);
    let ws = runtime.ws();
    let initialize = client.agent("initialize", &[json!({"workspacePath": ws})]).ok();
    assert_eq!(initialize["available"], true);
    let presentation =
        client.agent("readWorkspacePresentation", &[json!({"workspacePath": ws})]).ok();
    assert_eq!(presentation, json!({"workspace": {"workspacePath": ws}, "mode": "build"}));
    let missing = client.agent("noSuchMethod", &[]).err();
    assert_eq!(missing["message"], "Method not found: noSuchMethod");
    assert_eq!(missing["name"], "Error");
    assert!(missing["stack"].is_array());
    let relative = client.agent("initialize", &[json!({"workspacePath": "relative"})]).err();
    assert!(relative["message"].as_str().unwrap().contains("absolute"));
    // A channel nobody registered fails after the channel server's timeout.
    let unknown = client.call("no-such-channel", "x", &[]).err();
    assert_eq!(
        unknown,
        json!({"name": "Unknown channel", "message": "Channel name 'no-such-channel' timed out after 1000ms"})
    );
    let unsimulated = client.call("provider-settings", "getView", &[]).err();
    assert!(unsimulated["message"].as_str().unwrap().contains("not simulated"));
    // Results that are arrays travel element by element.
    let processes = client.agent("collectLocalRuntimeChildProcesses", &[]);
    assert_eq!(processes, services_support::Reply::Ok(Val::List(vec![])));
    let void = client.agent(
        "syncAppRuntimePreferences",
        &[json!({"askUserQuestionAutoResolutionEnabled": false})],
    );
    assert_eq!(void, services_support::Reply::Ok(Val::Undefined));
}

#[test]
fn client_hello_is_strict_and_binds_the_client() {
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[]);
    let extra = json!({"kind": "clientHello", "protocolVersion": 3, "clientId": "a", "appVersion": "1", "extra": true});
    assert_eq!(client.agent("initializeConversationV4", &[extra]).err()["name"], "ZodError");
    let hello =
        json!({"kind": "clientHello", "protocolVersion": 3, "clientId": "a", "appVersion": "1"});
    client.agent("initializeConversationV4", std::slice::from_ref(&hello)).ok();
    client.agent("initializeConversationV4", &[hello]).ok();
    let other =
        json!({"kind": "clientHello", "protocolVersion": 3, "clientId": "b", "appVersion": "1"});
    assert_eq!(
        client.agent("initializeConversationV4", &[other]).err()["message"],
        "fault.connection.clientChanged"
    );
}

#[test]
fn listens_dispose_and_cancels_follow_the_request_ids() {
    let runtime = Runtime::new("3.17.2");
    let mut client = runtime.start(&[]);
    let ws = runtime.ws();
    let created = client.agent("createSession", &[json!({"workspacePath": ws})]).ok();
    let id = created["session"]["sessionId"].as_str().unwrap().to_owned();
    // An unknown event throws on the listen path: no response at all, the channel lives on.
    client.listen("zcode-agent", "onNoSuchEvent", &json!({}));
    let first =
        client.listen("zcode-agent", "onDynamicConversationFrame", &json!({"workspacePath": ws}));
    let second =
        client.listen("zcode-agent", "onDynamicConversationFrame", &json!({"workspacePath": ws}));
    let other = client.listen(
        "zcode-agent",
        "onDynamicConversationFrame",
        &json!({"workspacePath": "/elsewhere"}),
    );
    let ack = client
        .agent("subscribeConversationV4", &[json!({"workspacePath": ws, "sessionId": id})])
        .ok();
    let subscription = ack["ack"]["subscriptionId"].as_str().unwrap().to_owned();
    assert!(subscription.starts_with("sub-"));
    assert_eq!(ack["ack"]["mode"], "snapshot");
    // Both listens of the workspace got the initial frame; the other workspace's did not.
    for listen in [first, second] {
        let wire = client.event(listen);
        assert_eq!(wire["deliveryKind"], "initial");
        assert_eq!(wire["subscriptionId"], subscription.as_str());
        assert_eq!(wire["topic"], format!("conversation/{id}"));
        assert_eq!(wire["logicalFrameId"], format!("{subscription}-lf-1"));
    }
    assert!(client.received(other).is_empty());
    // Dispose one listen; cancel ([101]) the other: both registrations are gone.
    client.dispose(first);
    client.cancel(second);
    let resync = client
        .agent("resyncConversationV4", &[json!({"workspacePath": ws, "subscriptionId": subscription, "base": null, "forceSnapshot": true})])
        .ok();
    assert_eq!(resync["ack"]["mode"], "snapshot");
    assert!(client.received(first).is_empty() && client.received(second).is_empty());
    // A cancel for an id that is no request changes nothing.
    client.cancel(999);
    assert_eq!(client.agent("initialize", &[json!({"workspacePath": ws})]).ok()["available"], true);
}

#[test]
fn unsubscribe_and_resync_check_ownership() {
    let runtime = Runtime::new("3.14.3");
    let mut client = runtime.start(&[]);
    let ws = runtime.ws();
    let missing = client
        .agent(
            "resyncConversationV4",
            &[json!({"workspacePath": ws, "subscriptionId": "sub-nope", "base": null})],
        )
        .err();
    assert_eq!(missing["message"], "fault.subscription.notOwned");
    assert_eq!(
        client.agent(
            "unsubscribeConversationV4",
            &[json!({"workspacePath": ws, "subscriptionId": "sub-nope"})]
        ),
        services_support::Reply::Ok(Val::Undefined)
    );
    let unknown = client
        .agent("subscribeConversationV4", &[json!({"workspacePath": ws, "sessionId": "sess_nope"})])
        .err();
    assert!(unknown["message"].as_str().unwrap().contains("Session not found"));
}

#[test]
fn account_model_and_usage_channels_follow_sign_in() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[("ZCODE_SIM_SIGNED_OUT", "1")]);
    let ws = runtime.ws();
    assert_eq!(
        client.call("oauth", "restoreCachedSessionState", &[]).ok(),
        json!({"status": "signed-out"})
    );
    assert_eq!(
        client.agent("initialize", &[json!({"workspacePath": ws})]).ok()["reasonCode"],
        "provider_not_ready"
    );
    assert_eq!(
        client.call("model-selection", "getView", &[json!({})]).ok()["providers"],
        json!([])
    );
    assert_eq!(
        client.call("usage-stats", "getEntitlementSnapshot", &[json!({})]).ok()["unavailableReason"],
        "not_authenticated"
    );
    let url = client.call("oauth", "startOAuthWithPolling", &[json!("zai")]).ok();
    assert!(url["authorizeUrl"].as_str().unwrap().starts_with("https://"));
    assert_eq!(
        client.call("oauth", "pollPendingOAuth", &[]).ok(),
        json!({"kind": "session", "provider": "zai"})
    );
    assert_eq!(client.call("oauth", "pollPendingOAuth", &[]).ok(), Value::Null);
    assert!(runtime.home.join(".zcode/v2/credentials.json").is_file());
    assert_eq!(
        client.call("oauth", "restoreCachedSessionState", &[]).ok()["status"],
        "authenticated"
    );
    let view = client.call("model-selection", "getView", &[json!({})]).ok();
    assert!(!view["providers"].as_array().unwrap().is_empty());
    assert!(view["preferredSelection"]["options"]["reasoningLevel"].is_string());
    let quota = client
        .call("usage-stats", "getEntitlementSnapshot", &[json!({"includeSubscription": true})])
        .ok();
    assert_eq!(quota["quota"]["limits"][0]["type"], "TOKENS_LIMIT");
    client.call("setting", "update", &[json!({"providerFamilyDomain": "zai"})]).ok();
    assert_eq!(client.call("setting", "get", &[]).ok()["providerFamilyDomain"], "zai");
    client.call("oauth", "logout", &[]).ok();
    assert!(!runtime.home.join(".zcode/v2/credentials.json").exists());
    assert_eq!(client.call("oauth", "getActiveProvider", &[]).ok(), Value::Null);
}

#[test]
fn stdin_end_shuts_the_server_down_cleanly() {
    let runtime = Runtime::new("3.16.2");
    let client = runtime.start(&[]);
    let (status, stderr) = client.server.wait();
    assert!(status.success(), "{stderr}");
}
