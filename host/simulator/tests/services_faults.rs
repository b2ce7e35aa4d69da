//! Every Services Server fault of `ZCODE_SIM_FAULT`, observed over real pipes: broken framing
//! is detected, V4 stream faults are recovered by a resync without losing anything, and the
//! process-level faults (a wrong hello, a stall after it, a crash, an exit mid-turn, a frozen
//! turn, late and duplicate answers) show as what they are.

mod services_support;

use serde_json::json;
use services_support::mirror::MirrorFault;
use services_support::{Client, Runtime, Session};

const LONG: &str = "sim:reply alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma";

fn expected_long_reply() -> String {
    LONG.trim_start_matches("sim:reply ").to_owned()
}

/// Runs `LONG` to its end, resyncing whenever the stream faults; returns the faults seen.
fn prompt_through_faults(client: &mut Client, session: &mut Session) -> Vec<MirrorFault> {
    let ack = session.send_text(client, LONG);
    let id = ack["commandId"].as_str().unwrap().to_owned();
    let mut faults = Vec::new();
    loop {
        let done = |m: &services_support::mirror::Mirror| {
            m.idle()
                && m.rows("turnHeader")
                    .iter()
                    .any(|row| row["sourceCommandId"] == id.as_str() && row["state"] != "running")
        };
        match session.pump_until(client, done) {
            Ok(()) => return faults,
            Err(fault) => {
                faults.push(fault);
                session.resync(client);
            }
        }
    }
}

#[test]
fn split_writes_carry_a_whole_session() {
    let runtime = Runtime::new("3.14.3");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "split-writes")]);
    client.prelude();
    let mut session = Session::create(&mut client, &runtime.ws());
    let ack = session.send_text(&mut client, "sim:shell ls");
    let interaction = session.pending(&mut client, "permission");
    session.command(
        &mut client,
        "resolveInteraction",
        json!({"interactionId": interaction["interactionId"], "answer": {"optionId": "allowOnce"}}),
    );
    session.until_idle_with(&mut client, ack["commandId"].as_str().unwrap());
    assert_eq!(session.reply_text(), "The command finished.");
}

#[test]
fn a_corrupt_transport_header_is_a_framing_fault() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "corrupt-header@listSessions")]);
    let id =
        client.request("zcode-agent", "listSessions", &[json!({"workspacePath": runtime.ws()})]);
    let broken = client.drain_to_end_after_close();
    assert!(broken.unwrap().contains("exceeds the limit"));
    assert!(!client.has_reply(id), "nothing after the corrupt header is readable");
}

#[test]
fn a_corrupt_message_header_is_refused() {
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "corrupt-message@initialize")]);
    client.request("zcode-agent", "initialize", &[json!({"workspacePath": runtime.ws()})]);
    assert!(client.drain_to_end_after_close().unwrap().contains("unknown tag 127"));
}

#[test]
fn a_crc_mismatch_is_recovered_by_a_resync() {
    let runtime = Runtime::new("3.17.2");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "crc-mismatch@stream")]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let faults = prompt_through_faults(&mut client, &mut session);
    assert_eq!(faults, [MirrorFault::Wire("crc32 mismatch".into())]);
    assert_eq!(session.reply_text(), expected_long_reply());
    assert!(session.mirror.deliveries.contains(&"recovery".to_owned()));
    // A fresh snapshot agrees with what the resynced mirror holds.
    let recovered = session.mirror.state.clone();
    session.resync(&mut client);
    assert_eq!(session.mirror.state["rows"], recovered["rows"]);
}

#[test]
fn a_sequence_gap_is_recovered_without_loss() {
    for spec in ["seq-gap@stream", ""] {
        let runtime = Runtime::new("4.0.0");
        let mut client = runtime.start(&[("ZCODE_SIM_FAULT", spec)]);
        let mut session = Session::create(&mut client, &runtime.ws());
        let text = if spec.is_empty() { "sim:fault seq-gap".to_owned() } else { LONG.to_owned() };
        let ack = session.send_text(&mut client, &text);
        let id = ack["commandId"].as_str().unwrap().to_owned();
        let mut gaps = 0;
        loop {
            let id = id.clone();
            let done = move |m: &services_support::mirror::Mirror| {
                m.idle()
                    && m.any_row("turnHeader", |row| {
                        row["sourceCommandId"] == id.as_str() && row["state"] != "running"
                    })
            };
            match session.pump_until(&mut client, done) {
                Ok(()) => break,
                Err(MirrorFault::Gap { expected, got }) => {
                    assert!(got > expected, "the next frame starts past the client's seq");
                    gaps += 1;
                    session.resync(&mut client);
                }
                Err(other) => panic!("{other:?}"),
            }
        }
        assert_eq!(gaps, 1, "{spec:?}");
        let expected = if spec.is_empty() {
            "Before the fault.After the fault.".to_owned()
        } else {
            expected_long_reply()
        };
        let texts: String = session
            .mirror
            .rows("assistantText")
            .iter()
            .map(|row| row["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(texts, expected, "{spec:?}");
    }
}

#[test]
fn an_unknown_delta_reaches_the_client_as_such() {
    let runtime = Runtime::new("3.14.3");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "unknown-delta@stream")]);
    let mut session = Session::create(&mut client, &runtime.ws());
    let faults = prompt_through_faults(&mut client, &mut session);
    assert_eq!(faults, [MirrorFault::UnknownOp("Some(\"sim.unknownOp\")".into())]);
    assert_eq!(session.reply_text(), expected_long_reply());
}

