//! Test support (feature `json-edits`): a compact JSON text built member by member, so that a
//! property can reorder its members and then drop, repeat, rename or change one, and check a
//! [`super::Reader`]-based read against a serde read of the result.

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

impl<'a> Edit<'a> {
    /// An edit of each kind by number (modulo six), with `value` and `name` where it takes them.
    pub fn pick(kind: usize, value: &'a str, name: &'a str) -> Self {
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
