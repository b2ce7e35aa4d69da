use proptest::prelude::*;
use zcode_mapper_sdk::compact::edit::{Edit, Json, object, raw, reads_alike};

use super::super::read_with_serde;
use super::*;

/// A streamed delta as the 3.11.2 host service writes it (the simulator's order), with the
/// payload's `delta` the JSON string `delta`.
fn event(delta: &str) -> Json {
    let payload = object(&[
        ("kind", raw(r#""text_delta""#)),
        ("delta", raw(delta)),
        ("assistantMessageId", raw(r#""05b671ac-22b7-4ee5-9eef-f3b49f2a3e0c""#)),
    ]);
    let event = object(&[
        ("eventId", raw(r#""81c70106-07ac-4b1b-80e4-224621018d7c-3""#)),
        ("sessionId", raw(r#""81c70106-07ac-4b1b-80e4-224621018d7c""#)),
        ("turnId", raw(r#""3aaf6eee-84c5-42dd-9509-1e71930938a2""#)),
        ("seq", raw("3")),
        ("timestamp", raw("1796548164070")),
        ("deliveryKind", raw(r#""desktop-continuous""#)),
        ("type", raw(r#""model.streaming""#)),
        ("payload", payload),
    ]);
    object(&[("type", raw(r#""session.event""#)), ("event", event)])
}

/// A read, shown: everything the mapping takes from it.
fn show(event: Option<SessionEvent<'_>>) -> Option<String> {
    let event = event?;
    let Payload::Streaming(s) = &event.payload else { return Some("a tree".to_string()) };
    let text = |t: &Option<Text<'_>>| t.as_ref().map(|t| t.as_str().to_string());
    Some(format!(
        "{} {} {} {} {:?} {:?} {:?} {:?} {:?}",
        event.seq,
        event.timestamp,
        event.event_type.as_str(),
        s.kind.as_str(),
        text(&s.delta),
        text(&s.assistant_message_id),
        text(&s.tool_call_id),
        text(&s.tool_name),
        s.input,
    ))
}

fn both(text: &str) -> (Option<String>, Option<String>) {
    (show(read(text)), show(read_with_serde(text)))
}

#[test]
fn reads_the_events_zcode_writes_as_serde_reads_them() {
    let plain = event(r#""lorem ipsum ""#).text();
    let escaped = event(r#""é \"q\" \\ \n \u00e9 \ud83d\ude00""#).text();
    let nulls = plain.replace(r#""3aaf6eee-84c5-42dd-9509-1e71930938a2""#, "null").replace(
        r#""kind":"text_delta","#,
        r#""kind":"tool_input_delta","toolCallId":"c","toolName":"Bash","input":null,"#,
    );
    assert_ne!(nulls, plain);
    for text in [&plain, &escaped, &nulls] {
        let (compact, serde) = both(text);
        assert!(compact.is_some(), "{text}");
        assert_eq!(compact, serde);
    }
    assert_eq!(
        show(read(&escaped)).unwrap(),
        r#"3 1796548164070 model.streaming text_delta Some("é \"q\" \\ \n é 😀") Some("05b671ac-22b7-4ee5-9eef-f3b49f2a3e0c") None None None"#
    );
}

#[test]
fn leaves_every_other_event_to_serde() {
    let plain = event(r#""hi""#).text();
    for other in [
        plain.replace("model.streaming", "turn.completed"),
        plain.replace(r#""type":"session.event""#, r#""type":"snapshot""#),
        plain.replace(r#""timestamp":1796548164070"#, r#""timestamp":1.5"#),
        plain.replace(r#""kind":"text_delta","#, r#""kind":"tool_call","input":{"command":"ls"},"#),
        plain.replace(r#""eventId":"81c70106-07ac-4b1b-80e4-224621018d7c-3""#, r#""eventId":"""#),
        format!("{plain} "),
    ] {
        assert_ne!(other, plain);
        assert!(read(&other).is_none(), "{other}");
    }
}

/// Values an edit puts in place of a member's, besides `edit::VALUES`.
const VALUES: &[&str] =
    &[r#""model.streaming""#, r#""session.event""#, r#""text_delta""#, r#"{"a":1}"#];

/// Members an edit adds.
const NAMES: &[&str] = &["x", "input", "delta", "toolName", "partId", "traceId", "seq", "event"];

proptest! {
    // Each case takes microseconds; an edit that matters is one in a few hundred.
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever is done to an event, the compact read takes it only as serde reads it; and with
    /// its members in any order it is taken.
    #[test]
    fn reads_an_event_only_as_serde_reads_it(
        swaps in proptest::collection::vec(any::<(usize, usize, usize)>(), 0..10),
        (kind, value, name) in (0usize..6, any::<usize>(), 0..NAMES.len()),
        object in any::<usize>(),
        member in any::<usize>(),
    ) {
        let edit = (object, member, Edit::pick(kind, value, VALUES, NAMES[name]));
        reads_alike(event(r#""a\nb""#), &swaps, edit, both).map_err(TestCaseError::fail)?;
    }
}

/// A joined input's first event is read where it starts, and ends at its newline or at the
/// input's end; anything else after it is not a line of its own.
#[test]
fn reads_the_event_a_joined_input_starts_with() {
    let first = event(r#""a""#).text();
    let joined = format!("{first}\n{}", event(r#""b""#).text());
    let (leading, len) = read_leading(&joined).unwrap();
    assert_eq!(len, first.len());
    assert_eq!(show(Some(leading)), show(read_with_serde(&first)));
    assert_eq!(read_leading(&format!("{first}\n")).map(|(_, len)| len), Some(first.len()));
    for other in [format!("{first} \n"), format!("{first}{first}"), format!("{first}\r\n")] {
        assert!(read_leading(&other).is_none(), "{other}");
        assert!(read(&other).is_none(), "{other}");
    }
}
