use serde_json::{Value, json};
use zcode_contract::Action;
use zcode_mapper_sdk::heap_count;

use super::{Context, Conversation};
use crate::subscription::Payload;
use crate::tools::Tools;

fn row(id: u64, kind: &str, rest: Value) -> Value {
    let mut row =
        json!({"rowId": id, "turnId": "turn-1", "createdAt": 1, "createdAtSeq": id, "kind": kind});
    row.as_object_mut().unwrap().extend(rest.as_object().unwrap().clone());
    row
}

fn header(state: &str, command: Option<&str>) -> Value {
    let mut header =
        row(1, "turnHeader", json!({"origin": "userInput", "state": state, "startedAt": 1}));
    if let Some(command) = command {
        header["sourceCommandId"] = json!(command);
    }
    header
}

fn tool(status: &str, extra: Value) -> Value {
    let mut rest = json!({"toolCallId": "c1", "toolName": "Bash", "status": status, "inputText": "{\"command\":\"cargo test\"}"});
    rest.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    row(2, "toolCall", rest)
}

struct Harness {
    conversation: Conversation,
    tools: Tools,
    shown_mode: Option<String>,
}

impl Harness {
    fn watching(command: &str) -> Self {
        let mut conversation = Conversation::default();
        conversation.watch(Some(command.to_string()));
        Self { conversation, tools: Tools::default(), shown_mode: None }
    }

    /// Watching the prompt's turn, whose text row 2 is streaming, empty so far.
    fn streaming_row() -> Self {
        let mut h = Self::watching("cmd-1");
        h.deltas(json!([
            {"op": "row.appended", "row": header("running", Some("cmd-1"))},
            {"op": "row.appended", "row": row(2, "assistantText", json!({"text": "", "state": "streaming"}))},
        ]));
        h
    }

    fn deltas(&mut self, deltas: Value) -> Vec<Value> {
        let deltas = deltas.as_array().unwrap().clone();
        self.apply(Payload::Deltas(deltas))
    }

