//! Load: 50 concurrent sessions in 5 workspaces, with interleaved prompts, permissions and
//! cancels, three rounds on one agent. Nothing is lost (every prompt answered once, with the
//! right outcome; every update for the right session; every permission answered, and only
//! the allowed edits happened) and memory is stable: the agent's VmRSS after the third round
//! stays within a generous bound of the second (the figures are printed for
//! docs/reliability.md; no tight number is asserted). Hang guards only, no timing asserts.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use support::reliability::{Invariants, send_prompt};
use support::*;

const SESSIONS: usize = 50;
const WORKSPACES: usize = 5;

/// Allows an edit whose file name says `allow`, refuses every other.
fn allow_by_name() -> Policy {
    Arc::new(|method, params| match method {
        "session/request_permission" => {
            let path = params["toolCall"]["locations"][0]["path"].as_str().unwrap_or_default();
            let wanted = if path.contains("allow") { "allow_once" } else { "reject_once" };
            let options = params["options"].as_array().cloned().unwrap_or_default();
            match options.iter().find(|o| o["kind"] == wanted) {
                Some(option) => Reply::Result(policy::selected(&option["optionId"])),
                None => Reply::Error { code: INVALID_PARAMS, message: format!("no {wanted}") },
            }
        }
        other => Reply::Error { code: METHOD_NOT_FOUND, message: format!("unexpected {other}") },
    })
}

/// What each session does in a round, by its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    Talk,
    AllowedEdit,
    DeniedEdit,
    Cancelled,
    Stream,
}

fn work(index: usize) -> Work {
    [Work::Talk, Work::AllowedEdit, Work::DeniedEdit, Work::Cancelled, Work::Stream][index % 5]
}

struct Seat {
    session: String,
    workspace: PathBuf,
}

fn prompt_text(seat: usize, round: usize) -> String {
    let marker = format!("seat-{seat}-round-{round}");
    match work(seat) {
        Work::Talk => format!("hello from {marker}"),
        Work::AllowedEdit => format!("sim:edit allow-{marker}.txt {marker}"),
        Work::DeniedEdit => format!("sim:edit deny-{marker}.txt {marker}"),
        Work::Cancelled => "sim:slow 600000".to_string(),
        Work::Stream => "sim:stream 400".to_string(),
    }
}

/// One round: every session prompts at once; the slow ones are cancelled once they run.
fn round(agent: &mut Agent, seats: &[Seat], round: usize) {
    let before: Vec<usize> = seats.iter().map(|s| agent.updates(&s.session).len()).collect();
    let ids: Vec<u64> = seats
        .iter()
        .enumerate()
        .map(|(i, seat)| send_prompt(agent, &seat.session, &prompt_text(i, round)))
        .collect();
    for (i, seat) in seats.iter().enumerate().filter(|(i, _)| work(*i) == Work::Cancelled) {
        let from = before[i];
        agent.wait_for(&format!("seat {i}'s slow turn"), |t| {
            let updates = t.updates(&seat.session);
            updates[from..]
                .iter()
                .any(|(_, u)| u["content"]["text"] == "Working on it")
                .then_some(())
        });
        agent.notify("session/cancel", json!({"sessionId": seat.session}));
    }
    for (i, (id, seat)) in ids.iter().zip(seats).enumerate() {
        let response = agent.wait_response(*id);
        let result = agent.result_of(&response, &format!("seat {i} round {round}"));
        let expected = if work(i) == Work::Cancelled { "cancelled" } else { "end_turn" };
        assert_eq!(result["stopReason"], expected, "seat {i} round {round}: {result}");
        let updates = agent.updates(&seat.session)[before[i]..].to_vec();
        check_turn(i, round, seat, &updates);
    }
    // A cancelled turn may still be ending natively: wait until each session takes a prompt.
    for (i, seat) in seats.iter().enumerate().filter(|(i, _)| work(*i) == Work::Cancelled) {
        let result = agent.prompt_when_idle(&seat.session, &format!("seat {i} is back"));
        assert_eq!(result["stopReason"], "end_turn");
    }
}

