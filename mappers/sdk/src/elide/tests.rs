use serde_json::{Value, json};

use super::*;

const PATHS: Paths = &[
    Path::at(&["params", "rows", "text"]),
    Path::at(&["params", "response"]),
    Path { members: &["params", "row", "text"], when: Some(("kind", &["a", "b"])) },
];
const MIN: usize = 64;
const TAIL: usize = 16;

/// The line compacted, pushed in chunks of `chunk` bytes.
fn compact(line: &str, chunk: usize) -> Result<String, MapperError> {
    let mut compactor = Compactor::new(PATHS, MIN, TAIL);
    for piece in line.as_bytes().chunks(chunk) {
        compactor.push(piece)?;
    }
    Ok(String::from_utf8(compactor.finish()).unwrap())
}

/// The same, for every chunk size from 1 to 9 and a whole push: all must agree.
fn compact_all(line: &str) -> Result<String, MapperError> {
    let whole = compact(line, line.len().max(1));
    for chunk in 1..10 {
        assert_eq!(compact(line, chunk), whole, "chunks of {chunk}: {line}");
    }
    whole
}

/// The line compacted (whatever the chunking), read as JSON.
fn read_compacted(line: &str) -> Value {
    serde_json::from_str(&compact_all(line).unwrap()).unwrap()
}

fn elided_of(text: &str) -> Elided {
    let mut from = text.len().saturating_sub(TAIL);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    Elided {
        bytes: text.len(),
        fnv: fnv(FNV_EMPTY, text.as_bytes()),
        tail: text[from..].to_string(),
    }
}

fn marker(text: &str) -> Value {
    json!({ ELIDED: elided_of(text) })
}

/// A text of every kind of character a JSON string may hold, escaped in every way.
fn mixed(len: usize) -> String {
    let pieces = ["a", "é", "€", "😀", "\"", "\\", "/", "\n", "\t", "\u{1}", "\u{7f}", "\u{ffff}"];
    (0..len).map(|i| pieces[(i * 7 + i / 3) % pieces.len()]).collect()
}

#[test]
fn a_long_string_on_a_path_becomes_its_marker_and_the_rest_is_kept_as_it_came() {
    let text = mixed(200);
    let line = json!({"method": "m", "params": {"rows": [{"id": 1, "text": text, "after": "x"}, {"text": "short"}],
                      "response": text, "other": text}})
    .to_string();
    let compacted = compact_all(&line).unwrap();
    let read: Value = serde_json::from_str(&compacted).unwrap();
    assert_eq!(
        read,
        json!({"method": "m", "params": {"rows": [{"id": 1, "text": marker(&text), "after": "x"}, {"text": "short"}],
               "response": marker(&text), "other": text}})
    );
}