#[test]
fn oversize_and_non_utf8_frames_are_written_as_such() {
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "oversize@stream")]);
    let mut session = Session::create(&mut client, &runtime.ws());
    session.send_text(&mut client, LONG);
    let listen = session.listen;
    loop {
        let wire = client.event(listen);
        if wire["topic"] == "conversation/sim-oversize" {
            assert!(wire.to_string().len() > 16 * 1024 * 1024, "far past the 1 MiB physical limit");
            break;
        }
    }
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "invalid-utf8@stream")]);
    let mut session = Session::create(&mut client, &runtime.ws());
    session.send_text(&mut client, LONG);
    // Reading stops at the broken frame (the turn writes it; stdin stays open until then).
    assert!(client.drain_to_end().unwrap().contains("not UTF-8"));
}

#[test]
fn a_wrong_hello_version_is_visible_before_anything_else() {
    let runtime = Runtime::new("3.14.3");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "wrong-hello-version")]);
    let hello = client.server.hello.clone().unwrap();
    assert_ne!(hello["version"], "3.14.3");
    assert_eq!(hello["type"], "zcode-hello");
    // The server is otherwise the real thing; the client must refuse it on its own.
    assert_eq!(
        client.agent("initialize", &[json!({"workspacePath": runtime.ws()})]).ok()["available"],
        true
    );
}

#[test]
fn a_stall_after_the_hello_writes_nothing_more() {
    let runtime = Runtime::new("4.0.0");
    let mut server = runtime.spawn(&[("ZCODE_SIM_FAULT", "stall@hello")]);
    assert_eq!(server.hello.as_ref().unwrap()["version"], "4.0.0");
    server.write(
        format!("{}\n", json!({"type": "zcode-hello-ack", "version": "1", "clientId": "c"}))
            .as_bytes(),
    );
    server.close_stdin();
    assert!(server.ended_quietly(), "no [200], no byte after the hello");
    let (status, _) = server.wait();
    assert!(status.success());
}

#[test]
fn a_crash_at_a_command_ends_the_process_unanswered() {
    let runtime = Runtime::new("3.17.2");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "crash@sendConversationCommandV4")]);
    let session = Session::create(&mut client, &runtime.ws());
    let revision = session.mirror.state["revision"].clone();
    let id = client.request("zcode-agent", "sendConversationCommandV4", &[json!({"workspacePath": runtime.ws(), "envelope": {
        "commandId": "c", "clientId": "c", "sessionId": session.id, "type": "stop", "payload": {}, "issuedAt": 1, "baseRevision": revision}})]);
    assert_eq!(client.drain_to_end(), None);
    assert!(!client.has_reply(id));
    let (status, stderr) = client.server.wait();
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("simulated crash at sendConversationCommandV4"), "{stderr}");
}

#[test]
fn a_stalled_call_is_never_answered_while_others_are() {
    let runtime = Runtime::new("4.0.0");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "stall@listSessions")]);
    let stalled =
        client.request("zcode-agent", "listSessions", &[json!({"workspacePath": runtime.ws()})]);
    client.cancel(stalled);
    assert_eq!(
        client.agent("initialize", &[json!({"workspacePath": runtime.ws()})]).ok()["available"],
        true
    );
    assert!(!client.has_reply(stalled), "answers come in order, so the stalled one would be here");
    // The fault fired once: the next listing is answered.
    assert_eq!(
        client.agent("listSessions", &[json!({"workspacePath": runtime.ws()})]).ok(),
        json!([])
    );
}

#[test]
fn late_and_duplicate_answers() {
    let runtime = Runtime::new("3.14.3");
    let mut client = runtime
        .start(&[("ZCODE_SIM_FAULT", "late@readWorkspacePresentation=50,duplicate@initialize")]);
    let ws = runtime.ws();
    let late =
        client.request("zcode-agent", "readWorkspacePresentation", &[json!({"workspacePath": ws})]);
    let initialize = client.request("zcode-agent", "initialize", &[json!({"workspacePath": ws})]);
    assert_eq!(client.reply(initialize).ok()["available"], true);
    assert_eq!(client.reply(late).ok()["mode"], "build");
    client.agent("helloConversationV4", &[]).ok();
    assert_eq!(client.reply_counts[&initialize], 2, "initialize was answered twice");
    assert_eq!(client.reply_counts[&late], 1);
}

