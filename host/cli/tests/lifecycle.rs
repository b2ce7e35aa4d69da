//! Several sessions in one process, and the end of the connection.

mod support;

use serde_json::{Value, json};
use support::*;

#[test]
fn two_sessions_in_two_workspaces_get_only_their_own_updates() {
    let env = TestEnv::new();
    let alpha_ws = env.workspace("alpha");
    let bravo_ws = env.workspace("bravo");
    let mut agent = Agent::start_with(&env, policy::permission_kind("allow_once"));
    agent.initialize(plain_client());
    let alpha = agent.new_session(&alpha_ws);
    let bravo = agent.new_session(&bravo_ws);
    assert_ne!(alpha, bravo);

    // Interleaved: both turns run at once, each with a permission and an edit.
    let a1 = agent.send_request("session/prompt", text_prompt(&alpha, "sim:edit a.txt from alpha"));
    let b1 = agent.send_request("session/prompt", text_prompt(&bravo, "sim:edit b.txt from bravo"));
    let a_response = agent.wait_response(a1);
    let b_response = agent.wait_response(b1);
    assert_eq!(agent.result_of(&a_response, "alpha edit")["stopReason"], "end_turn");
    assert_eq!(agent.result_of(&b_response, "bravo edit")["stopReason"], "end_turn");

    let a2 = agent.send_request("session/prompt", text_prompt(&alpha, "alpha speaks"));
    let b2 = agent.send_request("session/prompt", text_prompt(&bravo, "bravo speaks"));
    assert_eq!(agent.result_of(&agent.wait_response(b2), "bravo text")["stopReason"], "end_turn");
    assert_eq!(agent.result_of(&agent.wait_response(a2), "alpha text")["stopReason"], "end_turn");

    // Each workspace got only its own file.
    assert_eq!(std::fs::read_to_string(alpha_ws.join("a.txt")).unwrap(), "from alpha\n");
    assert_eq!(std::fs::read_to_string(bravo_ws.join("b.txt")).unwrap(), "from bravo\n");
    assert!(!alpha_ws.join("b.txt").exists() && !bravo_ws.join("a.txt").exists());

    // Each session's updates speak only of that session.
    for (session, me, other, ws) in
        [(&alpha, "alpha", "bravo", &alpha_ws), (&bravo, "bravo", "alpha", &bravo_ws)]
    {
        let updates = agent.updates(session);
        let text = chunk_text(&updates, "agent_message_chunk");
        assert!(text.contains(&format!("You said: {me} speaks")), "{session}: {text:?}");
        assert!(!text.contains(other), "{session} saw {other}'s text: {text:?}");
        let tools: Vec<&Value> = updates.iter().filter(|u| kind(u) == "tool_call").collect();
        assert_eq!(tools.len(), 1, "{tools:#?}");
        let location = tools[0]["locations"][0]["path"].as_str().unwrap();
        assert!(location.starts_with(ws.to_str().unwrap()), "{location} outside {ws:?}");
    }
    // Each permission named its own session and workspace.
    let permissions = agent.agent_requests();
    assert_eq!(permissions.len(), 2, "{permissions:#?}");
    for permission in &permissions {
        let session = permission.params["sessionId"].as_str().unwrap();
        let path = permission.params["toolCall"]["locations"][0]["path"].as_str().unwrap();
        let ws = if session == alpha { &alpha_ws } else { &bravo_ws };
        assert!(session == alpha || session == bravo, "{session}");
        assert!(path.starts_with(ws.to_str().unwrap()), "{path} for {session}");
    }
    assert!(agent.finish().success());
}

#[test]
fn closing_stdin_during_a_prompt_ends_everything() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    agent.send_request("session/prompt", text_prompt(&session, "sim:slow 600000"));
    agent
        .wait_update(&session, "the slow turn's first chunk", |u| kind(u) == "agent_message_chunk");
    assert!(!agent.live_descendants().is_empty(), "the host runs during the turn");

    let status = agent.finish();
    assert!(status.success(), "{status:?}");
}

#[test]
fn closing_stdin_while_a_permission_is_open_allows_nothing() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::hold(), plain_client(), &workspace);
    agent.send_request("session/prompt", text_prompt(&session, "sim:edit orphan.txt no"));
    agent.wait_agent_request("session/request_permission", 0);

    assert!(agent.finish().success());
    assert!(!workspace.join("orphan.txt").exists(), "the edit ran after the client left");
}

#[test]
fn requests_with_unknown_methods_get_method_not_found_and_the_connection_lives_on() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    for method in ["session/archive", "session/delete", "_zcode/unknown"] {
        let response = agent.request(method, json!({"sessionId": session}));
        let (code, _) = agent.error_of(&response, method);
        assert_eq!(code, METHOD_NOT_FOUND, "{method}");
    }
    agent.notify("_zcode/unknown_notification", json!({}));
    agent.prompt_ok(&session, "still serving", "end_turn");
    assert!(agent.finish().success());
}

#[test]
fn malformed_input_gets_a_parse_error_and_the_connection_lives_on() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    agent.send_raw("this is not json");
    let parse_error = agent.wait_for("a parse error", |t| {
        t.frames.iter().find(|f| f.value["id"].is_null() && f.value.get("error").is_some()).cloned()
    });
    assert_eq!(parse_error.value["error"]["code"], -32700, "{}", parse_error.value);
    agent.prompt_ok(&session, "after the garbage", "end_turn");
    assert!(agent.finish().success());
}

