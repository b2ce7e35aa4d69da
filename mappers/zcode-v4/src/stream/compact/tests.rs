use proptest::prelude::*;
use zcode_mapper_sdk::compact::edit::{Edit, Json, object, raw, reads_alike};

use super::super::{read_checked_with_serde, read_line_with_serde};
use super::*;

/// A streamed line as ZCode 3.15.1 writes it (the simulator's order), with a text append for
/// each of `appends` (JSON strings).
fn line(appends: &[&str]) -> Json {
    let delta = |append: &str| {
        object(&[
            ("op", raw(r#""row.delta""#)),
            ("rowId", raw("4")),
            ("path", raw(r#""text""#)),
            ("append", raw(append)),
        ])
    };
    let payload = object(&[
        ("kind", raw(r#""deltas""#)),
        ("deltas", Json::List(appends.iter().map(|a| delta(a)).collect())),
    ]);
    let frame = object(&[
        ("topic", raw(r#""conversation/s1""#)),
        ("subscriptionId", raw(r#""sub-1""#)),
        ("fromSeq", raw("3")),
        ("toSeq", raw("5")),
        ("sentAt", raw("1764820800000")),
        ("payload", payload),
    ]);
    let wire = object(&[
        ("wireVersion", raw("3")),
        ("kind", raw(r#""complete""#)),
        ("deliveryKind", raw(r#""online""#)),
        ("logicalFrameId", raw(r#""sub-1-lf-4""#)),
        ("logicalFrameOrdinal", raw("4")),
        ("topic", raw(r#""conversation/s1""#)),
        ("subscriptionId", raw(r#""sub-1""#)),
        ("frame", frame),
    ]);
    object(&[("method", raw(r#""v4/conversation/frame""#)), ("params", wire)])
}

/// Both reads of `line`, shown.
fn both(line: &str, seq: u64) -> (Option<String>, Option<String>) {
    let show = |frame: Option<DeltaFrame<'_>>| frame.map(|f| format!("{f:?}"));
    (show(read_line(line, "sub-1", seq)), show(read_line_with_serde(line, "sub-1", seq)))
}

#[test]
fn reads_the_lines_zcode_writes_as_serde_reads_them() {
    let zcode = line(&[r#""lorem ipsum ""#, r#""é \"q\" \\ \n \u00e9 \ud83d\ude00""#]).text();
    // The logical frame's members in the order a 3.11.2 Agent was seen writing them: `sentAt`
    // before `fromSeq` (a strace of a live `zcode-cli`, "ZCode Protocol (v4) — phase-1
    // capture", 2026-09-07).
    let seen = zcode.replace(
        r#""fromSeq":3,"toSeq":5,"sentAt":1764820800000"#,
        r#""sentAt":1764820800000,"fromSeq":3,"toSeq":5"#,
    );
    let without_delivery = zcode.replace(r#""deliveryKind":"online","#, "");
    let no_deltas = line(&[]).text();
    for line in [&zcode, &seen, &without_delivery, &no_deltas] {
        let (compact, serde) = both(line, 3);
        assert!(compact.is_some(), "{line}");
        assert_eq!(compact, serde);
    }
    let read = read_line(&zcode, "sub-1", 3).unwrap();
    assert_eq!(read.to_seq, 5);
    assert!(!read.recovery);
    let texts: Vec<_> = read
        .deltas
        .iter()
        .map(|d| match d {
            Delta::Append(a) => a.append.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(texts, ["lorem ipsum ", "é \"q\" \\ \n é 😀"]);
    let recovery = zcode.replace(r#""online""#, r#""recovery""#);
    assert!(read_line(&recovery, "sub-1", 3).unwrap().recovery);
}

#[test]
fn reads_a_line_as_zcode_writes_it_without_its_member_names() {
    let show = |read: Option<(Wire<'_>, usize)>| read.map(|r| format!("{r:?}"));
    let zcode = line(&[r#""lorem ipsum ""#, r#""é \"q\" \\ \n""#]).text();
    let joined = format!("{zcode}\n{zcode}");
    let sent_first = zcode.replace(
        r#""fromSeq":3,"toSeq":5,"sentAt":1764820800000"#,
        r#""sentAt":1764820800000,"fromSeq":3,"toSeq":5"#,
    );
    for text in [&zcode, &line(&[]).text(), &joined, &sent_first] {
        let as_written = show(read_as_written(text, "sub-1"));
        assert!(as_written.is_some(), "{text}");
        assert_eq!(as_written, show(read_by_members(text)));
    }
    // The same line with its members in another order, or as another subscription's, is read
    // by members.
    for other in [
        zcode.replace(r#""fromSeq":3,"toSeq":5"#, r#""toSeq":5,"fromSeq":3"#),
        zcode.replace(r#""deliveryKind":"online","#, ""),
        zcode.replacen(r#""topic":"conversation/s1""#, r#""topic":"conversation/s2""#, 1),
        zcode.replace(r#""rowId":4,"path":"text""#, r#""path":"text","rowId":4"#),
    ] {
        assert_eq!(read_as_written(&other, "sub-1").map(drop), None, "{other}");
        assert!(read_by_members(&other).is_some(), "{other}");
    }
    assert_eq!(read_as_written(&zcode, "sub-2").map(drop), None);
    // An id that JSON escapes is not compared as it stands.
    let quoted = zcode.replace("sub-1", r#"sub\"1"#);
    assert_eq!(read_as_written(&quoted, r#"sub"1"#).map(drop), None);
    assert_eq!(read_as_written(&quoted, r#"sub\"1"#).map(drop), None);
}

#[test]
fn leaves_every_other_line_to_serde() {
    let zcode = line(&[r#""hi""#]).text();
    for (other, seq) in [
        (zcode.clone(), 5),
        (zcode.clone(), 2),
        (zcode.replace(r#""toSeq":5"#, r#""toSeq":3"#), 3),
        (zcode.replace("sub-1\"", "sub-2\""), 3),
        (zcode.replace(r#""wireVersion":3"#, r#""wireVersion":2"#), 3),
        (zcode.replace(r#""complete""#, r#""fragment""#), 3),
        (zcode.replace(r#""deltas","#, r#""snapshot","#), 3),
        (zcode.replace("row.delta", "row.other"), 3),
        (zcode.replace(r#""method":"v4/conversation/frame","#, ""), 3),
        (zcode.replace(r#""v4/conversation/frame""#, r#""session/event""#), 3),
        (zcode.replacen('{', r#"{"id":1,"#, 1), 3),
        (format!("{zcode} "), 3),
    ] {
        assert!(read_line(&other, "sub-1", seq).is_none(), "{other}");
    }
}

/// Values an edit puts in place of a member's, besides `edit::VALUES`.
const VALUES: &[&str] = &[
    "5",
    r#""3""#,
    r#""recovery""#,
    r#""complete""#,
    r#""deltas""#,
    r#""row.delta""#,
    r#""sub-1""#,
    r#""sub-\u0031""#,
];

/// Members a mutation adds.
const NAMES: &[&str] =
    &["id", "result", "error", "jsonrpc", "x", "op", "kind", "frame", "deltas", "topic", "sentAt"];

/// Where a frame in a batch ends, by its fixed text: as ZCode writes it, its frame is walked so,
/// and whatever is done to it, it ends where passing over its members says it ends, or it is
/// left to that pass.
fn ends_where_passing_over_it_ends(json: &Json) -> Result<Option<usize>, TestCaseError> {
    let text = json.text();
    let batch = format!("{text},{text}]");
    let walked = frame_len_as_written(&batch);
    if let Some(len) = walked {
        let passed = Reader::new(&batch).value_text().map(str::len);
        prop_assert_eq!(Some(len), passed, "{}", batch);
    }
    Ok(walked)
}

proptest! {
    // Each case takes microseconds; an edit that matters is one in a few hundred.
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever is done to a line, the compact read takes it only as serde reads it; and with
    /// its members in any order it is taken.
    #[test]
    fn reads_a_line_only_as_serde_reads_it(
        appends in 0usize..3,
        swaps in proptest::collection::vec(any::<(usize, usize, usize)>(), 0..12),
        (kind, value, name) in (0usize..6, any::<usize>(), 0..NAMES.len()),
        object in any::<usize>(),
        member in any::<usize>(),
    ) {
        let line = line(&[r#""lorem ipsum ""#, r#""a\nb""#][..appends.min(2)]);
        let edit = (object, member, Edit::pick(kind, value, VALUES, NAMES[name]));
        reads_alike(line, &swaps, edit, |text| both(text, 3)).map_err(TestCaseError::fail)?;
    }

    /// Wherever the walk of a batched frame on its fixed text ends, the member pass ends too.
    #[test]
    fn a_frame_ends_where_passing_over_its_members_ends(
        appends in 0usize..3,
        swaps in proptest::collection::vec(any::<(usize, usize, usize)>(), 0..12),
        (kind, value, name) in (0usize..6, any::<usize>(), 0..NAMES.len()),
        object in any::<usize>(),
        member in any::<usize>(),
    ) {
        let mut json = line(&[r#""lorem ipsum ""#, r#""a\nb""#][..appends.min(2)]);
        prop_assert_eq!(ends_where_passing_over_it_ends(&json)?, Some(json.text().len()));
        json.shuffle(&swaps);
        ends_where_passing_over_it_ends(&json)?;
        json.edit(object, member, Edit::pick(kind, value, VALUES, NAMES[name]));
        ends_where_passing_over_it_ends(&json)?;
    }
}

/// A streamed frame as the Services Server writes it: the line's wire frame, whose logical
/// frame may carry its time to first token.
fn checked_frame(appends: &[&str]) -> Json {
    let Json::Object(mut line) = line(appends) else { unreachable!("an object") };
    let (_, mut wire) = line.remove(1);
    let Json::Object(members) = &mut wire else { unreachable!("an object") };
    let (_, Json::Object(logical)) = &mut members[7] else { unreachable!("the logical frame") };
    logical.insert(5, ("ttft".to_string(), raw("null")));
    wire
}

fn checked_both(json: &str) -> (Option<String>, Option<String>) {
    let show = |frame: Option<CheckedFrame<'_>>| frame.map(|f| format!("{f:?}"));
    (show(read_checked(json)), show(read_checked_with_serde(json)))
}

#[test]
fn reads_a_services_frame_as_the_checked_serde_read_does() {
    let frame = checked_frame(&[r#""lorem ipsum ""#, r#""é \"q\" \\ \n \u00e9""#]).text();
    let (compact, serde) = checked_both(&frame);
    assert!(compact.is_some(), "{frame}");
    assert_eq!(compact, serde);
    for other in [
        frame.replace(r#""ttft":null"#, r#""ttft":1.5"#),
        frame.replace(r#""online""#, r#""later""#),
        frame.replace(r#""logicalFrameOrdinal":4"#, r#""logicalFrameOrdinal":0"#),
        frame.replacen(r#""topic":"conversation/s1""#, r#""topic":"conversation/s2""#, 1),
        frame.replace(r#""toSeq":5"#, r#""toSeq":2"#),
        frame.replace(r#""rowId":4"#, r#""rowId":4,"x":1"#),
    ] {
        assert_ne!(other, frame);
        assert!(read_checked(&other).is_none(), "{other}");
    }
}

proptest! {
    // Each case takes microseconds; an edit that matters is one in a few hundred.
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Whatever is done to a Services frame, the compact read takes it only as the checked
    /// serde read takes it; and with its members in any order it is taken.
    #[test]
    fn reads_a_services_frame_only_as_serde_reads_it(
        appends in 0usize..3,
        swaps in proptest::collection::vec(any::<(usize, usize, usize)>(), 0..12),
        (kind, value, name) in (0usize..6, any::<usize>(), 0..NAMES.len()),
        object in any::<usize>(),
        member in any::<usize>(),
    ) {
        let frame = checked_frame(&[r#""lorem ipsum ""#, r#""a\nb""#][..appends.min(2)]);
        let edit = (object, member, Edit::pick(kind, value, VALUES, NAMES[name]));
        reads_alike(frame, &swaps, edit, checked_both).map_err(TestCaseError::fail)?;
    }
}

/// A joined input's first line is read where it starts, and ends at its newline or at the
/// input's end; anything else after it is not a line of its own.
#[test]
fn reads_the_line_a_joined_input_starts_with() {
    let first = line(&[r#""a""#]).text();
    let joined = format!("{first}\n{}", line(&[r#""b""#]).text());
    let (read, len) = read_leading(&joined, "sub-1", 3).unwrap();
    assert_eq!(len, first.len());
    assert_eq!(Some(format!("{read:?}")), both(&first, 3).1);
    assert_eq!(
        read_leading(&format!("{first}\n"), "sub-1", 3).map(|(_, len)| len),
        Some(first.len())
    );
    for other in [format!("{first} \n"), format!("{first}{first}"), format!("{first}\r\n")] {
        assert!(read_leading(&other, "sub-1", 3).is_none(), "{other}");
        assert!(read_line(&other, "sub-1", 3).is_none(), "{other}");
    }
}
