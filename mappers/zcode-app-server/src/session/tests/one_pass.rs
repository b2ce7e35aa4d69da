//! A routed line is read once, its envelope with the members the session needs of its
//! parameters (`session::input`); whatever that pass cannot stand for is read again the general
//! way, with the same outcome and errors as before.

use super::*;

fn map_text(driver: &mut Driver, text: &str) -> Effects {
    driver.session.map(vec![SessionInput::Event(text.to_string().into())]).unwrap()
}

fn broken(effects: &Effects) -> &str {
    match &effects.actions[..] {
        [Action::Terminal(Terminal::Broken(error))] => &error.message,
        other => panic!("not broken: {other:?}"),
    }
}

#[test]
fn a_legacy_event_is_counted_however_its_head_is_written() {
    let mut driver = opened(true, true);
    prompt(&mut driver);
    let carried = Action::Ignore("model.streaming (carried by the V4 conversation)".to_string());
    // An escaped member name is its name.
    let escaped = r#"{"method":"session/event","params":{"s\u0065q":5,"type":"model.streaming","payload":{}}}"#;
    assert_eq!(map_text(&mut driver, escaped).actions, std::slice::from_ref(&carried));
    let again = map_text(&mut driver, escaped);
    assert_eq!(again.actions, [Action::Ignore("duplicate session event".to_string())]);
    // A type named twice is the last one, as in a tree.
    let twice = r#"{"method":"session/event","params":{"seq":6,"type":"turn.started","type":"model.streaming","payload":{"kind":"text_delta","delta":"x"}}}"#;
    assert_eq!(map_text(&mut driver, twice).actions, [carried]);
}

#[test]
fn a_legacy_event_without_v4_is_still_read_whole() {
    let mut driver = opened(false, true);
    prompt(&mut driver);
    // The members around the payload in any order, the payload first.
    let text = r#"{"params":{"payload":{"kind":"text_delta","delta":"hi"},"type":"model.streaming","seq":5,"sessionId":"sess_1"},"method":"session/event"}"#;
    assert_eq!(
        updates(&map_text(&mut driver, text)),
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
        ]
    );
}

#[test]
fn parameters_the_pass_cannot_stand_for_keep_their_old_errors() {
    let mut driver = opened(true, true);
    prompt(&mut driver);
    // Not JSON inside the parameters: the line is refused as before.
    let bad = r#"{"method":"session/event","params":{"seq":5,"payload":{"a":}}}"#;
    assert!(broken(&map_text(&mut driver, bad)).contains("non-JSON line"));
    // Parameters that are not an object go the general way, which refuses the event.
    let mut legacy = opened(false, true);
    prompt(&mut legacy);
    let array = r#"{"method":"session/event","params":[5,"model.streaming"]}"#;
    let message = broken(&map_text(&mut legacy, array)).to_string();
    assert_eq!(message, "session/event without type");
}

/// A prompted V4 session whose turn streams into row 2, the frames up to `toSeq` 6 applied.
fn streaming_turn() -> Driver {
    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
    driver.event(frame(5, 6, "online", json!([
        {"op": "row.appended", "row": header(1, "turn-1", &command, "running")},
        {"op": "row.appended", "row": row(2, "turn-1", "assistantText", json!({"text": "", "state": "streaming"}))},
    ])));
    driver
}

#[test]
fn a_v4_frame_with_a_member_named_twice_is_read_the_general_way() {
    let mut driver = streaming_turn();
    // `deliveryKind` twice: the tree's reading (the last) applies it, nothing is dropped.
    let text = frame(
        6,
        7,
        "online",
        json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": "Hi"}]),
    )
    .to_string()
    .replacen(
        r#""deliveryKind":"online""#,
        r#""deliveryKind":"initial","deliveryKind":"online""#,
        1,
    );
    assert!(text.contains(r#""deliveryKind":"initial","deliveryKind":"online""#), "{text}");
    let effects = map_text(&mut driver, &text);
    assert_eq!(updates(&effects)[0]["content"]["text"], "Hi", "{effects:?}");
    // And the frame after it streams the one-pass way again.
    let next = driver.event(frame(
        7,
        8,
        "online",
        json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": "!"}]),
    ));
    assert_eq!(updates(&next)[0]["content"]["text"], "!");
}

/// The connection routes a V4 line on its first `topic` and reads no further
/// (`wire::leading_frame_topic`), so the session refuses a frame that names its topic twice,
/// whatever else it holds, and a line that is no JSON past its topic.
#[test]
fn a_v4_line_the_connection_routed_on_its_head_is_checked_whole_here() {
    let line = |extra: &str, to_seq: &str| {
        format!(
            r#"{{"method":"v4/conversation/frame","params":{{"wireVersion":3,"kind":"complete","deliveryKind":"online","logicalFrameId":"f7","logicalFrameOrdinal":7,"topic":"conversation/sess_1",{extra}"subscriptionId":"sub-1","frame":{{"topic":"conversation/sess_1","subscriptionId":"sub-1","fromSeq":6,"toSeq":{to_seq},"sentAt":1,"payload":{{"kind":"deltas","deltas":[{{"op":"row.delta","rowId":2,"path":"text","append":"Hi"}}]}}}}}}}}"#
        )
    };
    let effects = map_text(&mut streaming_turn(), &line("", "7"));
    assert_eq!(updates(&effects)[0]["content"]["text"], "Hi", "{effects:?}");
    for (text, expected) in [
        (
            line(r#""topic":"conversation/other","#, "7"),
            "ZCode wrote parameters that cannot be read: duplicate field `topic`",
        ),
        (
            // Another member named twice first: the topic is still seen twice.
            line(r#""kind":"complete","topic":"conversation/sess_1","#, "7"),
            "ZCode wrote parameters that cannot be read: duplicate field `topic`",
        ),
        (line("", "}"), "ZCode wrote a non-JSON line: "),
    ] {
        let message = broken(&map_text(&mut streaming_turn(), &text)).to_string();
        assert!(message.starts_with(expected), "{message} for {text}");
    }
}
