//! Test support (feature `json-edits`): a compact JSON text built member by member, so that a
//! property can reorder its members and then drop, repeat, rename or change one, and check a
//! [`super::Reader`]-based read against a serde read of the result ([`reads_alike`]).

/// One case of such a property. `json`, its members reordered by `swaps`, must be read, and
/// read as the serde read reads it; then, with `edit` done to member `member` of its `object`th
/// object ([`Json::edit`]), whatever the compact read takes, the serde read must take the
/// same. `both` gives both reads of a text, shown (compact first).
pub fn reads_alike(
    mut json: Json,
    swaps: &[(usize, usize, usize)],
    (object, member, edit): (usize, usize, Edit<'_>),
    both: impl Fn(&str) -> (Option<String>, Option<String>),
) -> Result<(), String> {
    json.shuffle(swaps);
    let shuffled = json.text();
    match both(&shuffled) {
        (None, _) => return Err(format!("the compact read gave up on {shuffled}")),
        (compact, serde) if compact != serde => {
            return Err(format!("{compact:?} against serde's {serde:?} for {shuffled}"));
        }
        _ => {}
    }
    json.edit(object, member, edit);
    let edited = json.text();
    match both(&edited) {
        (Some(compact), serde) if serde.as_ref() != Some(&compact) => {
            Err(format!("{compact} against serde's {serde:?} for {edited}"))
        }
        _ => Ok(()),
    }
}

/// A JSON value whose objects keep their members in order.
#[derive(Clone, Debug)]
pub enum Json {
    /// Any JSON text, written as it is.
    Raw(String),
    Object(Members),
    List(Vec<Json>),
}

pub type Members = Vec<(String, Json)>;

pub fn raw(text: &str) -> Json {
    Json::Raw(text.to_string())
}

pub fn object(members: &[(&str, Json)]) -> Json {
    Json::Object(members.iter().map(|(n, v)| (n.to_string(), v.clone())).collect())
}

/// What [`Json::edit`] does to the member it picks.
#[derive(Clone, Copy, Debug)]
pub enum Edit<'a> {
    /// Its value becomes this JSON text.
    Value(&'a str),
    Remove,
    /// It comes twice.
    Repeat,
    /// A member of this name and value comes before it.
    Add(&'a str, &'a str),
    /// Its name is escaped: the same name to a JSON reader.
    Escape,
    /// Its value is wrapped in a list.
    Wrap,
}

/// Values every property tries in place of a member's: JSON a compact read must give up on
/// (a float, a sign, a leading zero, an escape, a number beyond `u64`, a member named twice),
/// and some it must read as serde does.
pub const VALUES: &[&str] = &[
    r#""x""#,
    r#""""#,
    "3",
    "3.0",
    "1.5",
    "-1",
    "03",
    "null",
    "true",
    "{}",
    "[]",
    "[{}]",
    r#"{"a":1,"a":2}"#,
    r#""a\"b""#,
    r#""\u0041""#,
    "18446744073709551616",
];

impl<'a> Edit<'a> {
    /// An edit of each kind by number (modulo six). A value it puts is [`VALUES`]'s, then
    /// `own`'s (a property's own), by number (modulo how many there are); a member it adds is
    /// named `name`.
    pub fn pick(kind: usize, value: usize, own: &[&'a str], name: &'a str) -> Self {
        let values = VALUES.len() + own.len();
        let value = match value % values {
            at if at < VALUES.len() => VALUES[at],
            at => own[at - VALUES.len()],
        };
        match kind % 6 {
            0 => Edit::Value(value),
            1 => Edit::Remove,
            2 => Edit::Repeat,
            3 => Edit::Add(name, value),
            4 => Edit::Escape,
            _ => Edit::Wrap,
        }
    }
}

impl Json {
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        let (open, close, items): (char, char, Vec<(Option<&str>, &Json)>) = match self {
            Json::Raw(text) => return out.push_str(text),
            Json::Object(members) => {
                ('{', '}', members.iter().map(|(n, v)| (Some(&**n), v)).collect())
            }
            Json::List(items) => ('[', ']', items.iter().map(|v| (None, v)).collect()),
        };
        out.push(open);
        for (i, (name, value)) in items.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if let Some(name) = name {
                out.push_str(&format!("\"{name}\":"));
            }
            value.write(out);
        }
        out.push(close);
    }

    /// Swaps members `a` and `b` (modulo its length) of each `object`th object (modulo how
    /// many there are, depth first): any order of the members, with enough swaps.
    pub fn shuffle(&mut self, swaps: &[(usize, usize, usize)]) {
        for &(object, a, b) in swaps {
            self.change(object, &mut |members| {
                let n = members.len();
                members.swap(a % n, b % n);
            });
        }
    }

    /// Does `edit` to member `member` of the `object`th object (both modulo how many there
    /// are); false when there is no member to edit.
    pub fn edit(&mut self, object: usize, member: usize, edit: Edit<'_>) -> bool {
        self.change(object, &mut |members| {
            if members.is_empty() {
                return;
            }
            let at = member % members.len();
            match edit {
                Edit::Value(value) => members[at].1 = raw(value),
                Edit::Remove => drop(members.remove(at)),
                Edit::Repeat => members.insert(at, members[at].clone()),
                Edit::Add(name, value) => members.insert(at, (name.to_string(), raw(value))),
                Edit::Escape => {
                    let name = &mut members[at].0;
                    let first = name.remove(0);
                    *name = format!("\\u{:04x}{name}", u32::from(first));
                }
                Edit::Wrap => members[at].1 = Json::List(vec![members[at].1.clone()]),
            }
        })
    }

    fn change(&mut self, object: usize, change: &mut dyn FnMut(&mut Members)) -> bool {
        let count = self.objects();
        count > 0 && self.change_at(&mut (object % count), change)
    }

    fn objects(&self) -> usize {
        match self {
            Json::Raw(_) => 0,
            Json::List(items) => items.iter().map(Json::objects).sum(),
            Json::Object(members) => 1 + members.iter().map(|(_, v)| v.objects()).sum::<usize>(),
        }
    }

    fn change_at(&mut self, left: &mut usize, change: &mut dyn FnMut(&mut Members)) -> bool {
        match self {
            Json::Raw(_) => false,
            Json::List(items) => items.iter_mut().any(|item| item.change_at(left, change)),
            Json::Object(members) => {
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
