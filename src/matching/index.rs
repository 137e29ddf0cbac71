//! The replay index: one FIFO queue of recorded interactions per key, and no global order,
//! so repeated identical requests replay in order and concurrent ones cannot race.

use std::collections::HashMap;

/// What happens when a key's queue is exhausted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Repeat {
    /// An exhausted queue is a miss.
    #[default]
    None,
    /// An exhausted queue serves its last interaction again.
    Last,
}

#[derive(Debug)]
pub struct Index {
    queues: HashMap<String, Queue>,
    served: Vec<bool>,
    repeat: Repeat,
}

#[derive(Debug, Default)]
struct Queue {
    items: Vec<usize>,
    next: usize,
}

/// The result of looking a key up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Serve this interaction.
    Hit(usize),
    /// The key was recorded `recorded` times and every one has been served.
    Exhausted { recorded: usize },
    /// The key was never recorded.
    Unknown,
}

impl Index {
    /// Build from `(interaction position, key)` pairs in recorded order.
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>, repeat: Repeat) -> Index {
        let mut queues: HashMap<String, Queue> = HashMap::new();
        let mut count = 0;
        for (i, k) in keys.into_iter().enumerate() {
            queues.entry(k.to_owned()).or_default().items.push(i);
            count = i + 1;
        }
        Index {
            queues,
            served: vec![false; count],
            repeat,
        }
    }

    /// Take the next interaction for `key`.
    pub fn take(&mut self, key: &str) -> Lookup {
        let Some(q) = self.queues.get_mut(key) else {
            return Lookup::Unknown;
        };
        let pos = match q.items.get(q.next) {
            Some(&pos) => {
                q.next += 1;
                pos
            }
            None => match (self.repeat, q.items.last()) {
                (Repeat::Last, Some(&pos)) => pos,
                _ => {
                    return Lookup::Exhausted {
                        recorded: q.items.len(),
                    }
                }
            },
        };
        self.served[pos] = true;
        Lookup::Hit(pos)
    }

    /// The interaction [`Index::take`] would give for `key`, left in place.
    pub fn peek(&self, key: &str) -> Option<usize> {
        let q = self.queues.get(key)?;
        match (q.items.get(q.next), self.repeat) {
            (Some(&pos), _) => Some(pos),
            (None, Repeat::Last) => q.items.last().copied(),
            (None, _) => None,
        }
    }

    /// Positions of the interactions never served, in recorded order.
    pub fn unused(&self) -> Vec<usize> {
        self.served
            .iter()
            .enumerate()
            .filter(|(_, s)| !**s)
            .map(|(i, _)| i)
            .collect()
    }
}

/// The lenient index of a determinism check: the n-th request on a route within a turn
/// gets the n-th interaction recorded on that route in that turn, whatever its body, so a
/// program whose requests drift still runs to its end. Past the last recording of a
/// (route, turn) the last one is served again.
#[derive(Debug)]
pub struct ByPosition {
    queues: HashMap<(String, Option<usize>), Queue>,
}

impl ByPosition {
    /// Build from `(route, turn)` pairs in recorded order.
    pub fn new<'a>(slots: impl IntoIterator<Item = (&'a str, Option<usize>)>) -> ByPosition {
        let mut queues: HashMap<(String, Option<usize>), Queue> = HashMap::new();
        for (i, (route, turn)) in slots.into_iter().enumerate() {
            queues
                .entry((route.to_owned(), turn))
                .or_default()
                .items
                .push(i);
        }
        ByPosition { queues }
    }

    /// The interaction for the next request on `route` in `turn`. A cassette recorded
    /// outside the test runner has no turns: its interactions serve every turn.
    pub fn take(&mut self, route: &str, turn: Option<usize>) -> Option<usize> {
        let key = [(route.to_owned(), turn), (route.to_owned(), None)]
            .into_iter()
            .find(|k| self.queues.contains_key(k))?;
        let q = self.queues.get_mut(&key)?;
        let pos = q.items.get(q.next).or(q.items.last()).copied()?;
        q.next += 1;
        Some(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_per_key_without_global_order() {
        let mut ix = Index::new(["a", "b", "a", "c", "a"], Repeat::None);
        // Keys are served in any interleaving; each queue keeps its own order.
        assert_eq!(ix.take("c"), Lookup::Hit(3));
        assert_eq!(ix.take("a"), Lookup::Hit(0));
        assert_eq!(ix.take("a"), Lookup::Hit(2));
        assert_eq!(ix.take("b"), Lookup::Hit(1));
        assert_eq!(ix.take("a"), Lookup::Hit(4));
        assert_eq!(ix.take("a"), Lookup::Exhausted { recorded: 3 });
        assert_eq!(ix.take("zzz"), Lookup::Unknown);
        assert!(ix.unused().is_empty());
    }

    #[test]
    fn repeat_last_serves_the_last_forever() {
        let mut ix = Index::new(["a", "a"], Repeat::Last);
        assert_eq!(ix.take("a"), Lookup::Hit(0));
        assert_eq!(ix.take("a"), Lookup::Hit(1));
        assert_eq!(ix.take("a"), Lookup::Hit(1));
        assert_eq!(ix.take("a"), Lookup::Hit(1));
    }

    #[test]
    fn unused_lists_what_was_never_served() {
        let mut ix = Index::new(["a", "b", "a", "c"], Repeat::None);
        ix.take("a");
        ix.take("c");
        assert_eq!(ix.unused(), vec![1, 2]);
    }

    #[test]
    fn by_position_serves_route_and_turn_in_order_then_repeats_the_last() {
        let slots = [
            ("openai.chat", Some(0)),
            ("openai.chat", Some(0)),
            ("http", Some(0)),
            ("openai.chat", Some(1)),
        ];
        let mut ix = ByPosition::new(slots.iter().map(|(r, t)| (*r, *t)));
        assert_eq!(ix.take("openai.chat", Some(1)), Some(3));
        assert_eq!(ix.take("openai.chat", Some(0)), Some(0));
        assert_eq!(ix.take("openai.chat", Some(0)), Some(1));
        assert_eq!(ix.take("openai.chat", Some(0)), Some(1));
        assert_eq!(ix.take("http", Some(0)), Some(2));
        assert_eq!(ix.take("openai.chat", Some(2)), None);
        assert_eq!(ix.take("anthropic.messages", Some(0)), None);
        // No turns recorded: every turn draws from the one queue.
        let mut ix = ByPosition::new([("openai.chat", None), ("openai.chat", None)]);
        assert_eq!(ix.take("openai.chat", Some(0)), Some(0));
        assert_eq!(ix.take("openai.chat", Some(3)), Some(1));
    }
}
