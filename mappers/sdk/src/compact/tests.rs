use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

/// Any value the reader takes, as a tree: what serde_json must read from the same text.
fn value(reader: &mut Reader<'_>) -> Option<Value> {
    match reader.peek()? {
        b'"' => reader.string().map(|s| Value::String(s.into_owned())),
        b'0'..=b'9' => reader.uint().map(Value::from),
        b'{' => {
            let mut map = Map::new();
            reader.object(|r, name| {
                let v = value(r)?;
                map.insert(name.to_string(), v).is_none().then_some(())
            })?;
            Some(Value::Object(map))
        }
        b'[' => {
            let mut list = Vec::new();
            reader.array(|r| value(r).map(|v| list.push(v)))?;
            Some(Value::Array(list))
        }
        _ => {
            let start = reader.at;
            reader.skip_scalar()?;
            serde_json::from_str(&reader.text[start..reader.at]).ok()
        }
    }
}

fn whole(text: &str) -> Option<Value> {
    let mut reader = Reader::new(text);
    value(&mut reader).filter(|_| reader.at_end())
}

#[test]
fn reads_what_json_stringify_writes() {
    let text = r#"{"a":"x","b":[1,0,18446744073709551615],"c":{"d":true,"e":null,"f":false},"g":"é\n\"\\\u00e9","h":[],"i":{}}"#;
    assert_eq!(whole(text), Some(serde_json::from_str(text).unwrap()));
    let mut reader = Reader::new(r#""plain""#);
    assert_eq!(reader.string(), Some(Cow::Borrowed("plain")));
    let mut reader = Reader::new(r#""a\tb""#);
    assert!(matches!(reader.string(), Some(Cow::Owned(s)) if s == "a\tb"));
}

#[test]
fn gives_up_on_anything_else() {
    for text in [
        r#"{ "a":1}"#,
        r#"{"a" :1}"#,
        r#"{"a":1 }"#,
        r#"{"\u0061":1}"#,
        r#"{"a":-1}"#,
        r#"{"a":1.0}"#,
        r#"{"a":1e3}"#,
        r#"{"a":01}"#,
        r#"{"a":18446744073709551616}"#,
        r#"{"a":1,"a":2}"#,
        r#"{"a":1,}"#,
        r#"{"a":tru}"#,
        r#"{"a":truex}"#,
        "{\"a\":\"x\ty\"}",
        r#"{"a":"x\"}"#,
        r#"{"a":"\x"}"#,
        r#"[1,]"#,
        r#"[1 ]"#,
        r#"{"a":1}x"#,
        "",
        "{",
    ] {
        assert_eq!(whole(text), None, "{text}");
    }
}

#[test]
fn passes_over_a_value_and_reads_null_as_absent() {
    let text = r#"{"a":[{"b":"x","b":null},[],7],"c":null,"d":3}"#;
    let mut reader = Reader::new(text);
    let mut taken = Vec::new();
    reader
        .object(|r, name| match name {
            "a" => r.value_text().map(|t| taken.push(t.to_string())),
            _ => r.nullable(Reader::uint).map(|n| taken.push(format!("{n:?}"))),
        })
        .unwrap();
    assert!(reader.at_end());
    assert_eq!(taken, [r#"[{"b":"x","b":null},[],7]"#, "None", "Some(3)"]);
    let deep = |n| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(Reader::new(&deep(MAX_DEPTH)).value_text().is_some());
    assert!(Reader::new(&deep(MAX_DEPTH + 1)).value_text().is_none());
    assert!(Reader::new("[1.5]").value_text().is_none());
}

#[test]
fn a_member_is_taken_once() {
    let mut seen = None;
    assert_eq!(once(&mut seen, Some(1)), Some(()));
    assert_eq!(once(&mut seen, Some(2)), None);
    assert_eq!(seen, Some(1));
    assert_eq!(once(&mut None::<u8>, None), None);
}

/// Trees without floats or negative numbers: what `JSON.stringify` writes of ZCode's frames.
fn tree() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        "[ -~é\u{1F600}\t\n\"\\\\]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Compact text of such a tree is read whole, as serde_json reads it.
    #[test]
    fn reads_compact_trees_as_serde_json(tree in tree()) {
        prop_assert_eq!(whole(&tree.to_string()), Some(tree));
    }

    /// Whatever a text is, what the reader takes, serde_json reads the same; what serde_json
    /// refuses, the reader never takes.
    #[test]
    fn never_disagrees_with_serde_json(
        tree in tree(),
        at in any::<prop::sample::Index>(),
        edit in "[ ,:\"\\\\{}\\[\\]0-9a-z.eE+-]{0,2}",
        cut in any::<bool>(),
    ) {
        let text = tree.to_string();
        let mut at = at.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let edited = if cut {
            let end = (at + edit.len()).min(text.len());
            let end = (end..=text.len()).find(|&e| text.is_char_boundary(e)).unwrap();
            format!("{}{}", &text[..at], &text[end..])
        } else {
            format!("{}{edit}{}", &text[..at], &text[at..])
        };
        if let Some(read) = whole(&edited) {
            prop_assert_eq!(serde_json::from_str::<Value>(&edited).ok(), Some(read), "{}", edited);
        }
    }
}

#[test]
fn the_property_sees_both_answers() {
    // Neither property holds by never reading: a plain tree is read, an edited one refused.
    assert!(whole(&json!({"a": [1, "x"]}).to_string()).is_some());
    assert!(whole(r#"{"a":[1,"x"] }"#).is_none());
}

/// A usual string is taken as compared, any other as `plain_str` reads it, and the reader ends
/// up in the same place either way.
#[test]
fn a_usual_string_reads_as_any_plain_string() {
    for text in [
        r#""complete","#,
        r#""recovery","#,
        r#""completely","#,
        r#""complet","#,
        r#""compl\u0065te","#,
        r#""complete"#,
        r#"complete","#,
        r#""","#,
    ] {
        let (mut usual, mut plain) = (Reader::new(text), Reader::new(text));
        assert_eq!(usual.usual_str("complete"), plain.plain_str(), "{text}");
        assert_eq!(usual.literal(","), plain.literal(","), "{text}");
    }
}

/// Every byte that ends a plain run, and the bytes next to them that do not, at every position
/// of runs up to 50 bytes: in every lane of a block and of a word, and in the bytes after them.
#[test]
fn a_plain_run_ends_at_its_first_special_byte_wherever_it_falls() {
    let scan = |bytes: &[u8]| bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
    for len in 0..50 {
        for at in 0..len {
            for byte in [b'"', b'\\', 0x00, 0x1f, b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff] {
                let mut bytes = vec![b'a'; len];
                bytes[at] = byte;
                assert_eq!(plain_len(&bytes), scan(&bytes).unwrap_or(len), "{len} {at} {byte:#x}");
                // A second special byte after the first does not move the answer.
                if at + 1 < len {
                    bytes[len - 1] = b'"';
                    assert_eq!(plain_len(&bytes), scan(&bytes).unwrap(), "{len} {at} {byte:#x}");
                }
            }
        }
    }
}

proptest! {
    /// Eight bytes at a time, the plain run ends where a byte-by-byte scan ends it.
    #[test]
    fn a_plain_run_ends_where_a_byte_scan_ends_it(bytes in proptest::collection::vec(
        prop_oneof![
            30 => 0x23u8..=0x5b,
            30 => 0x5du8..=0xff,
            1 => Just(b'"'),
            1 => Just(b'\\'),
            1 => 0u8..0x20,
        ],
        0..40,
    )) {
        let scan = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        prop_assert_eq!(plain_len(&bytes), scan.unwrap_or(bytes.len()));
    }
}

#[test]
fn finds_a_member_after_scalars_only() {
    fn found(text: &str) -> Option<&str> {
        let mut reader = Reader::new(text);
        reader.find_after_scalars("topic")?;
        reader.plain_str()
    }
    let text = r#"{"v":3,"k":"a\"b{[","t":true,"n":null,"topic":"t/1","frame":{"topic":"no"}}"#;
    assert_eq!(found(text), Some("t/1"));
    assert_eq!(found(r#"{"topic":"first","topic":"second"}"#), Some("first"));
    for text in [
        r#"{"frame":{"topic":"nested"},"topic":"t"}"#,
        r#"{"list":["topic"],"topic":"t"}"#,
        r#"{"t\u006fpic":"escaped","topic":"t"}"#,
        r#"{"n":-1,"topic":"t"}"#,
        r#"{"v":1}"#,
        r#"{"v":1,"#,
        r#"{"v":1 ,"topic":"t"}"#,
        r#"["topic","t"]"#,
    ] {
        assert_eq!(found(text), None, "{text}");
    }
}

#[test]
fn compares_fixed_text_whole() {
    let text = r#"{"kind":"é","n":7}"#;
    let mut reader = Reader::new(text);
    assert_eq!(reader.literal(r#"{"kind":"#), Some(()));
    assert_eq!(reader.literal(r#""e""#), None);
    // A miss leaves the reader where it was.
    assert_eq!(reader.literal(r#""é","n":"#), Some(()));
    assert_eq!(reader.uint(), Some(7));
    assert_eq!(reader.literal("}}"), None, "past the end");
    assert_eq!(reader.literal("}"), Some(()));
    assert!(reader.at_end());
    // A character's first byte alone is no match.
    assert_eq!(Reader::new("é").literal("e"), None);
}

/// `Reader::uint` one digit at a time, as it read before it read words of eight.
fn uint_by_digits(text: &str) -> Option<(u64, usize)> {
    let rest = text.as_bytes();
    let (mut value, mut len) = (0u64, 0);
    while let Some(digit) = rest.get(len).map(|b| b.wrapping_sub(b'0')).filter(|d| *d <= 9) {
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
        len += 1;
    }
    let refused = len == 0
        || (rest[0] == b'0' && len > 1)
        || matches!(rest.get(len), Some(b'.' | b'e' | b'E'));
    (!refused).then_some((value, len))
}

#[test]
fn integers_are_read_eight_digits_at_a_time_as_one_at_a_time() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let after = ["", ",", "}", "]", ".5", "e3", "E", "\"", ":", "/", "a", " ", "\u{7f}", "é"];
    let mut texts = vec!["18446744073709551615".to_string(), "18446744073709551616".to_string()];
    texts.extend(
        ["0", "00", "01", "9", "10", "99999999", "100000000", "1234567890123"].map(String::from),
    );
    for _ in 0..20_000 {
        let len = (next() % 23) as usize;
        let digits: String = (0..len).map(|_| char::from(b'0' + (next() % 10) as u8)).collect();
        texts.push(digits);
    }
    for digits in texts {
        for tail in after {
            let text = format!("{digits}{tail}");
            let mut reader = Reader::new(&text);
            let read = reader.uint().map(|value| (value, reader.at));
            assert_eq!(read, uint_by_digits(&text), "{text:?}");
        }
    }
}

#[test]
fn fixed_text_is_compared_as_slices_compare() {
    let expected: Vec<u8> = (0..48u8).map(|i| b'a' + i % 26).collect();
    for len in 0..=expected.len() {
        let expected = &expected[..len];
        assert!(equal(expected, expected), "{len}");
        // One byte different, at every place, by one bit or by all of them.
        for at in 0..len {
            for flip in [0x01, 0x80, 0xff] {
                let mut found = expected.to_vec();
                found[at] ^= flip;
                assert!(!equal(&found, expected), "{len} bytes, {at}, {flip:#x}");
            }
        }
    }
    let mut reader = Reader::new(r#"{"op":"row.delta","rowId":7}"#);
    assert_eq!(reader.literal(r#"{"op":"row.delta","#), Some(()));
    assert_eq!(reader.literal(r#""rowid":"#), None, "a case differs");
    assert_eq!(reader.literal(r#""rowId":7}, "#), None, "longer than what is left");
    assert_eq!(reader.literal(r#""rowId":7}"#), Some(()));
    assert!(reader.at_end());
}