    fn apply(&mut self, payload: Payload) -> Vec<Value> {
        let mut cx =
            Context { tools: &mut self.tools, workspace: "/w", shown_mode: &mut self.shown_mode };
        let mut out = Vec::new();
        self.conversation.apply(payload, &mut cx, &mut out).unwrap();
        out.into_iter()
            .map(|a| match a {
                Action::Update(u) => serde_json::from_str(&u).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect()
    }
}

#[test]
fn a_tool_row_is_announced_once_runs_shows_its_output_preview_and_ends() {
    let mut h = Harness::watching("cmd-1");
    h.deltas(json!([{"op": "row.appended", "row": header("running", Some("cmd-1"))}]));
    // Streaming input: nothing to show until the input is whole.
    assert!(h.deltas(json!([{"op": "row.appended", "row": row(2, "toolCall", json!({"toolCallId": "c1", "toolName": "Bash", "status": "inputStreaming", "inputText": ""}))},
        {"op": "row.delta", "rowId": 2, "path": "inputText", "append": "{\"command\""}])).is_empty());
    // A permission question already announced the call: the row does not announce it again.
    h.tools.set("c1", Some("Bash"), Some(&json!({"command": "cargo test"})));
    assert!(h.tools.announce("c1", "/w").is_some());
    assert!(
        h.deltas(json!([{"op": "row.upserted", "row": tool("pendingApproval", json!({}))}]))
            .is_empty()
    );
    let running = h.deltas(json!([{"op": "row.upserted", "row": tool("running", json!({"outputPreview": {"text": "Compiling", "fullText": "Compiling", "totalLines": 1, "totalBytes": 9, "linesEstimated": false}}))}]));
    assert_eq!(
        running[0],
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
    );
    assert_eq!(running[1]["content"][0]["content"]["text"], "Compiling");
    let same = h.deltas(json!([{"op": "row.upserted", "row": tool("running", json!({"outputPreview": {"text": "Compiling", "fullText": "Compiling", "totalLines": 1, "totalBytes": 9, "linesEstimated": false}}))}]));
    assert!(same.is_empty(), "an unchanged preview is not sent again");
    let failed = h.deltas(json!([{"op": "row.upserted", "row": tool("error", json!({"error": {"code": "fault.runtime.toolFailed", "message": "exit 101"}}))}]));
    assert_eq!(
        failed,
        [
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed", "content": [{"type": "content", "content": {"type": "text", "text": "exit 101"}}]})
        ]
    );
    assert!(
        h.deltas(json!([{"op": "row.upserted", "row": tool("cancelled", json!({}))}])).is_empty(),
        "a call ends once"
    );
}

#[test]
fn a_tool_row_whose_input_is_only_text_is_parsed_for_its_title_and_a_cancel_fails_it() {
    let mut h = Harness::watching("cmd-1");
    h.deltas(json!([{"op": "row.appended", "row": header("running", None)}]));
    let shown = h.deltas(json!([{"op": "row.appended", "row": tool("running", json!({}))}]));
    assert_eq!(shown[0]["title"], "Bash: cargo test", "a header naming no command is adopted");
    assert_eq!(shown[1]["status"], "in_progress");
    let cancelled = h.deltas(json!([{"op": "row.upserted", "row": tool("cancelled", json!({}))}]));
    assert_eq!(cancelled[0]["status"], "failed");
    assert_eq!(cancelled[0]["content"][0]["content"]["text"], "The tool call was cancelled");
}

#[test]
fn nothing_is_shown_without_a_prompt_and_removed_rows_are_forgotten() {
    let mut idle = Harness {
        conversation: Conversation::default(),
        tools: Tools::default(),
        shown_mode: None,
    };
    let snapshot = json!({"logEpoch": "e", "seq": 3, "revision": 1, "meta": {"title": "Old", "titleSource": "generated"}, "plan": null,
        "usage": {"contextWindow": null, "cumulative": {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0, "cacheWriteTokens": 0}},
        "rows": {"totalCount": 2, "firstRowId": 1, "window": [header("completedSuccess", Some("x")), row(2, "assistantText", json!({"text": "history", "state": "complete"}))]}});
    assert!(
        idle.apply(Payload::Snapshot(snapshot)).is_empty(),
        "history and the known title are not replayed"
    );
    assert!(
        idle.deltas(json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": "x"}]))
            .is_empty()
    );

    let mut h = Harness::watching("cmd-1");
    h.deltas(json!([{"op": "row.appended", "row": header("running", Some("cmd-1"))},
        {"op": "row.appended", "row": row(2, "assistantText", json!({"text": "draft", "state": "streaming"}))}]));
    // A retry cut the branch: the row is gone, and a new row of that id starts from nothing.
    h.deltas(json!([{"op": "row.removed", "fromRowId": 2}]));
    let again = h.deltas(json!([{"op": "row.appended", "row": row(2, "assistantText", json!({"text": "other", "state": "streaming"}))}]));
    assert_eq!(again[0]["content"]["text"], "other");
    assert!(!h.conversation.turn_closed());
    h.deltas(json!([{"op": "row.upserted", "row": header("completedInterrupted", Some("cmd-1"))}]));
    assert!(h.conversation.turn_closed());
}

#[test]
fn plans_are_shown_and_cleared_only_once_shown() {
    let mut h = Harness::watching("cmd-1");
    assert!(h.deltas(json!([{"op": "state.updated", "patch": {"plan": null}}])).is_empty());
    let plan = h.deltas(json!([{"op": "state.updated", "patch": {"plan": {"items": [{"id": "1", "content": "Do it", "status": "inProgress"}], "updatedAt": 1}}}]));
    assert_eq!(
        plan[0]["entries"][0],
        json!({"content": "Do it", "priority": "medium", "status": "in_progress"})
    );
    let cleared = h.deltas(json!([{"op": "state.updated", "patch": {"plan": null}}]));
    assert_eq!(cleared, [json!({"sessionUpdate": "plan", "entries": []})]);
    let usage = h.deltas(json!([{"op": "state.updated", "patch": {"usage": {"contextWindow": {"usedTokens": 10, "maxTokens": 100, "autoCompactThresholdTokens": null}, "cumulative": {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0, "cacheWriteTokens": 0}}}},
        {"op": "pluginUi.resourceUpdated", "pluginId": "p", "serverName": "s", "uri": "u", "subscribers": []}]));
    assert_eq!(usage, [json!({"sessionUpdate": "usage_update", "used": 10, "size": 100})]);
}

#[test]
fn a_text_chunk_is_the_update_its_tree_gives() {
    for delta in
        ["", "plain", "quote \" backslash \\ slash /", "\n\t\u{1}\u{7f}", "café 😀 \u{2028}"]
    {
        for (thought, kind) in [(false, "agent_message_chunk"), (true, "agent_thought_chunk")] {
            let tree = json!({"sessionUpdate": kind, "content": {"type": "text", "text": delta}});
            let Action::Update(text) = super::chunk(thought, delta) else { panic!() };
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), tree);
        }
    }
}

/// What a streamed row keeps is measured, not guessed: heap bytes live on the test's thread.
#[global_allocator]
static HEAP: heap_count::Counting = heap_count::Counting;

/// A long streamed row costs the conversation no memory that grows with its text (issue 27: it
/// kept the whole text shown, 12 MB for a 1 000 000-delta turn, in linear memory that never
/// shrinks), and the row's final version is still checked against every byte shown.
#[test]
fn a_streamed_row_keeps_no_copy_of_its_text_and_its_whole_version_is_still_checked() {
    let mut h = Harness::streaming_row();
    let append =
        |text: &str| json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": text}]);
    let before = heap_count::live();
    let mut streamed = String::new();
    for i in 0..20_000 {
        let text = format!("lorem {i:05} ");
        let shown = h.deltas(append(&text));
        assert_eq!(shown[0]["content"]["text"], text.as_str());
        streamed.push_str(&text);
    }
    let held = heap_count::live() - before - streamed.capacity() as isize;
    assert!(held < 4096, "the conversation holds {held} bytes after 240 kB of text");

    // The whole row: only what is new is shown; a row that differs from what was shown in any
    // byte is refused, whatever its length.
    let whole = |text: &str| {
        let row = row(2, "assistantText", json!({"text": text, "state": "complete"}));
        vec![json!({"op": "row.upserted", "row": row})]
    };
    let mut cx = Context { tools: &mut h.tools, workspace: "/w", shown_mode: &mut h.shown_mode };
    let mut rewritten = streamed.clone().into_bytes();
    rewritten[100_000] = b'X';
    let rewritten = String::from_utf8(rewritten).unwrap() + "more";
    let error = h
        .conversation
        .apply(Payload::Deltas(whole(&rewritten)), &mut cx, &mut Vec::new())
        .unwrap_err();
    assert!(error.message.contains("rewrote"), "{error:?}");
    let error = h
        .conversation
        .apply(Payload::Deltas(whole(&streamed[1..])), &mut cx, &mut Vec::new())
        .unwrap_err();
    assert!(error.message.contains("rewrote"), "{error:?}");
    let shown = h.deltas(Value::Array(whole(&format!("{streamed}the end"))));
    assert_eq!(
        shown,
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "the end"}})
        ]
    );
    assert!(h.deltas(Value::Array(whole(&format!("{streamed}the end")))).is_empty());
}