/// The turn's updates are this seat's, complete, and its edits happened only when allowed.
fn check_turn(seat: usize, round: usize, place: &Seat, updates: &[Value]) {
    let marker = format!("seat-{seat}-round-{round}");
    let text = chunk_text(updates, "agent_message_chunk");
    match work(seat) {
        Work::Talk => {
            assert!(text.ends_with(&format!("You said: hello from {marker}")), "{text:?}")
        }
        Work::AllowedEdit => {
            let file = place.workspace.join(format!("allow-{marker}.txt"));
            assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{marker}\n"));
        }
        Work::DeniedEdit => {
            assert!(!place.workspace.join(format!("deny-{marker}.txt")).exists());
            assert!(text.contains("Permission denied"), "{text:?}");
        }
        Work::Cancelled => assert!(!text.contains("done"), "ran on after the cancel: {text:?}"),
        Work::Stream => assert_eq!(text, "lorem ipsum ".repeat(400), "seat {seat}"),
    }
    // Nothing of another seat in this seat's stream.
    for other in (0..SESSIONS).filter(|o| *o != seat) {
        let foreign = format!("seat-{other}-round-{round}");
        assert!(!text.contains(&format!("{foreign} ")), "seat {seat} saw {foreign}");
    }
}

#[test]
fn fifty_sessions_in_five_workspaces_lose_nothing_and_memory_stays_flat() {
    let env = TestEnv::new();
    let mut agent = Agent::start_with(&env, allow_by_name());
    agent.initialize(plain_client());
    let workspaces: Vec<PathBuf> =
        (0..WORKSPACES).map(|w| env.workspace(&format!("w{w}"))).collect();
    let new_ids: Vec<u64> = (0..SESSIONS)
        .map(|i| {
            let cwd = &workspaces[i % WORKSPACES];
            agent.send_request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        })
        .collect();
    let seats: Vec<Seat> = new_ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let response = agent.wait_response(*id);
            let result = agent.result_of(&response, "concurrent session/new");
            let session = result["sessionId"].as_str().unwrap().to_string();
            Seat { session, workspace: workspaces[i % WORKSPACES].clone() }
        })
        .collect();

    let mut figures: BTreeMap<&str, u64> = BTreeMap::new();
    figures.insert("rss_kib_sessions_open", agent.vm_rss_kib());
    let mut elapsed = Vec::new();
    for r in 1..=3 {
        let started = Instant::now();
        round(&mut agent, &seats, r);
        elapsed.push(started.elapsed());
        let key =
            ["rss_kib_after_round_1", "rss_kib_after_round_2", "rss_kib_after_round_3"][r - 1];
        figures.insert(key, agent.vm_rss_kib());
    }

    // Every permission was asked of the right session, once per edit, and answered.
    let requests = agent.agent_requests();
    assert_eq!(requests.len(), 3 * 2 * SESSIONS / 5, "one question per edit per round");
    for request in &requests {
        assert!(request.reply.is_some(), "unanswered: {:?}", request.params);
        let session = request.params["sessionId"].as_str().unwrap();
        let seat = seats.iter().position(|s| s.session == session).expect("a known session");
        let path = request.params["toolCall"]["locations"][0]["path"].as_str().unwrap();
        assert!(path.contains(&format!("seat-{seat}-")), "seat {seat} was asked about {path}");
    }
    let updates = agent.transcript().notifications("session/update").len();
    let (r2, r3) = (figures["rss_kib_after_round_2"], figures["rss_kib_after_round_3"]);
    println!(
        "load figures: {figures:?}; rounds took {elapsed:?}; {updates} updates; {} permissions",
        requests.len()
    );
    // Generous: a third identical round may not add 64 MiB to what the second left.
    assert!(r3 < r2 + 64 * 1024, "memory grew from {r2} KiB to {r3} KiB in one round");
    Invariants::new(&env).finish(agent);
}
