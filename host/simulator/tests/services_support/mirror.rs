//! A client's copy of one V4 conversation: the snapshot, then every delta frame applied in
//! order. Gaps, corrupt wire frames and unknown deltas are reported, never skipped.

use serde_json::{Value, json};

use super::codec::Assembler;

#[derive(Debug, PartialEq)]
pub enum Applied {
    /// Another subscription's or topic's frame.
    Ignored,
    /// A fragment of a frame still being assembled.
    Partial,
    Snapshot,
    Deltas(usize),
}

#[derive(Debug, PartialEq)]
pub enum MirrorFault {
    /// A delta frame that does not continue at the mirror's sequence number.
    Gap {
        expected: u64,
        got: u64,
    },
    /// A wire frame that cannot be assembled (bad CRC, bad fragment, bad JSON).
    Wire(String),
    UnknownOp(String),
}

pub struct Mirror {
    pub topic: String,
    pub subscription: String,
    pub state: Value,
    pub seq: u64,
    /// Delivery kinds of the logical frames applied, in order.
    pub deliveries: Vec<String>,
    /// After a fault: everything but the next snapshot is ignored.
    recovering: bool,
    assembler: Assembler,
}

impl Mirror {
    pub fn new(session_id: &str, subscription: &str) -> Mirror {
        Mirror {
            topic: format!("conversation/{session_id}"),
            subscription: subscription.to_owned(),
            state: Value::Null,
            seq: 0,
            deliveries: Vec::new(),
            recovering: false,
            assembler: Assembler::default(),
        }
    }

    pub fn accept(&mut self, wire: &Value) -> Result<Applied, MirrorFault> {
        if wire["topic"] != self.topic.as_str()
            || wire["subscriptionId"] != self.subscription.as_str()
        {
            return Ok(Applied::Ignored);
        }
        let Some(logical) = self.assembler.feed(wire).map_err(MirrorFault::Wire)? else {
            return Ok(Applied::Partial);
        };
        let delivery = wire["deliveryKind"].as_str().unwrap_or_default().to_owned();
        if self.recovering && logical["payload"]["kind"] != "snapshot" {
            return Ok(Applied::Ignored);
        }
        let from = logical["fromSeq"].as_u64().unwrap_or(u64::MAX);
        let to = logical["toSeq"].as_u64().unwrap_or(0);
        match logical["payload"]["kind"].as_str() {
            Some("snapshot") => {
                assert_eq!(from, 0, "snapshot frames start at 0");
                self.state = logical["payload"]["snapshot"].clone();
                assert_eq!(self.state["seq"], to, "snapshot seq equals the frame's toSeq");
                self.seq = to;
                self.recovering = false;
                self.deliveries.push(delivery);
                Ok(Applied::Snapshot)
            }
            Some("deltas") => {
                if self.state.is_null() || from != self.seq {
                    return Err(MirrorFault::Gap { expected: self.seq, got: from });
                }
                let deltas = logical["payload"]["deltas"].as_array().cloned().unwrap_or_default();
                for delta in &deltas {
                    self.apply(delta)?;
                }
                self.seq = to;
                self.state["seq"] = json!(to);
                self.deliveries.push(delivery);
                Ok(Applied::Deltas(deltas.len()))
            }
            other => Err(MirrorFault::Wire(format!("unknown payload kind {other:?}"))),
        }
    }

    /// Forgets everything: the next frame must be a snapshot (what a resync waits for).
    pub fn reset(&mut self) {
        self.recovering = true;
        self.state = Value::Null;
        self.seq = 0;
        self.assembler = Assembler::default();
    }

    fn window(&mut self) -> &mut Vec<Value> {
        self.state["rows"]["window"].as_array_mut().expect("rows window")
    }

    fn apply(&mut self, delta: &Value) -> Result<(), MirrorFault> {
        match delta["op"].as_str() {
            Some("row.appended") => {
                self.window().push(delta["row"].clone());
                let count = self.state["rows"]["totalCount"].as_u64().unwrap_or(0);
                self.state["rows"]["totalCount"] = json!(count + 1);
                if self.state["rows"]["firstRowId"].is_null() {
                    self.state["rows"]["firstRowId"] = delta["row"]["rowId"].clone();
                }
            }
            Some("row.upserted") => {
                let row = delta["row"].clone();
                let window = self.window();
                match window.iter_mut().find(|existing| existing["rowId"] == row["rowId"]) {
                    Some(existing) => *existing = row,
                    None => window.push(row),
                }
            }
            Some("row.removed") => {
                let from = delta["fromRowId"].as_u64().unwrap_or(0);
                self.window().retain(|row| row["rowId"].as_u64().unwrap_or(0) < from);
            }
            Some("row.delta") => {
                let path = delta["path"].as_str().unwrap_or_default().to_owned();
                let append = delta["append"].as_str().unwrap_or_default().to_owned();
                let row_id = delta["rowId"].clone();
                let window = self.window();
                let row = window
                    .iter_mut()
                    .find(|row| row["rowId"] == row_id)
                    .expect("row.delta for a known row");
                let slot = if path == "output.text" {
                    &mut row["output"]["text"]
                } else {
                    &mut row[path.as_str()]
                };
                let text = format!("{}{append}", slot.as_str().unwrap_or_default());
                *slot = json!(text);
            }
            Some("state.updated") => {
                for (key, value) in delta["patch"].as_object().cloned().unwrap_or_default() {
                    self.state[key.as_str()] = value;
                }
            }
            other => return Err(MirrorFault::UnknownOp(format!("{other:?}"))),
        }
        Ok(())
    }

    /// Rows of a kind, in order.
    pub fn rows(&self, kind: &str) -> Vec<Value> {
        self.state["rows"]["window"]
            .as_array()
            .map(|rows| rows.iter().filter(|row| row["kind"] == kind).cloned().collect())
            .unwrap_or_default()
    }

    /// Whether a row of `kind` satisfies `test` (without copying the rows).
    pub fn any_row(&self, kind: &str, test: impl Fn(&Value) -> bool) -> bool {
        self.state["rows"]["window"]
            .as_array()
            .is_some_and(|rows| rows.iter().any(|row| row["kind"] == kind && test(row)))
    }

    /// Idle: nothing runs, nothing can be stopped.
    pub fn idle(&self) -> bool {
        let control = &self.state["control"];
        control["canStop"] == false
            && control["activeWorks"].as_array().is_some_and(Vec::is_empty)
            && !matches!(control["phase"].as_str(), Some("running" | "prewarming"))
    }
}