/// A parse error echoes a bounded prefix of the offending line, never the line itself: a
/// 200 KB garbage line used to come back as a 200 KB error.
#[test]
fn a_huge_garbage_line_gets_a_bounded_parse_error() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let garbage = "garbage! ".repeat(200 * 1024 / 9);
    agent.send_raw(&garbage);
    let parse_error = agent.wait_for("a parse error", |t| {
        t.frames.iter().find(|f| f.value["id"].is_null() && f.value.get("error").is_some()).cloned()
    });
    let error = &parse_error.value["error"];
    assert_eq!(error["code"], -32700, "{error}");
    let echoed = error["data"]["line"].as_str().expect("data.line");
    assert!(echoed.len() <= 1024, "echoed {} bytes", echoed.len());
    assert!(garbage.starts_with(echoed), "the echo is a prefix of the line");
    assert_eq!(error["data"]["truncated"], true, "{}", error["data"]);
    assert_eq!(error["data"]["lineBytes"], garbage.len(), "{}", error["data"]);
    assert!(parse_error.value.to_string().len() < 4096, "the whole error is small");
    agent.prompt_ok(&session, "after the garbage", "end_turn");
    assert!(agent.finish().success());
}

/// The wire checker itself must be able to fail, or every test above proves nothing.
#[test]
fn the_wire_checker_refuses_what_is_not_json_rpc_2() {
    let bad = [
        "",
        "not json",
        "[1,2]",
        r#"{"id":1,"result":{}}"#,
        r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"x"}}"#,
        r#"{"jsonrpc":"2.0","method":7}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":"text"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","method":"m","result":{}}"#,
    ];
    for line in bad {
        assert!(check_frame(line).is_err(), "accepted {line:?}");
    }
    let good = [
        r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":"a","method":"m","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
    ];
    for line in good {
        assert!(check_frame(line).is_ok(), "refused {line:?}");
    }
}

/// Diagnostics never carry what the user or ZCode said: prompt text, tool input, file
/// contents. Checked at every log level the agent offers.
#[test]
fn logs_never_carry_prompt_text_tool_input_or_file_contents() {
    for level in ["info", "debug", "trace"] {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        std::fs::write(workspace.join("README.md"), "FILE-SECRET-7c1d\n").unwrap();
        let mut agent = Agent::start_with_env(
            &env,
            policy::permission_kind("allow_once"),
            &[("ZCODE_ACP_LOG", level)],
        );
        agent.initialize(plain_client());
        let session = agent.new_session(&workspace);
        agent.prompt_ok(&session, "PROMPT-SECRET-51ab please", "end_turn");
        agent.prompt_ok(&session, "sim:read", "end_turn");
        agent.prompt_ok(&session, "sim:edit out.txt INPUT-SECRET-90fe", "end_turn");
        // The secrets did reach the client (so their absence from the logs means something).
        let wire: String = agent.transcript().frames.iter().map(|f| f.value.to_string()).collect();
        for secret in ["PROMPT-SECRET-51ab", "FILE-SECRET-7c1d", "INPUT-SECRET-90fe"] {
            assert!(wire.contains(secret), "{secret} never reached the client");
        }
        let (status, stderr) = agent.finish_with_stderr();
        assert!(status.success());
        assert!(stderr.contains("prompt completed"), "no logs at {level}");
        for secret in ["PROMPT-SECRET-51ab", "FILE-SECRET-7c1d", "INPUT-SECRET-90fe"] {
            let line = stderr.lines().find(|l| l.contains(secret));
            assert!(line.is_none(), "{secret} logged at {level}: {}", line.unwrap_or_default());
        }
    }
}

#[test]
fn concurrent_first_sessions_share_one_host() {
    let env = TestEnv::new();
    let workspaces: Vec<_> = (0..4).map(|i| env.workspace(&format!("ws{i}"))).collect();
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    // All at once, before any host exists.
    let ids: Vec<u64> = workspaces
        .iter()
        .map(|ws| agent.send_request("session/new", json!({"cwd": ws, "mcpServers": []})))
        .collect();
    let sessions: Vec<String> = ids
        .iter()
        .map(|id| {
            let response = agent.wait_response(*id);
            agent.result_of(&response, "concurrent session/new")["sessionId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let live = agent.live_descendants();
    assert_eq!(live.len(), 1, "one host child for the connection: {live:?}");
    for session in &sessions {
        agent.prompt_ok(session, "hello", "end_turn");
    }
    assert!(agent.finish().success());
}

#[test]
fn a_long_stream_arrives_complete_and_in_order() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    agent.prompt_ok(&session, "sim:stream 20000", "end_turn");
    let updates = agent.updates(&session);
    let chunks: Vec<&Value> = updates.iter().filter(|u| kind(u) == "agent_message_chunk").collect();
    assert_eq!(chunks.len(), 20000);
    assert_eq!(chunk_text(&updates, "agent_message_chunk"), "lorem ipsum ".repeat(20000));
    assert!(agent.finish().success());
}

#[test]
fn an_oversized_prompt_is_refused_and_the_connection_lives_on() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    let huge = "x".repeat(13 * 1024 * 1024);
    let response = agent.prompt(&session, &huge);
    let (code, message) = agent.error_of(&response, "a 13 MiB prompt");
    assert_eq!(code, INVALID_PARAMS, "{message}");
    assert!(message.contains("too large"), "{message}");
    agent.prompt_ok(&session, "small again", "end_turn");
    assert!(agent.finish().success());
}