/// The turn's last frame upserts its whole text again. Its line is compacted as it comes
/// (`wire::Lines`, pushed here as the core pushes, 64 KiB at a time), so the text arrives
/// elided: it is still checked against every byte shown, and what it adds is shown from its
/// tail, or refused when the tail does not hold it.
#[test]
fn a_whole_row_too_long_to_keep_is_checked_against_what_was_shown_and_its_rest_shown() {
    let mut h = Harness::streaming_row();
    let mut streamed = String::new();
    for i in 0..30_000 {
        let text = format!("lorem {i:05} ");
        h.deltas(json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": text}]));
        streamed.push_str(&text);
    }
    let framed = |text: &str| {
        let row = row(2, "assistantText", json!({"text": text, "state": "complete"}));
        let deltas = json!([{"op": "row.upserted", "row": row}]);
        let line = json!({"method": "v4/conversation/frame", "params": {"topic": "t",
            "frame": {"fromSeq": 1, "toSeq": 2, "payload": {"kind": "deltas", "deltas": deltas}}}});
        let mut lines = crate::wire::Lines::default();
        let mut out = Vec::new();
        for piece in format!("{line}\n").as_bytes().chunks(64 * 1024) {
            lines
                .push(piece, |line| {
                    out.push(line.to_string());
                    Ok(())
                })
                .unwrap();
        }
        assert!(out.len() == 1 && out[0].len() < 100 * 1024, "the line is compacted");
        let line: Value = serde_json::from_str(&out[0]).unwrap();
        line["params"]["frame"]["payload"]["deltas"].as_array().unwrap().clone()
    };
    let refused = |h: &mut Harness, text: &str| {
        let mut cx =
            Context { tools: &mut h.tools, workspace: "/w", shown_mode: &mut h.shown_mode };
        h.conversation
            .apply(Payload::Deltas(framed(text)), &mut cx, &mut Vec::new())
            .unwrap_err()
            .message
    };
    let mut rewritten = streamed.clone().into_bytes();
    rewritten[100_000] = b'X';
    let rewritten = String::from_utf8(rewritten).unwrap() + "more";
    assert!(refused(&mut h, &rewritten).contains("rewrote"));
    assert!(refused(&mut h, &streamed[1..]).contains("rewrote"));
    let unstreamed = refused(&mut h, &format!("{streamed}{}", "x".repeat(100_000)));
    assert!(unstreamed.contains("100000 bytes of text it had not streamed"), "{unstreamed}");

    assert!(h.apply(Payload::Deltas(framed(&streamed))).is_empty());
    let shown = h.apply(Payload::Deltas(framed(&format!("{streamed}the end"))));
    assert_eq!(
        shown,
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "the end"}})
        ]
    );
}
