use proptest::prelude::*;

use super::super::read_line_with_serde;
use super::*;

/// A JSON text built member by member, so that a test can reorder, drop, repeat or change any
/// member of it.
#[derive(Clone, Debug)]
enum Node {
    Text(String),
    Object(Members),
    List(Vec<Node>),
}

type Members = Vec<(String, Node)>;

fn text(t: &str) -> Node {
    Node::Text(t.to_string())
}

fn object(members: &[(&str, Node)]) -> Node {
    Node::Object(members.iter().map(|(n, v)| (n.to_string(), v.clone())).collect())
}

impl Node {
    fn write(&self, out: &mut String) {
        match self {
            Node::Text(t) => out.push_str(t),
            Node::Object(members) => {
                out.push('{');
                for (i, (name, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&format!("\"{name}\":"));
                    value.write(out);
                }
                out.push('}');
            }
            Node::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
        }
    }

    fn line(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// Calls `change` on the `target`th object, depth first (counting modulo the objects
    /// there are); false when there is none.
    fn change(&mut self, target: usize, change: &mut dyn FnMut(&mut Members)) -> bool {
        let count = self.count();
        count > 0 && self.change_at(&mut (target % count), change)
    }

    fn count(&self) -> usize {
        match self {
            Node::Text(_) => 0,
            Node::List(items) => items.iter().map(Node::count).sum(),
            Node::Object(members) => 1 + members.iter().map(|(_, v)| v.count()).sum::<usize>(),
        }
    }

    fn change_at(&mut self, left: &mut usize, change: &mut dyn FnMut(&mut Members)) -> bool {
        match self {
            Node::Text(_) => false,
            Node::List(items) => items.iter_mut().any(|item| item.change_at(left, change)),
            Node::Object(members) => {
                if *left == 0 {
                    change(members);
                    return true;
                }
                *left -= 1;
                members.iter_mut().any(|(_, v)| v.change_at(left, change))
            }
        }
    }
}

/// A streamed line as ZCode 3.15.1 writes it (the simulator's order), with a text append for
/// each of `appends` (JSON strings).
fn line(appends: &[&str]) -> Node {
    let delta = |append: &str| {
        object(&[
            ("op", text(r#""row.delta""#)),
            ("rowId", text("4")),
            ("path", text(r#""text""#)),
            ("append", text(append)),
        ])
    };
    let payload = object(&[
        ("kind", text(r#""deltas""#)),
        ("deltas", Node::List(appends.iter().map(|a| delta(a)).collect())),
    ]);
    let frame = object(&[
        ("topic", text(r#""conversation/s1""#)),
        ("subscriptionId", text(r#""sub-1""#)),
        ("fromSeq", text("3")),
        ("toSeq", text("5")),
        ("sentAt", text("1764820800000")),
        ("payload", payload),
    ]);
    let wire = object(&[
        ("wireVersion", text("3")),
        ("kind", text(r#""complete""#)),
        ("deliveryKind", text(r#""online""#)),
        ("logicalFrameId", text(r#""sub-1-lf-4""#)),
        ("logicalFrameOrdinal", text("4")),
        ("topic", text(r#""conversation/s1""#)),
        ("subscriptionId", text(r#""sub-1""#)),
        ("frame", frame),
    ]);
    object(&[("method", text(r#""v4/conversation/frame""#)), ("params", wire)])
}

/// Both reads of `line`, shown.
fn both(line: &str, seq: u64) -> (Option<String>, Option<String>) {
    let show = |frame: Option<DeltaFrame<'_>>| frame.map(|f| format!("{f:?}"));
    (show(read_line(line, "sub-1", seq)), show(read_line_with_serde(line, "sub-1", seq)))
}

#[test]
fn reads_the_lines_zcode_writes_as_serde_reads_them() {
    let zcode = line(&[r#""lorem ipsum ""#, r#""é \"q\" \\ \n \u00e9 \ud83d\ude00""#]).line();
    // The logical frame's members in the order a 3.11.2 Agent was seen writing them: `sentAt`
    // before `fromSeq` (a strace of a live `zcode-cli`, "ZCode Protocol (v4) — phase-1
    // capture", 2026-09-07).
    let seen = zcode.replace(
        r#""fromSeq":3,"toSeq":5,"sentAt":1764820800000"#,
        r#""sentAt":1764820800000,"fromSeq":3,"toSeq":5"#,
    );
    let without_delivery = zcode.replace(r#""deliveryKind":"online","#, "");
    let no_deltas = line(&[]).line();
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
fn leaves_every_other_line_to_serde() {
    let zcode = line(&[r#""hi""#]).line();
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

/// Values a mutation puts in place of a member's.
const VALUES: &[&str] = &[
    r#""x""#,
    r#""3""#,
    "3",
    "5",
    "3.0",
    "-1",
    "03",
    "null",
    "true",
    "{}",
    "[]",
    r#"[{}]"#,
    r#""recovery""#,
    r#""complete""#,
    r#""deltas""#,
    r#""row.delta""#,
    r#""sub-1""#,
    r#""sub-\u0031""#,
    r#""a\"b""#,
    "18446744073709551616",
];

/// Members a mutation adds.
const NAMES: &[&str] =
    &["id", "result", "error", "jsonrpc", "x", "op", "kind", "frame", "deltas", "topic", "sentAt"];

proptest! {
    /// Whatever is done to a line, the compact read takes it only as serde reads it; and with
    /// its members in any order it is taken.
    #[test]
    fn reads_a_line_only_as_serde_reads_it(
        appends in 0usize..3,
        shuffles in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<usize>()), 0..12),
        mutation in 0u8..6,
        target in any::<usize>(),
        member in any::<usize>(),
        value in 0..VALUES.len(),
        name in 0..NAMES.len(),
        seq in 2u64..5,
    ) {
        let mut node = line(&[r#""lorem ipsum ""#, r#""a\nb""#][..appends.min(2)]);
        for (object, a, b) in shuffles {
            node.change(object, &mut |members| {
                let n = members.len();
                members.swap(a % n, b % n);
            });
        }
        let shuffled = node.line();
        let (compact, serde) = both(&shuffled, 3);
        prop_assert!(compact.is_some(), "{}", shuffled);
        prop_assert_eq!(compact, serde);
        node.change(target, &mut |members| {
            let n = members.len();
            let at = member % n;
            match mutation {
                0 => members[at].1 = text(VALUES[value]),
                1 => { members.remove(at); }
                2 => members.insert(at, members[at].clone()),
                3 => members.insert(at, (NAMES[name].to_string(), text(VALUES[value]))),
                4 => members[at].0 = format!("{}\\u0020", members[at].0),
                _ => members[at].1 = Node::List(vec![members[at].1.clone()]),
            }
        });
        let mutated = node.line();
        let (compact, serde) = both(&mutated, seq);
        if compact.is_some() {
            prop_assert_eq!(compact, serde, "{}", mutated);
        }
    }
}
