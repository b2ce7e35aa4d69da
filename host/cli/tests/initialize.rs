//! `initialize`: version, the exact capability set, auth methods, and the connection state
//! machine (nothing before it, nothing twice, no ZCode process started by it).

mod support;

use serde_json::{Value, json};
use support::*;

fn sorted_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> =
        value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    keys.sort();
    keys
}

#[test]
fn initialize_advertises_exactly_the_implemented_capabilities() {
    let env = TestEnv::new();
    let mut agent = Agent::start(&env);
    let result = agent.initialize(plain_client());

    assert_eq!(result["protocolVersion"], 1, "{result}");
    let caps = &result["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{caps}");
    assert_eq!(
        caps["promptCapabilities"],
        json!({"image": true, "audio": true, "embeddedContext": true}),
        "{caps}"
    );
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": true}), "{caps}");
    // Exactly list, resume and close, and fork where ZCode forks (V4, `tests/fork.rs`): no
    // delete or additionalDirectories.
    let sessions: &[&str] = match generation() == Generation::HostBridge {
        true => &["close", "list", "resume"],
        false => &["close", "fork", "list", "resume"],
    };
    assert_eq!(sorted_keys(&caps["sessionCapabilities"]), sessions, "{caps}");
    assert_eq!(caps["auth"], json!({"logout": {}}), "{caps}");
    assert_eq!(
        sorted_keys(caps),
        ["auth", "loadSession", "mcpCapabilities", "promptCapabilities", "sessionCapabilities"],
        "no capability beyond the implemented ones: {caps}"
    );
    // A client without terminal auth is offered no auth method.
    let methods = result.get("authMethods").cloned().unwrap_or(json!([]));
    assert_eq!(methods, json!([]), "{result}");
    assert_eq!(result["agentInfo"]["name"], "zcode-acp", "{result}");

    // `initialize` starts nothing: a mismatched connection must never start ZCode.
    assert_eq!(agent.live_descendants(), Vec::<u32>::new());
    assert!(agent.seen_processes().is_empty(), "{:?}", agent.seen_processes());
    assert!(agent.finish().success());
}

#[test]
fn auth_methods_are_offered_only_to_clients_that_run_terminal_auth() {
    let env = TestEnv::new();
    let mut agent = Agent::start(&env);
    let mut capabilities = plain_client();
    capabilities["auth"] = json!({"terminal": true});
    let result = agent.initialize(capabilities);

    let methods = result["authMethods"].as_array().expect("authMethods is an array");
    assert_eq!(methods.len(), 1, "{result}");
    let login = &methods[0];
    assert_eq!(login["type"], "terminal", "{login}");
    assert_eq!(login["id"], "zcode-login", "{login}");
    assert_eq!(login["args"], json!(["login"]), "{login}");
    assert!(login["name"].as_str().is_some_and(|n| !n.is_empty()), "{login}");
    assert!(agent.seen_processes().is_empty(), "initialize started a process");
    assert!(agent.finish().success());
}

#[test]
fn a_second_initialize_is_refused_and_the_first_one_stands() {
    let env = TestEnv::new();
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());

    let again = agent.request("initialize", initialize_params(form_client()));
    let (code, message) = agent.error_of(&again, "second initialize");
    assert_eq!(code, INVALID_REQUEST, "{message}");
    assert!(message.contains("already initialized"), "{message}");

    // The connection still serves session methods ...
    let relative = agent.request("session/new", json!({"cwd": "relative/dir", "mcpServers": []}));
    let (code, message) = agent.error_of(&relative, "session/new with a relative cwd");
    assert_eq!(code, INVALID_PARAMS, "{message}");
    // ... with the first client's capabilities: no form elicitation.
    let workspace = env.workspace("ws");
    let session = agent.new_session(&workspace);
    // Two questions, one multi-select, cannot be a permission: declined natively, nothing asked.
    agent.prompt_ok(&session, "sim:question", "end_turn");
    assert!(agent.agent_requests().is_empty(), "{:#?}", agent.agent_requests());
    assert!(agent.finish().success());
}

#[test]
fn session_methods_before_initialize_are_refused() {
    let env = TestEnv::new();
    let workspace = env.workspace("early");
    let mut agent = Agent::start(&env);

    let early = [
        ("session/new", json!({"cwd": workspace, "mcpServers": []})),
        ("session/list", json!({"cwd": workspace})),
        ("session/prompt", text_prompt("no-such-session", "hello")),
        ("session/load", json!({"sessionId": "s", "cwd": workspace, "mcpServers": []})),
    ];
    for (method, params) in early {
        let response = agent.request(method, params);
        let (code, message) = agent.error_of(&response, method);
        assert_eq!(code, INVALID_REQUEST, "{method}: {message}");
    }
    assert!(agent.seen_processes().is_empty(), "a refused request started a process");

    // The refusals did not poison the connection.
    agent.initialize(plain_client());
    let session = agent.new_session(&workspace);
    assert!(!session.is_empty());
    assert!(agent.finish().success());
}

#[test]
fn the_host_starts_with_the_first_session_and_is_gone_after_the_client_leaves() {
    let env = TestEnv::new();
    let workspace = env.workspace("host");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    assert!(agent.live_descendants().is_empty(), "a child exists right after initialize");

    agent.new_session(&workspace);
    // The host child serves the session, so it is alive now.
    let live = agent.live_descendants();
    assert!(!live.is_empty(), "no host process while a session is open");
    assert!(!agent.seen_processes().is_empty());

    assert!(agent.finish().success(), "the agent exits cleanly when stdin closes");
}

/// A request for 2 or newer is ACP v2's to answer (`protocol_v2.rs` covers v2 itself). With
/// v1-shaped params, exactly 2 is an invalid v2 `initialize`; a newer version is taken
/// leniently as v2. Either way the connection can still initialize.
#[test]
fn a_client_asking_for_a_newer_protocol_is_answered_by_v2() {
    let env = TestEnv::new();
    let mut agent = Agent::start(&env);
    let mut params = initialize_params(plain_client());
    params["protocolVersion"] = json!(2);
    let response = agent.request("initialize", params.clone());
    let (code, message) = agent.error_of(&response, "a v1-shaped initialize asking for 2");
    assert_eq!(code, INVALID_PARAMS, "{message}");
    params["protocolVersion"] = json!(99);
    let result = agent.call("initialize", params);
    assert_eq!(result["protocolVersion"], 2, "{result}");
    assert!(agent.seen_processes().is_empty());
    assert!(agent.finish().success());
}

/// A client may pipeline: `session/new` written right behind `initialize`, before its answer
/// arrived. The connection's state is taken in arrival order, so the session is created (the
/// SDK used to check `session/new` before the initialize answer was written, and refused it
/// with `-32600 "ACP initialization must complete"`).
#[test]
fn a_session_new_pipelined_behind_initialize_is_served() {
    let env = TestEnv::new();
    let workspace = env.workspace("pipelined");
    let agent = Agent::start(&env);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": initialize_params(plain_client())});
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": workspace, "mcpServers": []}});
    // One write: both lines reach the agent together.
    agent.send_raw(&format!("{initialize}\n{new}"));
    let initialized = agent.wait_response(1);
    assert_eq!(initialized["result"]["protocolVersion"], 1, "{initialized}");
    let created = agent.wait_response(2);
    let session = agent.result_of(&created, "the pipelined session/new");
    assert!(session["sessionId"].is_string(), "{session}");
    assert!(agent.response_seq(1) < agent.response_seq(2), "answered out of order");
    assert!(agent.finish().success());
}