#[test]
fn escapes_are_decoded_as_serde_decodes_them() {
    // `\u` escapes of every width, a surrogate pair among them, and `\/`.
    let written = r#"\u0041\u00e9\u20ac\ud83d\ude00\/\b\f\n\r\t\"\\"#.repeat(8);
    let line = format!(r#"{{"params":{{"response":"{written}"}}}}"#);
    let text: String = serde_json::from_str(&format!("\"{written}\"")).unwrap();
    let read = read_compacted(&line);
    assert_eq!(read["params"]["response"], marker(&text));
}

#[test]
fn member_names_short_values_and_other_paths_are_never_elided() {
    let long = "n".repeat(200);
    for line in [
        json!({"params": {"response": "short"}}),
        json!({"params": {long.clone(): long.clone()}}),
        json!({"params": {"rows": {"text": {"text": long.clone()}}}}),
        json!({"response": long.clone(), "params": [long.clone()]}),
        json!([{"params": {"responses": long.clone()}}]),
    ] {
        let line = line.to_string();
        assert_eq!(compact_all(&line).unwrap(), line);
    }
    // A name with an escape is not the plain name (not followed, so kept).
    let line = format!(r#"{{"params":{{"respons\u0065":"{long}"}}}}"#);
    assert_eq!(compact_all(&line).unwrap(), line);
}

#[test]
fn a_quote_escaped_in_a_string_kept_does_not_end_it() {
    let text = "q".repeat(100);
    for before in [json!({"x": "a\""}), json!({"y\"": "\\"}), json!({"z": "\\\""})] {
        let mut params = before.clone();
        params["response"] = json!(text);
        let line = json!({ "params": params }).to_string();
        let read = read_compacted(&line);
        assert_eq!(read["params"]["response"], marker(&text), "{before}");
    }
}

#[test]
fn a_path_counts_objects_not_arrays_nor_the_members_before() {
    let text = "t".repeat(100);
    let line = json!([{"params": {"rows": [[{"skip": {"text": 1}, "text": text}]]}}]).to_string();
    let read = read_compacted(&line);
    assert_eq!(
        read,
        json!([{"params": {"rows": [[{"skip": {"text": 1}, "text": marker(&text)}]]}}])
    );
}

#[test]
fn nesting_past_the_levels_followed_is_never_elided() {
    let text = "d".repeat(100);
    let deep = format!(
        "{}{}{}",
        "[".repeat(MAX_LEVELS),
        json!({"params": {"response": text}}),
        "]".repeat(MAX_LEVELS)
    );
    assert_eq!(compact_all(&deep).unwrap(), deep);
    // Back out of the depth, paths are followed again.
    let after = format!(r#"{{"x":{deep},"params":{{"response":"{text}"}}}}"#);
    let read = read_compacted(&after);
    assert_eq!(read["params"]["response"], marker(&text));
}

#[test]
fn a_string_that_is_not_valid_json_text_is_refused() {
    let long = "v".repeat(100);
    for bad in [
        format!("{long}\u{1}"),
        format!("{long}\\x"),
        format!("{long}\\u12g4"),
        format!("{long}\\ud83d"),
        format!("{long}\\ud83dx"),
        format!("{long}\\ud83d\\n"),
        format!("{long}\\ude00"),
    ] {
        let line = format!(r#"{{"params":{{"response":"{bad}"}}}}"#);
        assert!(compact_all(&line).is_err(), "{bad}");
    }
    for bytes in [&[0xC3u8, b'a'][..], &[0xE2, 0x82], &[0xFF], &[0xED, 0xA0, 0x80]] {
        let mut line = br#"{"params":{"response":""#.to_vec();
        line.extend_from_slice(long.as_bytes());
        line.extend_from_slice(bytes);
        line.extend_from_slice(br#""}}"#);
        for chunk in 1..10 {
            let mut compactor = Compactor::new(PATHS, MIN, TAIL);
            let pushed = line.chunks(chunk).try_for_each(|piece| compactor.push(piece));
            assert!(pushed.is_err(), "{bytes:?} in chunks of {chunk}");
        }
    }
}

#[test]
fn a_string_left_open_leaves_a_line_no_reader_takes() {
    let line = format!(r#"{{"params":{{"response":"{}"#, "o".repeat(100));
    assert!(serde_json::from_str::<Value>(&compact_all(&line).unwrap()).is_err());
}

#[test]
fn the_tail_starts_on_a_character() {
    let text = format!("{}{}", "a".repeat(100), "€".repeat(10));
    let elided = elided_of(&text);
    assert_eq!(elided.tail, "€".repeat(5));
    let line = json!({"params": {"response": text}}).to_string();
    let read = read_compacted(&line);
    assert_eq!(read["params"]["response"][ELIDED], serde_json::to_value(&elided).unwrap());
}

#[test]
fn a_text_continues_what_was_shown_or_says_it_cannot() {
    let text = "0123456789".repeat(10);
    let elided = Text::Elided(elided_of(&text));
    let whole = Text::Whole(text.as_str().into());
    for (shown, rest) in [(100, Some("")), (95, Some("56789")), (84, Some(&text[84..])), (83, None)]
    {
        let print = fnv(FNV_EMPTY, &text.as_bytes()[..shown]);
        assert_eq!(elided.after(shown, print), rest, "{shown}");
        assert_eq!(whole.after(shown, print), Some(&text[shown..]), "{shown}");
        // Another text shown before: neither continues it.
        let other = fnv(FNV_EMPTY, "x".repeat(shown).as_bytes());
        assert_eq!((elided.after(shown, other), whole.after(shown, other)), (None, None));
    }
    assert_eq!(elided.after(101, FNV_EMPTY), None);
    assert_eq!(whole.after(101, FNV_EMPTY), None);
}

#[test]
fn a_text_reads_a_string_or_a_marker_and_nothing_else() {
    let elided = elided_of("abc");
    // What a line holding `value` reads as: the whole text, or what is left of it.
    let read = |value: Value| {
        let line = value.to_string();
        serde_json::from_str::<Text<'_>>(&line).ok().map(|text| match text {
            Text::Whole(text) => Err(text.into_owned()),
            Text::Elided(elided) => Ok(elided),
        })
    };
    assert_eq!(read(json!("abc")), Some(Err("abc".to_string())));
    assert_eq!(read(json!({ ELIDED: elided })), Some(Ok(elided.clone())));
    assert_eq!(Text::of(&json!({ ELIDED: elided })), Some(Text::Elided(elided.clone())));
    assert_eq!(Text::of(&json!("abc")), Some(Text::Whole("abc".into())));
    for other in [
        json!(1),
        json!(null),
        json!({"other": elided}),
        json!({ ELIDED: elided, "more": 1 }),
        json!({ ELIDED: {"bytes": 3, "fnv": 1} }),
        json!({ ELIDED: {"bytes": 3, "fnv": 1, "tail": "c", "more": 1} }),
    ] {
        assert_eq!(read(other.clone()), None, "{other}");
        assert_eq!(Text::of(&other), None, "{other}");
    }
    // Borrowed from the line when it has no escape.
    let text: Text<'_> = serde_json::from_str(r#""abc""#).unwrap();
    assert!(matches!(text, Text::Whole(Cow::Borrowed("abc"))));
}

#[test]
fn a_conditional_path_elides_only_after_its_member_named_one_of_its_values() {
    let text = "c".repeat(100);
    let line = |row: &str| format!(r#"{{"params":{{"row":{row}}}}}"#);
    for (row, elided) in [
        (format!(r#"{{"kind":"a","text":"{text}"}}"#), true),
        (format!(r#"{{"id":1,"kind":"b","x":[{{"kind":"z"}}],"text":"{text}"}}"#), true),
        // After the text, or another value, or in another object: kept.
        (format!(r#"{{"text":"{text}","kind":"a"}}"#), false),
        (format!(r#"{{"kind":"c","text":"{text}"}}"#), false),
        (format!(r#"{{"kind":"a\u0062","text":"{text}"}}"#), false),
        (format!(r#"{{"x":{{"kind":"a"}},"text":"{text}"}}"#), false),
        (format!(r#"{{"kind":["a"],"text":"{text}"}}"#), false),
    ] {
        let line = line(&row);
        let read = read_compacted(&line);
        let expected = if elided { marker(&text) } else { json!(text) };
        assert_eq!(read["params"]["row"]["text"], expected, "{row}");
    }
}
