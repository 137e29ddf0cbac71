//! What the agent was told, compared call pair by call pair: system prompt, new user
//! messages, tool definitions, model, parameters. Each distinct change is kept once, with
//! every model call it was seen in.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::asserted::Asserted;
use super::changes::{CallAt, Told, ToldChange};
use super::extract::Step;
use super::textdiff;
use crate::neutral::Message;

/// Collects told changes, each distinct one once.
#[derive(Default)]
pub(super) struct ToldLog {
    pub changes: Vec<ToldChange>,
    seen: HashMap<String, usize>,
    /// How many model-call pairs were compared.
    pub pairs: usize,
}

impl ToldLog {
    /// Record a change identified by `key` at `at`; `make` builds it the first time only.
    pub fn add(&mut self, key: String, at: CallAt, asserted: bool, make: impl FnOnce() -> Told) {
        match self.seen.get(&key) {
            Some(&i) => {
                let c = &mut self.changes[i];
                if c.at.last() != Some(&at) {
                    c.at.push(at);
                }
            }
            None => {
                self.seen.insert(key, self.changes.len());
                self.changes.push(ToldChange {
                    change: make(),
                    asserted,
                    at: vec![at],
                    everywhere: false,
                });
            }
        }
    }
}

/// The definition of each tool a request offers, by name, as the request wrote it
/// (description included).
fn tool_defs(step: &Step) -> BTreeMap<&str, &Value> {
    let Some(call) = &step.call else {
        return BTreeMap::new();
    };
    (call.tools.iter())
        .map(|t| (t.name.as_str(), &t.definition))
        .collect()
}

/// Of the messages a request added, what the diff compares: the user's words.
pub(super) fn compared(m: &Message) -> Option<&str> {
    match m {
        Message::Text { role, text } if role == "user" => Some(text),
        _ => None,
    }
}

fn user_texts(step: &Step) -> Vec<&str> {
    step.new.iter().filter_map(compared).collect()
}

pub(super) fn compare_told(o: &Step, w: &Step, at: CallAt, asserted: &Asserted, log: &mut ToldLog) {
    let (Some(a), Some(b)) = (&o.call, &w.call) else {
        return;
    };
    if a.system != b.system {
        let key = format!("system\0{:?}\0{:?}", a.system, b.system);
        log.add(key, at, false, || Told::System {
            diff: textdiff::lines(
                a.system.as_deref().unwrap_or(""),
                b.system.as_deref().unwrap_or(""),
            ),
            old: a.system.clone(),
            new: b.system.clone(),
        });
    }
    let (ua, ub) = (user_texts(o), user_texts(w));
    for k in 0..ua.len().max(ub.len()) {
        let (x, y) = (ua.get(k).copied(), ub.get(k).copied());
        if x != y {
            let key = format!("user\0{x:?}\0{y:?}");
            log.add(key, at, false, || Told::UserMessage {
                old: x.map(str::to_owned),
                new: y.map(str::to_owned),
                diff: textdiff::opt_text(x, y),
            });
        }
    }
    compare_tools(o, w, at, asserted, log);
    if a.model != b.model {
        log.add(
            format!("model\0{}\0{}", a.model, b.model),
            at,
            false,
            || Told::Model {
                old: a.model.clone(),
                new: b.model.clone(),
            },
        );
    }
    for name in a
        .params
        .keys()
        .chain(b.params.keys())
        .collect::<BTreeSet<_>>()
    {
        let (x, y) = (a.params.get(name), b.params.get(name));
        if x != y {
            let key = format!("param\0{name}\0{x:?}\0{y:?}");
            log.add(key, at, false, || Told::Param {
                name: name.clone(),
                old: x.cloned(),
                new: y.cloned(),
                diff: textdiff::value(x, y),
            });
        }
    }
}

/// The tools the two calls offered: each added, removed or changed one is logged.
fn compare_tools(o: &Step, w: &Step, at: CallAt, asserted: &Asserted, log: &mut ToldLog) {
    let (ta, tb) = (tool_defs(o), tool_defs(w));
    for name in ta.keys().chain(tb.keys()).collect::<BTreeSet<_>>() {
        let (x, y) = (ta.get(name), tb.get(name));
        let schema = asserted.schema(name);
        match (x, y) {
            (Some(x), Some(y)) if x != y => {
                log.add(format!("tool\0{name}\0{x}\0{y}"), at, schema, || {
                    Told::ToolChanged {
                        name: name.to_string(),
                        diff: textdiff::lines(&textdiff::pretty(x), &textdiff::pretty(y)),
                    }
                })
            }
            (Some(x), None) => log.add(format!("tool-\0{name}\0{x}"), at, schema, || {
                Told::ToolRemoved {
                    name: name.to_string(),
                    definition: (*x).clone(),
                }
            }),
            (None, Some(y)) => log.add(format!("tool+\0{name}\0{y}"), at, schema, || {
                Told::ToolAdded {
                    name: name.to_string(),
                    definition: (*y).clone(),
                    diff: textdiff::lines("", &textdiff::pretty(y)),
                }
            }),
            _ => {}
        }
    }
}