#[test]
fn a_frozen_turn_acknowledges_stop_but_never_ends() {
    let runtime = Runtime::new("3.16.2");
    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "stall@permission")]);
    let mut session = Session::create(&mut client, &runtime.ws());
    session.send_text(&mut client, "sim:shell ls");
    session.pending(&mut client, "permission");
    assert_eq!(session.command(&mut client, "stop", json!({}))["status"], "accepted");
    let busy = session.command(&mut client, "sendText", json!({"text": "are you there?"}));
    assert_eq!(busy["result"]["delivery"], "queue", "the session stays busy");
    // Until the process ends, no frame ever says the turn is over.
    client.server.close_stdin();
    session.drain(&mut client);
    assert_eq!(session.mirror.rows("turnHeader")[0]["state"], "running");
    assert_eq!(session.mirror.state["control"]["canStop"], true);
}

#[test]
fn invalid_fault_specifications_are_refused_at_start() {
    let runtime = Runtime::new("4.0.0");
    for spec in ["explode", "crc-mismatch@start", "split-writes@stream", "seq-gap@nowhere"] {
        let (status, stdout, stderr) =
            runtime.output(&[&runtime.server_entry()], &[("ZCODE_SIM_FAULT", spec)], &[]);
        assert_eq!(status.code(), Some(2), "{spec}");
        assert!(stderr.contains("invalid ZCODE_SIM_FAULT"), "{stderr}");
        assert!(stdout.is_empty());
    }
}

/// `big-history` seeds a session's first history read with MiB of finished exchanges before
/// its own rows (the 26 MB resume of issue 25 [B], paged): the pages are consistent (row ids
/// from 1, ascending, no gap), the session's own turn comes last, and it fires once.
#[test]
fn a_big_history_comes_before_the_sessions_own_rows_at_the_first_read() {
    let runtime = Runtime::new("4.0.0");
    let ws = runtime.ws();
    let mut client = runtime.start(&[]);
    let mut session = Session::create(&mut client, &ws);
    session.prompt(&mut client, "sim:reply own words");
    drop(client);

    let mut client = runtime.start(&[("ZCODE_SIM_FAULT", "big-history=1")]);
    client
        .agent(
            "resumeSession",
            &[json!({"workspacePath": ws, "sessionId": session.id, "mcpServers": []})],
        )
        .ok();
    let page = |client: &mut Client, before: Option<u64>| {
        let mut params = json!({"workspacePath": ws, "sessionId": session.id, "limit": 200});
        if let Some(before) = before {
            params["beforeRowId"] = json!(before);
        }
        client.agent("conversationRowsRangeV4", &[params]).ok()
    };
    let mut rows = Vec::new();
    let mut before = None;
    loop {
        let got = page(&mut client, before);
        let mut got_rows = got["rows"].as_array().unwrap().clone();
        before = got_rows.first().and_then(|row| row["rowId"].as_u64());
        got_rows.append(&mut rows);
        rows = got_rows;
        if got["hasMore"] != true {
            break;
        }
    }
    let ids: Vec<u64> = rows.iter().map(|row| row["rowId"].as_u64().unwrap()).collect();
    assert_eq!(ids, (1..=rows.len() as u64).collect::<Vec<_>>(), "ids from 1, in order, no gap");
    let users: Vec<&str> = rows
        .iter()
        .filter(|row| row["kind"] == "userInput")
        .map(|row| row["text"].as_str().unwrap())
        .collect();
    // 1 MiB of exchanges of a little over 8 KiB, then the session's own prompt.
    let seeded = users.len() - 1;
    assert!((100..140).contains(&seeded), "{seeded} exchanges");
    assert_eq!(users[0], "History message 1");
    assert_eq!(users[seeded - 1], format!("History message {seeded}"));
    assert_eq!(users[seeded], "sim:reply own words");
    let last = rows.last().unwrap();
    assert_eq!(
        (last["kind"].as_str(), last["text"].as_str()),
        (Some("assistantText"), Some("own words"))
    );
    let reply = rows.iter().find(|row| row["kind"] == "assistantText").unwrap();
    assert!(reply["text"].as_str().unwrap().starts_with("Reply to history message 1. "));
    assert!(reply["text"].as_str().unwrap().len() >= 8 * 1024);
    // Fired once: the tail read again is the same.
    let again = page(&mut client, None);
    assert_eq!(again["rows"].as_array().unwrap().last(), Some(last));
    assert_eq!(
        again["rows"][0]["rowId"],
        rows[rows.len() - again["rows"].as_array().unwrap().len()]["rowId"]
    );
}
